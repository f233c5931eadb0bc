"""The jobset backend: a job runs on Kubernetes as a JobSet (jobset.x-k8s.io/v1alpha2).

JobSet is the engine under Kubeflow Trainer v2 and on GKE, and needs no training operator:
the JobSet controller makes one Indexed Job per role, and the tfjob bootstrap in every pod
derives the ``TF_CONFIG`` the TFJob operator would have written (see
:mod:`tfjob.backends.kubeflow.render_jobset` and :mod:`tfjob.cluster.jobset`). Everything else — the job
store, waiting with the pods' reasons, logs, cancel, list — is the kubeflow backend's,
on a JobSet instead of a TFJob: the same lifecycle, the same ids (``NAMESPACE/NAME``).
"""

from __future__ import annotations

from typing import Any

from .status import build_jobset_selector, build_job_status, parse_jobset_state
from .render_jobset import render_jobset
from ...spec import JobSpec
from ..base import JobState, JobStatus, SubmitOptions
from .backend import KubeflowBackend
from .options import KubernetesOptions


class JobSetBackend(KubeflowBackend):
    """JobSets through the Kubernetes API (the kubeflow backend's lifecycle)."""

    name = "jobset"
    options_class = KubernetesOptions
    kind = "JobSet"
    controller = "the JobSet controller"

    def _render(self, spec: JobSpec, options: SubmitOptions) -> dict[str, Any]:
        """The JobSet manifest (see :func:`tfjob.backends.kubeflow.render_jobset.render_jobset`)."""
        return render_jobset(spec, options)

    @staticmethod
    def _resource() -> Any:
        from .client import JOBSET

        return JOBSET

    def _create(self, client: Any, namespace: str, manifest: dict[str, Any]) -> dict[str, Any]:
        return client.create(self._resource(), namespace, manifest)

    def _get(self, client: Any, namespace: str, name: str) -> dict[str, Any]:
        return client.get(self._resource(), namespace, name)

    def _delete(self, client: Any, namespace: str, name: str) -> None:
        client.delete(self._resource(), namespace, name)

    def _list_objects(self, client: Any, namespace: str, selector: str) -> list[dict[str, Any]]:
        return client.list(self._resource(), namespace, selector)

    def _selector(self, name: str, task: str | None = None, record: Any = None) -> str:
        return build_jobset_selector(name, task)

    def _state(self, client: Any, namespace: str, name: str) -> JobState:
        # Whether it ended is in the JobSet's conditions; its pods only tell PENDING from RUNNING.
        return parse_jobset_state(self._get(client, namespace, name))[0]

    def _status(self, job_id: str, obj: dict[str, Any], pods: list[dict[str, Any]]) -> JobStatus:
        return build_job_status(job_id, obj, pods, backend="jobset")


BACKEND = JobSetBackend()
