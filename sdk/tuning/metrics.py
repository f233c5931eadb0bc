"""A trial's metric, read back from the file the trainer reported to.

Trainers report with the cloudml-hypertune convention (:func:`tfjob.report_metric`
writes the same): one JSON object per line, the metric under its tag,
``{"accuracy": "0.91", "global_step": "40", "timestamp": …, "trial": "3"}``. Older
writers name the tag in a ``hyperparameterMetricTag`` key instead, with the value
under that tag or under ``value``; both shapes are read.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path


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


def parse_trial_metric(text: str, tag: str, maximize: bool, best: bool = False) -> MetricReading:
    """The study metric in a metrics file's text. Pure.

    Args:
        text: the file's content (read with :func:`tfjob.hypertune.parse_metric_lines`).
        tag: the study's metric tag.
        maximize: the goal (used with ``best``).
        best: the best report counts (``BEST_MEASUREMENT``), else the last one.

    Values that are not finite numbers are skipped.
    """
    from ..hypertune import parse_metric_lines

    reports = parse_metric_lines(text, tag)
    seen = tuple(dict.fromkeys(r["tag"] for r in reports))
    mine = [r for r in reports if r["tag"] == tag and math.isfinite(r["value"])]
    if not mine:
        return MetricReading(None, None, 0, seen)
    if best:
        chosen = (max if maximize else min)(mine, key=lambda r: r["value"])
    else:
        chosen = mine[-1]
    return MetricReading(chosen["value"], chosen["global_step"], len(mine), seen)


def fetch_trial_metric(path: Path, tag: str, maximize: bool, best: bool = False) -> MetricReading:
    """:func:`parse_trial_metric` of the file at ``path`` (no file: nothing reported)."""
    from ..hypertune import read_metric_text

    try:
        text = read_metric_text(path)
    except FileNotFoundError:
        return MetricReading(None)
    return parse_trial_metric(text, tag, maximize, best)
