"""A study written out as the platforms write one: Vertex AI's ``StudySpec`` JSON and the trial
arguments before they have values. Pure; what every backend's render of a study shows (a
Vertex AI ``HyperparameterTuningJob``, a local study's plan)."""

from __future__ import annotations

from typing import Any

from .study import ParameterSpec, StudySpec


def render_parameter(p: ParameterSpec) -> dict[str, Any]:
    """One ``StudySpec.ParameterSpec``."""
    body: dict[str, Any] = {"parameterId": p.name}
    if p.type == "DOUBLE":
        body["doubleValueSpec"] = {"minValue": float(p.min_value), "maxValue": float(p.max_value)}  # type: ignore[arg-type]
    elif p.type == "INTEGER":
        # int64 fields are strings in the API's JSON.
        body["integerValueSpec"] = {"minValue": str(int(p.min_value)), "maxValue": str(int(p.max_value))}  # type: ignore[arg-type]
    elif p.type == "CATEGORICAL":
        body["categoricalValueSpec"] = {"values": [str(v) for v in p.values]}
    else:
        body["discreteValueSpec"] = {"values": [float(v) for v in p.values]}
    if p.scale:
        body["scaleType"] = p.scale
    return body


def render_study_spec(study: StudySpec) -> dict[str, Any]:
    """The Vertex AI ``StudySpec`` of a study."""
    body: dict[str, Any] = {
        "metrics": [{"metricId": study.metric.tag, "goal": study.metric.goal}],
        "parameters": [render_parameter(p) for p in study.parameters],
    }
    if study.algorithm != "ALGORITHM_UNSPECIFIED":
        body["algorithm"] = study.algorithm
    if study.observation_noise:
        body["observationNoise"] = study.observation_noise
    if study.measurement != "LAST_MEASUREMENT":
        body["measurementSelectionType"] = study.measurement
    return body


def describe_parameter(p: ParameterSpec) -> str:
    """``--learning_rate=<DOUBLE 0.0001..0.1 UNIT_LOG_SCALE>``: a trial argument before it has a value."""
    if p.type in ("DOUBLE", "INTEGER"):
        what = f"{p.type} {p.min_value:g}..{p.max_value:g}"
    else:
        what = f"{p.type} " + "|".join(p.format_value(v) for v in p.values)
    return f"--{p.name}=<{what}{' ' + p.scale if p.scale else ''}>"
