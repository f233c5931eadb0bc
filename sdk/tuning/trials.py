"""Trials of a study, the best of them, and the trials table. Pure.

The same :class:`Trial` records come from a local study (each trial a local job) and
from a Vertex AI ``HyperparameterTuningJob``'s ``trials``; they are kept in the
study's job-store record (``extra["trials"]``), so ``tfjob status STUDY`` renders the
table in any process.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Mapping, Sequence

from ..model import JobState
from .study import StudySpec

#: Trial states: a proposed trial is QUEUED; one that ended without reporting the
#: study's metric is INFEASIBLE (as on Vertex AI) and counts as failed.
TRIAL_STATES = ("QUEUED", "RUNNING", "SUCCEEDED", "INFEASIBLE", "FAILED", "CANCELLED")
FAILED_STATES = ("FAILED", "INFEASIBLE")


@dataclass
class Trial:
    """One trial of a study.

    Attributes:
        id: the trial's id (``"1"``, ``"2"``… as the platforms number them).
        params: parameter name → value.
        state: one of :data:`TRIAL_STATES`.
        metric: the study metric's value, once known.
        step: the step the metric was reported at.
        job_id: the trial's own job (a local job id, or a Vertex CustomJob name).
        message: why it failed, or other news.
        started, ended: times (seconds since the epoch).
    """

    id: str
    params: dict[str, Any]
    state: str = "QUEUED"
    metric: float | None = None
    step: int | None = None
    job_id: str | None = None
    message: str = ""
    started: float | None = None
    ended: float | None = None

    @property
    def done(self) -> bool:
        return self.state not in ("QUEUED", "RUNNING")

    @property
    def failed(self) -> bool:
        return self.state in FAILED_STATES

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "Trial":
        known = {k: data[k] for k in cls.__dataclass_fields__ if k in data}
        return cls(**known)


def best_trial(trials: Sequence[Trial], maximize: bool) -> Trial | None:
    """The SUCCEEDED trial with the best metric (the earliest on a tie), or None."""
    best: Trial | None = None
    for trial in trials:
        if trial.state != "SUCCEEDED" or trial.metric is None:
            continue
        if best is None or (trial.metric > best.metric if maximize else trial.metric < best.metric):  # type: ignore[operator]
            best = trial
    return best


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.6g}"
    return str(value)


@dataclass(frozen=True)
class TableLayout:
    """What the trials table shows: the metric's tag and the parameters' names."""

    metric: str
    parameters: tuple[str, ...] = field(default_factory=tuple)

    @classmethod
    def of(cls, study: StudySpec) -> "TableLayout":
        return cls(study.metric.tag, tuple(p.name for p in study.parameters))


def render_trials_table(layout: TableLayout, trials: Sequence[Trial], best: Trial | None = None) -> str:
    """The table: trial, state, metric, one column per parameter, then the job or why it failed.

    The best trial is marked with ``*``.
    """
    header = ["TRIAL", "STATE", layout.metric.upper(), *layout.parameters, "JOB / MESSAGE"]
    rows = []
    for t in trials:
        mark = "*" if best is not None and t.id == best.id else " "
        note = t.message if (t.failed or t.state == "CANCELLED") and t.message else (t.job_id or "")
        rows.append([f"{mark}{t.id}", t.state, _cell(t.metric), *(_cell(t.params.get(p)) for p in layout.parameters), note])
    table = [[" " + header[0], *header[1:]], *rows]
    widths = [max(len(r[i]) for r in table) for i in range(len(header))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in table)


def render_trial_line(layout: TableLayout, trial: Trial) -> str:
    """One line of news about a trial (for a log or a stream that is not a terminal)."""
    params = " ".join(f"{name}={_cell(trial.params.get(name))}" for name in layout.parameters)
    text = f"trial {trial.id} {trial.state}"
    if trial.metric is not None:
        text += f" {layout.metric}={_cell(trial.metric)}"
    text += f"  {params}"
    if trial.message and trial.done and trial.state != "SUCCEEDED":
        text += f"  ({trial.message})"
    return text


def render_best(study: StudySpec, best: Trial | None) -> str:
    """``best trial 3: accuracy=0.91 (MAXIMIZE) --learning_rate=0.01 --optimizer=adam``."""
    if best is None:
        return "no trial reported the metric; there is no best trial"
    args = " ".join(study.render_args(best.params))
    return f"best trial {best.id}: {study.metric.tag}={_cell(best.metric)} ({study.metric.goal}) {args}"


def render_study_status(extra: Mapping[str, Any]) -> str:
    """The trials table of a study's job-store record (``tfjob status``), and its best trial."""
    study = StudySpec.from_dict(extra["study"])
    trials = [Trial.from_dict(t) for t in extra.get("trials", [])]
    best = best_trial(trials, study.metric.maximize)
    failed = sum(t.failed for t in trials)
    limit = f" of {study.max_failed_trials} allowed" if study.max_failed_trials else ""
    lines = [
        f"{len(trials)} of {study.max_trials} trials, {sum(t.state == 'SUCCEEDED' for t in trials)} succeeded, "
        f"{failed} failed{limit}; {study.parallel_trials} at a time; goal {study.metric.goal} {study.metric.tag}",
        render_trials_table(TableLayout.of(study), trials, best),
        render_best(study, best) if trials else "no trial has started yet",
    ]
    return "\n".join(lines)


@dataclass
class StudyResult:
    """How a study ended, on any backend that tunes (:meth:`tfjob.Tuning.run` returns it).

    Attributes:
        id: the study's id in the job store (a Vertex AI tuning job's id there).
        state: SUCCEEDED, FAILED or CANCELLED (QUEUED: submitted, not followed).
        message: one line on why.
        trials: every trial, in order.
        best: the best trial, if any reported the metric.
        failed_trial: the trial that failed last (its job shows why).
        log_tail: the last lines of that trial's failing task.
    """

    id: str
    state: JobState
    message: str
    trials: list[Trial] = field(default_factory=list)
    best: Trial | None = None
    failed_trial: str | None = None
    log_tail: str = ""


def study_outcome(
    study_id: str,
    study: StudySpec,
    trials: list[Trial],
    failures: Sequence[Trial],
    tails: Mapping[str, str],
    stopping: str | None,
) -> StudyResult:
    """How a study tfjob drove itself ended: cancelled or stopped (``stopping``, the reason),
    failed with no trial reporting the metric, else SUCCEEDED naming the best trial.

    Args:
        failures: the failed trials, in the order they failed (the last one is named).
        tails: the last log lines of each trial, by trial id.
    """
    best = best_trial(trials, study.metric.maximize)
    last = failures[-1] if failures else None
    result = StudyResult(study_id, JobState.SUCCEEDED, "", trials, best)
    if last is not None:
        result.failed_trial = f"trial-{last.id}"
        result.log_tail = tails.get(last.id, "")
    if stopping is not None and stopping.startswith("cancelled"):
        result.state, result.message = JobState.CANCELLED, stopping
    elif stopping is not None:
        assert last is not None
        result.state, result.message = JobState.FAILED, f"{stopping}; last: trial {last.id}: {last.message}"
    elif best is None:
        result.state = JobState.FAILED
        why = f"; last: trial {last.id}: {last.message}" if last else ""
        result.message = f"no trial reported {study.metric.tag!r}{why}"
    else:
        failed = f", {len(failures)} failed" if failures else ""
        result.message = f"{len(trials)} trials{failed}; {render_best(study, best)}"
    return result
