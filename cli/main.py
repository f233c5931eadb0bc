"""The ``tfjob`` command: a thin click shell over the SDK.

Errors: a :class:`~tfjob.errors.TfjobError`, or a usage error of click's, becomes one
line ``error: …`` on stderr and the error's exit code (2 for usage, 1 for failures);
no traceback. Unexpected exceptions keep theirs.

Heavy libraries (Google clients, TensorFlow, kubernetes) are imported only inside the
commands that need them, so ``tfjob --help`` stays fast.
"""

from __future__ import annotations

import sys
from typing import Any, Sequence

from .app import app

__all__ = ["app", "main"]


def _register() -> None:
    # Each module adds its commands to ``app``; imported here so the order of help is fixed.
    from . import submit  # noqa: F401
    from . import jobs  # noqa: F401
    from . import init  # noqa: F401
    from . import build  # noqa: F401
    from . import tune  # noqa: F401
    from . import catalog  # noqa: F401
    from . import importer  # noqa: F401
    from . import after  # noqa: F401


_register()


def _show_warning(message: Any, category: Any, filename: str, lineno: int, file: Any = None, line: Any = None) -> None:
    # tfjob's own warnings (an unknown machine family…) are one line, like its errors.
    print(f"tfjob: warning: {message}", file=sys.stderr, flush=True)


def main(argv: Sequence[str] | None = None) -> int:
    """Console-script entry point."""
    import warnings

    warnings.showwarning = _show_warning
    warnings.filterwarnings("always", category=UserWarning, module=r"tfjob\.")
    return app.main(args=list(argv) if argv is not None else None, prog_name="tfjob")
