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

from ..errors import BackendUnavailableError, UsageError
from ..results import JobMetrics, ScalarPoint

#: At most this many event files are read, each at most MAX_EVENT_FILE bytes.
MAX_EVENT_FILES = 200
MAX_EVENT_FILE = 256 * 1024**2
#: At most this many points are kept per scalar (the last ones).
MAX_POINTS = 100_000
#: At most this many event records are decoded for one reading, over all its files (about
#: two seconds of work): a file with more is sampled — evenly spaced records, always its
#: last ones — and the reading's note says so.
MAX_RECORDS = 500_000
#: At most this many points are kept for one reading, over all its scalars.
MAX_TOTAL_POINTS = 1_000_000
#: A record's header: its length (8 bytes) and that length's checksum (4); a checksum of the data follows it.
_HEADER, _FOOTER = 12, 4


def _tensorboard() -> tuple[Any, Any]:
    try:
        from tensorboard.compat.proto import event_pb2
        from tensorboard.util import tensor_util
    except ImportError as e:
        raise BackendUnavailableError("reading metrics needs TensorBoard: pip install 'tfjob[tf]' (or pip install tensorboard)") from e
    return event_pb2, tensor_util


def _checksum() -> Any:
    """A test of a record's two checksums (TFRecord's masked CRC-32C), with google-crc32c's C
    code when it is installed (it comes with google-cloud-storage); None without it, and a
    damaged record is then known only by not being an event."""
    try:
        import google_crc32c
    except ImportError:
        return None
    if getattr(google_crc32c, "implementation", "c") != "c":
        return None  # the pure-Python fallback would cost seconds per million records
    import struct

    value = google_crc32c.value
    pair = struct.Struct("<I")

    def masked(data: bytes) -> int:
        crc: int = value(data)  # google_crc32c.value: the CRC as an int
        return ((((crc >> 15) | (crc << 17)) & 0xFFFFFFFF) + 0xA282EAD8) & 0xFFFFFFFF

    def check(buf: Any, pos: int, data: bytes) -> bool:
        end = pos + _HEADER + len(data)
        return bool(pair.unpack_from(buf, pos + 8)[0] == masked(buf[pos : pos + 8]) and pair.unpack_from(buf, end)[0] == masked(data))

    return check


def _record_offsets(buf: Any) -> tuple[Any, bool]:
    """Where each whole record of an event file starts (its header), and whether the file ends
    in a record cut short or with a length that runs past its end (2**63: a damaged header)."""
    import struct
    from array import array

    starts = array("Q")
    unpack = struct.Struct("<Q").unpack_from
    pos, size = 0, len(buf)
    while pos + _HEADER <= size:
        (length,) = unpack(buf, pos)
        end = pos + _HEADER + length + _FOOTER
        if end > size:
            return starts, True
        starts.append(pos)
        pos = end
    return starts, pos != size


def read_event_file(path: str, budget: int = MAX_RECORDS, notes: list[str] | None = None) -> dict[str, list[ScalarPoint]]:
    """tag → points of one event file, decoding at most ``budget`` records (evenly spaced,
    the last always among them, when the file has more). A record cut short, a damaged
    length or a record that is no event ends the file where it is; each is said in ``notes``."""
    return _read_event_file(path, budget, notes if notes is not None else [])[0]


def _read_event_file(path: str, budget: int, notes: list[str]) -> tuple[dict[str, list[ScalarPoint]], int]:
    """:func:`read_event_file`, and how many records it decoded."""
    import mmap
    import struct

    event_pb2, tensor_util = _tensorboard()
    from google.protobuf.message import DecodeError  # TensorBoard's protos bring it

    out: dict[str, list[ScalarPoint]] = {}
    decoded = 0
    try:
        with open(path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            if size == 0:
                return out, 0
            buf = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    except (OSError, ValueError) as e:
        notes.append(f"{path} could not be read ({getattr(e, 'strerror', None) or e})")
        return out, 0
    with buf:
        starts, damaged = _record_offsets(buf)
        if damaged:
            notes.append(f"{path} ends in a damaged or unfinished record; what comes before it was read")
        count = len(starts)
        picked: Any = range(count)
        if count > budget:
            budget = max(budget, 2)
            step = (count - 1) / (budget - 1)
            picked = sorted({round(i * step) for i in range(budget)})
            notes.append(f"{path} holds {count} records: {len(picked)} of them were read (evenly spaced, with the last), to bound the time")
        unpack = struct.Struct("<Q").unpack_from
        check = _checksum()
        for i in picked:
            pos = starts[i]
            (length,) = unpack(buf, pos)
            decoded += 1
            data = buf[pos + _HEADER : pos + _HEADER + length]
            if check is not None and not check(buf, pos, data):
                notes.append(f"{path}: record {i + 1} fails its checksum (damaged); the file was read up to it")
                break
            try:
                event = event_pb2.Event.FromString(data)
            except (DecodeError, RecursionError, ValueError):
                notes.append(f"{path}: record {i + 1} is not a TensorBoard event; the file was read up to it")
                break
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
    return out, decoded


def _merge(series: dict[str, list[ScalarPoint]], more: dict[str, list[ScalarPoint]]) -> None:
    for tag, points in more.items():
        series.setdefault(tag, []).extend(points)


def _settle(series: dict[str, dict[str, list[ScalarPoint]]]) -> bool:
    """Points in step order; a step logged twice (a restart) keeps its latest value. True when
    a scalar had more than :data:`MAX_POINTS` points (its last ones are kept)."""
    cut = False
    for tags in series.values():
        for tag, points in tags.items():
            by_step: dict[int, ScalarPoint] = {}
            for p in sorted(points, key=lambda p: (p.step, p.wall_time)):
                by_step[p.step] = p
            kept = list(by_step.values())
            cut = cut or len(kept) > MAX_POINTS
            tags[tag] = kept[-MAX_POINTS:]
    return cut


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
            from .outputs import walk_files

            for dirpath, name in walk_files(log_dir):
                path = os.path.join(dirpath, name)
                if "tfevents" in name and len(found) < MAX_EVENT_FILES:
                    try:
                        size = os.lstat(path).st_size
                    except OSError:
                        continue
                    if size > MAX_EVENT_FILE:
                        metrics.note = f"{path} is larger than {MAX_EVENT_FILE} bytes and was left out"
                        continue
                    found.append((_run_name(os.path.relpath(dirpath, log_dir).replace(os.sep, "/")), path))
        elif "://" not in log_dir:
            metrics.note = f"{log_dir} does not exist: the job wrote no TensorBoard logs there"
            return metrics
        else:
            raise UsageError(f"{log_dir}: tfjob reads TensorBoard logs from local paths and gs:// only")
        notes = [metrics.note] if metrics.note else []
        records = MAX_RECORDS
        points = 0
        for n, (run, path) in enumerate(found):
            # The records left are shared among the files left (a file's share at least 1,000).
            more, decoded = _read_event_file(path, max(1000, records // (len(found) - n)), notes)
            added = sum(len(v) for v in more.values())
            if points + added > MAX_TOTAL_POINTS:
                notes.append(f"more than {MAX_TOTAL_POINTS} points: the event files after {path} were left out")
                break
            points += added
            records -= min(records, decoded)
            _merge(metrics.series.setdefault(run, {}), more)
    metrics.series = {run: tags for run, tags in metrics.series.items() if tags}
    if _settle(metrics.series):
        notes.append(f"a scalar with more than {MAX_POINTS} points shows its last {MAX_POINTS}")
    metrics.note = "; ".join(dict.fromkeys(notes))
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
    from ..shown import inert

    # Run and tag names come from the job's event files: a newline or ESC in one is shown escaped.
    table = [header] + [(inert(run), inert(tag), str(p.step), f"{p.value:.6g}") for run, tag, p in rows]
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


#: At most this many panels are drawn in one figure (one per scalar, or per study parameter);
#: the figure says how many were left out.
MAX_PANELS = 30


def _plain(text: object) -> str:
    """``text`` as matplotlib shows it literally: a ``$`` would start mathtext (and a tag
    such as ``loss$x`` or ``$\\frac`` end the drawing in a parse error)."""
    return str(text).replace("$", r"\$")


def metrics_figure(metrics: JobMetrics, title: str | None = None) -> Any:
    """A matplotlib figure: one panel per tag (the first :data:`MAX_PANELS`), one curve per run."""
    plt = _pyplot()
    tags = sorted({tag for tags in metrics.series.values() for tag in tags})
    if not tags:
        raise UsageError(metrics.note or f"job {metrics.job_id} logged no scalars to draw")
    left_out = len(tags) - MAX_PANELS
    tags = tags[:MAX_PANELS]
    if left_out > 0:
        title = f"{title or f'job {metrics.job_id}'} (the first {MAX_PANELS} scalars; {left_out} more not drawn)"
    cols = min(3, len(tags))
    rows = (len(tags) + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(4.2 * cols, 3.0 * rows), squeeze=False)
    for ax, tag in zip(axes.flat, tags):
        for run, series in sorted(metrics.series.items()):
            points = series.get(tag)
            if not points:
                continue
            style = "o-" if len(points) < 30 else "-"
            ax.plot([p.step for p in points], [p.value for p in points], style, label=_plain(run), markersize=3 if len(points) > 1 else 7)
        ax.set_title(_plain(tag), fontsize=10)
        ax.set_xlabel("step", fontsize=8)
        ax.tick_params(labelsize=8)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    for ax in list(axes.flat)[len(tags) :]:
        ax.set_visible(False)
    fig.suptitle(_plain(title or f"job {metrics.job_id}"), fontsize=11)
    fig.tight_layout()
    return fig


def save_figure(fig: Any, path: str) -> None:
    """Write ``fig`` as PNG (or SVG by the file's suffix) and close it; nothing is left half
    written.

    Raises:
        LocalFileError: the file could not be written (a full disk, a read-only directory).
    """
    from .outputs import write_file

    plt = _pyplot()
    png = not path.lower().endswith(".svg")
    try:
        write_file(
            path, lambda f: fig.savefig(f, format="png" if png else "svg", dpi=110, metadata={"Software": None} if png else {"Date": None})
        )
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


def _log_axis(ax: Any) -> None:
    """A log-scale x axis whose labels can be read: 1, 2 and 5 of each decade at most, as
    plain numbers (``0.002``), no labels on the minor ticks — matplotlib's defaults label
    minor ticks in a span under a decade, in ``2×10⁻²`` form, and they overlap."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    ax.set_xscale("log")
    ax.xaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0), numticks=12))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:g}"))
    ax.xaxis.set_minor_formatter(NullFormatter())


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
    params = sorted({str(p) for t in trials for p in (t.get("params") or {})})
    left_out = len(params) - (MAX_PANELS - 1)
    params = params[: MAX_PANELS - 1]
    if left_out > 0:
        title = f"{title or 'study'} (the first {MAX_PANELS - 1} parameters; {left_out} more not drawn)"
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
    ax.plot(xs, ys, "o", label=_plain(tag), markersize=4)
    ax.step(xs, best, where="post", label="best so far")
    ax.set_title("optimisation history", fontsize=10)
    ax.set_xlabel("trial", fontsize=8)
    ax.set_ylabel(_plain(tag), fontsize=8)
    ax.legend(fontsize=7)
    ax.grid(alpha=0.3)
    for ax, name in zip(flat[1:], params):
        values = [(t.get("params") or {}).get(name) for t in trials]
        pairs = [(v, y) for v, y in zip(values, ys) if v is not None]
        if all(isinstance(v, (int, float)) for v, _ in pairs):
            ax.plot([float(v) for v, _ in pairs], [y for _, y in pairs], "o", markersize=4)
            spec: dict[str, Any] = next((p for p in study.get("parameters") or [] if p.get("name") == name), {})
            if "LOG" in str(spec.get("scale", "")).upper() and all(float(v) > 0 for v, _ in pairs):
                _log_axis(ax)
        else:  # a categorical parameter: one column per value
            cats = sorted({str(v) for v, _ in pairs})
            ax.plot([cats.index(str(v)) for v, _ in pairs], [y for _, y in pairs], "o", markersize=4)
            ax.set_xticks(range(len(cats)), [_plain(c) for c in cats])
        ax.set_title(_plain(f"{name} vs {tag}"), fontsize=10)
        ax.set_xlabel(_plain(name), fontsize=8)
        ax.grid(alpha=0.3)
    for ax in flat[panels:]:
        ax.set_visible(False)
    for ax in flat[:panels]:
        ax.tick_params(labelsize=8)
    fig.suptitle(_plain(title or "study"), fontsize=11)
    fig.tight_layout()
    return fig
