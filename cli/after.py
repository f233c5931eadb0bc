"""``tfjob outputs / metrics / report / tensorboard``: what a job left behind, on any backend.

Each command works from a job id (or a unique prefix) through :func:`tfjob.get_job` and
calls one method of its handle (the public API only); results go to stdout (``--json`` for machines), notes to stderr.
"""

from __future__ import annotations

from tfjob._internal import json_text
import time

import click

from .app import CONTEXT_SETTINGS, app, take_ctrl_c
from .numbers import AsciiIntRange

JOB_ID = click.argument("job_id", metavar="JOB_ID")


def _when(ts: float | None) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(ts)) if ts else "-"


@app.command("outputs", context_settings=CONTEXT_SETTINGS)
@JOB_ID
@click.option("--download", "download_dir", metavar="DIR", help="Copy the outputs into DIR (their layout kept).")
@click.option("--json", "as_json", is_flag=True, help="Print the outputs as JSON (model_uri, files…).")
def outputs(job_id: str, download_dir: str | None, as_json: bool) -> None:
    """List what a job wrote under its job dir: the SavedModel, checkpoints, metrics files and
    TensorBoard logs, with sizes and times (a local path or gs://)."""
    from tfjob import get_job
    from tfjob._internal import check_output_path, human_size

    handle = get_job(job_id)
    if download_dir is not None:
        check_output_path(download_dir, "--download", directory=True, inside=handle.job_dir())
    found = handle.outputs()
    if as_json:
        click.echo(json_text(found.to_dict()))
    else:
        from tfjob._internal import inert

        # File names come from the job dir: OSC, BEL or a newline in one is shown escaped.
        if found.root:
            click.echo(f"job dir     {inert(found.root)}")
        for label, value in (("model", found.model_uri), ("checkpoint", found.checkpoint_uri), ("tensorboard", found.tensorboard_uri)):
            if value:
                click.echo(f"{label:<11} {inert(value)}")
        if found.files:
            rows = [("SIZE", "MODIFIED", "KIND", "PATH")] + [
                (human_size(f.size), _when(f.modified), f.kind, inert(f.path)) for f in found.files
            ]
            widths = [max(len(r[i]) for r in rows) for i in range(3)]
            for r in rows:
                click.echo("  ".join([r[0].rjust(widths[0]), r[1].ljust(widths[1]), r[2].ljust(widths[2]), r[3]]))
            click.echo(f"{len(found.files)} files, {human_size(found.total_size)}" + (" (more not listed)" if found.truncated else ""))
    if found.note:
        click.echo(found.note, err=True)
    if download_dir is not None:
        notes: list[str] = []
        written = handle.download(download_dir, found, notes=notes)
        click.echo(f"downloaded {len(written)} files to {download_dir}", err=True)
        for note in notes:
            click.echo(f"tfjob: {note}", err=True)


@app.command("metrics", context_settings=CONTEXT_SETTINGS)
@JOB_ID
@click.option(
    "--plot", "plot", metavar="FILE.png", help="Draw the curves (one panel per scalar, one line per run) into FILE (.png or .svg)."
)
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="Print the metrics as JSON (final values and every point; a value that is no finite number, a diverged loss, is null).",
)
def metrics(job_id: str, plot: str | None, as_json: bool) -> None:
    """Print the last value of each scalar a job logged for TensorBoard, per run (train,
    validation…), read from its event files (local or gs://).

    Bounded: at most 500,000 records are read in all (a longer log is sampled evenly, its
    last records always read), 100,000 points kept per scalar and 30 scalars drawn; what
    was left out is said on stderr (and in --json's note)."""
    from tfjob import UsageError, get_job
    from tfjob._internal import metrics_figure, render_metrics, save_figure

    if plot is not None and not plot.lower().endswith((".png", ".svg")):
        raise UsageError(f"--plot {plot!r} must name a .png or .svg file")
    if plot is not None:
        from tfjob._internal import check_output_path

        check_output_path(plot, "--plot")
    handle = get_job(job_id)
    if handle.is_study():  # a tuning study: its trials, and their plots
        from tfjob._internal import render_study_status, study_figure

        status = handle.status()

        if as_json:
            click.echo(json_text({**handle.metrics().to_dict(), "trials": status.extra.get("trials", [])}))
        else:
            click.echo(render_study_status(status.extra))
        if plot is not None:
            save_figure(study_figure(status.extra, title=f"study {handle.id}"), plot)
            click.echo(f"wrote {plot}", err=True)
        return
    found = handle.metrics()
    if as_json:
        click.echo(json_text(found.to_dict()))
    else:
        table = render_metrics(found)
        if table:
            click.echo(f"log dir  {found.log_dir}")
            click.echo(table)
    if found.note:
        click.echo(found.note, err=True)
    if plot is not None:
        save_figure(metrics_figure(found, title=f"job {handle.id}"), plot)
        click.echo(f"wrote {plot}", err=True)


@app.command("report", context_settings=CONTEXT_SETTINGS)
@JOB_ID
@click.option("-o", "--output", "output", metavar="FILE.html", help="Where to write the page (default: report-<job>.html; -: stdout).")
def report(job_id: str, output: str | None) -> None:
    """Write one self-contained HTML page about a job: its spec, a timeline of its tasks,
    its diagnosis, its metric curves (or its study's plots), its outputs and the last lines
    of a failing task. Nothing in it is fetched from the network. The values of its
    environment variables (--env) are not shown."""
    from tfjob import get_job
    from tfjob._internal import check_output_path, write_text_file

    handle = get_job(job_id)
    path = output if output is not None else f"report-{handle.id.replace('/', '-')}.html"
    if path != "-":
        check_output_path(path, "--output")
    page = handle.report()
    if path == "-":
        click.echo(page, nl=False)
        return
    write_text_file(path, page)
    click.echo(path)


@app.command("tensorboard", context_settings=CONTEXT_SETTINGS)
@JOB_ID
@click.option("--port", type=AsciiIntRange(0, 65535), default=6006, show_default=True, help="Port to serve on (0: any free one).")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to serve on.")
def tensorboard(job_id: str, port: int, host: str) -> None:
    """Serve TensorBoard on a job's log dir (local or gs://) and print its URL; it runs in
    this command's process, so it ends with it (Ctrl-C)."""
    with take_ctrl_c():  # it serves until Ctrl-C: never left running because SIGINT came in ignored
        _tensorboard(job_id, port, host)


def _tensorboard(job_id: str, port: int, host: str) -> None:
    import threading

    from tfjob import UsageError, get_job
    from tfjob._internal import BackendUnavailableError

    handle = get_job(job_id)
    found = handle.outputs()
    log_dir = found.tensorboard_uri or (found.root if found.reachable else None)
    if not log_dir:
        raise UsageError(found.note or f"job {handle.id} has no log dir to serve")
    try:
        from tensorboard import program
    except ImportError as e:
        raise BackendUnavailableError("tfjob tensorboard needs TensorBoard: pip install 'tfjob[tf]' (or pip install tensorboard)") from e
    import tempfile

    stop = threading.Event()
    with tempfile.TemporaryDirectory(prefix="tfjob-tensorboard-") as mirror:
        served = log_dir
        if log_dir.startswith("gs://"):
            # The bucket's event files are mirrored here (and refreshed), so TensorBoard needs no
            # TensorFlow Cloud Storage file system; the mirror goes with the command.
            seen = handle.mirror_event_files(log_dir, mirror)
            served = mirror

            def refresh() -> None:
                nonlocal seen
                while not stop.wait(30):
                    try:
                        seen = handle.mirror_event_files(log_dir, mirror, seen)
                    except Exception as e:  # a passing outage: keep serving what is there
                        click.echo(f"tfjob: could not refresh {log_dir}: {e}", err=True)

            threading.Thread(target=refresh, name="tfjob-mirror", daemon=True).start()
        board = program.TensorBoard()
        board.configure(argv=[None, "--logdir", served, "--port", str(port), "--host", host, "--reload_interval", "15"])
        try:
            url = board.launch()  # serves from a thread of this process: nothing outlives the command
        except program.TensorBoardPortInUseError:
            raise UsageError(f"--port {port}: the port is in use on {host}; choose another (--port 0: any free one)") from None
        except program.TensorBoardServerException as e:
            raise UsageError(f"TensorBoard could not serve on {host}:{port}: {e.msg}") from None
        click.echo(url)
        click.echo(f"TensorBoard on {log_dir}; Ctrl-C stops it", err=True)
        try:
            stop.wait()
        except KeyboardInterrupt:
            click.echo("TensorBoard stopped", err=True)
        finally:
            stop.set()
