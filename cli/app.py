"""The ``tfjob`` click group: the group every command module adds itself to.

Its own module, at the bottom of the CLI: the command modules import ``app`` from here and
:mod:`tfjob.cli.main` imports them, so no CLI module imports another back.
"""

from __future__ import annotations

import contextlib
import sys
from typing import Any, Iterator, Sequence

import click

from tfjob import __version__
from tfjob import TfjobError

CONTEXT_SETTINGS = {"help_option_names": ["-h", "--help"], "max_content_width": 100}


@contextlib.contextmanager
def take_ctrl_c() -> Iterator[None]:
    """Inside, Ctrl-C (SIGINT) stops this command whatever it inherited: a process started
    with SIGINT ignored (by a test runner's worker, ``nohup``, a script's ``&``) or at its
    default (no cleanup) gets Python's KeyboardInterrupt back; the disposition it had is
    restored after. For the commands that run until they are interrupted (``tensorboard``,
    ``wait``, ``logs --follow``)."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread() or callable(signal.getsignal(signal.SIGINT)):
        yield
        return
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, before)


class OneLineErrors(click.Group):
    """A group whose errors are one line on stderr, in CliRunner and in a shell alike."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(self.commands)  # in the order they were added, as tfjob.cli.main adds them

    def main(self, args: Sequence[str] | None = None, prog_name: str | None = None, *a: Any, **kw: Any) -> Any:
        kw["standalone_mode"] = False
        try:
            rv = super().main(args, prog_name, *a, **kw)
        except TfjobError as e:
            from tfjob._internal import flag_words

            click.echo(f"error: {e.worded('cli', flag_words)}", err=True)
            sys.exit(e.exit_code)
        except click.exceptions.NoArgsIsHelpError as e:
            click.echo(e.ctx.get_help() if e.ctx is not None else e.format_message())
            sys.exit(2)
        except click.ClickException as e:  # a usage error: an unknown option, a bad value…
            ctx = getattr(e, "ctx", None)
            hint = f" (see `{ctx.command_path} --help`)" if ctx is not None else ""
            click.echo(f"error: {e.format_message()}{hint}", err=True)
            sys.exit(e.exit_code)
        except click.Abort:
            click.echo("error: interrupted", err=True)
            sys.exit(130)
        except BrokenPipeError:
            sys.exit(1)
        sys.exit(rv if isinstance(rv, int) else 0)


def _show_version(ctx: click.Context, param: click.Parameter, value: bool) -> None:
    if value:
        click.echo(f"tfjob {__version__}")
        ctx.exit()


app = OneLineErrors(
    name="tfjob",
    help=(
        "Package, submit and run distributed TensorFlow training jobs: locally as a real "
        "multi-process cluster, on Vertex AI, or on Kubernetes as a Kubeflow TFJob, a JobSet or a Kubeflow Trainer TrainJob."
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
    context_settings=CONTEXT_SETTINGS,
    params=[
        click.Option(
            ["--version"], is_flag=True, expose_value=False, is_eager=True, callback=_show_version, help="Print the version and exit."
        ),  # fmt: skip
    ],
)
