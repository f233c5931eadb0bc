"""``tfjob submit`` and ``tfjob render``: one job description, any backend.

The options follow gcloud's (``--master-machine-type``, ``--parameter-server-count``,
``--worker-count``, ``--package-path``, ``--master-image-uri``… are accepted as
aliases) and are defined once, in :mod:`tfjob.cli.options`, each named after the
:class:`tfjob.Job` keyword it sets. Everything after ``--`` is passed to the trainer.
"""

from __future__ import annotations

from typing import Any

import click

from . import options as opts
from .app import CONTEXT_SETTINGS, app
from .submitting import dump, job_keywords, submit_job

__all__ = ["dump", "job_keywords", "submit", "UserArgsCommand"]

USER_ARGS = "tfjob_user_args"


class UserArgsCommand(opts.KnobCommand):
    """Keeps everything after the first ``--`` aside for the trainer."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        if "--" in args:
            i = args.index("--")
            ctx.meta[USER_ARGS] = args[i + 1 :]
            args = args[:i]
        return super().parse_args(ctx, args)


_EXAMPLES = """\b
Examples:
  tfjob submit trainer/ --module-name trainer.task --workers 4 --ps 2 -- --train-steps 1000
  tfjob submit trainer/ -m trainer.task --scale-tier STANDARD_1 --backend vertex --dry-run
  tfjob submit --image gcr.io/p/trainer:1 --module-name trainer.task --workers 2 --backend kubeflow
  tfjob submit trainer/ -m trainer.task --config config.yaml --region us-central1
"""


@click.command("submit", cls=UserArgsCommand, epilog=_EXAMPLES, context_settings=CONTEXT_SETTINGS)
@click.argument("package_path", required=False, metavar="[PACKAGE_PATH]")
@opts.apply(opts.JOB_OPTIONS)
@opts.apply(opts.SUBMIT_OPTIONS)
@click.pass_context
def submit(ctx: click.Context, /, **params: Any) -> None:
    """Submit a training job (locally by default) and follow it to its end.

    PACKAGE_PATH is the trainer's source directory (a Python package, or a project holding
    one); with --package-path, the job's name, as gcloud takes it.
    """
    # The parameters as the options declare them, which is what submit_job takes.
    costing = None
    if ctx.info_name == "cost":
        given = ctx.get_parameter_source("output") is click.core.ParameterSource.COMMANDLINE
        costing = "structured" if given else "text"
    submit_job(rendering=ctx.info_name in ("render", "cost"), user_args=ctx.meta.get(USER_ARGS, []), costing=costing, **params)


app.add_command(submit)
app.add_command(
    UserArgsCommand(
        "render",
        params=submit.given_params,
        callback=submit.callback,
        help="Print the request a backend would send for a job (vertex, ai-platform, kubeflow), without submitting.",
        context_settings=CONTEXT_SETTINGS,
    )
)
app.add_command(
    UserArgsCommand(
        "cost",
        params=submit.given_params,
        callback=submit.callback,
        help="Print a job's price per hour, pool by pool, on-demand and Spot, from the price table (an estimate; "
        "-o json/yaml for data), without submitting. The same options as submit.",
        context_settings=CONTEXT_SETTINGS,
    )
)
