"""A trial's metric, read back from the file the trainer reported to.

Trainers report with the cloudml-hypertune convention (:func:`tfjob.report_metric`
writes the same): one JSON object per line, the metric under its tag,
``{"accuracy": "0.91", "global_step": "40", "timestamp": …, "trial": "3"}``. Older
writers name the tag in a ``hyperparameterMetricTag`` key instead, with the value
under that tag or under ``value``; both shapes are read.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

#: Keys of a report line that are never the metric itself.
_META = ("timestamp", "trial", "global_step", "checkpoint_path", "hyperparameterMetricTag")


@dataclass(frozen=True)
class MetricReading:
    """What a trial's metrics file says about the study's metric.

    Attributes:
        value: the value that counts (last or best report), or None if it was never reported.
        step: the step of that report.
        reports: how many reports of the metric there were.
        tags: every tag seen in the file (to tell a user who reported the wrong one).
    """

    value: float | None
    step: int | None = None
    reports: int = 0
    tags: tuple[str, ...] = ()


def _report(body: dict[str, object], tag: str) -> tuple[str | None, object]:
    """(tag of the line, its raw value) for one parsed line."""
    named = body.get("hyperparameterMetricTag")
    if isinstance(named, str) and named:
        return named, body.get(named, body.get("value"))
    tags = [k for k in body if k not in _META]
    if tag in tags:
        return tag, body[tag]
    return (tags[0], body[tags[0]]) if len(tags) == 1 else (None, None)


def parse_trial_metric(text: str, tag: str, maximize: bool, best: bool = False) -> MetricReading:
    """The study metric in a metrics file's text. Pure.

    Args:
        text: the file's content.
        tag: the study's metric tag.
        maximize: the goal (used with ``best``).
        best: the best report counts (``BEST_MEASUREMENT``), else the last one.

    Lines that cannot be read (blank, cut short by a crash) and values that are not
    finite numbers are skipped.
    """
    chosen: tuple[float, int | None] | None = None
    seen: list[str] = []
    count = 0
    for line in text.splitlines():
        try:
            body = json.loads(line)
        except ValueError:
            continue
        if not isinstance(body, dict):
            continue
        name, raw = _report(body, tag)
        if name is None:
            continue
        if name not in seen:
            seen.append(name)
        if name != tag:
            continue
        try:
            value = float(raw)  # type: ignore[arg-type]
            step = int(float(body["global_step"])) if body.get("global_step") not in (None, "") else None  # type: ignore[arg-type]
        except (TypeError, ValueError):
            continue
        if not math.isfinite(value):
            continue
        count += 1
        if chosen is None or not best or (value > chosen[0] if maximize else value < chosen[0]):
            chosen = (value, step)
    if chosen is None:
        return MetricReading(None, None, 0, tuple(seen))
    return MetricReading(chosen[0], chosen[1], count, tuple(seen))


def fetch_trial_metric(path: Path, tag: str, maximize: bool, best: bool = False) -> MetricReading:
    """:func:`parse_trial_metric` of the file at ``path`` (no file: nothing reported)."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        return MetricReading(None)
    return parse_trial_metric(text, tag, maximize, best)
