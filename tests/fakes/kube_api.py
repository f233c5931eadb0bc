"""A local HTTP server speaking enough of the Kubernetes REST API for the kubeflow backend.

It serves what the official ``kubernetes`` client calls for TFJobs: the
``kubeflow.org/v1`` discovery document, ``tfjobs`` create / get / list / delete,
pods listed by label selector, and pod logs (``tailLines``, and ``follow`` streamed
with chunked encoding until the container ends). Answers are the API server's own
shapes: objects with ``metadata.uid`` / ``resourceVersion`` / ``creationTimestamp``,
``Status`` bodies for errors (404 NotFound, 409 AlreadyExists, 422 Invalid, …).

A test plays the training operator with :meth:`FakeKube.advance` (conditions Created →
Running → Succeeded/Failed, with the pods the operator would make, labelled
``training.kubeflow.org/replica-type`` / ``replica-index``), scripts those steps to
happen on the next reads of a TFJob with :meth:`FakeKube.script`, writes pod logs with
:meth:`FakeKube.write_log`, and injects errors (403, 409, 500…) with
:meth:`FakeKube.inject`. Every request is recorded in :attr:`FakeKube.requests`.
"""

from __future__ import annotations

import functools
import json
import re
import threading
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timezone
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any, Callable, Iterator
from urllib.parse import parse_qs, unquote, urlsplit

from .server import LocalServer

GROUP_VERSION = "kubeflow.org/v1"
_REASONS = {
    400: "BadRequest",
    401: "Unauthorized",
    403: "Forbidden",
    404: "NotFound",
    409: "AlreadyExists",
    422: "Invalid",
    500: "InternalError",
    503: "ServiceUnavailable",
}
_TYPES = {"Chief": "chief", "Master": "master", "Worker": "worker", "PS": "ps", "Evaluator": "evaluator"}


def _now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def status_body(code: int, message: str, reason: str | None = None, details: dict[str, Any] | None = None) -> dict[str, Any]:
    """A ``meta/v1 Status`` failure body, as the API server sends with every error."""
    body: dict[str, Any] = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason or _REASONS.get(code, "Unknown"),
        "code": code,
    }
    if details:
        body["details"] = details
    return body


def match_labels(labels: dict[str, str], selector: str | None) -> bool:
    """Equality-based label selectors (``a=b,c==d,e!=f``), as ``labelSelector`` takes."""
    for term in filter(None, (selector or "").split(",")):
        if "!=" in term:
            key, value = term.split("!=", 1)
            if labels.get(key.strip()) == value.strip():
                return False
        elif "=" in term:
            key, value = term.replace("==", "=").split("=", 1)
            if labels.get(key.strip()) != value.strip():
                return False
        elif term.strip() not in labels:
            return False
    return True


@dataclass
class _Pod:
    obj: dict[str, Any]
    log: str = ""
    done: bool = False


@dataclass
class _Injection:
    code: int
    method: str | None
    path: str | None
    times: int
    message: str | None
    reason: str | None


@dataclass
class FakeKube(LocalServer):
    """The server's state, and the test's handles on it.

    Attributes:
        namespaces: namespaces that exist (creating into another one is a 404).
        crd_installed: False answers 404 for everything under ``kubeflow.org/v1``.
        schema: the TFJob CRD's openAPIV3Schema; when given, creates are validated
            against it (422 Invalid otherwise), as the API server does.
        requests: ``(method, path?query)`` of every request, in order.
        bodies: the JSON bodies of POST requests, in order.
    """

    namespaces: set[str] = field(default_factory=lambda: {"default"})
    crd_installed: bool = True
    schema: dict[str, Any] | None = None
    #: The JobSet CRD's schema: creates of JobSets are validated against it when given.
    jobset_schema: dict[str, Any] | None = None
    #: The Trainer v2 CRDs' schemas by kind (TrainJob, ClusterTrainingRuntime), when given.
    trainer_schemas: dict[str, Any] | None = None
    #: Katib served (``experiments.kubeflow.org/v1beta1``), and its Experiment schema when given.
    katib_installed: bool = False
    katib_schema: dict[str, Any] | None = None
    requests: list[tuple[str, str]] = field(default_factory=list)
    bodies: list[Any] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.tfjobs: dict[tuple[str, str], dict[str, Any]] = {}
        self.jobsets: dict[tuple[str, str], dict[str, Any]] = {}
        self.trainjobs: dict[tuple[str, str], dict[str, Any]] = {}
        self.runtimes: dict[str, dict[str, Any]] = {}
        self.experiments: dict[tuple[str, str], dict[str, Any]] = {}
        self.trials: dict[tuple[str, str], dict[str, Any]] = {}
        self.configmaps: dict[tuple[str, str], dict[str, Any]] = {}
        self.pods: dict[tuple[str, str], _Pod] = {}
        self._scripts: dict[tuple[str, str], list[Callable[[], None]]] = {}
        self._injections: list[_Injection] = []
        self._cond = threading.Condition()
        self._stopping = False
        self._resource_version = 1000
        LocalServer.__init__(self)

    # -- lifecycle -------------------------------------------------------------------
    def stop(self) -> None:
        with self._cond:
            self._stopping = True  # wake log followers, so the server can shut down
            self._cond.notify_all()
        super().stop()

    def write_kubeconfig(self, path: Path, namespace: str = "default", context: str = "fake") -> Path:
        """A kubeconfig whose context points the client at this server (no credentials)."""
        config = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "fake-cluster", "cluster": {"server": self.url}}],
            "users": [{"name": "tester", "user": {}}],
            "contexts": [{"name": context, "context": {"cluster": "fake-cluster", "user": "tester", "namespace": namespace}}],
            "current-context": context,
        }
        path.write_text(json.dumps(config, indent=2))  # JSON is YAML
        return path

    # -- test controls ---------------------------------------------------------------
    def inject(
        self,
        code: int,
        *,
        method: str | None = None,
        path: str | None = None,
        times: int = 1,
        message: str | None = None,
        reason: str | None = None,
    ) -> None:
        """Answer the next ``times`` matching requests with ``code`` (a Status body).

        ``path`` is a regular expression searched in the request path.
        """
        with self._cond:
            self._injections.append(_Injection(code, method, path, times, message, reason))

    def script(self, namespace: str, name: str, *steps: str | tuple[str, dict[str, Any]] | Callable[[], None]) -> None:
        """Apply one step before each following GET of the TFJob.

        A step is a condition for :meth:`advance` (``"Running"``), a ``(condition,
        keyword arguments)`` pair, or any callable (e.g. one that writes a log).
        """
        calls: list[Callable[[], None]] = []
        for step in steps:
            if callable(step):
                calls.append(step)
                continue
            condition, kwargs = (step, {}) if isinstance(step, str) else step
            calls.append(lambda c=condition, k=kwargs: self.advance(namespace, name, c, **k))
        with self._cond:
            self._scripts.setdefault((namespace, name), []).extend(calls)

    def pod_name(self, name: str, task: str) -> str:
        """The operator's pod name for a task (``worker-1`` → ``NAME-worker-1``)."""
        return f"{name}-{task}"

    def advance(
        self,
        namespace: str,
        name: str,
        condition: str,
        *,
        message: str | None = None,
        failed_task: str = "worker-0",
        exit_code: int = 1,
    ) -> None:
        """Do what the training operator does when the TFJob reaches ``condition``.

        Created makes the pods (Pending); Running starts them; Succeeded ends the chief
        with exit 0; Failed ends ``failed_task`` with ``exit_code``; both then delete
        the pods still running (cleanPodPolicy Running). Restarting flips Running off.
        """
        with self._cond:
            job = self.tfjobs[(namespace, name)]
            status = job.setdefault("status", {})
            conditions = status.setdefault("conditions", [])
            now = _now()
            if condition in ("Running", "Restarting", "Succeeded", "Failed"):
                for c in conditions:
                    if c["type"] in ("Running", "Restarting") and c["type"] != condition:
                        c["status"] = "False"
            default = {
                "Created": f"TFJob {name} is created.",
                "Running": f"TFJob {namespace}/{name} is running.",
                "Restarting": f"TFJob {name} is restarting because 1 Worker replica(s) failed.",
                "Succeeded": f"TFJob {namespace}/{name} successfully completed.",
                "Failed": f"TFJob {namespace}/{name} has failed because 1 {_type_of(failed_task)} replica(s) failed.",
            }[condition]
            conditions.append(
                {
                    "type": condition,
                    "status": "True",
                    "reason": f"TFJob{condition}",
                    "message": message or default,
                    "lastUpdateTime": now,
                    "lastTransitionTime": now,
                }
            )
            pods = {k: p for k, p in self.pods.items() if p.obj["metadata"]["labels"].get(_JOB) == name and k[0] == namespace}
            if condition == "Created":
                self._make_pods(namespace, job)
            elif condition == "Running":
                status["startTime"] = now
                for pod in pods.values():
                    _set_phase(pod.obj, "Running", now)
            elif condition in ("Succeeded", "Failed"):
                status["completionTime"] = now
                ended = self.pod_name(name, "chief-0") if condition == "Succeeded" else self.pod_name(name, failed_task)
                for key, pod in list(pods.items()):
                    if key[1] == ended:
                        code = 0 if condition == "Succeeded" else exit_code
                        _set_phase(pod.obj, "Succeeded" if code == 0 else "Failed", now, exit_code=code)
                        pod.done = True
                    elif pod.obj["status"]["phase"] in ("Running", "Pending"):
                        del self.pods[key]
                        pod.done = True
            self._bump(job)
            self._cond.notify_all()

    def write_log(self, namespace: str, pod: str, text: str) -> None:
        """Append ``text`` to a pod's log (followers see it at once)."""
        with self._cond:
            self.pods[(namespace, pod)].log += text
            self._cond.notify_all()

    def restart_pod(self, namespace: str, pod: str, exit_code: int = 143, reason: str = "Error") -> None:
        """What the kubelet does when a container ends and its restartPolicy restarts it in
        place: ``restartCount`` + 1, the ended run in ``lastState``, running again."""
        with self._cond:
            cs = self.pods[(namespace, pod)].obj["status"]["containerStatuses"][0]
            now = _now()
            cs["lastState"] = {"terminated": {"exitCode": exit_code, "reason": reason, "finishedAt": now}}
            cs["restartCount"] = int(cs.get("restartCount") or 0) + 1
            cs["state"] = {"running": {"startedAt": now}}
            self._cond.notify_all()

    def finish_pod(self, namespace: str, pod: str, exit_code: int = 0) -> None:
        """End a pod's container (its log stream closes)."""
        with self._cond:
            p = self.pods[(namespace, pod)]
            _set_phase(p.obj, "Succeeded" if exit_code == 0 else "Failed", _now(), exit_code=exit_code)
            p.done = True
            self._cond.notify_all()

    def jobset_pod_name(self, name: str, task: str) -> str:
        """The pod of a JobSet task (``worker-1`` → ``NAME-worker-0-1-<suffix>``), once made."""
        role, index = task.rsplit("-", 1)
        prefix = f"{name}-{role}-0-{index}-"
        return next(n for (_, n) in self.pods if n.startswith(prefix))

    def advance_jobset(self, namespace: str, name: str, condition: str, *, failed_task: str = "worker-0", exit_code: int = 1) -> None:
        """Do what the JobSet and Job controllers do: Created makes one pod per task of every
        replicated job (Pending, with JobSet's labels); Running starts them; Completed ends
        the chief (the success target) with 0 and deletes the Jobs still running; Failed
        ends ``failed_task`` with ``exit_code`` and fails the set."""
        with self._cond:
            job = self.jobsets[(namespace, name)]
            status = job.setdefault("status", {})
            now = _now()
            pods = {k: p for k, p in self.pods.items() if k[0] == namespace and p.obj["metadata"]["labels"].get(_JOBSET) == name}
            if condition == "Created":
                for rjob in job["spec"]["replicatedJobs"]:
                    spec = rjob["template"]["spec"]
                    for i in range(spec.get("completions", 1)):
                        labels = {
                            **((spec["template"].get("metadata") or {}).get("labels") or {}),
                            _JOBSET: name, "jobset.sigs.k8s.io/replicatedjob-name": rjob["name"],
                            "jobset.sigs.k8s.io/replicatedjob-replicas": "1", "jobset.sigs.k8s.io/job-index": "0",
                            "batch.kubernetes.io/job-completion-index": str(i),
                        }  # fmt: skip
                        pod_name = f"{name}-{rjob['name']}-0-{i}-{uuid.uuid4().hex[:5]}"
                        self.pods[(namespace, pod_name)] = _Pod({
                            "apiVersion": "v1", "kind": "Pod",
                            "metadata": {"name": pod_name, "namespace": namespace, "uid": str(uuid.uuid4()), "labels": labels, "creationTimestamp": now},
                            "spec": spec["template"]["spec"],
                            "status": {"phase": "Pending", "containerStatuses": [
                                {"name": "tensorflow", "ready": False, "restartCount": 0, "state": {"waiting": {"reason": "ContainerCreating"}}}
                            ]},
                        })  # fmt: skip
            elif condition == "Running":
                for pod in pods.values():
                    _set_phase(pod.obj, "Running", now)
            elif condition in ("Completed", "Failed"):
                target = "chief-0" if condition == "Completed" else failed_task
                for key, pod in list(pods.items()):
                    labels = pod.obj["metadata"]["labels"]
                    task = f"{labels['jobset.sigs.k8s.io/replicatedjob-name']}-{labels['batch.kubernetes.io/job-completion-index']}"
                    if task == target:
                        code = 0 if condition == "Completed" else exit_code
                        _set_phase(pod.obj, "Succeeded" if code == 0 else "Failed", now, exit_code=code)
                        pod.done = True
                    elif pod.obj["status"]["phase"] in ("Running", "Pending"):
                        del self.pods[key]
                        pod.done = True
                message = "jobset completed successfully" if condition == "Completed" else f"jobset failed: {target} failed"
                status.setdefault("conditions", []).append(
                    {"type": condition, "status": "True", "reason": f"AllJobs{condition}", "message": message, "lastTransitionTime": now}
                )
                status["terminalState"] = condition
            self._bump(job)
            self._cond.notify_all()

    def advance_trainjob(self, namespace: str, name: str, condition: str, *, failed_task: str = "node-0", exit_code: int = 1) -> None:
        """Do what Kubeflow Trainer does: Created expands the runtime into a JobSet of the
        TrainJob's name (the ``node`` job gets the TrainJob's image and node count) and makes
        its pods; Running starts them; Complete and Failed end the JobSet and set the
        TrainJob's condition (``failed_task`` names the pod by its JobSet job, ``node-1``)."""
        with self._cond:
            trainjob = self.trainjobs[(namespace, name)]
            if condition == "Created":
                runtime = self.runtimes[trainjob["spec"]["runtimeRef"]["name"]]
                spec = json.loads(json.dumps(runtime["spec"]["template"]["spec"]))
                trainer = trainjob["spec"].get("trainer") or {}
                for job in spec["replicatedJobs"]:
                    if job["name"] == "node":
                        nodes = trainer.get("numNodes", runtime["spec"].get("mlPolicy", {}).get("numNodes", 1))
                        job["template"]["spec"]["parallelism"] = job["template"]["spec"]["completions"] = nodes
                        for container in job["template"]["spec"]["template"]["spec"]["containers"]:
                            if container["name"] == "node" and trainer.get("image"):
                                container["image"] = trainer["image"]
                self.jobsets[(namespace, name)] = {"metadata": {"name": name, "namespace": namespace, "resourceVersion": "1"}, "spec": spec}
        jobset_condition = {"Complete": "Completed"}.get(condition, condition)
        self.advance_jobset(namespace, name, jobset_condition, failed_task=failed_task, exit_code=exit_code)
        if condition in ("Complete", "Failed"):
            with self._cond:
                trainjob.setdefault("status", {}).setdefault("conditions", []).append(
                    {
                        "type": condition,
                        "status": "True",
                        "reason": f"Jobs{condition}",
                        "message": f"jobset {name} {condition.lower()}",
                        "lastTransitionTime": _now(),
                    }  # fmt: skip
                )
                self._bump(trainjob)

    def count(self, method: str, pattern: str) -> int:
        """How many requests with ``method`` had a path (and query, decoded) matching ``pattern``."""
        return sum(1 for m, p in self.requests if m == method and re.search(pattern, unquote(p)))

    # -- internals -------------------------------------------------------------------
    def _bump(self, obj: dict[str, Any]) -> None:
        self._resource_version += 1
        obj["metadata"]["resourceVersion"] = str(self._resource_version)

    def _make_pods(self, namespace: str, job: dict[str, Any]) -> None:
        name = job["metadata"]["name"]
        for rtype, rspec in job["spec"]["tfReplicaSpecs"].items():
            for i in range(rspec.get("replicas", 1)):
                kind = _TYPES.get(rtype, rtype.lower())
                labels = {
                    **((rspec.get("template") or {}).get("metadata") or {}).get("labels", {}),
                    "training.kubeflow.org/operator-name": "tfjob-controller",
                    _JOB: name,
                    "training.kubeflow.org/replica-type": kind,
                    "training.kubeflow.org/replica-index": str(i),
                }
                if kind in ("chief", "master"):
                    labels["training.kubeflow.org/job-role"] = "master"
                pod_name = f"{name}-{kind}-{i}"
                pod = {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "metadata": {
                        "name": pod_name,
                        "namespace": namespace,
                        "uid": str(uuid.uuid4()),
                        "labels": labels,
                        "creationTimestamp": _now(),
                        "ownerReferences": [{"apiVersion": GROUP_VERSION, "kind": "TFJob", "name": name, "uid": job["metadata"]["uid"]}],
                    },
                    "spec": rspec["template"]["spec"],
                    "status": {
                        "phase": "Pending",
                        "containerStatuses": [
                            {"name": "tensorflow", "ready": False, "restartCount": 0, "state": {"waiting": {"reason": "ContainerCreating"}}}
                        ],
                    },
                }
                self.pods[(namespace, pod_name)] = _Pod(pod)

    def _collect_owned(self, owner: dict[str, Any]) -> None:
        """The garbage collector (lock held): delete the ConfigMaps ``owner`` owns by uid."""
        uid = owner["metadata"].get("uid")
        for key, cm in list(self.configmaps.items()):
            if any(ref.get("uid") == uid for ref in cm["metadata"].get("ownerReferences") or []):
                del self.configmaps[key]

    def _injected(self, method: str, path: str) -> _Injection | None:
        with self._cond:
            for inj in self._injections:
                if inj.times > 0 and (inj.method in (None, method)) and (inj.path is None or re.search(inj.path, path)):
                    inj.times -= 1
                    return inj
        return None

    def _run_script(self, namespace: str, name: str) -> None:
        with self._cond:
            steps = self._scripts.get((namespace, name))
            step = steps.pop(0) if steps else None
        if step is not None:
            step()


_JOB = "training.kubeflow.org/job-name"
_JOBSET = "jobset.sigs.k8s.io/jobset-name"


@dataclass(frozen=True)
class _Kind:
    """A custom resource the stand-in serves besides TFJobs."""

    kind: str
    plural: str
    group: str
    store: str  # the FakeKube attribute holding them
    schema: Callable[["FakeKube"], dict[str, Any] | None]
    check: Callable[["FakeKube", dict[str, Any]], str | None] | None = None
    owns_pods: bool = False


def _runtime_missing(kube: "FakeKube", body: dict[str, Any]) -> str | None:
    name = body["spec"]["runtimeRef"]["name"]
    return None if name in kube.runtimes else f"spec.runtimeRef: ClusterTrainingRuntime {name} not found"


_JOBSETS = _Kind("JobSet", "jobsets", "jobset.x-k8s.io", "jobsets", lambda k: k.jobset_schema, owns_pods=True)
_TRAINJOBS = _Kind(
    "TrainJob", "trainjobs", "trainer.kubeflow.org", "trainjobs", lambda k: (k.trainer_schemas or {}).get("TrainJob"),
    check=_runtime_missing, owns_pods=True,
)  # fmt: skip


def _configmap_too_big(kube: "FakeKube", body: dict[str, Any]) -> str | None:
    import base64

    size = sum(len(k) + len(v.encode()) for k, v in (body.get("data") or {}).items())
    size += sum(len(k) + len(base64.b64decode(v)) for k, v in (body.get("binaryData") or {}).items())
    return "[]: Too long: must have at most 1048576 bytes" if size > 1048576 else None


#: Core ConfigMaps (a job's shipped packages): served whether or not the CRDs are installed.
_CONFIGMAPS = _Kind("ConfigMap", "configmaps", "", "configmaps", lambda k: None, check=_configmap_too_big)
_RUNTIMES = _Kind(
    "ClusterTrainingRuntime", "clustertrainingruntimes", "trainer.kubeflow.org", "runtimes",
    lambda k: (k.trainer_schemas or {}).get("ClusterTrainingRuntime"),
)  # fmt: skip


_EXPERIMENTS = _Kind("Experiment", "experiments", "kubeflow.org", "experiments", lambda k: k.katib_schema)
_TRIALS = _Kind("Trial", "trials", "kubeflow.org", "trials", lambda k: None)


def _type_of(task: str) -> str:
    role = task.rsplit("-", 1)[0]
    return {v: k for k, v in _TYPES.items()}.get(role, role)


def _set_phase(pod: dict[str, Any], phase: str, now: str, exit_code: int | None = None) -> None:
    status = pod["status"]
    status["phase"] = phase
    cs = status["containerStatuses"][0]
    if phase == "Running":
        status["startTime"] = now
        cs["state"] = {"running": {"startedAt": now}}
        cs["ready"] = True
    elif phase in ("Succeeded", "Failed"):
        status.setdefault("startTime", now)
        cs["state"] = {"terminated": {"exitCode": exit_code, "reason": "Completed" if exit_code == 0 else "Error", "finishedAt": now}}
        cs["ready"] = False


_ROUTES: list[tuple[str, re.Pattern[str]]] = [
    ("discovery", re.compile(r"^/apis/kubeflow\.org/v1/?$")),
    ("groups", re.compile(r"^/apis/?$")),
    ("tfjobs_all", re.compile(r"^/apis/kubeflow\.org/v1/tfjobs/?$")),
    ("tfjobs", re.compile(r"^/apis/kubeflow\.org/v1/namespaces/(?P<ns>[^/]+)/tfjobs/?$")),
    ("tfjob", re.compile(r"^/apis/kubeflow\.org/v1/namespaces/(?P<ns>[^/]+)/tfjobs/(?P<name>[^/]+)/?$")),
    ("jobset_discovery", re.compile(r"^/apis/jobset\.x-k8s\.io/v1alpha2/?$")),
    ("jobsets", re.compile(r"^/apis/jobset\.x-k8s\.io/v1alpha2/namespaces/(?P<ns>[^/]+)/jobsets/?$")),
    ("jobset", re.compile(r"^/apis/jobset\.x-k8s\.io/v1alpha2/namespaces/(?P<ns>[^/]+)/jobsets/(?P<name>[^/]+)/?$")),
    ("trainer_discovery", re.compile(r"^/apis/trainer\.kubeflow\.org/v1alpha1/?$")),
    ("runtimes", re.compile(r"^/apis/trainer\.kubeflow\.org/v1alpha1/clustertrainingruntimes/?$")),
    ("runtime", re.compile(r"^/apis/trainer\.kubeflow\.org/v1alpha1/clustertrainingruntimes/(?P<name>[^/]+)/?$")),
    ("trainjobs", re.compile(r"^/apis/trainer\.kubeflow\.org/v1alpha1/namespaces/(?P<ns>[^/]+)/trainjobs/?$")),
    ("trainjob", re.compile(r"^/apis/trainer\.kubeflow\.org/v1alpha1/namespaces/(?P<ns>[^/]+)/trainjobs/(?P<name>[^/]+)/?$")),
    ("katib_discovery", re.compile(r"^/apis/kubeflow\.org/v1beta1/?$")),
    ("experiments", re.compile(r"^/apis/kubeflow\.org/v1beta1/namespaces/(?P<ns>[^/]+)/experiments/?$")),
    ("experiment", re.compile(r"^/apis/kubeflow\.org/v1beta1/namespaces/(?P<ns>[^/]+)/experiments/(?P<name>[^/]+)/?$")),
    ("trials", re.compile(r"^/apis/kubeflow\.org/v1beta1/namespaces/(?P<ns>[^/]+)/trials/?$")),
    ("configmaps", re.compile(r"^/api/v1/namespaces/(?P<ns>[^/]+)/configmaps/?$")),
    ("configmap", re.compile(r"^/api/v1/namespaces/(?P<ns>[^/]+)/configmaps/(?P<name>[^/]+)/?$")),
    ("pods", re.compile(r"^/api/v1/namespaces/(?P<ns>[^/]+)/pods/?$")),
    ("log", re.compile(r"^/api/v1/namespaces/(?P<ns>[^/]+)/pods/(?P<name>[^/]+)/log/?$")),
]


class _Handler(BaseHTTPRequestHandler):
    kube: FakeKube
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # keep test output clean
        pass

    # -- plumbing --------------------------------------------------------------------
    def _send(self, code: int, body: Any, content_type: str = "application/json") -> None:
        data = body if isinstance(body, bytes) else (body.encode() if isinstance(body, str) else json.dumps(body).encode())
        self.send_response(code)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _error(self, code: int, message: str, reason: str | None = None, details: dict[str, Any] | None = None) -> None:
        self._send(code, status_body(code, message, reason, details))

    def _body(self) -> Any:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        return json.loads(raw) if raw else None

    def do_GET(self) -> None:
        self._dispatch("GET")

    def do_POST(self) -> None:
        self._dispatch("POST")

    def do_DELETE(self) -> None:
        self._dispatch("DELETE")

    def _dispatch(self, method: str) -> None:
        url = urlsplit(self.path)
        query = {k: v[-1] for k, v in parse_qs(url.query).items()}
        body = self._body() if method in ("POST", "PUT", "PATCH", "DELETE") else None
        kube = self.kube
        with kube._cond:
            kube.requests.append((method, self.path))
            if method == "POST":
                kube.bodies.append(body)
        inj = kube._injected(method, url.path)
        if inj is not None:
            self._error(inj.code, inj.message or f"injected {inj.code} for {method} {url.path}", inj.reason)
            return
        for route, pattern in _ROUTES:
            m = pattern.match(url.path)
            if m:
                getattr(self, f"_{route}")(method, query, body, **m.groupdict())
                return
        self._error(404, "the server could not find the requested resource")

    def _not_served(self, served: bool) -> bool:
        """Not ``served`` (a CRD not installed): answers the 404 of an API this server does not have."""
        if not served:
            self._error(404, "the server could not find the requested resource")
        return not served

    def _resource_list(self, group_version: str, *resources: dict[str, Any]) -> None:
        """An API group version's discovery document."""
        self._send(200, {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": group_version, "resources": list(resources)})

    # -- routes ----------------------------------------------------------------------
    def _groups(self, method: str, query: dict[str, str], body: Any) -> None:
        groups = []
        if self.kube.crd_installed:
            version = {"groupVersion": GROUP_VERSION, "version": "v1"}
            groups.append({"name": "kubeflow.org", "versions": [version], "preferredVersion": version})
            jobset = {"groupVersion": "jobset.x-k8s.io/v1alpha2", "version": "v1alpha2"}
            groups.append({"name": "jobset.x-k8s.io", "versions": [jobset], "preferredVersion": jobset})
            trainer = {"groupVersion": "trainer.kubeflow.org/v1alpha1", "version": "v1alpha1"}
            groups.append({"name": "trainer.kubeflow.org", "versions": [trainer], "preferredVersion": trainer})
        self._send(200, {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})

    def _discovery(self, method: str, query: dict[str, str], body: Any) -> None:
        if self._not_served(self.kube.crd_installed):
            return
        verbs = ["delete", "deletecollection", "get", "list", "patch", "create", "update", "watch"]
        self._resource_list(
            GROUP_VERSION,
            {"name": "tfjobs", "singularName": "tfjob", "namespaced": True, "kind": "TFJob", "verbs": verbs},
            {"name": "tfjobs/status", "singularName": "", "namespaced": True, "kind": "TFJob", "verbs": ["get", "patch", "update"]},
        )

    def _list(self, items: list[dict[str, Any]], kind: str, query: dict[str, str]) -> None:
        items = [i for i in items if match_labels(i["metadata"].get("labels", {}), query.get("labelSelector"))]
        items.sort(key=lambda i: (i["metadata"].get("namespace", ""), i["metadata"]["name"]))
        if query.get("limit"):
            items = items[: int(query["limit"])]
        version = "v1" if kind == "PodList" else GROUP_VERSION
        self._send(
            200, {"apiVersion": version, "kind": kind, "metadata": {"resourceVersion": str(self.kube._resource_version)}, "items": items}
        )

    def _tfjobs_all(self, method: str, query: dict[str, str], body: Any) -> None:
        if self._not_served(self.kube.crd_installed):
            return
        with self.kube._cond:
            items = json.loads(json.dumps(list(self.kube.tfjobs.values())))
        self._list(items, "TFJobList", query)

    def _tfjobs(self, method: str, query: dict[str, str], body: Any, ns: str) -> None:
        kube = self.kube
        if self._not_served(kube.crd_installed):
            return
        if method == "GET":
            with kube._cond:
                items = json.loads(json.dumps([j for (n, _), j in kube.tfjobs.items() if n == ns]))
            self._list(items, "TFJobList", query)
            return
        if method != "POST":
            self._error(405, f"method {method} not allowed", "MethodNotAllowed")
            return
        if ns not in kube.namespaces:
            self._error(404, f'namespaces "{ns}" not found', details={"name": ns, "kind": "namespaces"})
            return
        meta = (body or {}).get("metadata") or {}
        name = meta.get("name", "")
        if meta.get("namespace") not in (None, ns):
            self._error(400, "the namespace of the provided object does not match the namespace sent on the request")
            return
        if kube.schema is not None:
            import jsonschema

            errors = sorted(jsonschema.Draft7Validator(kube.schema).iter_errors(body), key=lambda e: list(e.path))
            if errors:
                first = errors[0]
                where = ".".join(str(p) for p in first.path)
                self._error(422, f'TFJob.kubeflow.org "{name}" is invalid: {where}: {first.message}')
                return
        with kube._cond:
            if (ns, name) in kube.tfjobs:
                self._error(
                    409,
                    f'tfjobs.kubeflow.org "{name}" already exists',
                    details={"name": name, "group": "kubeflow.org", "kind": "tfjobs"},
                )
                return
            obj = json.loads(json.dumps(body))
            obj["metadata"].update(namespace=ns, uid=str(uuid.uuid4()), creationTimestamp=_now(), generation=1)
            kube._bump(obj)
            kube.tfjobs[(ns, name)] = obj
            answer = json.loads(json.dumps(obj))
        self._send(201, answer)

    def _tfjob(self, method: str, query: dict[str, str], body: Any, ns: str, name: str) -> None:
        kube = self.kube
        if self._not_served(kube.crd_installed):
            return
        if method == "GET":
            kube._run_script(ns, name)
        with kube._cond:
            obj = kube.tfjobs.get((ns, name))
            if obj is None:
                self._error(
                    404, f'tfjobs.kubeflow.org "{name}" not found', details={"name": name, "group": "kubeflow.org", "kind": "tfjobs"}
                )
                return
            if method == "DELETE":
                del kube.tfjobs[(ns, name)]
                kube._collect_owned(obj)
                for key in [k for k, p in kube.pods.items() if k[0] == ns and p.obj["metadata"]["labels"].get(_JOB) == name]:
                    kube.pods.pop(key).done = True
                kube._cond.notify_all()
                answer: Any = {
                    "kind": "Status",
                    "apiVersion": "v1",
                    "metadata": {},
                    "status": "Success",
                    "details": {"name": name, "group": "kubeflow.org", "kind": "tfjobs", "uid": obj["metadata"]["uid"]},
                }
            else:
                answer = json.loads(json.dumps(obj))
        self._send(200, answer)

    # -- JobSets (jobset.x-k8s.io/v1alpha2): installed with the TFJob CRD (crd_installed) --
    def _jobset_discovery(self, method: str, query: dict[str, str], body: Any) -> None:
        if self._not_served(self.kube.crd_installed):
            return
        verbs = ["delete", "get", "list", "create", "watch"]
        self._resource_list(
            "jobset.x-k8s.io/v1alpha2", {"name": "jobsets", "singularName": "jobset", "namespaced": True, "kind": "JobSet", "verbs": verbs}
        )

    # -- JobSets and Kubeflow Trainer v2's resources: one generic collection and member ---------
    def _jobsets(self, method: str, query: dict[str, str], body: Any, ns: str) -> None:
        self._collection(_JOBSETS, method, query, body, ns)

    def _jobset(self, method: str, query: dict[str, str], body: Any, ns: str, name: str) -> None:
        self._member(_JOBSETS, method, ns, name)

    def _trainjobs(self, method: str, query: dict[str, str], body: Any, ns: str) -> None:
        self._collection(_TRAINJOBS, method, query, body, ns)

    def _trainjob(self, method: str, query: dict[str, str], body: Any, ns: str, name: str) -> None:
        self._member(_TRAINJOBS, method, ns, name)

    def _runtimes(self, method: str, query: dict[str, str], body: Any) -> None:
        self._collection(_RUNTIMES, method, query, body, None)

    def _runtime(self, method: str, query: dict[str, str], body: Any, name: str) -> None:
        self._member(_RUNTIMES, method, None, name)

    # -- Kubeflow Trainer v2 (trainer.kubeflow.org/v1alpha1), installed with the others --------
    def _trainer_discovery(self, method: str, query: dict[str, str], body: Any) -> None:
        if self._not_served(self.kube.crd_installed):
            return
        verbs = ["delete", "get", "list", "create", "watch"]
        self._resource_list("trainer.kubeflow.org/v1alpha1",
            {"name": "trainjobs", "singularName": "trainjob", "namespaced": True, "kind": "TrainJob", "verbs": verbs},
            {"name": "clustertrainingruntimes", "singularName": "clustertrainingruntime", "namespaced": False, "kind": "ClusterTrainingRuntime", "verbs": verbs},
        )  # fmt: skip

    def _collection(self, kind: "_Kind", method: str, query: dict[str, str], body: Any, ns: str | None) -> None:
        """GET (list, by label) or POST (create: namespace, schema, name taken, the kind's own check)."""
        kube = self.kube
        if self._not_served(not kind.group or kube.crd_installed):
            return
        objects: dict[Any, dict[str, Any]] = getattr(kube, kind.store)
        if method == "GET":
            with kube._cond:
                items = json.loads(json.dumps([o for key, o in objects.items() if ns is None or key[0] == ns]))
            self._list(items, f"{kind.kind}List", query)
            return
        if ns is not None and ns not in kube.namespaces:
            self._error(404, f'namespaces "{ns}" not found', details={"name": ns, "kind": "namespaces"})
            return
        name = ((body or {}).get("metadata") or {}).get("name", "")
        schema = kind.schema(kube)
        if schema is not None:
            import jsonschema

            errors = sorted(jsonschema.Draft7Validator(schema).iter_errors(body), key=lambda e: list(e.path))
            if errors:
                where = ".".join(str(p) for p in errors[0].path)
                self._error(422, f'{kind.kind}.{kind.group} "{name}" is invalid: {where}: {errors[0].message}')
                return
        key = (ns, name) if ns is not None else name
        with kube._cond:
            if key in objects:
                self._error(409, f'{kind.plural}.{kind.group} "{name}" already exists', details={"name": name, "kind": kind.plural})
                return
            problem = kind.check(kube, body) if kind.check is not None else None
            if problem:
                self._error(422, f'{kind.kind}.{kind.group} "{name}" is invalid: {problem}')
                return
            obj = json.loads(json.dumps(body))
            obj["metadata"].update(uid=str(uuid.uuid4()), creationTimestamp=_now(), generation=1, **({"namespace": ns} if ns else {}))
            kube._bump(obj)
            objects[key] = obj
            answer = json.loads(json.dumps(obj))
        self._send(201, answer)

    def _member(self, kind: "_Kind", method: str, ns: str | None, name: str) -> None:
        """GET (after the test's script step) or DELETE (with the JobSet and pods it owns)."""
        kube = self.kube
        if method == "GET" and ns is not None:
            kube._run_script(ns, name)
        objects: dict[Any, dict[str, Any]] = getattr(kube, kind.store)
        key = (ns, name) if ns is not None else name
        with kube._cond:
            obj = objects.get(key)
            if obj is None:
                self._error(404, f'{kind.plural}.{kind.group} "{name}" not found', details={"name": name, "kind": kind.plural})
                return
            if method == "DELETE":
                del objects[key]
                kube._collect_owned(obj)
                if kind.owns_pods:  # the garbage collector: its JobSet (a TrainJob's) and its pods go too
                    kube.jobsets.pop((ns, name), None)
                    for pod in [k for k, p in kube.pods.items() if k[0] == ns and p.obj["metadata"]["labels"].get(_JOBSET) == name]:
                        kube.pods.pop(pod).done = True
                    kube._cond.notify_all()
                answer: Any = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success"}
            else:
                answer = json.loads(json.dumps(obj))
        self._send(200, answer)

    # -- Katib (kubeflow.org/v1beta1): served only with katib_installed ------------------------
    def _katib_discovery(self, method: str, query: dict[str, str], body: Any) -> None:
        if self._not_served(self.kube.katib_installed):
            return
        verbs = ["delete", "get", "list", "create", "watch"]
        self._resource_list(
            "kubeflow.org/v1beta1",
            {"name": "experiments", "singularName": "experiment", "namespaced": True, "kind": "Experiment", "verbs": verbs},
        )

    def _experiments(self, method: str, query: dict[str, str], body: Any, ns: str) -> None:
        if self._not_served(self.kube.katib_installed):
            return
        self._collection(_EXPERIMENTS, method, query, body, ns)

    def _experiment(self, method: str, query: dict[str, str], body: Any, ns: str, name: str) -> None:
        if self._not_served(self.kube.katib_installed):
            return
        self._member(_EXPERIMENTS, method, ns, name)

    def _trials(self, method: str, query: dict[str, str], body: Any, ns: str) -> None:
        if self._not_served(self.kube.katib_installed):
            return
        self._collection(_TRIALS, method, query, body, ns)

    def _configmaps(self, method: str, query: dict[str, str], body: Any, ns: str) -> None:
        self._collection(_CONFIGMAPS, method, query, body, ns)

    def _configmap(self, method: str, query: dict[str, str], body: Any, ns: str, name: str) -> None:
        self._member(_CONFIGMAPS, method, ns, name)

    def _pods(self, method: str, query: dict[str, str], body: Any, ns: str) -> None:
        with self.kube._cond:
            items = json.loads(json.dumps([p.obj for (n, _), p in self.kube.pods.items() if n == ns]))
        self._list(items, "PodList", query)

    def _log(self, method: str, query: dict[str, str], body: Any, ns: str, name: str) -> None:
        kube = self.kube
        with kube._cond:
            pod = kube.pods.get((ns, name))
            if pod is None:
                self._error(404, f'pods "{name}" not found', details={"name": name, "kind": "pods"})
                return
            container = query.get("container", "tensorflow")
            if container != "tensorflow":
                self._error(400, f"container {container} is not valid for pod {name}")
                return
            if pod.obj["status"]["phase"] == "Pending":
                self._error(400, f'container "tensorflow" in pod "{name}" is waiting to start: ContainerCreating')
                return
            text = pod.log
        tail = query.get("tailLines")
        if tail is not None:
            lines = text.splitlines(keepends=True)
            text = "".join(lines[-int(tail) :]) if int(tail) > 0 else ""
        # The API server reads a boolean as Go's strconv.ParseBool does: kubernetes<31 (which
        # KFP pins) sends follow=True, newer clients follow=true.
        if query.get("follow") not in ("1", "t", "T", "true", "True", "TRUE"):
            self._send(200, text, "text/plain")
            return
        # Follow: stream what is there, then every new write, until the container ends.
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        offset = len(pod.log)
        self._chunk(text.encode())
        while True:
            with kube._cond:
                kube._cond.wait_for(lambda: len(pod.log) > offset or pod.done or kube._stopping, timeout=1.0)
                new, offset = pod.log[offset:], len(pod.log)
                finished = pod.done or kube._stopping
            try:
                self._chunk(new.encode())
                if finished:
                    self.wfile.write(b"0\r\n\r\n")
                    self.wfile.flush()
                    return
            except (BrokenPipeError, ConnectionResetError):
                return

    def _chunk(self, data: bytes) -> None:
        if data:
            self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
            self.wfile.flush()


@functools.lru_cache(maxsize=None)
def _load_crd(crd_path: Path) -> dict[str, Any]:
    import yaml

    # The CRD is 8,000 lines: the C loader reads it in a fraction of the pure-Python time.
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    return yaml.load(crd_path.read_text(), Loader=loader)


def load_tfjob_schema(crd_path: Path) -> dict[str, Any]:
    """The openAPIV3Schema of the TFJob CRD file (read once)."""
    return _load_crd(crd_path)["spec"]["versions"][0]["schema"]["openAPIV3Schema"]


def kube_fixture(crd_path: Path, tmp_path: Path, monkeypatch: Any) -> Iterator[FakeKube]:
    """Body of a pytest fixture: a started fake with two namespaces (``default``, ``ml``).

    Creates are validated against the CRD schemas: the TFJob CRD at ``crd_path`` and the
    JobSet and Trainer CRDs beside it (vendored in tests/data/crds, see its README.md).
    ``HOME`` points at ``tmp_path`` so no ``~/.kube/config`` of the machine is picked up,
    and in-cluster config is off.
    """
    schema = load_tfjob_schema(crd_path)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    versions = _load_crd(crd_path.parent / "jobset.x-k8s.io_jobsets.yaml")["spec"]["versions"]
    jobset_schema = next(v for v in versions if v["name"] == "v1alpha2")["schema"]["openAPIV3Schema"]
    trainer_schemas = {}
    for kind, file in (
        ("TrainJob", "trainer.kubeflow.org_trainjobs.yaml"),
        ("ClusterTrainingRuntime", "trainer.kubeflow.org_clustertrainingruntimes.yaml"),
    ):
        trainer_schemas[kind] = _load_crd(crd_path.parent / file)["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    with FakeKube(namespaces={"default", "ml"}, schema=schema, jobset_schema=jobset_schema, trainer_schemas=trainer_schemas) as server:
        yield server


FakeKube.handler = _Handler
FakeKube.state_attribute = "kube"
