"""A hyperparameter study on Kubernetes run by Katib (see :mod:`.tuning`): the study as a Katib
``Experiment`` whose ``trialTemplate`` is the job this backend renders, created on a cluster
that serves Katib and followed to its end (:class:`KatibStudy`); else tfjob's own study runs."""

from __future__ import annotations

import time
from typing import Any, Callable, TextIO

from ...errors import SpecError, UsageError, Word
from ...model import JobState
from ...description.spec import JobSpec
from ...tuning.study import StudySpec
from ...tuning.katib import render_experiment, trial_args, trial_env
from ...tuning.trials import StudyResult, Trial
from ...tuning.view import TrialsView
from .kinds import Resource
from .render import MANAGED_BY_LABEL, MANAGED_BY_VALUE
from .render_trainjob import NODE, trainer_role
from .tuning import KubeflowBackend, KubeStudy, add_trial_env, reporting_task, unescape, with_trial


#: Katib's Experiment, as the client creates it (served only where Katib is installed).
EXPERIMENT = Resource(
    "kubeflow.org",
    "v1beta1",
    "experiments",
    "Experiment",
    'install Katib (kubectl apply -k "github.com/kubeflow/katib.git/manifests/v1beta1/installs/katib-standalone?ref=v0.19.0"), '
    "or drop --async: tfjob then runs the study's trials itself",
)


def render_katib(backend: KubeflowBackend, study: StudySpec, spec: JobSpec, options: Any) -> dict[str, Any]:
    """The study as a Katib ``Experiment`` (a ``List`` with what it needs first: the packages'
    ConfigMap, a TrainJob's runtime). Pure but for the trainer's build, as ``render``.

    Raises:
        SpecError: what Katib cannot run as the study says (see :mod:`tfjob.tuning.katib`).
    """
    template = with_trial(spec, trial_args(study))
    manifest = unescape(backend.render(template, options))
    add_trial_env(manifest, trial_env())
    *companions, job = manifest["items"] if manifest.get("kind") == "List" else [manifest]
    role = reporting_task(spec).rsplit("-", 1)[0]
    if job["kind"] == "TFJob":
        types = list(job["spec"]["tfReplicaSpecs"])
        role = next((t for t in types if t in ("Chief", "Master")), "Worker").lower()
    elif job["kind"] == "TrainJob":
        node_role = trainer_role(spec)
        others = sorted({p.role for p in spec.pools} - {node_role})
        if others:
            raise SpecError(
                field="backend",
                value=Word("trainjob"),
                problem=(
                    f"cannot pass a Katib trial's values to the {'/'.join(others)} task(s): a TrainJob passes arguments "
                    f"to Trainer's node job ({node_role}) only"
                ),
                fix="tune it with {backend=jobset} (the same pods, without Trainer), or drop --dry-run/--async to let tfjob run the trials",
            )
        plain = backend.render(spec, options)  # the runtime every trial shares: without the placeholders
        runtime = next(i for i in companions if i["kind"] == "ClusterTrainingRuntime")
        node = next(j for j in runtime["spec"]["template"]["spec"]["replicatedJobs"] if j["name"] == NODE)
        container = next(c for c in node["template"]["spec"]["template"]["spec"]["containers"] if c["name"] == NODE)
        trainer = job["spec"]["trainer"]
        trainer["args"] = list(container.get("args") or [])
        trainer["env"] = [e for e in container.get("env") or [] if e.get("name") in trial_env()]
        companions = (plain["items"] if plain.get("kind") == "List" else [plain])[:-1]
        role = NODE if role == node_role else role
    labels = {MANAGED_BY_LABEL: MANAGED_BY_VALUE}
    experiment = render_experiment(study, job, name=spec.name, namespace=options.namespace, reporting_role=role, labels=labels)
    if not companions:
        return experiment
    return {"apiVersion": "v1", "kind": "List", "items": [*companions, experiment]}


def katib_served(client: Any) -> bool:
    """Whether the cluster serves Katib's ``Experiment`` (API discovery)."""
    return bool(client.crd_installed(EXPERIMENT))


def submit_katib(backend: KubeflowBackend, study: StudySpec, spec: JobSpec, options: Any, echo: Callable[[str], None]) -> str:
    """Create the study's Katib ``Experiment`` (and what it needs first); return ``NAMESPACE/NAME``.

    Raises:
        UsageError: the cluster does not serve Katib (the line says how to install it, or to let
            tfjob run the trials), or the name is taken.
    """
    manifest = render_katib(backend, study, spec, options)
    *companions, experiment = manifest["items"] if manifest.get("kind") == "List" else [manifest]
    client = backend._connect(options.kubeconfig, options.context)
    try:
        if not katib_served(client):
            raise UsageError(problem="the cluster does not serve Katib's Experiment (kubeflow.org/v1beta1)", fix=EXPERIMENT.install_hint)
        namespace = options.namespace or client.namespace
        for obj in companions:
            if obj["kind"] == "ConfigMap":
                obj["metadata"]["namespace"] = namespace
                client.create_configmap(namespace, obj)
            else:
                companion = next(c for c in backend.kind.companions if c.resource.kind == obj["kind"])
                backend._make_companion(client, companion.resource, obj)
        experiment["metadata"]["namespace"] = namespace
        client.create(EXPERIMENT, namespace, experiment)
    finally:
        client.close()
    job_id = f"{namespace}/{spec.name}"
    echo(f"Katib Experiment {job_id} created; kubectl get experiment {spec.name} -n {namespace} shows its trials")
    return job_id


#: Katib's Trial objects (one per trial, labelled with their experiment).
TRIAL = Resource("kubeflow.org", "v1beta1", "trials", "Trial", EXPERIMENT.install_hint)
EXPERIMENT_LABEL = "katib.kubeflow.org/experiment"
#: A Katib trial's last true condition → the trial's state as tfjob shows it.
_KATIB_TRIAL_STATES = {"Created": "QUEUED", "Running": "RUNNING", "Succeeded": "SUCCEEDED", "Failed": "FAILED",
                       "MetricsUnavailable": "INFEASIBLE", "Killed": "CANCELLED", "EarlyStopped": "SUCCEEDED"}  # fmt: skip


def _true_conditions(obj: dict[str, Any]) -> list[str]:
    return [c.get("type", "") for c in (obj.get("status") or {}).get("conditions") or [] if c.get("status") == "True"]


def katib_trial(obj: dict[str, Any], study: StudySpec, number: int) -> Trial:
    """A Katib ``Trial`` object as a tfjob trial (numbered as created). Pure."""
    kinds = {p.name: p for p in study.parameters}
    params: dict[str, Any] = {}
    for assignment in (obj.get("spec") or {}).get("parameterAssignments") or []:
        p, value = kinds.get(assignment.get("name")), assignment.get("value")
        try:
            params[str(assignment.get("name"))] = (
                value if p is None or p.type == "CATEGORICAL" else int(value) if p.type == "INTEGER" else float(value)
            )
        except (TypeError, ValueError):
            params[str(assignment.get("name"))] = value
    conditions = _true_conditions(obj)
    state = next((_KATIB_TRIAL_STATES[c] for c in reversed(conditions) if c in _KATIB_TRIAL_STATES), "QUEUED")
    metric = None
    for m in ((obj.get("status") or {}).get("observation") or {}).get("metrics") or []:
        if m.get("name") == study.metric.tag:
            try:
                metric = float(m.get("max" if study.measurement == "BEST_MEASUREMENT" and study.metric.maximize else "latest"))
            except (TypeError, ValueError):
                metric = None
    if state == "SUCCEEDED" and metric is None:
        state = "INFEASIBLE"
    meta = obj.get("metadata") or {}
    message = next(
        (str(c.get("message") or "") for c in (obj.get("status") or {}).get("conditions") or [] if c.get("type") == "Failed"), ""
    )
    return Trial(str(number), params, state, metric, job_id=f"{meta.get('namespace')}/{meta.get('name')}", message=message)


class KatibStudy(KubeStudy):
    """The study as a Katib ``Experiment`` on a cluster that serves Katib, followed to its end:
    its trials (Katib's ``Trial`` objects) shown and recorded as tfjob's own study's are; a
    ``tfjob cancel STUDY`` deletes the experiment (and Katib its trials)."""

    def run(self) -> StudyResult:
        manifest = render_katib(self.backend, self.study, self.spec, self.options)
        experiment = (manifest["items"] if manifest.get("kind") == "List" else [manifest])[-1]
        self.parallel = self.study.parallel_trials
        self._create_record(str(experiment["spec"]["algorithm"]["algorithmName"]))
        client = self.backend._connect(self.options.kubeconfig, self.options.context)
        try:
            namespace = self.options.namespace or client.namespace
            name = self.spec.name
            job_id = submit_katib(self.backend, self.study, self.spec, self.options, self.view.note)
            self.store.update(self.id, extra={**self._extra(self.id), "katib": job_id})
            ended = self._follow(client, namespace, name)
        except BaseException as e:
            self._record_end(StudyResult(self.id, JobState.FAILED, f"the study stopped: {type(e).__name__}: {e}"))
            raise
        finally:
            client.close()
        result = self._outcome()
        if ended and result.state is JobState.SUCCEEDED and ended != "Succeeded":
            result.state, result.message = JobState.FAILED, f"Katib says the experiment {ended}; {result.message}"
        self._record_end(result)
        self.view.finish(self.trials, f"study {self.id} {result.state.value}: {result.message}")
        return result

    def _follow(self, client: Any, namespace: str, name: str) -> str:
        """Read the experiment and its trials until it ends; return its end (``Succeeded``/``Failed``)."""
        from ...errors import JobNotFoundError

        while True:
            try:
                obj = client.get(EXPERIMENT, namespace, name)
            except JobNotFoundError:
                self._stopping = self._stopping or "cancelled: the Katib Experiment was deleted"
                return ""
            listed = client.list(TRIAL, namespace, f"{EXPERIMENT_LABEL}={name}")
            listed.sort(
                key=lambda t: ((t.get("metadata") or {}).get("creationTimestamp") or "", (t.get("metadata") or {}).get("name") or "")
            )
            with self._lock:
                self.trials = [katib_trial(t, self.study, i) for i, t in enumerate(listed, 1)]
                self._failures = [t for t in self.trials if t.failed]
            self._publish()
            ended = next((c for c in reversed(_true_conditions(obj)) if c in ("Succeeded", "Failed")), None)
            if ended:
                return ended
            if self.store.state(self.id) is JobState.CANCELLING:
                client.delete(EXPERIMENT, namespace, name)
                self._stopping = "cancelled by `tfjob cancel`: the Katib Experiment was deleted"
                return ""
            time.sleep(self.poll)


def run_kubernetes_study(
    backend: KubeflowBackend, study: StudySpec, spec: JobSpec, options: Any, *, seed: int | None, stream: TextIO | None
) -> StudyResult:
    """Katib runs the study where the cluster serves it (and can run this one); else tfjob does."""
    client = backend._connect(options.kubeconfig, options.context)
    try:
        served = katib_served(client)
    finally:
        client.close()
    if served:
        try:
            render_katib(backend, study, spec, options)
        except SpecError as e:
            TrialsView(study, stream).note(f"Katib cannot run this study ({e}); tfjob runs its trials itself")
        else:
            return KatibStudy(backend, study, spec, options, seed=seed, stream=stream).run()
    return KubeStudy(backend, study, spec, options, seed=seed, stream=stream).run()
