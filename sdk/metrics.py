"""The scalars a job logged for TensorBoard, read with TensorBoard's own record reader and
protos (no TensorFlow import), and drawn as curves with matplotlib.

Event files are found under the job's log dir (a local path, or ``gs://``, whose event files
are fetched through google-cloud-storage, bounded); each directory holding one is a run
(``train``, ``validation``), as TensorBoard names them.
"""

from __future__ import annotations

import os
import posixpath
import re
import tempfile
from typing import Any

from .errors import BackendUnavailableError, UsageError
from .results import JobMetrics, ScalarPoint

#: At most this many event files are read, each at most MAX_EVENT_FILE bytes.
MAX_EVENT_FILES = 200
MAX_EVENT_FILE = 256 * 1024**2
#: At most this many points are kept per scalar (the last ones).
MAX_POINTS = 100_000


def _tensorboard() -> tuple[Any, Any, Any, Any]:
    try:
        from tensorboard.compat.proto import event_pb2
        from tensorboard.compat.tensorflow_stub import errors, pywrap_tensorflow
        from tensorboard.util import tensor_util
    except ImportError as e:
        raise BackendUnavailableError("reading metrics needs TensorBoard: pip install 'tfjob[tf]' (or pip install tensorboard)") from e
    return event_pb2, errors, pywrap_tensorflow, tensor_util


def read_event_file(path: str) -> dict[str, list[ScalarPoint]]:
    """tag → points of one event file (a truncated last record is where it ends)."""
    event_pb2, errors, pywrap, tensor_util = _tensorboard()
    out: dict[str, list[ScalarPoint]] = {}
    reader = pywrap.PyRecordReader_New(path)
    while True:
        try:
            reader.GetNext()
        except (errors.OutOfRangeError, errors.DataLossError):
            break
        event = event_pb2.Event.FromString(reader.record())
        if not event.HasField("summary"):
            continue
        for value in event.summary.value:
            number = None
            if value.HasField("simple_value"):
                number = float(value.simple_value)
            elif value.HasField("tensor") and value.metadata.plugin_data.plugin_name in ("scalars", ""):
                try:
                    array = tensor_util.make_ndarray(value.tensor)
                except Exception:
                    continue
                if array.size == 1 and array.dtype.kind in "fiu":
                    number = float(array.reshape(()))
            if number is not None:
                out.setdefault(value.tag, []).append(ScalarPoint(int(event.step), float(event.wall_time), number))
    return out


def _merge(series: dict[str, list[ScalarPoint]], more: dict[str, list[ScalarPoint]]) -> None:
    for tag, points in more.items():
        series.setdefault(tag, []).extend(points)


def _settle(series: dict[str, dict[str, list[ScalarPoint]]]) -> None:
    """Points in step order; a step logged twice (a restart) keeps its latest value."""
    for tags in series.values():
        for tag, points in tags.items():
            by_step: dict[int, ScalarPoint] = {}
            for p in sorted(points, key=lambda p: (p.step, p.wall_time)):
                by_step[p.step] = p
            tags[tag] = list(by_step.values())[-MAX_POINTS:]


def _run_name(rel_dir: str) -> str:
    return rel_dir if rel_dir not in ("", ".") else "."


def read_metrics(job_id: str, log_dir: str | None, *, client: Any = None) -> JobMetrics:
    """Every scalar under ``log_dir`` (local or ``gs://``), per run."""
    metrics = JobMetrics(job_id, log_dir)
    if not log_dir:
        metrics.note = f"job {job_id} has no job dir or log dir, so tfjob does not know where its TensorBoard logs are"
        return metrics
    found: list[tuple[str, str]] = []  # (run, local path)
    with tempfile.TemporaryDirectory(prefix="tfjob-metrics-") as tmp:
        if log_dir.startswith("gs://"):
            from .outputs import list_gs, split_gs, storage_client

            client = client if client is not None else storage_client()
            listed, _ = list_gs(log_dir, client)
            events = [(p, size) for p, size, _ in listed if "tfevents" in posixpath.basename(p)][:MAX_EVENT_FILES]
            bucket_name, prefix = split_gs(log_dir)
            bucket = client.bucket(bucket_name)
            for i, (rel, size) in enumerate(events):
                if size > MAX_EVENT_FILE:
                    metrics.note = f"{rel} is larger than {MAX_EVENT_FILE} bytes and was left out"
                    continue
                local = os.path.join(tmp, f"{i}.tfevents")
                bucket.blob(f"{prefix}/{rel}" if prefix else rel).download_to_filename(local)
                found.append((_run_name(posixpath.dirname(rel)), local))
        elif os.path.isdir(log_dir):
            for dirpath, dirnames, filenames in os.walk(log_dir, followlinks=False):
                dirnames.sort()
                for name in sorted(filenames):
                    path = os.path.join(dirpath, name)
                    if "tfevents" in name and os.path.isfile(path) and not os.path.islink(path) and len(found) < MAX_EVENT_FILES:
                        if os.path.getsize(path) > MAX_EVENT_FILE:
                            metrics.note = f"{path} is larger than {MAX_EVENT_FILE} bytes and was left out"
                            continue
                        found.append((_run_name(os.path.relpath(dirpath, log_dir).replace(os.sep, "/")), path))
        elif "://" not in log_dir:
            metrics.note = f"{log_dir} does not exist: the job wrote no TensorBoard logs there"
            return metrics
        else:
            raise UsageError(f"{log_dir}: tfjob reads TensorBoard logs from local paths and gs:// only")
        for run, path in found:
            _merge(metrics.series.setdefault(run, {}), read_event_file(path))
    metrics.series = {run: tags for run, tags in metrics.series.items() if tags}
    _settle(metrics.series)
    if not metrics.series and not metrics.note:
        metrics.note = f"no TensorBoard scalars under {log_dir} (a tf.keras.callbacks.TensorBoard(log_dir=...) callback writes them)"
    return metrics


def mirror_event_files(log_dir: str, dest: str, client: Any, seen: dict[str, int] | None = None) -> dict[str, int]:
    """Copy the event files under a ``gs://`` log dir into ``dest`` (their runs' layout kept),
    those whose size changed since ``seen``; return the sizes now seen. For TensorBoard to
    serve a bucket's logs without TensorFlow's Cloud Storage file system."""
    from .outputs import list_gs, split_gs

    seen = dict(seen or {})
    listed, _ = list_gs(log_dir, client)
    bucket_name, prefix = split_gs(log_dir)
    bucket = client.bucket(bucket_name)
    for rel, size, _ in listed:
        if "tfevents" not in posixpath.basename(rel) or ".." in rel.split("/") or size > MAX_EVENT_FILE or seen.get(rel) == size:
            continue
        if len(seen) >= MAX_EVENT_FILES and rel not in seen:
            break
        target = os.path.join(dest, *rel.split("/"))
        os.makedirs(os.path.dirname(target), exist_ok=True)
        bucket.blob(f"{prefix}/{rel}" if prefix else rel).download_to_filename(target)
        seen[rel] = size
    return seen


def render_final(metrics: JobMetrics) -> str:
    """The last value of each scalar, per run, as a table for a terminal. Pure."""
    rows = [(run, tag, points[-1]) for run, tags in sorted(metrics.series.items()) for tag, points in sorted(tags.items()) if points]
    if not rows:
        return ""
    header = ("RUN", "TAG", "STEP", "VALUE")
    table = [header] + [(run, tag, str(p.step), f"{p.value:.6g}") for run, tag, p in rows]
    widths = [max(len(r[i]) for r in table) for i in range(4)]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in table)


def _pyplot() -> Any:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as e:
        raise BackendUnavailableError("drawing curves needs matplotlib: pip install 'tfjob[plots]'") from e
    return plt


def metrics_figure(metrics: JobMetrics, title: str | None = None) -> Any:
    """A matplotlib figure: one panel per tag, one curve per run."""
    plt = _pyplot()
    tags = sorted({tag for tags in metrics.series.values() for tag in tags})
    if not tags:
        raise UsageError(metrics.note or f"job {metrics.job_id} logged no scalars to draw")
    cols = min(3, len(tags))
    rows = (len(tags) + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(4.2 * cols, 3.0 * rows), squeeze=False)
    for ax, tag in zip(axes.flat, tags):
        for run, series in sorted(metrics.series.items()):
            points = series.get(tag)
            if not points:
                continue
            style = "o-" if len(points) < 30 else "-"
            ax.plot([p.step for p in points], [p.value for p in points], style, label=run, markersize=3 if len(points) > 1 else 7)
        ax.set_title(tag, fontsize=10)
        ax.set_xlabel("step", fontsize=8)
        ax.tick_params(labelsize=8)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    for ax in list(axes.flat)[len(tags) :]:
        ax.set_visible(False)
    fig.suptitle(title or f"job {metrics.job_id}", fontsize=11)
    fig.tight_layout()
    return fig


def save_figure(fig: Any, path: str) -> None:
    """Write ``fig`` as PNG (or SVG by the file's suffix) and close it."""
    plt = _pyplot()
    try:
        fig.savefig(path, dpi=110, metadata={"Software": None} if path.endswith(".png") else {"Date": None})
    finally:
        plt.close(fig)


def figure_svg(fig: Any) -> str:
    """``fig`` as an inline ``<svg>`` element (no XML header) and close it."""
    import io

    plt = _pyplot()
    buf = io.StringIO()
    try:
        fig.savefig(buf, format="svg", metadata={"Date": None})
    finally:
        plt.close(fig)
    text = buf.getvalue()
    text = text[text.index("<svg") :]
    # The RDF block names vocabularies by URL (nothing is fetched, but a page without any URL is plainer).
    return re.sub(r"\s*<metadata>.*?</metadata>", "", text, flags=re.S)


def study_metrics(job_id: str, extra: dict[str, Any]) -> JobMetrics:
    """A study's objective as metrics: run ``study``, tag its metric, one point per trial
    that reported it (step = the trial's number, wall time = its end)."""
    metric = str(((extra.get("study") or {}).get("metric") or {}).get("tag", "objective"))
    points = []
    for t in extra.get("trials") or []:
        if t.get("metric") is None:
            continue
        try:
            number = int(t["id"])
        except (KeyError, TypeError, ValueError):
            continue
        points.append(ScalarPoint(number, float(t.get("ended") or 0.0), float(t["metric"])))
    out = JobMetrics(job_id, None, {"study": {metric: sorted(points, key=lambda p: p.step)}} if points else {})
    if not points:
        out.note = "no trial of the study has reported its metric yet"
    return out


def study_figure(extra: dict[str, Any], title: str | None = None) -> Any:
    """A tuning study's plots (from its status ``extra``: ``study`` and ``trials``): the
    optimisation history (each trial's objective and the best so far) and one panel per
    parameter, its value against the objective."""
    plt = _pyplot()
    study = extra.get("study") or {}
    metric = study.get("metric") or {}
    tag, maximize = str(metric.get("tag", "objective")), str(metric.get("goal", "")).upper() == "MAXIMIZE"
    trials = [t for t in extra.get("trials") or [] if t.get("metric") is not None]
    if not trials:
        raise UsageError("no trial of the study has reported its metric yet: nothing to draw")

    def number(t: dict[str, Any]) -> float:
        try:
            return float(t["id"])
        except (TypeError, ValueError):
            return 0.0

    trials.sort(key=number)
    params = sorted({p for t in trials for p in (t.get("params") or {})})
    panels = 1 + len(params)
    cols = min(3, panels)
    rows = (panels + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(4.2 * cols, 3.0 * rows), squeeze=False)
    flat = list(axes.flat)
    xs = [number(t) for t in trials]
    ys = [float(t["metric"]) for t in trials]
    best, running = [], None
    for y in ys:
        running = y if running is None else (max(running, y) if maximize else min(running, y))
        best.append(running)
    ax = flat[0]
    ax.plot(xs, ys, "o", label=tag, markersize=4)
    ax.step(xs, best, where="post", label="best so far")
    ax.set_title("optimisation history", fontsize=10)
    ax.set_xlabel("trial", fontsize=8)
    ax.set_ylabel(tag, fontsize=8)
    ax.legend(fontsize=7)
    ax.grid(alpha=0.3)
    for ax, name in zip(flat[1:], params):
        values = [(t.get("params") or {}).get(name) for t in trials]
        pairs = [(v, y) for v, y in zip(values, ys) if v is not None]
        if all(isinstance(v, (int, float)) for v, _ in pairs):
            ax.plot([float(v) for v, _ in pairs], [y for _, y in pairs], "o", markersize=4)
            spec: dict[str, Any] = next((p for p in study.get("parameters") or [] if p.get("name") == name), {})
            if "LOG" in str(spec.get("scale", "")).upper() and all(float(v) > 0 for v, _ in pairs):
                ax.set_xscale("log")
        else:  # a categorical parameter: one column per value
            cats = sorted({str(v) for v, _ in pairs})
            ax.plot([cats.index(str(v)) for v, _ in pairs], [y for _, y in pairs], "o", markersize=4)
            ax.set_xticks(range(len(cats)), cats)
        ax.set_title(f"{name} vs {tag}", fontsize=10)
        ax.set_xlabel(name, fontsize=8)
        ax.grid(alpha=0.3)
    for ax in flat[panels:]:
        ax.set_visible(False)
    for ax in flat[:panels]:
        ax.tick_params(labelsize=8)
    fig.suptitle(title or "study", fontsize=11)
    fig.tight_layout()
    return fig
