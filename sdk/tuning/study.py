"""Hyperparameter studies: what to tune, toward which metric, in how many trials.

A :class:`StudySpec` is pure, validated data: one :class:`MetricSpec` (the tag the
trainer reports and whether to maximize or minimize it), the :class:`ParameterSpec` s
to search (DOUBLE, INTEGER, CATEGORICAL or DISCRETE, with a scale), the trial counts
and the search algorithm. ``tfjob tune`` runs it locally with Optuna or renders it as
a Vertex AI ``studySpec``.

``--hparams FILE`` (:func:`tfjob.tuning.hparams.parse_hparams`) takes either platform's way of writing it,
YAML or JSON:

- **AI Platform (legacy)**: a ``HyperparameterSpec`` — ``goal``,
  ``hyperparameterMetricTag``, ``maxTrials``, ``maxParallelTrials``,
  ``maxFailedTrials``, ``algorithm``, ``params`` (``parameterName``, ``type``,
  ``minValue``/``maxValue``, ``categoricalValues``, ``discreteValues``,
  ``scaleType``) — bare, under ``hyperparameters:``, or inside a whole job's
  ``trainingInput:`` (whose cluster then describes each trial);
- **Vertex AI**: a ``StudySpec`` — ``metrics`` (``metricId``, ``goal``),
  ``parameters`` (``parameterId`` with one of ``doubleValueSpec``,
  ``integerValueSpec``, ``categoricalValueSpec``, ``discreteValueSpec``, and
  ``scaleType``), ``algorithm`` — bare, or under ``studySpec:`` next to
  ``maxTrialCount``, ``parallelTrialCount``, ``maxFailedTrialCount`` and optionally a
  whole ``HyperparameterTuningJob``'s ``trialJobSpec``.

Every error names the file, the key, the value and the fix.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Mapping

from ..errors import SpecError
from ..description.limits import check_platform_count
from ..description.machines import did_you_mean

#: Parameter types, as both platforms name them.
PARAMETER_TYPES = ("DOUBLE", "INTEGER", "CATEGORICAL", "DISCRETE")
#: Scale types for DOUBLE, INTEGER and DISCRETE parameters.
SCALE_TYPES = ("UNIT_LINEAR_SCALE", "UNIT_LOG_SCALE", "UNIT_REVERSE_LOG_SCALE")
GOALS = ("MAXIMIZE", "MINIMIZE")
#: ``ALGORITHM_UNSPECIFIED`` is the platform's default (Bayesian optimization; TPE locally).
ALGORITHMS = ("ALGORITHM_UNSPECIFIED", "GRID_SEARCH", "RANDOM_SEARCH")
#: Which report of a trial counts (Vertex ``measurementSelectionType``).
MEASUREMENT_SELECTIONS = ("LAST_MEASUREMENT", "BEST_MEASUREMENT")
OBSERVATION_NOISES = ("LOW", "HIGH")
#: The tag cloudml-hypertune reports under when the trainer names none.
DEFAULT_METRIC_TAG = "training/hptuning/metric"
#: Grid search enumerates every point; a bigger grid is a mistake, not a study.
MAX_GRID_POINTS = 100_000

_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_.-]*\Z")
_UNSET = ("", "NONE", "SCALE_TYPE_UNSPECIFIED")


@dataclass(frozen=True)
class MetricSpec:
    """The metric a study optimizes.

    Attributes:
        tag: the name the trainer reports it under (``hyperparameterMetricTag`` /
            Vertex ``metricId``), e.g. ``accuracy``.
        goal: ``MAXIMIZE`` or ``MINIMIZE``.
    """

    tag: str
    goal: str

    def __post_init__(self) -> None:
        if not isinstance(self.tag, str) or not self.tag.strip():
            raise SpecError("the study's metric tag is empty; name the metric the trainer reports, e.g. accuracy")
        goal = str(self.goal).strip().upper()
        if goal not in GOALS:
            raise SpecError(f"metric goal {self.goal!r} is not MAXIMIZE or MINIMIZE{did_you_mean(goal, GOALS)}")
        object.__setattr__(self, "goal", goal)

    @property
    def maximize(self) -> bool:
        return self.goal == "MAXIMIZE"

    def better(self, a: float, b: float) -> bool:
        """True when metric value ``a`` beats ``b`` for this goal."""
        return a > b if self.maximize else a < b


def _number(value: Any, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise SpecError(f"{what} {value!r} must be a finite number")
    return value


@dataclass(frozen=True)
class ParameterSpec:
    """One hyperparameter, passed to every trial's trainer as ``--name=value``.

    Attributes:
        name: the parameter (and command-line flag) name, e.g. ``learning_rate``.
        type: ``DOUBLE``, ``INTEGER``, ``CATEGORICAL`` or ``DISCRETE``.
        min_value, max_value: the bounds of a DOUBLE or INTEGER (both inclusive).
        values: the choices of a CATEGORICAL (text) or DISCRETE (numbers, increasing).
        scale: ``UNIT_LINEAR_SCALE``, ``UNIT_LOG_SCALE``, ``UNIT_REVERSE_LOG_SCALE``
            or None (linear); not for CATEGORICAL.
    """

    name: str
    type: str
    min_value: float | None = None
    max_value: float | None = None
    values: tuple[Any, ...] = ()
    scale: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not _NAME_RE.match(self.name):
            raise SpecError(
                f"parameter name {self.name!r} cannot be a command-line flag; use letters, digits, '_', '-' and '.', "
                "starting with a letter (e.g. learning_rate)"
            )
        kind = str(self.type).strip().upper()
        if kind not in PARAMETER_TYPES:
            raise SpecError(
                f"parameter {self.name}: type {self.type!r} is not known{did_you_mean(kind, PARAMETER_TYPES)}; "
                f"choose one of {', '.join(PARAMETER_TYPES)}"
            )
        object.__setattr__(self, "type", kind)
        scale = None if self.scale is None or str(self.scale).upper() in _UNSET else str(self.scale).upper()
        if scale is not None and scale not in SCALE_TYPES:
            raise SpecError(
                f"parameter {self.name}: scaleType {self.scale!r} is not known{did_you_mean(scale, SCALE_TYPES)}; "
                f"choose one of {', '.join(SCALE_TYPES)}"
            )
        object.__setattr__(self, "scale", scale)
        if kind in ("DOUBLE", "INTEGER"):
            self._check_range(kind)
        else:
            self._check_values(kind)

    def _check_range(self, kind: str) -> None:
        if self.values:
            raise SpecError(f"parameter {self.name}: a {kind} takes minValue and maxValue, not a list of values")
        if self.min_value is None or self.max_value is None:
            missing = "minValue" if self.min_value is None else "maxValue"
            raise SpecError(f"parameter {self.name}: a {kind} needs minValue and maxValue; {missing} is missing")
        low = _number(self.min_value, f"parameter {self.name}: minValue")
        high = _number(self.max_value, f"parameter {self.name}: maxValue")
        if kind == "INTEGER":
            for key, value in (("minValue", low), ("maxValue", high)):
                if isinstance(value, float) and not value.is_integer():
                    raise SpecError(f"parameter {self.name}: {key} {value!r} of an INTEGER must be a whole number")
            low, high = int(low), int(high)
        else:
            low, high = float(low), float(high)
        if not low < high:
            raise SpecError(
                f"parameter {self.name}: minValue {low} must be less than maxValue {high} "
                "(for a fixed value, pass it to the trainer after -- instead)"
            )
        if kind == "INTEGER" and not (-(2**63) <= low and high < 2**63):
            raise SpecError(f"parameter {self.name}: an INTEGER's range must fit 64 bits (±9.2e18), not {low} to {high}")
        if kind == "DOUBLE" and not math.isfinite(high - low):
            raise SpecError(
                f"parameter {self.name}: the range {low:g} to {high:g} is wider than a number holds "
                "(maxValue - minValue overflows); narrow it, or search a log scale of a positive range"
            )
        if self.scale in ("UNIT_LOG_SCALE", "UNIT_REVERSE_LOG_SCALE") and low <= 0:
            raise SpecError(f"parameter {self.name}: {self.scale} needs minValue > 0, not {low}; use UNIT_LINEAR_SCALE")
        object.__setattr__(self, "min_value", low)
        object.__setattr__(self, "max_value", high)

    def _check_values(self, kind: str) -> None:
        key = "categoricalValues" if kind == "CATEGORICAL" else "discreteValues"
        if self.min_value is not None or self.max_value is not None:
            raise SpecError(f"parameter {self.name}: a {kind} takes {key}, not minValue/maxValue")
        if isinstance(self.values, (str, bytes)) or not self.values:
            raise SpecError(f"parameter {self.name}: a {kind} needs a non-empty list {key}")
        if kind == "CATEGORICAL":
            if self.scale is not None:
                raise SpecError(f"parameter {self.name}: a CATEGORICAL has no scaleType; remove it")
            values: tuple[Any, ...] = tuple(self._text(v) for v in self.values)
        else:
            numbers = [_number(v, f"parameter {self.name}: discrete value") for v in self.values]
            values = tuple(sorted(float(v) for v in numbers))
            if self.scale in ("UNIT_LOG_SCALE", "UNIT_REVERSE_LOG_SCALE") and values[0] <= 0:
                raise SpecError(f"parameter {self.name}: {self.scale} needs values > 0, not {values[0]:g}")
        counts = Counter(values)  # linear: 40,000 values are checked in milliseconds
        dupes = sorted({str(v) for v, n in counts.items() if n > 1})
        if dupes:
            raise SpecError(f"parameter {self.name}: {key} lists {', '.join(dupes)} more than once")
        object.__setattr__(self, "values", values)

    def _text(self, value: Any) -> str:
        # YAML reads `- 128` as a number; the platforms take categories as text.
        if isinstance(value, bool) or not isinstance(value, (str, int, float)) or value == "":
            raise SpecError(f"parameter {self.name}: categorical value {value!r} must be non-empty text")
        if isinstance(value, str) and "\0" in value:
            raise SpecError(
                f"parameter {self.name}: categorical value {value!r:.60} holds a NUL character, which no "
                "command-line argument can carry (each trial gets --NAME=VALUE)"
            )
        return str(value)

    # -- values -----------------------------------------------------------------------
    def format_value(self, value: Any) -> str:
        """How a value appears on the trainer's command line (``0.01``, ``64``, ``adam``)."""
        if self.type == "CATEGORICAL":
            return str(value)
        if self.type == "INTEGER":
            return str(int(value))
        number = float(value)
        if self.type == "DISCRETE" and number.is_integer():
            return str(int(number))  # `--batch_size=64` parses as int and as float
        return repr(number)

    def render_arg(self, value: Any) -> str:
        """``--name=value``, as the platforms append it to the trainer's arguments."""
        return f"--{self.name}={self.format_value(value)}"

    def grid(self) -> list[Any]:
        """Every value grid search tries.

        Raises:
            SpecError: a DOUBLE has no grid (the platforms refuse GRID_SEARCH with one).
        """
        if self.type == "DOUBLE":
            raise SpecError(
                f"parameter {self.name} is a DOUBLE, and GRID_SEARCH needs INTEGER, CATEGORICAL or DISCRETE "
                "parameters; list the values as DISCRETE, or use RANDOM_SEARCH / ALGORITHM_UNSPECIFIED"
            )
        if self.type == "INTEGER":
            assert self.min_value is not None and self.max_value is not None
            return list(range(int(self.min_value), int(self.max_value) + 1))
        return list(self.values)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "type": self.type}
        if self.type in ("DOUBLE", "INTEGER"):
            out.update(min_value=self.min_value, max_value=self.max_value)
        else:
            out["values"] = list(self.values)
        if self.scale:
            out["scale"] = self.scale
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "ParameterSpec":
        return cls(
            data["name"], data["type"], data.get("min_value"), data.get("max_value"), tuple(data.get("values", ())), data.get("scale")
        )


@dataclass(frozen=True)
class StudySpec:
    """A hyperparameter study.

    Attributes:
        metric: what to optimize.
        parameters: what to search, in the order they are passed to the trainer.
        max_trials: how many trials in all (legacy ``maxTrials``, Vertex ``maxTrialCount``).
        parallel_trials: how many run at once.
        max_failed_trials: the study fails once this many trials failed; 0 lets
            the runner decide (locally: only when every trial failed).
        algorithm: ``ALGORITHM_UNSPECIFIED`` (Bayesian optimization; TPE locally),
            ``GRID_SEARCH`` or ``RANDOM_SEARCH``.
        measurement: ``LAST_MEASUREMENT`` (default: a trial's last report counts) or
            ``BEST_MEASUREMENT`` (its best report).
        observation_noise: Vertex's hint ``LOW`` / ``HIGH``, or None.
    """

    metric: MetricSpec
    parameters: tuple[ParameterSpec, ...]
    max_trials: int = 1
    parallel_trials: int = 1
    max_failed_trials: int = 0
    algorithm: str = "ALGORITHM_UNSPECIFIED"
    measurement: str = "LAST_MEASUREMENT"
    observation_noise: str | None = None

    def __post_init__(self) -> None:
        params = tuple(self.parameters)
        if not params:
            raise SpecError("the study has no parameters to tune; list at least one under params / parameters")
        names = [p.name for p in params]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise SpecError(f"parameter {dupes[0]!r} is listed more than once; give each parameter one entry")
        object.__setattr__(self, "parameters", params)
        for name, value, low in (
            ("maxTrials", self.max_trials, 1),
            ("maxParallelTrials", self.parallel_trials, 1),
            ("maxFailedTrials", self.max_failed_trials, 0),
        ):
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                raise SpecError(f"{name} {value!r} must be a whole number ≥ {low}")
            check_platform_count(name, value)
        if self.parallel_trials > self.max_trials:
            raise SpecError(
                f"maxParallelTrials {self.parallel_trials} is more than maxTrials {self.max_trials}; lower it or raise maxTrials"
            )
        for attr, allowed, key in (
            ("algorithm", ALGORITHMS, "algorithm"),
            ("measurement", MEASUREMENT_SELECTIONS, "measurementSelectionType"),
        ):
            word = str(getattr(self, attr)).strip().upper()
            if word not in allowed:
                raise SpecError(
                    f"{key} {getattr(self, attr)!r} is not known{did_you_mean(word, allowed)}; choose one of {', '.join(allowed)}"
                )
            object.__setattr__(self, attr, word)
        if self.observation_noise is not None:
            noise = str(self.observation_noise).upper()
            if noise not in OBSERVATION_NOISES:
                raise SpecError(f"observationNoise {self.observation_noise!r} must be LOW or HIGH")
            object.__setattr__(self, "observation_noise", noise)
        if self.algorithm == "GRID_SEARCH":
            size = self.grid_size()
            if size > MAX_GRID_POINTS:
                raise SpecError(f"the grid has {size} points (more than {MAX_GRID_POINTS}); narrow the INTEGER ranges")

    def parameter(self, name: str) -> ParameterSpec:
        """The parameter called ``name``."""
        for p in self.parameters:
            if p.name == name:
                return p
        raise KeyError(name)

    def grid_size(self) -> int:
        """How many points GRID_SEARCH can try (SpecError when a parameter is a DOUBLE)."""
        size = 1
        for p in self.parameters:
            size *= len(p.grid()) if p.type != "INTEGER" else int(p.max_value or 0) - int(p.min_value or 0) + 1
            if size > MAX_GRID_POINTS:
                # Stop multiplying: the exact size does not matter past the limit.
                return size
        return size

    def render_args(self, values: Mapping[str, Any]) -> list[str]:
        """The trainer arguments of one trial: ``--name=value`` for each parameter, in order."""
        return [p.render_arg(values[p.name]) for p in self.parameters]

    def replace(self, **changes: Any) -> "StudySpec":
        """A copy with some fields changed (validated again)."""
        import dataclasses

        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-able dict; :meth:`from_dict` rebuilds an equal study."""
        return {
            "metric": {"tag": self.metric.tag, "goal": self.metric.goal},
            "parameters": [p.to_dict() for p in self.parameters],
            "max_trials": self.max_trials,
            "parallel_trials": self.parallel_trials,
            "max_failed_trials": self.max_failed_trials,
            "algorithm": self.algorithm,
            "measurement": self.measurement,
            "observation_noise": self.observation_noise,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "StudySpec":
        values = dict(data)
        values["metric"] = MetricSpec(**data["metric"])
        values["parameters"] = tuple(ParameterSpec.from_dict(p) for p in data["parameters"])
        return cls(**values)


@dataclass(frozen=True)
class HparamsConfig:
    """What an ``--hparams`` file says.

    Attributes:
        study: the study.
        job: keyword arguments of :class:`tfjob.Job` from the file's cluster part
            (``trainingInput`` / ``trialJobSpec``); empty when it has none.
        dialect: ``ai-platform`` (legacy spelling) or ``vertex``.
        source: the file.
    """

    study: StudySpec
    job: dict[str, Any] = field(default_factory=dict)
    dialect: str = "vertex"
    source: str = "hparams"
