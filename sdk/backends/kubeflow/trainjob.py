"""``--backend trainjob``: a Kubeflow Trainer v2 ``TrainJob`` on the TensorFlow runtime
tfjob renders for it (see :mod:`tfjob.backends.kubeflow.render_trainjob`).

Submitting creates (or reuses, when unchanged) the job's ``ClusterTrainingRuntime`` and
then the ``TrainJob`` naming it; Trainer expands them into a JobSet of the TrainJob's
name, whose pods get the same ``TF_CONFIG`` as under ``--backend jobset``. The rest —
the job store, waiting with the pods' reasons, logs, cancel (the TrainJob and its
runtime), list — is the kubeflow backend's lifecycle on a TrainJob.
"""

from __future__ import annotations

from typing import Any

from ...errors import JobNotFoundError, UsageError
from .status import build_job_status, build_jobset_selector, parse_trainjob_state
from .render_trainjob import NODE, render_trainjob_list, runtime_name, trainer_role
from ...spec import JobSpec
from ..base import JobState, JobStatus, SubmitOptions
from .backend import KubeflowBackend
from .options import KubernetesOptions


def _resources() -> tuple[Any, Any]:
    from .client import RUNTIME, TRAINJOB

    return TRAINJOB, RUNTIME


class TrainJobBackend(KubeflowBackend):
    """TrainJobs (Kubeflow Trainer v2) through the Kubernetes API."""

    name = "trainjob"
    options_class = KubernetesOptions
    kind = "TrainJob"
    controller = "Kubeflow Trainer"

    def _render(self, spec: JobSpec, options: SubmitOptions) -> dict[str, Any]:
        """A ``List`` of the runtime and the TrainJob (pure; ``kubectl apply -f`` takes it)."""
        return render_trainjob_list(spec, options)

    @staticmethod
    def _set_namespace(manifest: dict[str, Any], namespace: str) -> None:
        manifest["items"][1]["metadata"]["namespace"] = namespace

    def _create(self, client: Any, namespace: str, manifest: dict[str, Any]) -> dict[str, Any]:
        trainjob_resource, runtime_resource = _resources()
        runtime, trainjob = manifest["items"]
        name = runtime["metadata"]["name"]
        try:
            existing = client.get_cluster_object(runtime_resource, name)
        except JobNotFoundError:
            existing = None
        if existing is None:
            client.create_cluster_object(runtime_resource, runtime)
        elif existing.get("spec") != runtime["spec"]:
            raise UsageError(
                f"ClusterTrainingRuntime {name} exists with another spec (a job of this name ran with another shape or image); "
                f"pick another --display-name, or delete it first (kubectl delete clustertrainingruntime {name})"
            )
        return client.create(trainjob_resource, namespace, trainjob)

    def _get(self, client: Any, namespace: str, name: str) -> dict[str, Any]:
        return client.get(_resources()[0], namespace, name)

    def _delete(self, client: Any, namespace: str, name: str) -> None:
        trainjob_resource, runtime_resource = _resources()
        client.delete(trainjob_resource, namespace, name)
        try:
            client.delete_cluster_object(runtime_resource, runtime_name(name))
        except JobNotFoundError:
            pass  # already gone: nothing else used it

    def _list_objects(self, client: Any, namespace: str, selector: str) -> list[dict[str, Any]]:
        return client.list(_resources()[0], namespace, selector)

    def _selector(self, name: str, task: str | None = None, record: Any = None) -> str:
        # Trainer's JobSet has the TrainJob's name; the trainer role's pods are its `node` job.
        selector = build_jobset_selector(name, task)
        if task is not None and record is not None:
            spec = JobSpec.from_dict(record.spec)
            role = trainer_role(spec)
            selector = selector.replace(f"replicatedjob-name={role}", f"replicatedjob-name={NODE}")
        return selector

    def _state(self, client: Any, namespace: str, name: str) -> JobState:
        # Whether it ended is in the TrainJob's conditions; its pods only tell PENDING from RUNNING.
        return parse_trainjob_state(self._get(client, namespace, name))[0]

    def _status(self, job_id: str, obj: dict[str, Any], pods: list[dict[str, Any]]) -> JobStatus:
        return build_job_status(job_id, obj, pods, backend="trainjob")


BACKEND = TrainJobBackend()
