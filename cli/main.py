"""The ``tfjob`` command: a thin typer shell over the SDK.

Errors: a :class:`~tfjob.errors.TfjobError`, or a usage error of click's, becomes one
line ``error: …`` on stderr and the error's exit code (2 for usage, 1 for failures);
no traceback. Unexpected exceptions keep theirs.

Heavy libraries (Google clients, TensorFlow, kubernetes) are imported only inside the
commands that need them, so ``tfjob --help`` stays fast.
"""

from __future__ import annotations

import sys
from typing import Any, Sequence

import typer
from typer.core import TyperGroup

from tfjob import __version__
from tfjob.errors import TfjobError


def fail(message: str, code: int = 2) -> None:
    """Print ``error: message`` on stderr and exit (2: usage, 1: failure)."""
    typer.echo(f"error: {message}", err=True)
    raise SystemExit(code)


class OneLineErrors(TyperGroup):
    """A group whose errors are one line on stderr, in CliRunner and in a shell alike."""

    def main(self, args: Sequence[str] | None = None, prog_name: str | None = None, *a: Any, **kw: Any) -> Any:
        kw["standalone_mode"] = False
        try:
            rv = super().main(args, prog_name, *a, **kw)
        except TfjobError as e:
            typer.echo(f"error: {e}", err=True)
            sys.exit(e.exit_code)
        except typer.TyperException as e:  # click's usage errors (typer vendors click)
            ctx = getattr(e, "ctx", None)
            if type(e).__name__ == "NoArgsIsHelpError" and ctx is not None:
                typer.echo(ctx.get_help())
                sys.exit(2)
            hint = f" (see `{ctx.command_path} --help`)" if ctx is not None else ""
            typer.echo(f"error: {e.format_message()}{hint}", err=True)
            sys.exit(e.exit_code)
        except typer.Abort:
            typer.echo("error: interrupted", err=True)
            sys.exit(130)
        except BrokenPipeError:
            sys.exit(1)
        sys.exit(rv if isinstance(rv, int) else 0)


app = typer.Typer(
    name="tfjob",
    cls=OneLineErrors,
    help=(
        "Package, submit and run distributed TensorFlow training jobs: locally as a real "
        "multi-process cluster, on Vertex AI, or on Kubernetes as a Kubeflow TFJob."
    ),
    epilog=(
        "\b\nExamples:\n"
        "  tfjob init my_trainer --template census-ps\n"
        "  tfjob submit my_trainer -m trainer.task --workers 4 --ps 2 -- --train-steps 200\n"
        "  tfjob submit my_trainer -m trainer.task --workers 4 --ps 2 --backend vertex --dry-run\n"
        "  tfjob list\n"
        "  tfjob logs JOB_ID --follow"
    ),
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
)


def _show_version(value: bool) -> None:
    if value:
        typer.echo(f"tfjob {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(False, "--version", help="Print the version and exit.", callback=_show_version, is_eager=True),
) -> None:
    """Distributed TensorFlow training jobs, locally, on Vertex AI or on Kubeflow."""


def _register() -> None:
    # Each module adds its commands to ``app``; imported here so the order of help is fixed.
    from . import submit  # noqa: F401
    from . import jobs  # noqa: F401
    from . import init  # noqa: F401
    from . import tune  # noqa: F401
    from . import catalog  # noqa: F401


_register()


def _show_warning(message: Any, category: Any, filename: str, lineno: int, file: Any = None, line: Any = None) -> None:
    # tfjob's own warnings (an unknown machine family…) are one line, like its errors.
    print(f"tfjob: warning: {message}", file=sys.stderr, flush=True)


def main(argv: Sequence[str] | None = None) -> int:
    """Console-script entry point."""
    import warnings

    warnings.showwarning = _show_warning
    warnings.filterwarnings("always", category=UserWarning, module=r"tfjob\.")
    return app(args=list(argv) if argv is not None else None, prog_name="tfjob")
