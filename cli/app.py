"""The ``tfjob`` typer application: the group every command module adds itself to.

Its own module, at the bottom of the CLI: the command modules import ``app`` from here and
:mod:`tfjob.cli.main` imports them, so no CLI module imports another back.
"""

from __future__ import annotations

import sys
from typing import Any, Sequence

import typer
from typer.core import TyperGroup

from tfjob import __version__
from tfjob.errors import TfjobError


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
