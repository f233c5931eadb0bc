"""A finished job's model in the Vertex AI Model Registry, and its metrics in its Experiment run.

``--register-model NAME`` (and :meth:`tfjob.JobHandle.register_model`) uploads the job's
SavedModel (the newest directory holding a ``saved_model.pb`` under its job dir, as ``tfjob
outputs`` finds it) with ``ModelService.UploadModel``: a new version of the model named NAME
when the registry has one (``parent_model``, found by ``display_name``), else a new model. The
model carries labels naming the tfjob job (``tfjob-job-id``, ``tfjob-submission-id``) and a
prebuilt TensorFlow prediction image of the TensorFlow the job trained with: the version of
its prebuilt training image (``tf-cpu.2-15`` → ``tf2-cpu.2-15``), else its runtime version,
else the TensorFlow installed here, else the newest.

With ``--experiment``, the job's final metrics (the numbers of its job dir's metrics JSON,
``eval/metrics.json`` in the templates) are written to its Experiment run the way the Vertex
AI SDK's ``ExperimentRun.log_metrics`` keeps them: under ``metrics`` in the run context's
metadata (``MetadataService.UpdateContext``; the run is made when it does not exist).

Real ``google-cloud-aiplatform`` GAPIC clients over REST, retried and their errors translated
as the job calls are (:class:`~.client.VertexClient`).
"""

from __future__ import annotations

import re
from typing import Any, Callable, Mapping

from ...errors import BackendError
from .client import VertexClient
from .options import check_model_name
from .render import SUBMISSION_LABEL, parse_tf_version, prebuilt_tf_version, registry_area

#: The prebuilt TensorFlow prediction images (``tf2-cpu.2-15``, ``tf2-gpu.2-15``).
PREDICTION_IMAGE = "{area}-docker.pkg.dev/vertex-ai/prediction/tf2-{kind}.{major}-{minor}:latest"
#: The label naming the tfjob job a model version came from.
JOB_LABEL = "tfjob-job-id"
#: How long an upload may take before it is reported as not done (it goes on on the service).
UPLOAD_TIMEOUT = 1800.0
_TRAINING_IMAGE = re.compile(r"/tf-(cpu|gpu)\.(\d+)-(\d+)")
_LABEL_VALUE = re.compile(r"[^a-z0-9_-]")


def prediction_image(version: tuple[int, int] | None, gpu: bool = False, region: str | None = None) -> str:
    """The prebuilt TensorFlow prediction image for ``version`` (the closest prebuilt one)."""
    major, minor = prebuilt_tf_version(version)
    return PREDICTION_IMAGE.format(area=registry_area(region), kind="gpu" if gpu else "cpu", major=major, minor=minor)


def trained_with(job: Mapping[str, Any], runtime_version: str | None) -> tuple[tuple[int, int] | None, bool, str]:
    """(the TensorFlow version, a GPU image, where that was read) of a ``CustomJob``. Pure
    but for the last resort, the TensorFlow installed here (read without importing it)."""
    for pool in (job.get("jobSpec") or {}).get("workerPoolSpecs") or []:
        image = (pool.get("pythonPackageSpec") or {}).get("executorImageUri") or (pool.get("containerSpec") or {}).get("imageUri") or ""
        m = _TRAINING_IMAGE.search(image)
        if m:
            return (int(m.group(2)), int(m.group(3))), m.group(1) == "gpu", f"its training image {image}"
    version = parse_tf_version(runtime_version)
    if version is not None:
        return version, False, f"its runtime version {runtime_version}"
    from .submission import installed_tf_version

    installed = installed_tf_version()
    if installed is not None:
        return installed, False, "the TensorFlow installed here"
    return None, False, "no TensorFlow version known: the newest prebuilt image"


def label_value(text: str) -> str:
    """A label value (lower-case letters, digits, ``_`` and ``-``, at most 63)."""
    return _LABEL_VALUE.sub("-", text.lower())[:63]


class ModelsClient(VertexClient):
    """:class:`~.client.VertexClient` with the Model Registry's and the metadata store's clients."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        from google.api_core.client_options import ClientOptions

        options = ClientOptions(api_endpoint=self.endpoint)
        types = self._types
        self._models = types.ModelServiceClient(transport="rest", credentials=self.credentials, client_options=options)
        self._metadata = types.MetadataServiceClient(transport="rest", credentials=self.credentials, client_options=options)

    def find_model(self, display_name: str) -> dict[str, Any] | None:
        """The registry's model named ``display_name`` (the newest when several are), or None."""
        types, wanted = self._types, f'display_name="{display_name}"'
        found = self.list_pages(
            lambda token: self._models.list_models(
                request=types.ListModelsRequest(parent=self.parent, filter=wanted, page_size=100, page_token=token)
            ),
            "models",
            100,
        )
        found = [m for m in found if m.get("displayName") == display_name]
        if not found:
            return None
        return max(found, key=lambda m: (m.get("updateTime") or m.get("createTime") or "", m.get("name", "")))

    def upload_model(self, model: dict[str, Any], parent_model: str | None) -> dict[str, Any]:
        """``UploadModel`` and its long-running operation to its end; the ``UploadModelResponse``."""
        import json

        request = self._types.UploadModelRequest(
            parent=self.parent, model=self._types.Model.from_json(json.dumps(model)), parent_model=parent_model or ""
        )
        operation = self._call("upload a model", lambda: self._models.upload_model(request=request))
        response = self._call("wait for the model upload", lambda: operation.result(timeout=UPLOAD_TIMEOUT))
        return self._to_dict(response)

    def get_context(self, name: str) -> dict[str, Any] | None:
        from google.api_core import exceptions as core

        try:
            return self._to_dict(self._metadata.get_context(name=name))
        except core.NotFound:
            return None
        except Exception as e:
            raise self._translate(e, "read the experiment run", None, None) from e

    def write_context(self, context: dict[str, Any]) -> dict[str, Any]:
        """``UpdateContext`` with ``allow_missing`` (made when it is not there)."""
        import json

        message = self._types.Context.from_json(json.dumps(context))
        request = self._types.UpdateContextRequest(context=message, allow_missing=True)
        return self._call("log the metrics to the experiment run", lambda: self._to_dict(self._metadata.update_context(request=request)))  # type: ignore[no-any-return]


def register_model(
    record: Any,
    attempt: str,
    name: str,
    artifact_uri: str,
    *,
    client: ModelsClient,
    serving_image: str | None = None,
    echo: Callable[[str], None],
) -> dict[str, Any]:
    """Upload the SavedModel at ``artifact_uri`` of the job ``record`` (its CustomJob ``attempt``)
    as a new version of ``name`` (see the module), through ``client`` (the job's project and region).

    Returns:
        ``{"model", "version_id", "parent_model", "serving_image", "artifact_uri"}``.

    Raises:
        SpecError: ``name`` is not a model name.
        BackendError, AuthError: the registry refused or failed.
    """
    check_model_name(name, "name")
    if serving_image is None:
        job = client.get_custom_job(attempt)
        version, gpu, origin = trained_with(job, (record.spec or {}).get("runtime_version"))
        serving_image = prediction_image(version, gpu, client.region)
        echo(f"serving image {serving_image} (TensorFlow of {origin})")
    existing = client.find_model(name)
    labels = {JOB_LABEL: label_value(record.id), "tfjob-managed": "true"}
    submission = (record.extra or {}).get("submission_id")
    if isinstance(submission, str) and submission:
        labels[SUBMISSION_LABEL] = label_value(submission)
    model = {
        "displayName": name,
        "description": f"SavedModel of tfjob job {record.id} ({record.name})"[:1000],
        "artifactUri": artifact_uri,
        "containerSpec": {"imageUri": serving_image},
        "labels": labels,
        "versionDescription": f"tfjob job {record.id}"[:1000],
    }
    parent_model = existing["name"] if existing else None
    response = client.upload_model(model, parent_model)
    model_name = response.get("model")
    if not model_name:
        raise BackendError(f"Vertex AI answered the upload of {artifact_uri} without a model")
    version_id = str(response.get("modelVersionId") or "1")
    echo(f"model {name} version {version_id}: {model_name} ({'a new version' if parent_model else 'a new model'}) from {artifact_uri}")
    return {
        "model": model_name,
        "version_id": version_id,
        "parent_model": parent_model,
        "serving_image": serving_image,
        "artifact_uri": artifact_uri,
    }


def log_run_metrics(
    metrics: Mapping[str, float],
    *,
    client: ModelsClient,
    experiment: str,
    run: str,
    echo: Callable[[str], None],
) -> dict[str, Any]:
    """Write ``metrics`` to the run context ``run`` of ``experiment`` (resource names, as
    :func:`.render.experiment_contexts` makes them), merged over the metrics it has; return the
    run context as stored."""
    existing = client.get_context(run) or {}
    metadata = dict(existing.get("metadata") or {})
    merged = {**dict(metadata.get("metrics") or {}), **{str(k): float(v) for k, v in metrics.items()}}
    metadata["metrics"] = merged
    context = {"name": run, "metadata": metadata}
    if not existing:
        context.update(displayName=run.rsplit("/", 1)[1][len(experiment.rsplit("/", 1)[1]) + 1 :] or run.rsplit("/", 1)[1])
        context["schemaTitle"] = "system.ExperimentRun"
        metadata.setdefault("experiment_name", experiment.rsplit("/", 1)[1])
    stored = client.write_context(context)
    echo(
        f"{len(merged)} metrics logged to experiment run {run.rsplit('/', 1)[1]}: "
        + ", ".join(f"{k}={v:g}" for k, v in sorted(merged.items()))
    )
    return stored
