"""``tfjob init``: start a trainer from a template."""

from __future__ import annotations

import click

from tfjob import UsageError

from .app import CONTEXT_SETTINGS, app

_EXAMPLES = """
Examples:

  tfjob init census_trainer

  tfjob init census_mw --template census-multiworker

  tfjob init --list
"""


@app.command("init", epilog=_EXAMPLES, context_settings=CONTEXT_SETTINGS)
@click.argument("directory", required=False, metavar="DIR")
@click.option(
    "--template", "-t", default="census-ps", show_default=True, help="census-ps, census-multiworker or custom-container (see --list)."
)
@click.option("--force", "-f", is_flag=True, help="Write into a non-empty DIR, overwriting files of the same names.")
@click.option("--name", help="The trainer's distribution name (default: from DIR).")
@click.option("--list", "-l", "list_", is_flag=True, help="List the templates, one line each, and exit.")
def init(directory: str | None, template: str, force: bool, name: str | None, list_: bool) -> None:
    """Copy a trainer template into DIR (new or empty), ready for `tfjob submit DIR --module-name trainer.task`."""
    from tfjob._internal import get_template, init_template, list_templates

    if list_:
        templates = list_templates()
        width = max(len(n) for n, _ in templates)
        for template_name, summary in templates:
            click.echo(f"{template_name:<{width}}  {summary}")
        return
    if directory is None:
        raise UsageError("give the directory to create: tfjob init DIR [--template NAME] (tfjob init --list shows the templates)")
    path = init_template(directory, template, force=force, package_name=name)
    click.echo(str(path))
    run = get_template(template).run
    if run:
        click.echo(f"next: {run.format(dir=directory)}  (see {path / 'README.md'})", err=True)
