"""``tfjob import``: a Kubeflow TFJob v1 manifest as the ``tfjob submit`` command that runs it."""

from __future__ import annotations

import click

from .app import CONTEXT_SETTINGS, app

_EXAMPLES = """
Examples:

  tfjob import tfjob.yaml                    # Kubeflow Trainer v2 (TrainJob + a TensorFlow runtime)

  tfjob import tfjob.yaml --backend jobset

  eval "$(tfjob import tfjob.yaml --async)"   # flags after the file go into the command
"""


@app.command("import", epilog=_EXAMPLES, context_settings={**CONTEXT_SETTINGS, "ignore_unknown_options": True})
@click.argument("manifest", metavar="TFJOB_YAML")
@click.argument("submit_flags", nargs=-1, type=click.UNPROCESSED, metavar="[SUBMIT_FLAGS]...")
@click.option(
    "--backend",
    "-b",
    type=click.Choice(["trainjob", "jobset", "kubeflow"]),
    default="trainjob",
    show_default=True,
    help="Where the printed command runs the job.",
)
def import_tfjob(manifest: str, submit_flags: tuple[str, ...], backend: str) -> None:
    """Print the `tfjob submit` command that runs a Kubeflow TFJob (kubeflow.org/v1) manifest:
    its replicas, image, program and arguments, environment, resources and run policy.

    What has no flag (volumes, node selectors, secrets…) is named on stderr: it goes in a
    --pod-template file. Further tfjob submit flags (--async, --dry-run, --kubeconfig…)
    go into the printed command, ahead of the trainer's arguments."""
    from tfjob._internal import import_tfjob as convert
    from tfjob._internal import read_config_file

    imported = convert(read_config_file(manifest, "TFJOB_YAML"), backend=backend, source=manifest, extra=list(submit_flags))
    for note in imported.notes:
        click.echo(f"tfjob: note: {note}", err=True)
    click.echo(imported.command())
