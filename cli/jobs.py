"""``tfjob list / status / logs / cancel / wait``: the life of a submitted job, on any backend.

Every command works from a job id (or a unique prefix of one) through
:func:`tfjob.get_job`, so it does not matter which process or backend started
the job; ``tfjob list`` is :func:`tfjob.list_jobs`. Like every command, only the public
API (``tfjob``'s names) is used. Results go to stdout (``--json`` for machines); progress to stderr.
"""

from __future__ import annotations

import contextlib
from tfjob._internal import json_text
import sys
import time
from typing import TYPE_CHECKING, Any, Iterator

import click

from tfjob import JobFailedError

from .app import CONTEXT_SETTINGS, app, take_ctrl_c
from .numbers import AsciiIntRange

if TYPE_CHECKING:  # the job model loads with the first command that needs it, not with --help
    from tfjob import JobState, JobStatus
    from tfjob._internal import Diagnosis


@contextlib.contextmanager
def _keeps_running(job_id: str, again: str) -> Iterator[None]:
    """Ctrl-C while reading a job stops the reading, not the job: say so, and how to go on."""
    try:
        with take_ctrl_c():
            yield
    except KeyboardInterrupt:
        click.echo(f"error: interrupted; job {job_id} keeps running ({again} goes on, tfjob cancel {job_id} stops it)", err=True)
        sys.exit(130)


def _when(ts: float | None) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(ts)) if ts else "-"


def render_duration(status: JobStatus, now: float | None = None) -> str:
    """How long the job ran (so far, while it runs); ``-`` before it started. Pure."""
    from tfjob._internal import format_duration

    if status.started is None:
        return "-"
    end = status.ended if status.ended is not None else (now if now is not None else time.time())
    return format_duration(max(0.0, end - status.started))


def render_table(header: list[str], rows: list[list[str]]) -> str:
    """Aligned columns; the last one is not padded. Pure."""
    from tfjob._internal import inert

    # A name or id may hold a newline, ESC or U+202E: shown escaped, so it cannot forge a row or drive the terminal.
    rows = [[inert(str(c)) for c in r] for r in rows]
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in [header, *rows])


def render_job_list(statuses: list[JobStatus], now: float | None = None) -> str:
    """The ``tfjob list`` table. Pure."""
    rows = [[s.id, s.name, s.backend, s.state.value, _when(s.created), render_duration(s, now)] for s in statuses]
    return render_table(["ID", "NAME", "BACKEND", "STATE", "CREATED", "DURATION"], rows)


def render_status(
    status: JobStatus,
    events: list[tuple[float, JobState, str]],
    now: float | None = None,
    diagnoses: list[Diagnosis] | None = None,
) -> str:
    """The ``tfjob status`` text: the job, its history, its tasks and why it failed. Pure."""
    from tfjob._internal import inert

    lines = [
        f"job       {inert(status.id)}",
        f"name      {inert(status.name)}",
        f"backend   {status.backend}",
        f"state     {status.state.value}",
    ]
    if status.message:
        lines.append(f"message   {inert(status.message)}")
    if status.extra.get("waiting"):
        lines.append(f"waiting   {status.extra['waiting']}")
    if status.failed_task:
        lines.append(f"failed    {status.failed_task}")
    lines += [
        f"created   {_when(status.created)}",
        f"started   {_when(status.started)}",
        f"ended     {_when(status.ended)}",
        f"duration  {render_duration(status, now)}",
    ]
    from tfjob._internal import estimated_cost

    cost = estimated_cost(status, now)
    if cost is not None:
        lines.append(f"cost      {cost['text']}")
    if status.extra.get("log_dir"):
        lines.append(f"logs      {inert(str(status.extra['log_dir']))}")
    if status.extra.get("work_dir"):
        # Each local task's own working directory, as each replica has its container's.
        lines.append(f"workdirs  {inert(str(status.extra['work_dir']))}/<task>")
    attempts = status.extra.get("attempts")
    if isinstance(attempts, list) and len(attempts) > 1:
        lines.append("attempts")
        for n, attempt in enumerate(attempts[:100], 1):
            if isinstance(attempt, dict):
                ended = attempt.get("ended")
                end = (
                    f"  {attempt.get('state', '')} {_when(ended)} {attempt.get('reason', '')}".rstrip()
                    if isinstance(ended, (int, float))
                    else ""
                )
                lines.append(f"  {n}  {str(attempt.get('resource_name', ''))[:200]}{end}")
    if events:
        lines.append("history")
        for ts, state, message in events:
            lines.append(f"  {_when(ts)}  {state.value}" + (f"  {message}" if message else ""))
    if status.extra.get("kind") == "study":
        from tfjob._internal import render_study_status

        lines.append("trials")
        lines += ["  " + line for line in render_study_status(status.extra).splitlines()]
    elif status.tasks:
        from tfjob._internal import render_tasks

        lines.append("tasks")
        lines += ["  " + line for line in render_tasks(status.tasks, now).splitlines()]
    tail = status.extra.get("log_tail")
    if tail and status.failed_task:
        lines.append(f"last lines of {status.failed_task}")
        lines += ["  " + line for line in str(tail).splitlines()]
    if diagnoses:
        from tfjob._internal import explain

        lines += explain(diagnoses).splitlines()
    return "\n".join(lines)


JOB_ID = click.argument("job_id", metavar="JOB_ID")


@app.command("list", context_settings=CONTEXT_SETTINGS)
@click.option("--json", "as_json", is_flag=True, help="Print the jobs as JSON.")
@click.option("--backend", help="Only jobs of this backend (local, vertex, kubeflow).")
@click.option(
    "--limit",
    "-n",
    type=AsciiIntRange(1, 10000),
    default=20,
    show_default=True,
    help="At most this many jobs, newest first (up to 10000).",
)
@click.option(
    "--remote",
    is_flag=True,
    help="Ask the backend (vertex: the configured project/region; kubeflow: the current context) instead of the job store.",
)
def list_jobs(as_json: bool, backend: str | None, limit: int, remote: bool) -> None:
    """List jobs, newest first.

    By default the local job store (offline, every backend, last-seen states; a local
    job whose supervisor died shows as LOST). With --remote --backend vertex|kubeflow,
    the jobs carrying tfjob's label as the service sees them now.
    """
    from tfjob import UsageError, list_jobs

    if remote and backend is None:
        raise UsageError("--remote needs --backend vertex or --backend kubeflow")
    statuses = list_jobs(limit, backend, remote=remote)  # a misspelt backend is a usage error, not an empty list
    if as_json:
        click.echo(json_text([s.to_dict() for s in statuses]))
    elif statuses:
        click.echo(render_job_list(statuses))
    else:
        click.echo("no jobs yet; `tfjob submit TRAINER_DIR --module-name trainer.task` runs one", err=True)


def _after(handle: Any, data: dict[str, Any]) -> None:
    """What an ended job left, for ``status --json``: where its outputs are (not every file)
    and the final value of each metric; what cannot be read is said in ``*_note``."""
    from tfjob import TfjobError

    try:
        outputs = handle.outputs()
    except TfjobError as e:
        data["outputs"], data["outputs_note"] = None, str(e)
        return
    data["outputs"] = {k: v for k, v in outputs.to_dict().items() if k != "files"}
    try:
        metrics = handle.metrics()
        data["metrics"] = metrics.final
        if metrics.note:
            data["metrics_note"] = metrics.note
    except TfjobError as e:
        data["metrics"], data["metrics_note"] = None, str(e)


@app.command("status", context_settings=CONTEXT_SETTINGS)
@JOB_ID
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="Print the status as JSON (docs/orchestration.md: with diagnoses and failure; once ended, outputs and final metrics, null where not a finite number).",
)
@click.option("--output", "-o", "output", type=click.Choice(["text", "json"]), help="text (default) or json (as --json).")
def status(job_id: str, as_json: bool, output: str | None) -> None:
    """Show a job's state, history, tasks and, if it failed, the failing task's last lines
    and what tfjob recognises of why.

    JOB_ID is the job's id, or a unique prefix of it."""
    from tfjob import get_job

    handle = get_job(job_id)
    current = handle.status()
    events = handle.events()
    diagnoses = handle.diagnose(current)
    if as_json or output == "json":
        data: dict[str, Any] = current.to_dict()
        data["events"] = [{"time": ts, "state": state.value, "message": message} for ts, state, message in events]
        data["diagnoses"] = [d.to_dict() for d in diagnoses]
        if current.state.is_terminal:
            _after(handle, data)
        data["failure"] = failure_of(current)
        from tfjob._internal import estimated_cost

        data["estimated_cost"] = estimated_cost(current)
        click.echo(json_text(data))
    else:
        click.echo(render_status(current, events, diagnoses=diagnoses))


def failure_of(status: JobStatus) -> dict[str, Any] | None:
    """Why a job that did not succeed ended, in the stable shape of ``tfjob status -o json``:
    the failing task, its exit code, the platform's message and the task's last lines. Pure."""
    if status.state.value not in ("FAILED", "LOST", "CANCELLED"):
        return None
    code = status.extra.get("task_exit_code")
    return {
        "task": status.failed_task,
        "exit_code": code if isinstance(code, int) and not isinstance(code, bool) else None,
        "message": status.message,
        "log_tail": str(status.extra.get("log_tail") or ""),
    }


@app.command("logs", context_settings=CONTEXT_SETTINGS)
@JOB_ID
@click.option("--task", "-t", help="Only this task's lines, e.g. worker-1.")
@click.option("--follow", "-f", is_flag=True, help="Keep printing new lines until the job ends.")
@click.option("--tail", type=AsciiIntRange(min=0), help="Start with only the last N lines.")
def logs(job_id: str, task: str | None, follow: bool, tail: int | None) -> None:
    """Print a job's log lines, prefixed [chief-0], [worker-1]…"""
    from tfjob import get_job

    handle = get_job(job_id)
    with _keeps_running(handle.id, again=f"tfjob logs {handle.id} --follow"):
        for line in handle.logs(task=task, follow=follow, tail=tail):
            click.echo(line)


@app.command("cancel", context_settings=CONTEXT_SETTINGS)
@JOB_ID
def cancel(job_id: str) -> None:
    """Cancel a job: its tasks are stopped and it ends as CANCELLED (`tfjob wait` to see it end)."""
    from tfjob import get_job

    handle = get_job(job_id)
    current = handle.status()
    if current.state.is_terminal:
        click.echo(f"job {handle.id} already ended: {current.state.value}; nothing to cancel", err=True)
        return
    handle.cancel()
    click.echo(f"cancelling job {handle.id}", err=True)


@app.command("preempt", context_settings=CONTEXT_SETTINGS)
@JOB_ID
@click.argument("task", metavar="TASK")
@click.option("--grace", help="Seconds between SIGTERM and SIGKILL (30s, 500ms; default: the job's --preempt-grace, else 30s).")
def preempt(job_id: str, task: str, grace: str | None) -> None:
    """Preempt TASK of a running local job as a Spot VM is reclaimed: SIGTERM, the grace period, then SIGKILL; its restart policy acts."""
    from tfjob import get_job

    handle = get_job(job_id)
    name = handle.preempt(task, grace)
    click.echo(f"preempting {name} of job {handle.id}", err=True)


@app.command("wait", context_settings=CONTEXT_SETTINGS)
@JOB_ID
@click.option("--timeout", help="Give up after this long (seconds, or 30m, 1h30m); the job keeps running.")
def wait(job_id: str, timeout: str | None) -> None:
    """Wait for a job to end. Exit 0 if it SUCCEEDED, 1 if it failed or was lost, 130 if cancelled."""
    from tfjob import get_job
    from tfjob._internal import parse_duration

    seconds = parse_duration(timeout) if timeout is not None else None
    handle = get_job(job_id)

    def said(status: Any) -> None:  # one line per state the job is in while it is waited for
        if not status.state.is_terminal:
            click.echo(f"job {handle.id} {status.state.value}", err=True)

    with _keeps_running(handle.id, again=f"tfjob wait {handle.id}"):
        final = handle.wait(seconds, on_change=said)
    click.echo(f"job {handle.id} {final.state.value}" + (f": {final.message}" if final.message else ""), err=True)
    try:
        handle.result()
    except JobFailedError as e:
        if e.log_tail:
            click.echo(f"last lines of {e.task}:\n" + "\n".join("  " + l for l in e.log_tail.splitlines()), err=True)
        raise
    click.echo(handle.id)
