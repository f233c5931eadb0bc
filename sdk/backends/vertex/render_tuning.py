"""StudySpec → Vertex AI ``HyperparameterTuningJob`` request body: pure, no Google imports.

The trial's job (``trialJobSpec``) is the ``jobSpec`` of the CustomJob that
``tfjob submit --backend vertex`` would create for the same job
(:func:`tfjob.backends.vertex.render.render_custom_job`), so a trial runs exactly as a
submitted job does; Vertex AI appends each trial's ``--name=value`` arguments and
sets ``trial`` in TF_CONFIG / CLUSTER_SPEC. Written as the API's JSON mapping writes
it (int64 as strings, defaults left out), so that ``json_format.ParseDict`` into
``aiplatform_v1.types.HyperparameterTuningJob`` accepts it strictly and
``MessageToDict`` gives the same dict back.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from ...model import SubmitOptions
from ...description.spec import JobSpec
from ...tuning.study import StudySpec
from ...tuning.render import describe_parameter, render_parameter, render_study_spec

__all__ = ["describe_parameter", "render_hyperparameter_tuning_job", "render_parameter", "render_study_spec", "wrap_tuning_job"]


def wrap_tuning_job(study: StudySpec, custom_job: Mapping[str, Any]) -> dict[str, Any]:
    """A ``HyperparameterTuningJob`` whose trials run the ``CustomJob`` body ``custom_job``."""
    body: dict[str, Any] = {
        "displayName": custom_job["displayName"],
        "studySpec": render_study_spec(study),
        "maxTrialCount": study.max_trials,
        "parallelTrialCount": study.parallel_trials,
    }
    if study.max_failed_trials:
        body["maxFailedTrialCount"] = study.max_failed_trials
    body["trialJobSpec"] = dict(custom_job["jobSpec"])
    if custom_job.get("labels"):
        body["labels"] = dict(custom_job["labels"])
    if custom_job.get("encryptionSpec"):
        body["encryptionSpec"] = dict(custom_job["encryptionSpec"])
    return body


def render_hyperparameter_tuning_job(
    study: StudySpec,
    spec: JobSpec,
    options: SubmitOptions | None = None,
    package_uris: Sequence[str] = (),
    *,
    submission_id: str | None = None,
    tf_version: tuple[int, int] | None = None,
    version: str | None = None,
    bootstrap_uri: str | None = None,
) -> dict[str, Any]:
    """The Vertex AI ``HyperparameterTuningJob`` body for a study of ``spec``.

    Args:
        study: what to tune.
        spec: the job each trial runs.
        options, package_uris, submission_id, tf_version, version, bootstrap_uri: as for
            :func:`tfjob.backends.vertex.render.render_custom_job`.

    Raises:
        SpecError: the job cannot run on Vertex AI as described.
    """
    from .render import render_custom_job

    custom = render_custom_job(
        spec, options, package_uris, submission_id=submission_id, tf_version=tf_version, version=version,
        bootstrap_uri=bootstrap_uri,
    )  # fmt: skip
    return wrap_tuning_job(study, custom)
