"""A study as a Katib ``Experiment`` (kubeflow.org/v1beta1). Pure.

On a Kubernetes cluster that runs Katib, the study is one ``Experiment``: Katib's suggestion
service proposes each trial's values and its controller creates the trial's job from the
experiment's ``trialTemplate``. The template is the job tfjob renders for the backend (a
``TFJob``, ``JobSet`` or ``TrainJob``), its trainer arguments ending in
``--NAME=${trialParameters.NAME}`` as every trial of a tfjob study gets them, and
``CLOUD_ML_TRIAL_ID`` set to the trial's name. The trainer reports its metric as on every
platform (:func:`tfjob.report_metric` or cloudml-hypertune: one JSON object per line in
``CLOUD_ML_HP_METRIC_FILE``), which is the format of Katib's ``File`` metrics collector with
``format: JSON`` (the values as strings, the ``timestamp`` in seconds), so the experiment's
collector reads that file of the task that reports (the chief, else worker 0).

What Katib cannot run as the study says is refused in one line: a ``UNIT_REVERSE_LOG_SCALE``
parameter (Katib's distributions are uniform and log-uniform), and a ``TrainJob`` whose trial
values would have to reach a role outside Trainer's ``node`` job (the ``TrainJob`` passes
arguments to that job only).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any, Mapping

from ..errors import SpecError
from ..hypertune import DEFAULT_METRIC_FILE
from .study import ParameterSpec, StudySpec

API_VERSION = "kubeflow.org/v1beta1"
KIND = "Experiment"
#: Katib's name for the algorithm of each study algorithm (the local study's TPE for the
#: platforms' default, so a Katib study searches as ``tfjob tune`` does on this machine).
ALGORITHMS = {"ALGORITHM_UNSPECIFIED": "tpe", "RANDOM_SEARCH": "random", "GRID_SEARCH": "grid"}
PARAMETER_TYPES = {"DOUBLE": "double", "INTEGER": "int", "CATEGORICAL": "categorical", "DISCRETE": "discrete"}
DISTRIBUTIONS = {None: "uniform", "UNIT_LINEAR_SCALE": "uniform", "UNIT_LOG_SCALE": "logUniform"}
#: The trial parameter naming each trial (Katib's ``${trialSpec.Name}``), as ``CLOUD_ML_TRIAL_ID``.
TRIAL_NAME_PARAMETER = "tfjobTrialName"
#: What a trial's trainer is told about its metrics file and its trial.
METRIC_FILE_ENV = "CLOUD_ML_HP_METRIC_FILE"
TRIAL_ID_ENV = "CLOUD_ML_TRIAL_ID"


def _gjson(condition: str) -> str:
    return f'status.conditions.#(type=="{condition}")#|#(status=="True")#'


@dataclass(frozen=True)
class TrialKind:
    """What Katib needs to know of a trial's job kind: when it succeeded or failed, which
    container trains and which pods report the metric."""

    success: str
    failure: str
    #: The training container of the reporting pod.
    container: str
    #: The label that names a pod's role, and the value of the reporting role's.
    role_label: str


#: By the job's ``kind``: the conditions each controller sets (TFJob ``Succeeded``, JobSet
#: ``Completed``, TrainJob ``Complete``; ``Failed`` for all three).
TRIAL_KINDS = {
    "TFJob": TrialKind(_gjson("Succeeded"), _gjson("Failed"), "tensorflow", "training.kubeflow.org/replica-type"),
    "JobSet": TrialKind(_gjson("Completed"), _gjson("Failed"), "tensorflow", "jobset.sigs.k8s.io/replicatedjob-name"),
    "TrainJob": TrialKind(_gjson("Complete"), _gjson("Failed"), "node", "jobset.sigs.k8s.io/replicatedjob-name"),
}


def trial_parameter_names(study: StudySpec) -> dict[str, str]:
    """Parameter → the name its ``${trialParameters.…}`` goes by: its own (Katib replaces the
    text literally), but for one named as tfjob's trial-name parameter (``p1``, ``p2``… by its place)."""
    return {p.name: p.name if p.name != TRIAL_NAME_PARAMETER else f"p{i}" for i, p in enumerate(study.parameters, 1)}


def trial_args(study: StudySpec) -> list[str]:
    """The arguments every trial's trainer ends with: ``--NAME=${trialParameters.NAME}``."""
    names = trial_parameter_names(study)
    return [f"--{p.name}=${{trialParameters.{names[p.name]}}}" for p in study.parameters]


def trial_env() -> dict[str, str]:
    """The variables of every trial's tasks: the metrics file Katib collects, the trial's name."""
    return {METRIC_FILE_ENV: DEFAULT_METRIC_FILE, TRIAL_ID_ENV: f"${{trialParameters.{TRIAL_NAME_PARAMETER}}}"}


def _number(value: float | None, p: ParameterSpec) -> str:
    assert value is not None
    return str(int(value)) if p.type == "INTEGER" else repr(float(value))


def _check_substitutable(name: str, value: str) -> None:
    """Refuse a value Katib cannot put into the trial's job as it is: Katib replaces
    ``${trialParameters.NAME}`` in the job's JSON text, so a quote or backslash breaks the JSON,
    ``${…}`` is taken for another placeholder, ``$(…)`` is expanded by Kubernetes in args."""
    if any(c in '"\\' or not c.isprintable() for c in value) or "${" in value or "$(" in value:
        raise SpecError(
            field="hparams",
            value=value,
            problem=(
                f"is a value of parameter {name} that Katib cannot pass into the trial's job as it is "
                "(it replaces the placeholder in the job's JSON text: no quotes, backslashes, control characters, ${ or $()"
            ),
            fix="rename the value, or drop --dry-run/--async to let tfjob run the trials",
        )


def render_parameter(p: ParameterSpec) -> dict[str, Any]:
    """One Katib ``ParameterSpec`` (its feasible space as strings, as Katib reads them).

    Raises:
        SpecError: a ``UNIT_REVERSE_LOG_SCALE`` parameter (Katib has no such distribution).
    """
    body: dict[str, Any] = {"name": p.name, "parameterType": PARAMETER_TYPES[p.type]}
    if p.type == "CATEGORICAL":
        for value in p.values:
            _check_substitutable(p.name, str(value))
        body["feasibleSpace"] = {"list": [str(v) for v in p.values]}
        return body
    if p.type == "DISCRETE":
        body["feasibleSpace"] = {"list": [p.format_value(v) for v in p.values]}
        return body
    if p.scale not in DISTRIBUTIONS:
        raise SpecError(
            field="hparams",
            value=p.name,
            problem=f"has scaleType {p.scale}, which Katib cannot search (its distributions are uniform and log-uniform)",
            fix="use UNIT_LINEAR_SCALE or UNIT_LOG_SCALE, or run the study without Katib",
        )
    space = {"min": _number(p.min_value, p), "max": _number(p.max_value, p), "distribution": DISTRIBUTIONS[p.scale]}
    body["feasibleSpace"] = space
    return body


def render_experiment(
    study: StudySpec,
    trial_job: Mapping[str, Any],
    *,
    name: str,
    namespace: str | None,
    reporting_role: str,
    labels: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """The ``Experiment`` whose trials run ``trial_job`` (a TFJob, JobSet or TrainJob rendered
    with :func:`trial_args` and :func:`trial_env`; its name and namespace are Katib's to set).

    Args:
        reporting_role: the role label value of the pods that report the metric (the chief's
            replicated job, ``worker``, Trainer's ``node``).
    """
    kind = TRIAL_KINDS[str(trial_job.get("kind"))]
    spec = copy.deepcopy(dict(trial_job))
    meta = {k: v for k, v in (spec.get("metadata") or {}).items() if k not in ("name", "namespace")}
    if meta:
        spec["metadata"] = meta
    else:
        spec.pop("metadata", None)
    names = trial_parameter_names(study)
    trial_parameters = [{"name": names[p.name], "reference": p.name, "description": f"--{p.name} of the trainer"} for p in study.parameters]
    trial_parameters.append(
        {"name": TRIAL_NAME_PARAMETER, "reference": "${trialSpec.Name}", "description": "the trial, as CLOUD_ML_TRIAL_ID"}
    )
    metadata: dict[str, Any] = {"name": name}
    if namespace:
        metadata["namespace"] = namespace
    if labels:
        metadata["labels"] = dict(labels)
    body: dict[str, Any] = {
        "objective": {"type": study.metric.goal.lower(), "objectiveMetricName": study.metric.tag},
        "algorithm": {"algorithmName": ALGORITHMS[study.algorithm]},
        "parallelTrialCount": study.parallel_trials,
        "maxTrialCount": study.max_trials,
        "parameters": [render_parameter(p) for p in study.parameters],
        "metricsCollectorSpec": {
            "collector": {"kind": "File"},
            "source": {"fileSystemPath": {"path": DEFAULT_METRIC_FILE, "kind": "File", "format": "JSON"}},
        },
        "trialTemplate": {
            "primaryContainerName": kind.container,
            "primaryPodLabels": {kind.role_label: reporting_role},
            "successCondition": kind.success,
            "failureCondition": kind.failure,
            "trialParameters": trial_parameters,
            "trialSpec": spec,
        },
    }
    if study.max_failed_trials:
        body["maxFailedTrialCount"] = study.max_failed_trials
    return {"apiVersion": API_VERSION, "kind": KIND, "metadata": metadata, "spec": body}
