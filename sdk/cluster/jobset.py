"""The TensorFlow cluster of a JobSet pod, from the JobSet's own environment.

JobSet (kubernetes-sigs/jobset, the engine under Kubeflow Trainer v2) sets no
``TF_CONFIG``. tfjob renders one replicated job per role (``chief``, ``worker``, ``ps``,
``evaluator``), each one Indexed Job of N pods, with DNS hostnames on; then every pod
knows, from variables tfjob renders and the platform fills in:

- ``JOBSET_NAME`` (downward API, label ``jobset.sigs.k8s.io/jobset-name``),
- ``REPLICATED_JOB_NAME`` (label ``jobset.sigs.k8s.io/replicatedjob-name``): its role,
- ``JOB_INDEX`` (label ``jobset.sigs.k8s.io/job-index``): always 0, one Job per role,
- ``JOB_COMPLETION_INDEX`` (set by the Indexed Job controller): its index in the role,
- ``TFJOB_JOBSET_ROLES`` (rendered by tfjob: ``chief=1,worker=2,ps=1``) and
  ``TFJOB_JOBSET_PORT`` (the cluster port, 2222 as the TFJob operator uses),

and every task's address is its hostname ``<jobset>-<role>-0-<index>.<subdomain>`` (the
subdomain defaults to the JobSet's name). :func:`jobset_task_env` turns this into the
``TF_CONFIG`` the Kubeflow TFJob operator would have written for the same job (its
dialect: chief, no ``TF_CONFIG`` for a one-replica job), so a trainer sees the same
variable on every backend. Stdlib only (the bootstrap imports it).
"""

from __future__ import annotations

from ..lazy import LazyPattern
from .render import render_task_env
from .spec import ROLES, config_error

# Not `from typing import TYPE_CHECKING` (~3 ms), nor collections.abc at run time: every
# task's bootstrap imports this module.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping

#: Variables tfjob renders into every JobSet pod.
ROLES_VAR = "TFJOB_JOBSET_ROLES"
PORT_VAR = "TFJOB_JOBSET_PORT"
SUBDOMAIN_VAR = "TFJOB_JOBSET_SUBDOMAIN"
#: Roles whose replicated job has another name (``worker=node``: Kubeflow Trainer v2's
#: trainer job is ``node``), as tfjob renders them for a TrainJob's runtime.
JOBS_VAR = "TFJOB_JOBSET_JOBS"
#: Variables the JobSet and Job controllers give it (the first three through the downward API).
JOBSET_NAME_VAR = "JOBSET_NAME"
REPLICATED_JOB_VAR = "REPLICATED_JOB_NAME"
JOB_INDEX_VAR = "JOB_INDEX"
COMPLETION_INDEX_VAR = "JOB_COMPLETION_INDEX"

#: The labels JobSet puts on its pods, read through the downward API.
JOBSET_NAME_LABEL = "jobset.sigs.k8s.io/jobset-name"
REPLICATED_JOB_LABEL = "jobset.sigs.k8s.io/replicatedjob-name"
JOB_INDEX_LABEL = "jobset.sigs.k8s.io/job-index"
#: The Job controller's label (and, before Kubernetes 1.28, annotation) of a pod's index.
COMPLETION_INDEX_LABEL = "batch.kubernetes.io/job-completion-index"

#: Bounds: what a Kubernetes job can hold.
MAX_TASKS_PER_ROLE = 2**31 - 1
_NAME_RE = LazyPattern(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?\Z")  # compiled in a JobSet pod only


def render_roles(counts: Mapping[str, int]) -> str:
    """``TFJOB_JOBSET_ROLES``: ``chief=1,worker=2,ps=1`` in tfjob's role order."""
    return ",".join(f"{role}={counts[role]}" for role in ROLES if counts.get(role))


def parse_roles(text: str) -> dict[str, int]:
    """The counts of ``TFJOB_JOBSET_ROLES``.

    Raises:
        ClusterConfigError: not ``role=count`` pairs of known roles, each once.
    """
    if len(text) > 200:
        raise config_error(f"{ROLES_VAR} is longer than 200 characters; tfjob writes role=count pairs")
    counts: dict[str, int] = {}
    for part in text.split(","):
        role, sep, count = part.strip().partition("=")
        if (
            not sep
            or role not in ROLES
            or role in counts
            or not (count.isascii() and count.isdigit())
            or not 1 <= int(count) <= MAX_TASKS_PER_ROLE
        ):
            raise config_error(f"{ROLES_VAR}={text!r} is not role=count pairs (e.g. chief=1,worker=2,ps=1)")
        counts[role] = int(count)
    return counts


def parse_jobs(text: str) -> dict[str, str]:
    """Role → replicated job name of ``TFJOB_JOBSET_JOBS`` (``worker=node``); empty: none renamed."""
    jobs: dict[str, str] = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        role, sep, job = part.partition("=")
        if not sep or role not in ROLES or role in jobs or not _NAME_RE.match(job) or len(job) > 63 or len(jobs) >= len(ROLES):
            raise config_error(f"{JOBS_VAR}={text!r} is not role=job pairs (e.g. worker=node)")
        jobs[role] = job
    return jobs


def jobset_cluster(
    jobset: str, counts: Mapping[str, int], port: int, subdomain: str | None = None, jobs: Mapping[str, str] | None = None
) -> dict[str, list[str]]:
    """Every task's address in a tfjob JobSet: the pods' DNS hostnames."""
    domain = subdomain or jobset
    jobs = jobs or {}
    return {
        role: [f"{jobset}-{jobs.get(role, role)}-0-{i}.{domain}:{port}" for i in range(counts[role])] for role in ROLES if counts.get(role)
    }


def is_jobset_pod(env: Mapping[str, str]) -> bool:
    """True in a pod of a JobSet tfjob rendered (whatever else the environment holds)."""
    return bool(env.get(ROLES_VAR)) and bool(env.get(JOBSET_NAME_VAR))


def jobset_task_env(env: Mapping[str, str]) -> dict[str, str]:
    """The ``TF_CONFIG`` the TFJob operator would give this pod, from the JobSet's variables.

    Raises:
        ClusterConfigError: a variable is missing or not what JobSet and tfjob write.
    """
    name = env.get(JOBSET_NAME_VAR, "")
    role = env.get(REPLICATED_JOB_VAR, "")
    index_text = env.get(COMPLETION_INDEX_VAR, "")
    if not _NAME_RE.match(name) or len(name) > 63:
        raise config_error(f"{JOBSET_NAME_VAR}={name!r} is not a JobSet name")
    counts = parse_roles(env.get(ROLES_VAR, ""))
    jobs = parse_jobs(env.get(JOBS_VAR, ""))
    role = {job: r for r, job in jobs.items()}.get(role, role)
    if role not in counts:
        raise config_error(f"{REPLICATED_JOB_VAR}={role!r} is not one of this job's roles ({', '.join(counts)})")
    if env.get(JOB_INDEX_VAR, "0") != "0":
        raise config_error(f"{JOB_INDEX_VAR}={env.get(JOB_INDEX_VAR)!r}: tfjob runs one Job per role (index 0)")
    if not (index_text.isascii() and index_text.isdigit()) or int(index_text) >= counts[role]:
        raise config_error(f"{COMPLETION_INDEX_VAR}={index_text!r} is not an index of the {counts[role]} {role} tasks")
    port_text = env.get(PORT_VAR, "2222")
    if not (port_text.isascii() and port_text.isdigit()) or not 0 < int(port_text) < 65536:
        raise config_error(f"{PORT_VAR}={port_text!r} is not a port")
    subdomain = env.get(SUBDOMAIN_VAR) or None
    if subdomain is not None and (not _NAME_RE.match(subdomain) or len(subdomain) > 63):
        raise config_error(f"{SUBDOMAIN_VAR}={subdomain!r} is not a DNS label")
    cluster = jobset_cluster(name, counts, int(port_text), subdomain, jobs)
    return render_task_env(cluster, role, int(index_text), "kubeflow")
