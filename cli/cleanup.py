"""``tfjob rm / prune``: ended jobs' records removed, with what tfjob keeps of them on this machine.

A local job's directory under ``$TFJOB_HOME/jobs`` and a function job's result go with its record;
a ``--job-dir`` is the user's and is never removed; a cloud job's platform job is not touched
(:mod:`tfjob.job.removal`). Removed ids go to stdout, what was kept and the totals to stderr.
"""

from __future__ import annotations

import sys
from typing import Any

import click

from tfjob import TfjobError, UsageError

from .app import CONTEXT_SETTINGS, app


def _said(done: Any) -> None:
    click.echo(done.id)
    for note in done.notes:
        click.echo(note, err=True)
    for failed in done.failed:
        click.echo(f"warning: could not remove {failed}", err=True)


@app.command("rm", context_settings=CONTEXT_SETTINGS)
@click.argument("job_ids", metavar="JOB_ID...", nargs=-1, required=True)
@click.option("--force", "-f", is_flag=True, help="Cancel a job that has not ended, wait for its end, then remove it.")
def rm(job_ids: tuple[str, ...], force: bool) -> None:
    """Remove ended jobs: their record and tfjob's files of them here (logs, work dirs, a function's result).

    A --job-dir is yours and is kept; a cloud job's platform job and its outputs are untouched.
    """
    from tfjob import get_job
    from tfjob._internal import human_size

    refused = failed = 0
    for job_id in job_ids:
        try:
            done = get_job(job_id).remove(force=force)
        except UsageError as e:  # an unknown id, one that has not ended
            click.echo(f"error: {e}", err=True)
            refused += 1
            continue
        except TfjobError as e:  # --force: the job did not end in time
            click.echo(f"error: {e}", err=True)
            failed += 1
            continue
        _said(done)
        failed += bool(done.failed)
        if done.bytes:
            click.echo(f"freed {human_size(done.bytes)} of job {done.id}", err=True)
    if refused:
        sys.exit(2)
    if failed:
        sys.exit(1)


@app.command("prune", context_settings=CONTEXT_SETTINGS)
@click.option(
    "--older-than",
    "older_than",
    default="30d",
    show_default=True,
    help="Remove jobs that ended longer ago than this (30d, 12h, 90m, 3600).",
)
@click.option("--backend", help="Only this backend's jobs (local, vertex, kubeflow…).")
@click.option("--dry-run", is_flag=True, help="List what would be removed; remove nothing.")
@click.option("--yes", "-y", is_flag=True, help="Do not ask (needed where stdin is not a terminal).")
def prune(older_than: str, backend: str | None, dry_run: bool, yes: bool) -> None:
    """Remove every ended job older than --older-than, as `tfjob rm` does (asks first)."""
    from tfjob._internal import JobStore, human_size, parse_duration, prune_jobs

    seconds = parse_duration(older_than, "older-than")
    if not (dry_run or yes or sys.stdin.isatty()):
        raise UsageError("tfjob prune asks before it removes, and stdin is not a terminal; add --yes, or --dry-run to see what it removes")
    store = JobStore()
    if not dry_run and not yes:
        count = size = 0
        for done in prune_jobs(store, seconds, backend=backend, dry_run=True):
            click.echo(f"{done.id}  {done.backend}  {human_size(done.bytes)}")
            count, size = count + 1, size + done.bytes
        if not count:
            click.echo(f"no ended job older than {older_than}", err=True)
            return
        these = "this job" if count == 1 else f"these {count} jobs"
        if not click.confirm(f"remove {these} ({human_size(size)})?", err=True):
            click.echo("nothing removed", err=True)
            return
    count = size = failed = 0
    for done in prune_jobs(store, seconds, backend=backend, dry_run=dry_run):
        if dry_run:
            click.echo(f"{done.id}  {done.backend}  {human_size(done.bytes)}")
        else:
            _said(done)
        count, size, failed = count + 1, size + done.bytes, failed + bool(done.failed)
    verb = "would remove" if dry_run else "removed"
    click.echo(f"{verb} {count} job{'s' * (count != 1)}, {human_size(size)}", err=True)
    if failed:
        sys.exit(1)
