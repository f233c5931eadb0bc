"""Job configuration files: legacy AI Platform ``trainingInput`` and Vertex ``CustomJobSpec``.

``tfjob submit --config FILE`` (and ``Job(config=FILE)``) reads either dialect, YAML
or JSON, and turns it into keyword arguments of :class:`tfjob.Job`; flags and
keywords given next to the file override what it says, as with gcloud
(:meth:`tfjob.description.request.JobRequest.over`).

- **Legacy** (``gcloud ai-platform jobs submit training --config``): a ``Job``
  resource: ``trainingInput:`` (scaleTier, masterType/workerType/…, the counts,
  ``*Config`` with ``imageUri`` and ``acceleratorConfig``, args, region, jobDir, …),
  and optionally ``jobId`` and ``labels``.
- **Vertex** (``gcloud ai custom-jobs create --config``): a ``CustomJobSpec``
  (``workerPoolSpecs``, scheduling, serviceAccount, …) at the top level, or a
  ``CustomJob`` holding it under ``jobSpec:`` (with ``displayName`` and ``labels``).
- **Tuning**: a legacy ``trainingInput.hyperparameters`` or a Vertex
  ``HyperparameterTuningJob`` (``studySpec`` + ``trialJobSpec``). :func:`parse_job_config`
  keeps that section aside in :attr:`JobConfig.tuning` for ``tfjob tune``;
  :func:`load_job_config` refuses it, since ``submit`` runs a single job.

Every key is checked: an unknown key names itself and the file and suggests the
closest valid one; a key the platform has but tfjob cannot honour says so, rather
than being dropped silently. Output-only fields (a described job's ``state``,
``createTime``, …) are ignored, so the output of ``describe`` can be resubmitted.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

from .document import ConfigDoc
from .legacy import TRAINING_INPUT_KEYS, parse_legacy_job
from .vertex import (
    CUSTOM_JOB_KEYS,
    CUSTOM_JOB_OUTPUT_ONLY,
    TUNING_JOB_KEYS,
    TUNING_JOB_OUTPUT_ONLY,
    parse_custom_job_spec,
    parse_vertex_job,
)
from .files import read_config_file
from ..errors import ConfigFileError
from ..description.knobs import Knob


@dataclass(frozen=True)
class JobConfig:
    """A parsed configuration file.

    Attributes:
        source: the file (used in every message).
        dialect: ``ai-platform`` (a legacy ``trainingInput``) or ``vertex`` (a ``CustomJobSpec``).
        values: flat keywords, each put where its knob lands (:func:`tfjob.job.keywords.sort_given`).
        tuning: the hyperparameter-tuning section as written (legacy
            ``hyperparameters``; Vertex ``studySpec``, ``maxTrialCount``, …), or None.
        tuning_key: where the tuning section was (``trainingInput.hyperparameters``
            or ``studySpec``), or None.
    """

    source: str
    dialect: str
    values: dict[str, Any]
    tuning: dict[str, Any] | None = None
    tuning_key: str | None = None


#: Top-level keys that belong one level down, with where to put them.
_MISPLACED = {
    **{key: "it belongs under trainingInput:" for key in TRAINING_INPUT_KEYS},
    "machineSpec": "it belongs inside an item of workerPoolSpecs:",
    "replicaCount": "it belongs inside an item of workerPoolSpecs:",
}


def parse_job_config(data: Any, source: str = "config", knobs: Sequence[Knob] = ()) -> JobConfig:
    """Parse a configuration document (already read from YAML/JSON). Pure.

    Args:
        data: the document: a legacy ``Job`` (``trainingInput``), a Vertex
            ``CustomJobSpec`` (``workerPoolSpecs``) or ``CustomJob`` (``jobSpec``), or a
            Vertex ``HyperparameterTuningJob`` (``studySpec`` + ``trialJobSpec``).
        source: the file name, used in every message.
        knobs: a backend's declared knobs whose plain ``CustomJobSpec`` keys are read from
            their declaration (:func:`tfjob.config.vertex.declared_keys`).

    Raises:
        ConfigFileError: a key tfjob does not know or cannot honour, or a bad value.
    """
    doc = ConfigDoc(source)
    if data is None:
        raise ConfigFileError(f"{source}: the file is empty; write a trainingInput: or workerPoolSpecs: section")
    if not isinstance(data, Mapping):
        raise ConfigFileError(f"{source}: expected a mapping (trainingInput: or workerPoolSpecs:), not {type(data).__name__}")
    if "trainingInput" in data:
        values, tuning = parse_legacy_job(data, doc)
        return JobConfig(source, "ai-platform", values, tuning, "trainingInput.hyperparameters" if tuning is not None else None)
    if "workerPoolSpecs" in data:
        return JobConfig(source, "vertex", parse_custom_job_spec(data, doc, knobs=knobs))
    if "jobSpec" in data:
        return JobConfig(source, "vertex", parse_vertex_job(data, doc, "jobSpec", CUSTOM_JOB_KEYS, CUSTOM_JOB_OUTPUT_ONLY, knobs))
    if "studySpec" in data or "trialJobSpec" in data:
        values = parse_vertex_job(data, doc, "trialJobSpec", TUNING_JOB_KEYS, TUNING_JOB_OUTPUT_ONLY, knobs)
        tuning = {k: v for k, v in data.items() if k in TUNING_JOB_KEYS and k not in ("displayName", "labels", "trialJobSpec")}
        return JobConfig(source, "vertex", values, tuning, "studySpec")
    doc.check_keys(data, "", ("trainingInput", "workerPoolSpecs", "jobSpec"), hint=_MISPLACED)
    raise ConfigFileError(f"{source}: has no trainingInput: (AI Platform) or workerPoolSpecs: (Vertex AI) section; nothing to run")


def load_job_config(path: str | Path, knobs: Sequence[Knob] = ()) -> dict[str, Any]:
    """Read a ``--config`` file: keyword arguments of :class:`tfjob.Job`.

    Args:
        path: a legacy ``trainingInput`` or Vertex ``CustomJobSpec`` file, YAML or JSON.
        knobs: as :func:`parse_job_config` takes them.

    Raises:
        ConfigFileError: the file cannot be read, has an unknown key or a bad value,
            or describes a hyperparameter-tuning job (use ``tfjob tune --hparams``).
    """
    config = parse_job_config(read_config_file(path), str(path), knobs)
    if config.tuning is not None:
        raise ConfigFileError(
            f"{path}: {config.tuning_key} describes hyperparameter tuning, which `tfjob submit` does not run; "
            f"use `tfjob tune --hparams {path}`"
        )
    return config.values
