"""JobSpec → a Kubeflow Trainer v2 ``TrainJob`` and the TensorFlow runtime it names.

Kubeflow Trainer v2 (trainer.kubeflow.org/v1alpha1) runs a ``TrainJob`` by expanding the
runtime it references into a JobSet; upstream ships no TensorFlow runtime. tfjob renders
one: a ``ClusterTrainingRuntime`` whose JobSet template is :func:`render_jobset`'s, with
the trainer role as Trainer's ``node`` job (its container ``node``, labelled as the
trainer step), so the TrainJob's ``trainer`` (image, node count) applies to it — the
workers, or the chief of a job without workers. The bootstrap maps ``node`` back to the
role (``TFJOB_JOBSET_JOBS``) and derives the same ``TF_CONFIG`` as for a JobSet.

``tfjob render --backend trainjob`` prints both as a ``List``; ``kubectl apply -f`` takes it.
"""

from __future__ import annotations

import copy
from typing import Any

from ...cluster.jobset import JOBS_VAR
from ...model import options_as
from ...description.spec import JobSpec
from .options import KubernetesOptions
from .render_jobset import job_labels, render_jobset
from .render import CONTAINER_NAME

GROUP = "trainer.kubeflow.org"
VERSION = "v1alpha1"
API_VERSION = f"{GROUP}/{VERSION}"
#: Trainer v2's names for its trainer job, container and step label.
NODE = "node"
ANCESTOR_LABEL = "trainer.kubeflow.org/trainjob-ancestor-step"


def trainer_role(spec: JobSpec) -> str:
    """The role Trainer's ``node`` job runs: the workers, else the chief."""
    return "worker" if spec.count("worker") else "chief"


def render_runtime(spec: JobSpec, options: Any = None) -> dict[str, Any]:
    """The ``ClusterTrainingRuntime`` (cluster-scoped) of this job's shape and image."""
    options = options_as(KubernetesOptions, options)
    jobset = render_jobset(spec, options, "trainjob")
    role = trainer_role(spec)
    body = copy.deepcopy(jobset["spec"])
    body.pop("ttlSecondsAfterFinished", None)  # the TrainJob's lifecycle decides
    body.pop("suspend", None)
    for job in body["replicatedJobs"]:
        containers = job["template"]["spec"]["template"]["spec"]["containers"]
        for container in containers:
            if container["name"] == CONTAINER_NAME:
                container["env"].append({"name": JOBS_VAR, "value": f"{role}={NODE}"})
                if job["name"] == role:
                    container["name"] = NODE
        if job["name"] == role:
            job["name"] = NODE
            job["template"]["metadata"] = {"labels": {ANCESTOR_LABEL: "trainer"}}
    body["successPolicy"]["targetReplicatedJobs"] = [NODE if t == role else t for t in body["successPolicy"]["targetReplicatedJobs"]]
    return {
        "apiVersion": API_VERSION,
        "kind": "ClusterTrainingRuntime",
        "metadata": {"name": runtime_name(spec), "labels": job_labels(spec, options)},
        "spec": {"mlPolicy": {"numNodes": spec.count(role)}, "template": {"spec": body}},
    }


def runtime_name(job: "JobSpec | str") -> str:
    """The runtime tfjob renders for a job (by its spec or its name)."""
    return f"tfjob-tensorflow-{job if isinstance(job, str) else job.name}"


def render_trainjob(spec: JobSpec, options: Any = None) -> dict[str, Any]:
    """The ``TrainJob`` naming :func:`render_runtime`'s runtime."""
    options = options_as(KubernetesOptions, options)
    role = trainer_role(spec)
    metadata: dict[str, Any] = {"name": spec.name, "labels": job_labels(spec, options)}
    namespace = options.namespace
    if namespace:
        metadata["namespace"] = namespace
    body: dict[str, Any] = {
        "runtimeRef": {"name": runtime_name(spec), "apiGroup": GROUP, "kind": "ClusterTrainingRuntime"},
        "trainer": {"image": spec.image_for(role), "numNodes": spec.count(role)},
    }
    if options.suspend:
        body["suspend"] = True
    return {"apiVersion": API_VERSION, "kind": "TrainJob", "metadata": metadata, "spec": body}


def render_trainjob_list(spec: JobSpec, options: Any = None) -> dict[str, Any]:
    """The runtime and the TrainJob, as one ``List`` for ``kubectl apply -f``."""
    return {"apiVersion": "v1", "kind": "List", "items": [render_runtime(spec, options), render_trainjob(spec, options)]}
