"""Reading ``--hparams`` documents into a :class:`~tfjob.tuning.study.StudySpec`. Pure.

The shapes accepted (see :mod:`tfjob.tuning.study`): a legacy ``HyperparameterSpec`` bare,
under ``hyperparameters:`` or in a job's ``trainingInput:``; a Vertex ``StudySpec``
bare, under ``studySpec:`` with the trial counts, or in a whole
``HyperparameterTuningJob`` with its ``trialJobSpec``. The cluster parts of a whole
job are read by :func:`tfjob.config.job.parse_job_config`, the same reader as
``tfjob submit --config``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping, Sequence

from ..config.document import ConfigDoc
from ..config.files import read_config_file
from ..errors import ConfigFileError
from ..description.knobs import Knob
from .study import DEFAULT_METRIC_TAG, HparamsConfig, MetricSpec, ParameterSpec, StudySpec

LEGACY_KEYS = (
    "goal",
    "hyperparameterMetricTag",
    "params",
    "maxTrials",
    "maxParallelTrials",
    "maxFailedTrials",
    "algorithm",
    "enableTrialEarlyStopping",
)
LEGACY_PARAM_KEYS = ("parameterName", "type", "minValue", "maxValue", "categoricalValues", "discreteValues", "scaleType")
STUDY_SPEC_KEYS = ("metrics", "parameters", "algorithm", "measurementSelectionType", "observationNoise")
METRIC_KEYS = ("metricId", "goal")
PARAMETER_KEYS = ("parameterId", "doubleValueSpec", "integerValueSpec", "categoricalValueSpec", "discreteValueSpec", "scaleType")
#: Vertex value specs → the parameter type they make.
VALUE_SPECS = {
    "doubleValueSpec": "DOUBLE",
    "integerValueSpec": "INTEGER",
    "categoricalValueSpec": "CATEGORICAL",
    "discreteValueSpec": "DISCRETE",
}
COUNT_KEYS = ("maxTrialCount", "parallelTrialCount", "maxFailedTrialCount")

_NO_EARLY_STOP = "tfjob tune runs every trial to its end (no automated early stopping); remove it"
#: Keys the platforms have that tfjob tune cannot honour, with what to do instead.
UNSUPPORTED: dict[str, str] = {
    "resumePreviousJobId": "tfjob tune starts every study afresh; remove it",
    "decayCurveStoppingSpec": _NO_EARLY_STOP,
    "medianAutomatedStoppingSpec": _NO_EARLY_STOP,
    "convexAutomatedStoppingSpec": _NO_EARLY_STOP,
    "studyStoppingConfig": "tfjob tune stops after maxTrialCount trials; remove it",
    "conditionalParameterSpecs": "tfjob tune searches flat parameter spaces (no conditional parameters); remove it",
    "safetyConfig": "tfjob tune has no safety metrics; remove it",
    "defaultValue": "tfjob tune does not seed the search with default values; remove it",
}


class _Doc(ConfigDoc):
    """A study document: the config reader's checks, with the study's own unsupported keys."""

    unsupported = UNSUPPORTED

    def mapping(self, value: Any, path: str) -> dict[str, Any]:
        if not isinstance(value, Mapping):
            raise self.error(path, f"must be a mapping of keys to values, not {type(value).__name__} {value!r}")
        return dict(value)

    def items(self, value: Any, path: str) -> list[Any]:
        if isinstance(value, (str, bytes)) or not isinstance(value, (list, tuple)):
            raise self.error(path, f"must be a list (one item per line, each starting with '- '), not {value!r}")
        return list(value)

    def text(self, value: Any, path: str, required: bool = False) -> str | None:
        if value is None:
            if required:
                raise self.error(path, "is missing")
            return None
        if not isinstance(value, str) or not value.strip():
            raise self.error(path, f"{value!r} must be non-empty text")
        return value.strip()

    def optional_count(self, value: Any, path: str) -> int | None:
        # int32/int64 fields: numbers in hand-written YAML, strings in the API's JSON ("8").
        if value is None:
            return None
        if isinstance(value, str) and _integer_text(value):
            value = int(value)
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.error(path, f"{value!r} must be a whole number")
        return value

    def number(self, value: Any, path: str) -> float | int | None:
        if value is None:
            return None
        if isinstance(value, str):
            try:
                value = int(value) if _integer_text(value) else float(value)
            except ValueError:
                raise self.error(path, f"{value!r} must be a number") from None
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise self.error(path, f"{value!r} must be a number")
        return value


def _counts(doc: _Doc, data: Mapping[str, Any], keys: tuple[str, str, str], prefix: str) -> dict[str, Any]:
    """StudySpec's keywords for the counts given (max_trials, parallel_trials, max_failed_trials)."""
    out: dict[str, Any] = {}
    for key, attr in zip(keys, ("max_trials", "parallel_trials", "max_failed_trials")):
        value = doc.optional_count(data.get(key), f"{prefix}{key}")
        if value is not None:
            out[attr] = value
    return out


def parse_legacy_study(data: Any, doc: _Doc, path: str) -> StudySpec:
    """A legacy ``HyperparameterSpec`` (``trainingInput.hyperparameters``)."""
    spec = doc.mapping(data, path)
    doc.check_keys(spec, path, LEGACY_KEYS)
    prefix = f"{path}." if path else ""
    if spec.get("enableTrialEarlyStopping"):
        raise doc.error(f"{prefix}enableTrialEarlyStopping", f"is not supported: {_NO_EARLY_STOP}")
    goal = doc.text(spec.get("goal"), f"{prefix}goal")
    if goal is None or goal.upper() == "GOAL_TYPE_UNSPECIFIED":
        raise doc.error(f"{prefix}goal", "is missing; write goal: MAXIMIZE or goal: MINIMIZE")
    tag = doc.text(spec.get("hyperparameterMetricTag"), f"{prefix}hyperparameterMetricTag") or DEFAULT_METRIC_TAG
    with doc.at(f"{prefix}goal"):
        metric = MetricSpec(tag, goal)
    if spec.get("params") is None:
        raise doc.error(f"{prefix}params", "is missing; list the parameters to tune (parameterName, type, minValue, maxValue…)")
    params = []
    for i, item in enumerate(doc.items(spec["params"], f"{prefix}params")):
        where = f"{prefix}params[{i}]"
        param = doc.mapping(item, where)
        doc.check_keys(param, where, LEGACY_PARAM_KEYS)
        name = doc.text(param.get("parameterName"), f"{where}.parameterName", required=True)
        kind = doc.text(param.get("type"), f"{where}.type", required=True)
        assert kind is not None
        values: list[Any] = []
        for key in ("categoricalValues", "discreteValues"):
            if param.get(key) is not None:
                wanted = "CATEGORICAL" if key == "categoricalValues" else "DISCRETE"
                if kind.upper() != wanted:
                    raise doc.error(f"{where}.{key}", f"belongs to a {wanted} parameter, but type is {kind}")
                values = doc.items(param[key], f"{where}.{key}")
        with doc.at(where):
            params.append(
                ParameterSpec(
                    name,  # type: ignore[arg-type]
                    kind,
                    doc.number(param.get("minValue"), f"{where}.minValue"),
                    doc.number(param.get("maxValue"), f"{where}.maxValue"),
                    tuple(values),
                    param.get("scaleType"),
                )
            )
    counts = _counts(doc, spec, ("maxTrials", "maxParallelTrials", "maxFailedTrials"), prefix)
    with doc.at(path or "hyperparameters"):
        return StudySpec(metric, tuple(params), algorithm=spec.get("algorithm") or "ALGORITHM_UNSPECIFIED", **counts)


def _vertex_parameter(doc: _Doc, item: Any, where: str) -> ParameterSpec:
    param = doc.mapping(item, where)
    doc.check_keys(param, where, PARAMETER_KEYS)
    name = doc.text(param.get("parameterId"), f"{where}.parameterId", required=True)
    given = [key for key in VALUE_SPECS if param.get(key) is not None]
    if len(given) != 1:
        what = "none" if not given else " and ".join(given)
        raise doc.error(where, f"needs exactly one of {', '.join(VALUE_SPECS)}, not {what}")
    key = given[0]
    kind = VALUE_SPECS[key]
    value_spec = doc.mapping(param[key], f"{where}.{key}")
    if kind in ("DOUBLE", "INTEGER"):
        doc.check_keys(value_spec, f"{where}.{key}", ("minValue", "maxValue"))
        low = doc.number(value_spec.get("minValue"), f"{where}.{key}.minValue")
        high = doc.number(value_spec.get("maxValue"), f"{where}.{key}.maxValue")
        values: tuple[Any, ...] = ()
    else:
        doc.check_keys(value_spec, f"{where}.{key}", ("values",))
        low = high = None
        values = tuple(doc.items(value_spec.get("values"), f"{where}.{key}.values"))
    with doc.at(where):
        return ParameterSpec(name, kind, low, high, values, param.get("scaleType"))  # type: ignore[arg-type]


def parse_vertex_study(study_spec: Any, counts: Mapping[str, Any], doc: _Doc, path: str) -> StudySpec:
    """A Vertex ``StudySpec`` plus ``maxTrialCount`` / ``parallelTrialCount`` / ``maxFailedTrialCount``."""
    spec = doc.mapping(study_spec, path or "studySpec")
    doc.check_keys(spec, path, STUDY_SPEC_KEYS)
    prefix = f"{path}." if path else ""
    metrics = doc.items(spec.get("metrics"), f"{prefix}metrics") if spec.get("metrics") is not None else []
    if len(metrics) != 1:
        raise doc.error(
            f"{prefix}metrics",
            f"has {len(metrics)} metrics; tfjob tune optimizes exactly one: metrics: [{{metricId: accuracy, goal: MAXIMIZE}}]",
        )
    metric_data = doc.mapping(metrics[0], f"{prefix}metrics[0]")
    doc.check_keys(metric_data, f"{prefix}metrics[0]", METRIC_KEYS)
    tag = doc.text(metric_data.get("metricId"), f"{prefix}metrics[0].metricId", required=True)
    goal = doc.text(metric_data.get("goal"), f"{prefix}metrics[0].goal")
    if goal is None or goal.upper() == "GOAL_TYPE_UNSPECIFIED":
        raise doc.error(f"{prefix}metrics[0].goal", "is missing; write goal: MAXIMIZE or goal: MINIMIZE")
    with doc.at(f"{prefix}metrics[0]"):
        metric = MetricSpec(tag, goal)  # type: ignore[arg-type]
    if spec.get("parameters") is None:
        raise doc.error(f"{prefix}parameters", "is missing; list the parameters to tune (parameterId and a value spec)")
    params = [
        _vertex_parameter(doc, item, f"{prefix}parameters[{i}]")
        for i, item in enumerate(doc.items(spec["parameters"], f"{prefix}parameters"))
    ]
    options: dict[str, Any] = _counts(doc, counts, COUNT_KEYS, "")
    for key, attr in (
        ("algorithm", "algorithm"),
        ("measurementSelectionType", "measurement"),
        ("observationNoise", "observation_noise"),
    ):
        value = doc.text(spec.get(key), f"{prefix}{key}")
        if value is not None and not value.upper().endswith("_UNSPECIFIED"):
            options[attr] = value
    with doc.at(path or "studySpec"):
        return StudySpec(metric, tuple(params), **options)


def parse_document(data: Any, source: str = "hparams", knobs: Sequence[Knob] = ()) -> HparamsConfig:
    """Any accepted ``--hparams`` document → :class:`~tfjob.tuning.study.HparamsConfig`. Pure.

    ``knobs``: declared knobs whose plain ``CustomJobSpec`` keys the trials' job may hold
    (:func:`tfjob.config.job.parse_job_config`).

    Raises:
        ConfigFileError: naming the file, the key, the value and the fix.
    """
    from ..config.job import parse_job_config

    doc = _Doc(source)
    if data is None:
        raise ConfigFileError(f"{source}: the file is empty; write a hyperparameters: (AI Platform) or studySpec: (Vertex AI) section")
    if not isinstance(data, Mapping):
        raise ConfigFileError(f"{source}: expected a mapping (hyperparameters: or studySpec:), not {type(data).__name__}")
    if "trainingInput" in data:
        config = parse_job_config(data, source, knobs)
        if config.tuning is None:
            raise ConfigFileError(
                f"{source}: trainingInput has no hyperparameters: section; add one (goal, hyperparameterMetricTag, params…)"
            )
        study = parse_legacy_study(config.tuning, doc, "trainingInput.hyperparameters")
        return HparamsConfig(study, dict(config.values), "ai-platform", source)
    if "trialJobSpec" in data:
        config = parse_job_config(data, source, knobs)
        tuning = config.tuning or {}
        if tuning.get("studySpec") is None:
            raise doc.error("studySpec", "is missing; it holds the metrics and parameters to tune")
        study = parse_vertex_study(tuning["studySpec"], tuning, doc, "studySpec")
        return HparamsConfig(study, dict(config.values), "vertex", source)
    if "studySpec" in data:
        doc.check_keys(data, "", ("studySpec", *COUNT_KEYS))
        return HparamsConfig(parse_vertex_study(data["studySpec"], data, doc, "studySpec"), {}, "vertex", source)
    if "hyperparameters" in data:
        doc.check_keys(data, "", ("hyperparameters",))
        return HparamsConfig(parse_legacy_study(data["hyperparameters"], doc, "hyperparameters"), {}, "ai-platform", source)
    if any(key in data for key in ("params", "hyperparameterMetricTag", "goal", "maxTrials")):
        return HparamsConfig(parse_legacy_study(data, doc, ""), {}, "ai-platform", source)
    if any(key in data for key in ("metrics", "parameters")):
        counts = {k: data[k] for k in COUNT_KEYS if k in data}
        rest = {k: v for k, v in data.items() if k not in COUNT_KEYS}
        return HparamsConfig(parse_vertex_study(rest, counts, doc, ""), {}, "vertex", source)
    raise ConfigFileError(
        f"{source}: has no study; write hyperparameters: (AI Platform: goal, hyperparameterMetricTag, params) "
        "or studySpec: (Vertex AI: metrics, parameters) with maxTrialCount and parallelTrialCount"
    )


def parse_hparams(path: str | Path) -> StudySpec:
    """Read the study of an ``--hparams`` file (legacy or Vertex, YAML or JSON).

    Raises:
        ConfigFileError: the file cannot be read, or a key or value is wrong.
    """
    return load_hparams(path).study


def load_hparams(path: str | Path, knobs: Sequence[Knob] = ()) -> HparamsConfig:
    """Read an ``--hparams`` file: its study and, if it has one, its cluster."""
    path = Path(path)
    # The bounded reader says what is wrong with the path: missing, a FIFO or device, too large.
    return parse_hparams_config(read_config_file(path, "hparams"), str(path), knobs)


#: Parse an ``--hparams`` document already read from YAML/JSON (the name the API uses).
parse_hparams_config = parse_document


def _integer_text(value: str) -> bool:
    """``-12`` or ``12`` in ASCII digits (str.isdigit() also takes '²', which int() refuses)."""
    digits = value.strip().removeprefix("-")
    return digits.isascii() and digits.isdigit()
