"""``tfjob report``: one self-contained HTML page about a job — its spec, a timeline of every
task (start, end, state, exit or signal, restarts), its diagnosis, its metric curves or its
study's plots, its outputs and the last lines of a failing task.

Self-contained: styles inline, figures as inline SVG, no script and nothing fetched. The
page is rendered by :func:`render_report` (pure) from what :func:`gather` reads.
"""

from __future__ import annotations

import html
import json
import signal as _signal
import time
from dataclasses import dataclass, field
from typing import Any

from ..model import JobStatus, TaskStatus
from ..results import Diagnosis, JobMetrics, JobOutputs

_STATE_COLOURS = {
    "SUCCEEDED": "#2e7d32", "FAILED": "#c62828", "RUNNING": "#1565c0", "STOPPED": "#757575",
    "CANCELLED": "#6d4c41", "LOST": "#6a1b9a", "PENDING": "#f9a825", "QUEUED": "#f9a825", "CANCELLING": "#6d4c41",
    "UNKNOWN": "#757575",
}  # fmt: skip

_CSS = """
body{font:14px/1.45 system-ui,-apple-system,'Segoe UI',Roboto,sans-serif;margin:24px auto;max-width:1100px;color:#212121;padding:0 16px}
h1{font-size:22px;margin:0 0 4px}h2{font-size:17px;margin:28px 0 8px;border-bottom:1px solid #ddd;padding-bottom:4px}
table{border-collapse:collapse;margin:6px 0}td,th{padding:3px 10px;text-align:left;border-bottom:1px solid #eee;vertical-align:top}
th{background:#fafafa;font-weight:600}.num{text-align:right;font-variant-numeric:tabular-nums}
.state{color:#fff;border-radius:3px;padding:1px 6px;font-size:12px;font-weight:600}
pre{background:#f6f8fa;border:1px solid #e1e4e8;padding:10px;overflow-x:auto;font-size:12px;white-space:pre-wrap;word-break:break-all}
.diag{border-left:4px solid #c62828;background:#fff5f5;padding:8px 12px;margin:8px 0}.diag b{display:block}
.muted{color:#757575}.figure svg{max-width:100%;height:auto}
"""


@dataclass
class ReportData:
    """Everything a report shows (gathered by :func:`gather`)."""

    status: JobStatus
    spec: dict[str, Any] = field(default_factory=dict)
    events: list[tuple[float, str, str]] = field(default_factory=list)
    diagnoses: list[Diagnosis] = field(default_factory=list)
    outputs: JobOutputs | None = None
    metrics: JobMetrics | None = None
    metrics_svg: str = ""
    study_svg: str = ""
    notes: list[str] = field(default_factory=list)
    generated: float = field(default_factory=time.time)


def _e(value: Any) -> str:
    return html.escape(str(value), quote=True)


def _when(ts: float | None) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(ts)) if ts else "–"


def _duration(start: float | None, end: float | None) -> str:
    if start is None or end is None:
        return "–"
    seconds = max(0.0, end - start)
    return f"{seconds:.1f}s" if seconds < 120 else f"{int(seconds // 60)}m{int(seconds % 60):02d}s"


def _state(value: str) -> str:
    return f'<span class="state" style="background:{_STATE_COLOURS.get(value, "#546e7a")}">{_e(value)}</span>'


def _how(task: TaskStatus) -> str:
    if task.signal:
        try:
            return f"signal {_signal.Signals(task.signal).name}"
        except ValueError:
            return f"signal {task.signal}"
    return f"exit {task.exit_code}" if task.exit_code is not None else "–"


def _restarts(task: TaskStatus) -> str:
    count = int(getattr(task, "restarts", 0) or 0)
    history = getattr(task, "restart_history", None) or []
    if not count and not history:
        return "0"
    said = []
    for r in history[-5:]:
        how = f"signal {r.signal}" if r.signal else (f"exit {r.exit_code}" if r.exit_code is not None else "")
        said.append(" ".join(x for x in (_when(r.time)[11:], r.reason, how) if x))
    return _e(str(count)) + (f'<br><span class="muted">{_e("; ".join(said))}</span>' if said else "")


def timeline_svg(status: JobStatus, now: float | None = None) -> str:
    """Each task as a bar from its start to its end (or now), coloured by its state. Pure."""
    tasks = [t for t in status.tasks if t.started is not None]
    if not tasks:
        return ""
    now = now if now is not None else time.time()
    t0 = min([t.started for t in tasks if t.started is not None] + ([status.started] if status.started else []))
    t1 = max([(t.ended or status.ended or now) for t in tasks] + ([status.ended] if status.ended else []))
    span = max(t1 - t0, 1e-3)
    label_w, width, row = 110, 760, 22
    height = row * len(tasks) + 28
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{label_w + width + 20}" height="{height}" role="img" aria-label="task timeline">'
    ]
    for i, t in enumerate(tasks):
        y = 4 + i * row
        start = (t.started - t0) / span * width  # type: ignore[operator]
        end = ((t.ended or status.ended or now) - t0) / span * width
        colour = _STATE_COLOURS.get(t.state.value, "#546e7a")
        parts.append(f'<text x="0" y="{y + 14}" font-size="12" font-family="monospace">{_e(t.name)}</text>')
        parts.append(
            f'<rect x="{label_w + start:.1f}" y="{y + 2}" width="{max(end - start, 2):.1f}" height="{row - 6}" fill="{colour}" rx="2">'
            f"<title>{_e(t.name)} {_e(t.state.value)} {_e(_how(t))}</title></rect>"
        )
        for r in getattr(t, "restart_history", None) or []:
            x = label_w + (r.time - t0) / span * width
            parts.append(f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{y}" y2="{y + row - 2}" stroke="#000" stroke-width="2"/>')
    axis_y = 4 + len(tasks) * row + 14
    parts.append(f'<text x="{label_w}" y="{axis_y}" font-size="11" fill="#757575">{_e(_when(t0))}</text>')
    parts.append(
        f'<text x="{label_w + width}" y="{axis_y}" font-size="11" fill="#757575" text-anchor="end">+{_e(_duration(t0, t1))}</text>'
    )
    parts.append("</svg>")
    return "".join(parts)


#: What a report shows in place of an environment variable's value.
HIDDEN = "(value not shown)"


def redacted_spec(spec: dict[str, Any]) -> dict[str, Any]:
    """``spec`` with the value of every environment variable (``--env``, the job's and each
    pool's) hidden: a report is made to be shared, and ``--env`` carries passwords and keys
    (``tfjob status`` shows none either). The names stay. Pure."""

    def hide(env: Any) -> Any:
        return {str(k): HIDDEN for k in env} if isinstance(env, dict) else HIDDEN if env else env

    out = dict(spec)
    if "env" in out:
        out["env"] = hide(out["env"])
    if isinstance(out.get("pools"), list):
        out["pools"] = [{**p, "env": hide(p["env"])} if isinstance(p, dict) and "env" in p else p for p in out["pools"]]
    return out


def render_report(data: ReportData) -> str:
    """The page. Pure."""
    out = _summary(data)
    for section in (_diagnoses, _tasks, _study, _metrics, _outputs, _log_tail, _history, _spec):
        out += section(data)
    out += [f'<p class="muted">{_e(note)}</p>' for note in data.notes]
    out.append("</body></html>")
    return "\n".join(out) + "\n"


def _summary(data: ReportData) -> list[str]:
    """The page's head, title and the job's table (times, cost, attempts)."""
    s = data.status
    out = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>tfjob report: {_e(s.id)}</title>",
        f"<style>{_CSS}</style></head><body>",
        f"<h1>Job {_e(s.id)} {_state(s.state.value)}</h1>",
        f'<div class="muted">{_e(s.name)} · backend {_e(s.backend)} · report made {_e(_when(data.generated))}</div>',
        "<table>",
    ]
    rows = [
        ("created", _when(s.created)), ("started", _when(s.started)), ("ended", _when(s.ended)),
        ("duration", _duration(s.started, s.ended)),
    ]  # fmt: skip
    if s.message:
        rows.insert(0, ("message", s.message))
    if s.failed_task:
        rows.append(("failed task", s.failed_task))
    from ..pricing import ran_cost

    cost = ran_cost(s, data.generated)
    if cost is not None:
        rows.append(("estimated cost", cost["text"]))
    attempts = s.extra.get("attempts")
    if isinstance(attempts, list) and len(attempts) > 1:
        for n, attempt in enumerate(attempts[:100], 1):
            if isinstance(attempt, dict):
                said = " ".join(str(attempt.get(k) or "") for k in ("region", "state", "reason")).strip()
                rows.append((f"attempt {n}", f"{str(attempt.get('resource_name', ''))[:200]} {said}".strip()))
    out += [f"<tr><th>{_e(k)}</th><td>{_e(v)}</td></tr>" for k, v in rows]
    out.append("</table>")
    return out


def _diagnoses(data: ReportData) -> list[str]:
    if not data.diagnoses:
        return []
    out = ["<h2>Diagnosis</h2>"]
    for d in data.diagnoses:
        out.append(
            f'<div class="diag"><b>{_e(d.task or "job")}: {_e(d.cause)}{"" if d.certain else " (inferred)"}</b>'
            f"fix: {_e(d.fix)}" + (f'<br><span class="muted">seen: {_e(d.evidence)}</span>' if d.evidence else "") + "</div>"
        )
    return out


def _tasks(data: ReportData) -> list[str]:
    s = data.status
    if not s.tasks:
        return []
    out = ["<h2>Tasks</h2>"]
    svg = timeline_svg(s)
    if svg:
        out.append(f'<div class="figure">{svg}</div>')
    out.append(
        "<table><tr><th>task</th><th>state</th><th>start</th><th>end</th><th>duration</th><th>exit / signal</th><th>restarts</th><th>reason</th></tr>"
    )
    for t in s.tasks:
        out.append(
            f"<tr><td>{_e(t.name)}</td><td>{_state(t.state.value)}</td><td>{_e(_when(t.started))}</td><td>{_e(_when(t.ended))}</td>"
            f'<td class="num">{_e(_duration(t.started, t.ended))}</td><td>{_e(_how(t))}</td><td class="num">{_restarts(t)}</td>'
            f"<td>{_e(t.reason or '')}</td></tr>"
        )
    out.append("</table>")
    return out


def _study(data: ReportData) -> list[str]:
    s = data.status
    if s.extra.get("kind") != "study":
        return []
    out = ["<h2>Study</h2>"]
    from ..tuning.trials import render_study_status

    try:
        out.append(f"<pre>{_e(render_study_status(s.extra))}</pre>")
    except Exception as e:  # a study record this tfjob cannot read: say so, keep the page
        out.append(f'<p class="muted">trials could not be read: {_e(e)}</p>')
    if data.study_svg:
        out.append(f'<div class="figure">{data.study_svg}</div>')
    return out


def _metrics(data: ReportData) -> list[str]:
    same_note = data.outputs is not None and data.metrics is not None and data.metrics.note == data.outputs.note
    if data.metrics is None or not (data.metrics.series or (data.metrics.note and not same_note)):
        return []
    out = ["<h2>Metrics</h2>"]
    if data.metrics.series:
        out.append(f'<div class="muted">TensorBoard logs: {_e(data.metrics.log_dir)}</div>')
        out.append("<table><tr><th>run</th><th>scalar</th><th>step</th><th>last value</th></tr>")
        for run, tags in sorted(data.metrics.series.items()):
            for tag, points in sorted(tags.items()):
                if points:
                    p = points[-1]
                    out.append(
                        f'<tr><td>{_e(run)}</td><td>{_e(tag)}</td><td class="num">{p.step}</td><td class="num">{p.value:.6g}</td></tr>'
                    )
        out.append("</table>")
    if data.metrics_svg:
        out.append(f'<div class="figure">{data.metrics_svg}</div>')
    if data.metrics.note and not same_note:
        out.append(f'<p class="muted">{_e(data.metrics.note)}</p>')
    return out


def _outputs(data: ReportData) -> list[str]:
    if data.outputs is None:
        return []
    o = data.outputs
    out = ["<h2>Outputs</h2>"]
    if o.root:
        out.append("<table>")
        for k, v in (
            ("job dir", o.root),
            ("model", o.model_uri),
            ("checkpoint", o.checkpoint_uri),
            ("TensorBoard logs", o.tensorboard_uri),
        ):
            if v:
                out.append(f"<tr><th>{_e(k)}</th><td><code>{_e(v)}</code></td></tr>")
        out.append("</table>")
    if o.files:
        kinds: dict[str, list[int]] = {}
        for f in o.files:
            kinds.setdefault(f.kind, []).append(f.size)
        out.append("<table><tr><th>kind</th><th>files</th><th>bytes</th></tr>")
        out += [f'<tr><td>{_e(k)}</td><td class="num">{len(v)}</td><td class="num">{sum(v)}</td></tr>' for k, v in sorted(kinds.items())]
        out.append("</table>")
    if o.note:
        out.append(f'<p class="muted">{_e(o.note)}</p>')
    return out


def _log_tail(data: ReportData) -> list[str]:
    s = data.status
    tail = str(s.extra.get("log_tail") or "")
    if tail and s.failed_task:
        return [f"<h2>Last lines of {_e(s.failed_task)}</h2><pre>{_e(tail)}</pre>"]
    return []


def _history(data: ReportData) -> list[str]:
    if not data.events:
        return []
    out = ["<h2>History</h2><table>"]
    out += [
        f'<tr><td style="white-space:nowrap">{_e(_when(ts))}</td><td>{_state(state)}</td><td>{_e(msg)}</td></tr>'
        for ts, state, msg in data.events
    ]
    out.append("</table>")
    return out


def _spec(data: ReportData) -> list[str]:
    if not data.spec:
        return []
    # What was set: the keys left at their empty default are left out.
    given = {k: v for k, v in redacted_spec(data.spec).items() if v not in (None, False, [], {}, "")}
    if data.status.backend == "local":
        given = _as_run_here(given)
    return [f"<h2>Spec</h2><pre>{_e(json.dumps(given, indent=2, sort_keys=True, default=str))}</pre>"]


def _as_run_here(spec: dict[str, Any]) -> dict[str, Any]:
    """A local job's spec with each pool's machine as it ran: this machine, not the cloud
    machine type the spec carries for the platforms (``n1-standard-4`` by default)."""
    pools = spec.get("pools")
    if not isinstance(pools, list):
        return spec
    shown = []
    for pool in pools:
        if isinstance(pool, dict) and "machine" in pool:
            how = "a container" if pool.get("image") or spec.get("image") else "a process"
            pool = {**pool, "machine": f"this machine: {how} per task (local; a cloud machine type does not apply)"}
        shown.append(pool)
    return {**spec, "pools": shown}


def gather(handle: Any) -> ReportData:
    """What :func:`render_report` shows, read for ``handle`` (a :class:`tfjob.JobHandle`).

    Parts that cannot be had (no TensorBoard, no matplotlib, an unreachable job dir) become
    a note on the page instead of an error.
    """
    from ..errors import TfjobError

    status = handle.status()
    data = ReportData(status)
    data.events = [(ts, state.value, message) for ts, state, message in handle.events()]
    spec = handle.spec()
    if spec is not None:
        data.spec = spec
    data.diagnoses = handle.diagnose(status)
    try:
        data.outputs = handle.outputs()
    except TfjobError as e:
        data.notes.append(f"outputs: {e}")
    if status.extra.get("kind") == "study":
        from .metrics import figure_svg, study_figure

        try:
            data.study_svg = figure_svg(study_figure(status.extra, title=f"study {status.id}"))
        except TfjobError as e:
            data.notes.append(f"study plots: {e}")
        return data
    try:
        data.metrics = handle.metrics()
        if data.metrics.series:
            from .metrics import figure_svg, metrics_figure

            data.metrics_svg = figure_svg(metrics_figure(data.metrics, title=f"job {status.id}"))
    except TfjobError as e:
        data.notes.append(f"metrics: {e}")
    return data
