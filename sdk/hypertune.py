"""Report metrics for hyperparameter tuning, in the file format of cloudml-hypertune.

A trainer calls :func:`report_metric` after an evaluation; the tuning service (Vertex
AI, AI Platform, or ``tfjob tune`` locally) reads the metrics file of each trial.
One JSON object per line, keys sorted, values as strings, as ``cloudml-hypertune``
writes them::

    {"accuracy": "0.8391", "global_step": "40", "timestamp": 1732291200.5, "trial": "3"}

The file is ``$CLOUD_ML_HP_METRIC_FILE``, else ``/tmp/hypertune/output.metrics``; the
trial is ``$CLOUD_ML_TRIAL_ID``, else ``$TFJOB_TRIAL`` (set by the tfjob bootstrap), else
the ``trial`` of the task in ``TF_CONFIG`` or ``CLUSTER_SPEC``, else 0.
Only the last :data:`MAX_LINES` lines are kept. Standard library only.
"""

from __future__ import annotations

import json
import math
import os
import tempfile
import time
from pathlib import Path
from typing import Any, Mapping

#: Where cloudml-hypertune writes when ``CLOUD_ML_HP_METRIC_FILE`` is unset.
DEFAULT_METRIC_FILE = "/tmp/hypertune/output.metrics"
#: The tag used when none is given (cloudml-hypertune's default).
DEFAULT_TAG = "training/hptuning/metric"
#: Lines kept in the file (cloudml-hypertune keeps the last 100 reports).
MAX_LINES = 100


def metric_file(env: Mapping[str, str] | None = None) -> Path:
    """The metrics file a trainer writes to, from ``env`` (default ``os.environ``)."""
    env = os.environ if env is None else env
    return Path(env.get("CLOUD_ML_HP_METRIC_FILE") or DEFAULT_METRIC_FILE)


def trial_id(env: Mapping[str, str] | None = None) -> str:
    """The id of the running trial (see the module docstring), ``"0"`` outside tuning."""
    env = os.environ if env is None else env
    for name in ("CLOUD_ML_TRIAL_ID", "TFJOB_TRIAL"):
        if env.get(name):
            return str(env[name])
    for name in ("TF_CONFIG", "CLUSTER_SPEC"):
        try:
            task = json.loads(env.get(name) or "{}").get("task") or {}
            trial = task.get("trial")
        except (ValueError, AttributeError):
            continue
        if trial not in (None, ""):
            return str(trial)
    return "0"


def render_metric_line(tag: str, value: float, step: int | None, trial: str, timestamp: float) -> str:
    """One line of the metrics file (without the newline).

    Raises:
        ValueError: ``value`` is not a finite number; the message names the tag.
    """
    number = float(value)
    if not math.isfinite(number):
        raise ValueError(f"metric {tag!r} is {number}: report a finite number (a NaN loss means training diverged)")
    body = {
        "timestamp": timestamp,
        "trial": str(trial),
        tag or DEFAULT_TAG: str(number),
        "global_step": str(int(step) if step else 0),
    }
    return json.dumps(body, sort_keys=True)


#: Keys of a report line that are never the metric itself.
_META = ("timestamp", "trial", "global_step", "checkpoint_path", "hyperparameterMetricTag")


def parse_metric_lines(text: str, tag: str | None = None) -> list[dict[str, Any]]:
    """The reports in a metrics file's text, oldest first. Pure.

    Each report is ``{"tag": ..., "value": float, "global_step": int | None, "trial": str,
    "timestamp": float}``. A line holds one metric under its tag; older writers name
    the tag in ``hyperparameterMetricTag`` instead, with the value under that tag or
    under ``value``. A line with several tags is a report of ``tag`` when it has that
    one, else no report. Lines that are not reports (blank, truncated by a crash, a
    value that is not a number) are skipped.
    """
    reports = []
    for line in text.splitlines():
        try:
            body = json.loads(line)
        except ValueError:
            continue
        if not isinstance(body, dict):
            continue
        named = body.get("hyperparameterMetricTag")
        if isinstance(named, str) and named:
            name, raw = named, body.get(named, body.get("value"))
        else:
            tags = [k for k in body if k not in _META]
            if tag is not None and tag in tags:
                name = tag
            elif len(tags) == 1:
                name = tags[0]
            else:
                continue
            raw = body[name]
        try:
            value = float(raw)  # type: ignore[arg-type]
            step = int(float(body["global_step"])) if body.get("global_step") not in (None, "") else None
            timestamp = float(body.get("timestamp", 0.0))
        except (TypeError, ValueError, OverflowError):
            continue
        reports.append({"tag": name, "value": value, "global_step": step, "trial": str(body.get("trial", "0")), "timestamp": timestamp})
    return reports


#: The most of a metrics file read back: its end (a trainer may write its own, unbounded).
MAX_METRIC_FILE_BYTES = 1024 * 1024


def read_metric_text(path: Path) -> str:
    """The last :data:`MAX_METRIC_FILE_BYTES` of a metrics file, whole lines only; never
    blocks on a FIFO or reads a device (either reads as empty).

    Raises:
        FileNotFoundError: there is no file.
    """
    import stat

    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    with os.fdopen(fd, "rb") as f:
        info = os.fstat(f.fileno())
        if not stat.S_ISREG(info.st_mode):
            return ""
        start = max(0, info.st_size - MAX_METRIC_FILE_BYTES)
        f.seek(start)
        data = f.read(MAX_METRIC_FILE_BYTES)
    if start:
        data = data[data.find(b"\n") + 1 :] if b"\n" in data else b""
    return data.decode("utf-8", "replace")


def report_metric(tag: str, value: float, step: int | None = None) -> Path:
    """Append one metric report to the metrics file; return the file's path.

    Args:
        tag: the metric's name, as the tuning job's ``hyperparameterMetricTag``
            (Vertex: the ``metric_id``) names it, e.g. ``accuracy``.
        value: its value (finite).
        step: the training step it was measured at.

    Raises:
        ValueError: ``value`` is not finite.

    Example:
        >>> report_metric("accuracy", 0.84, step=40)  # doctest: +SKIP
    """
    path = metric_file()
    line = render_metric_line(tag, value, step, trial_id(), time.time())
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        previous = read_metric_text(path).splitlines()
    except FileNotFoundError:
        previous = []
    kept = [ln for ln in previous if ln.strip()][-(MAX_LINES - 1) :] + [line]
    # Replace the file in one step so a reader never sees half a line; readable by
    # the tuning service as cloudml-hypertune's file is (mkstemp would make it 0600).
    mode = path.stat().st_mode & 0o777 if path.exists() else 0o644
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write("\n".join(kept) + "\n")
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


#: Set (to ``1``) in a trial's tasks where the study cannot read the task's metrics file
#: (a pod of a Kubernetes trial): the bootstrap then echoes the file's reports to stdout as
#: the trainer ends, each line after :data:`ECHO_PREFIX`, and the study reads them from the
#: task's log (:func:`metric_text_from_log`).
ECHO_ENV = "TFJOB_ECHO_METRICS"
ECHO_PREFIX = "tfjob-metric: "


def echo_metric_file(env: Mapping[str, str] | None = None, out: Any = None) -> int:
    """Print the metrics file's reports, each after :data:`ECHO_PREFIX`; return how many lines.

    Nothing is printed when there is no file (the trainer reported nothing).
    """
    import sys

    try:
        text = read_metric_text(metric_file(env))
    except (FileNotFoundError, OSError):
        return 0
    lines = [line for line in text.splitlines() if line.strip()]
    stream = sys.stdout if out is None else out
    for line in lines:
        stream.write(f"{ECHO_PREFIX}{line}\n")
    stream.flush()
    return len(lines)


def metric_text_from_log(lines: Any) -> str:
    """The metrics file's text as a task's log echoed it (lines that may carry a prefix such
    as ``[chief-0] ``); the last echo counts, as the file's last state. Pure."""
    found: list[str] = []
    for line in lines:
        at = line.find(ECHO_PREFIX)
        if at >= 0:
            found.append(line[at + len(ECHO_PREFIX) :].rstrip("\n"))
    return "\n".join(found[-MAX_LINES:])
