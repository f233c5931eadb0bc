"""The ``tfjob`` command: a thin click shell over the SDK.

Errors: a :class:`~tfjob.errors.TfjobError`, or a usage error of click's, becomes one
line ``error: …`` on stderr and the error's exit code (2 for usage, 1 for failures);
no traceback. Unexpected exceptions keep theirs.

Heavy libraries (Google clients, TensorFlow, kubernetes) are imported only inside the
commands that need them, so ``tfjob --help`` stays fast; ``app``, the click group with every
command, is made when first asked for.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any, NoReturn, Sequence

if TYPE_CHECKING:
    from .app import app

__all__ = ["app", "main", "run"]


def _register() -> None:
    # Each module adds its commands to ``app``; imported here so the order of help is fixed.
    from . import submit  # noqa: F401
    from . import jobs  # noqa: F401
    from . import cleanup  # noqa: F401
    from . import init  # noqa: F401
    from . import build  # noqa: F401
    from . import tune  # noqa: F401
    from . import catalog  # noqa: F401
    from . import importer  # noqa: F401
    from . import after  # noqa: F401


def __getattr__(name: str) -> Any:
    if name == "app":
        from .app import app

        _register()
        globals()["app"] = app
        return app
    raise AttributeError(name)


def _show_warning(message: Any, category: Any, filename: str, lineno: int, file: Any = None, line: Any = None) -> None:
    # tfjob's own warnings (an unknown machine family…) are one line, like its errors.
    print(f"tfjob: warning: {message}", file=sys.stderr, flush=True)


def main(argv: Sequence[str] | None = None) -> int:
    """Console-script entry point."""
    import warnings

    warnings.showwarning = _show_warning
    warnings.filterwarnings("always", category=UserWarning, module=r"tfjob\.")
    args = list(argv) if argv is not None else sys.argv[1:]
    group: Any = __getattr__("app")
    exit_code: int = group.main(args=args, prog_name="tfjob")
    return exit_code


def run() -> NoReturn:
    """The ``tfjob`` command itself (its console script, ``python -m tfjob.cli``): :func:`main`,
    then a normal interpreter exit with its status."""
    sys.exit(main())
