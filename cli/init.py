"""``tfjob init``: start a trainer from a template."""

from __future__ import annotations

from typing import Optional

import typer

from tfjob.errors import UsageError

from .app import app

_EXAMPLES = """
Examples:

  tfjob init census_trainer

  tfjob init census_mw --template census-multiworker

  tfjob init --list
"""


@app.command("init", epilog=_EXAMPLES)
def init(
    directory: Optional[str] = typer.Argument(None, metavar="DIR", help="The directory to create (new or empty)."),
    template: str = typer.Option(
        "census-ps", "--template", "-t", help="census-ps, census-multiworker or custom-container (see --list)."
    ),
    force: bool = typer.Option(False, "--force", "-f", help="Write into a non-empty DIR, overwriting files of the same names."),
    name: Optional[str] = typer.Option(None, "--name", help="The trainer's distribution name (default: from DIR)."),
    list_: bool = typer.Option(False, "--list", "-l", help="List the templates, one line each, and exit."),
) -> None:
    """Copy a trainer template into DIR, ready for `tfjob submit DIR --module-name trainer.task`."""
    from tfjob.scaffold import get_template, init_template, list_templates

    if list_:
        templates = list_templates()
        width = max(len(n) for n, _ in templates)
        for template_name, summary in templates:
            typer.echo(f"{template_name:<{width}}  {summary}")
        return
    if directory is None:
        raise UsageError("give the directory to create: tfjob init DIR [--template NAME] (tfjob init --list shows the templates)")
    path = init_template(directory, template, force=force, package_name=name)
    typer.echo(str(path))
    run = get_template(template).run
    if run:
        typer.echo(f"next: {run.format(dir=directory)}  (see {path / 'README.md'})", err=True)
