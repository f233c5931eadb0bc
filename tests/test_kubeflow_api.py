"""The kubeflow backend against a local Kubernetes API server (tests/fakes/kube_api.py).

The official ``kubernetes`` client talks HTTP to the fake through a generated
kubeconfig; the fake plays the training operator (conditions, pods, logs) and
injects the API server's errors. Waiting is driven by the fake's script (one step
per read of the TFJob) and an injected sleep: no test sleeps.
"""

from __future__ import annotations

import copy
import re
import time
from pathlib import Path
from typing import Generator, Iterator

import pytest

from helpers import CRDS, cli_words
from fakes.kube_api import FakeKube, kube_fixture
from tfjob.model import JobState
from tfjob.backends.kubeflow.options import TFJobOptions
from tfjob.backends.kubeflow.backend import KubeflowBackend
from tfjob.errors import AuthError, BackendError, JobFailedError, JobNotFoundError, SpecError, UsageError
from tfjob.job import Job, get_job
from tfjob.platforms import TFJob
from tfjob.backends.kubeflow.client import KubeClient
from tfjob.backends.kubeflow.kinds import TFJOB
from tfjob.backends.kubeflow.render import render_tfjob
from tfjob.description.request import build_spec
from tfjob.runtime.store import JobStore

IMAGE = "registry.example/trainers/census:1"
CRD = CRDS / "kubeflow.org_tfjobs.yaml"


@pytest.fixture
def fake(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeKube]:
    """A started fake API server that validates creates against the CRD schema when it is here."""
    yield from kube_fixture(CRD, tmp_path, monkeypatch)


@pytest.fixture
def kubeconfig(fake: FakeKube, tmp_path: Path) -> str:
    return str(fake.write_kubeconfig(tmp_path / "kubeconfig", namespace="default"))


@pytest.fixture
def backend() -> KubeflowBackend:
    sleeps: list[float] = []
    b = KubeflowBackend(poll_interval=0.01, sleep=sleeps.append, store=JobStore())
    b.sleeps = sleeps  # type: ignore[attr-defined]
    return b


def _spec(name: str = "census-ps", **kw: object) -> object:
    values = dict(name=name, module="trainer.task", image=IMAGE, workers=2, ps=1)
    values.update(kw)
    return build_spec(values)


# -- submit ---------------------------------------------------------------------------------
def test_submit_creates_the_rendered_tfjob_in_the_context_namespace_and_records_it(
    fake: FakeKube, kubeconfig: str, backend: KubeflowBackend
) -> None:
    spec = _spec()
    job_id = backend.submit(spec, TFJobOptions(kubeconfig=kubeconfig))
    assert job_id == "default/census-ps"
    expected = render_tfjob(spec)
    expected["metadata"]["namespace"] = "default"
    assert fake.bodies == [expected]
    assert fake.count("POST", r"^/apis/kubeflow\.org/v1/namespaces/default/tfjobs$") == 1
    record = JobStore().get(job_id)
    assert record is not None and record.backend == "kubeflow" and record.state is JobState.PENDING
    assert record.options == {"namespace": "default", "kubeconfig": str(Path(kubeconfig).resolve()), "context": None}
    assert record.extra["uid"] == fake.tfjobs[("default", "census-ps")]["metadata"]["uid"]
    assert get_job(job_id).backend_name == "kubeflow"


def test_submit_to_another_namespace_and_a_named_context(fake: FakeKube, tmp_path: Path, backend: KubeflowBackend) -> None:
    kc = str(fake.write_kubeconfig(tmp_path / "kc", namespace="ml", context="team"))
    job_id = backend.submit(_spec(), TFJobOptions(kubeconfig=kc, context="team"))
    assert job_id == "ml/census-ps" and ("ml", "census-ps") in fake.tfjobs
    job_id = backend.submit(_spec("other"), TFJobOptions(kubeconfig=kc, namespace="default"))
    assert job_id == "default/other"


def test_a_manifest_the_operator_would_refuse_is_never_sent(fake: FakeKube, kubeconfig: str, backend: KubeflowBackend) -> None:
    with pytest.raises(SpecError, match=r"^name='Census_PS' is not a DNS-1035 label"):
        backend.submit(_spec("Census_PS"), TFJobOptions(kubeconfig=kubeconfig))
    two_chiefs = render_tfjob(_spec())
    two_chiefs["spec"]["tfReplicaSpecs"]["Master"] = copy.deepcopy(two_chiefs["spec"]["tfReplicaSpecs"]["Chief"])
    no_tensorflow = render_tfjob(_spec())
    no_tensorflow["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]["name"] = "main"
    client = KubeClient(kubeconfig)
    with pytest.raises(SpecError, match=r"at most one Chief or Master role"):
        client.create(TFJOB, "default", two_chiefs)
    with pytest.raises(SpecError, match=r"must have a container named 'tensorflow'"):
        client.create(TFJOB, "default", no_tensorflow)
    assert fake.count("POST", ".") == 0 and fake.tfjobs == {}


def test_resubmitting_a_name_after_its_tfjob_is_gone_replaces_the_record(fake: FakeKube, kubeconfig: str, backend: KubeflowBackend) -> None:
    options = TFJobOptions(kubeconfig=kubeconfig)
    job_id = backend.submit(_spec(), options)
    backend.cancel(job_id)
    assert JobStore().get(job_id).state is JobState.CANCELLED  # type: ignore[union-attr]
    assert backend.submit(_spec(), options) == job_id
    assert JobStore().get(job_id).state is JobState.PENDING  # type: ignore[union-attr]


# -- waiting and status ---------------------------------------------------------------------
def test_run_follows_created_running_succeeded_and_prints_each_change(
    fake: FakeKube, kubeconfig: str, backend: KubeflowBackend, capsys: pytest.CaptureFixture[str]
) -> None:
    fake.script("default", "census-ps", "Created", "Running", "Running", "Succeeded")
    job_id = backend.run(_spec(), TFJobOptions(kubeconfig=kubeconfig, poll_interval=0.5))
    assert job_id == "default/census-ps"
    assert capsys.readouterr().err.splitlines() == [
        "tfjob: job default/census-ps PENDING: TFJob census-ps is created.",
        "tfjob: job default/census-ps RUNNING: TFJob default/census-ps is running.",
        "tfjob: job default/census-ps SUCCEEDED: TFJob default/census-ps successfully completed.",
    ]
    # The shared wait loop: the pause grows ×1.5 and starts again after each change of state.
    assert backend.sleeps == [0.5, 0.5, 0.75]  # type: ignore[attr-defined]
    store = JobStore()
    assert [state for _, state, _ in store.events(job_id)] == [JobState.PENDING, JobState.RUNNING, JobState.SUCCEEDED]
    record = store.get(job_id)
    assert record is not None and record.state is JobState.SUCCEEDED and record.ended is not None
    status = get_job(job_id).status()
    assert status.state is JobState.SUCCEEDED
    assert [(t.name, t.state, t.exit_code) for t in status.tasks] == [("chief-0", JobState.SUCCEEDED, 0)]


def test_status_maps_each_condition_and_lists_a_task_per_pod(fake: FakeKube, kubeconfig: str, backend: KubeflowBackend) -> None:
    job_id = backend.submit(_spec(evaluators=1), TFJobOptions(kubeconfig=kubeconfig))
    assert backend.status(job_id).state is JobState.PENDING
    fake.advance("default", "census-ps", "Created")
    status = backend.status(job_id)
    assert status.state is JobState.PENDING and status.message == "TFJob census-ps is created."
    assert [t.name for t in status.tasks] == ["chief-0", "worker-0", "worker-1", "ps-0", "evaluator-0"]
    assert {t.state for t in status.tasks} == {JobState.PENDING}
    fake.advance("default", "census-ps", "Running")
    status = backend.status(job_id)
    assert status.state is JobState.RUNNING and {t.state for t in status.tasks} == {JobState.RUNNING}
    assert status.started is not None
    fake.advance("default", "census-ps", "Restarting")
    status = backend.status(job_id)
    assert status.state is JobState.RUNNING and status.message.startswith("restarting: ")
    assert JobStore().get(job_id).state is JobState.RUNNING  # type: ignore[union-attr]


def test_a_failed_job_names_its_task_exit_code_and_log_tail(fake: FakeKube, kubeconfig: str) -> None:
    ns, name = "default", "census-fail"
    fake.script(
        ns,
        name,
        "Created",
        "Running",
        lambda: fake.write_log(ns, f"{name}-worker-1", "step 1\nTraceback (most recent call last):\nValueError: bad input\n"),
        ("Failed", {"failed_task": "worker-1", "exit_code": 3}),
    )
    job = Job(
        module="trainer.task", image=IMAGE, workers=2, name=name,
        backend=TFJob(kubeconfig=kubeconfig), poll_interval=0,
    )  # fmt: skip
    with pytest.raises(
        JobFailedError,
        match=r"^job default/census-fail FAILED: TFJob default/census-fail has failed because 1 Worker replica\(s\) failed\. \(task worker-1 exited with code 3\)$",
    ) as info:
        job.run()
    assert info.value.task == "worker-1"
    assert info.value.exit_code_of_task == 3
    assert info.value.log_tail.splitlines()[-1] == "ValueError: bad input"
    assert JobStore().get("default/census-fail").failed_task == "worker-1"  # type: ignore[union-attr]


def test_a_tfjob_deleted_behind_our_back_is_lost_and_an_unknown_one_not_found(
    fake: FakeKube, kubeconfig: str, backend: KubeflowBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    job_id = backend.submit(_spec(), TFJobOptions(kubeconfig=kubeconfig))
    del fake.tfjobs[("default", "census-ps")]
    status = backend.status(job_id)
    assert status.state is JobState.LOST and "no longer on the cluster" in status.message
    monkeypatch.setenv("KUBECONFIG", kubeconfig)
    with pytest.raises(JobNotFoundError, match=r"TFJob default/nope is not on the cluster at http://127\.0\.0\.1:\d+"):
        KubeflowBackend(store=JobStore()).status("default/nope")  # no record: the default kubeconfig (KUBECONFIG) is used


# -- logs -----------------------------------------------------------------------------------
def _running(fake: FakeKube, backend: KubeflowBackend, kubeconfig: str) -> str:
    job_id = backend.submit(_spec(), TFJobOptions(kubeconfig=kubeconfig))
    fake.advance("default", "census-ps", "Created")
    fake.advance("default", "census-ps", "Running")
    fake.write_log("default", "census-ps-chief-0", 'epoch 1\n{"loss": 0.5}\n')
    fake.write_log("default", "census-ps-worker-0", "w0 a\nw0 b\n")
    fake.write_log("default", "census-ps-worker-1", "w1 a\n")
    return job_id


def test_logs_prefix_each_line_with_its_task_chief_first(fake: FakeKube, kubeconfig: str, backend: KubeflowBackend) -> None:
    job_id = _running(fake, backend, kubeconfig)
    assert list(backend.logs(job_id)) == [
        "[chief-0] epoch 1",
        '[chief-0] {"loss": 0.5}',  # a log line that looks like JSON stays as written
        "[worker-0] w0 a",
        "[worker-0] w0 b",
        "[worker-1] w1 a",
    ]
    assert list(backend.logs(job_id, task="worker-1")) == ["[worker-1] w1 a"]
    assert list(backend.logs(job_id, task="worker", tail=1)) == ["[worker-0] w0 b", "[worker-1] w1 a"]
    selector = "training.kubeflow.org/job-name=census-ps,training.kubeflow.org/replica-type=worker,training.kubeflow.org/replica-index=1"
    assert fake.count("GET", rf"/pods\?labelSelector={re.escape(selector)}$") == 1


def test_logs_of_a_bad_or_absent_task_say_so(fake: FakeKube, kubeconfig: str, backend: KubeflowBackend) -> None:
    job_id = _running(fake, backend, kubeconfig)
    before = len(fake.requests)
    with (
        pytest.raises(
            UsageError, match=r"--task 'gpu-1' is not a task; write ROLE or ROLE-INDEX with ROLE one of chief, worker, ps, evaluator"
        ),
        cli_words(),
    ):
        list(backend.logs(job_id, task="gpu-1"))
    assert len(fake.requests) == before  # refused before asking the cluster
    with pytest.raises(BackendError, match=r"no pods of task evaluator of TFJob default/census-ps to read logs from"), cli_words():
        list(backend.logs(job_id, task="evaluator"))


def _following(fake: FakeKube, backend: KubeflowBackend, kubeconfig: str) -> Generator[str, None, None]:
    """A chief + 1 worker TFJob, running, followed past each task's first line."""
    ns = "default"
    job_id = backend.submit(_spec(workers=1, ps=None), TFJobOptions(kubeconfig=kubeconfig))
    fake.advance(ns, "census-ps", "Created")
    fake.write_log(ns, "census-ps-chief-0", "starting\n")
    # The pods are still Pending; the next read of the TFJob (the follower's) starts them.
    fake.script(ns, "census-ps", "Running")
    lines = backend.logs(job_id, follow=True)
    assert next(lines) == "[chief-0] starting"
    fake.write_log(ns, "census-ps-worker-0", "worker up\n")
    assert next(lines) == "[worker-0] worker up"
    return lines


def test_follow_streams_lines_as_they_are_written_until_the_job_ends(fake: FakeKube, kubeconfig: str, backend: KubeflowBackend) -> None:
    ns = "default"
    lines = _following(fake, backend, kubeconfig)
    fake.write_log(ns, "census-ps-chief-0", "step 1\nstep 2\n")
    assert [next(lines), next(lines)] == ["[chief-0] step 1", "[chief-0] step 2"]
    fake.write_log(ns, "census-ps-chief-0", "saved model\n")
    fake.advance(ns, "census-ps", "Succeeded")
    assert list(lines) == ["[chief-0] saved model"]
    assert fake.count("GET", r"/pods/census-ps-chief-0/log\?.*follow=(?i:true)") == 1


def test_follow_of_a_finished_job_prints_what_is_left_and_returns(fake: FakeKube, kubeconfig: str, backend: KubeflowBackend) -> None:
    job_id = _running(fake, backend, kubeconfig)
    fake.advance("default", "census-ps", "Succeeded")
    assert list(backend.logs(job_id, follow=True, tail=1)) == ['[chief-0] {"loss": 0.5}']


# -- cancel and list --------------------------------------------------------------------------
def test_cancel_deletes_the_tfjob_and_its_pods(fake: FakeKube, kubeconfig: str, backend: KubeflowBackend) -> None:
    job_id = _running(fake, backend, kubeconfig)
    get_job(job_id).cancel()
    assert fake.count("DELETE", r"^/apis/kubeflow\.org/v1/namespaces/default/tfjobs/census-ps\?propagationPolicy=Background$") == 1
    assert fake.tfjobs == {} and fake.pods == {}
    status = get_job(job_id).status()
    assert status.state is JobState.CANCELLED and "deleted by tfjob cancel" in status.message
    get_job(job_id).cancel()  # a job that has ended is left as it ended, on every backend
    assert get_job(job_id).status().state is JobState.CANCELLED


def test_cancel_of_a_finished_job_leaves_it_as_it_ended(fake: FakeKube, kubeconfig: str, backend: KubeflowBackend) -> None:
    job_id = _running(fake, backend, kubeconfig)
    fake.advance("default", "census-ps", "Succeeded")
    backend.cancel(job_id)
    assert fake.count("DELETE", ".") == 0
    assert get_job(job_id).status().state is JobState.SUCCEEDED


def test_list_shows_the_tfjobs_tfjob_made_newest_first(
    fake: FakeKube, kubeconfig: str, backend: KubeflowBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KUBECONFIG", kubeconfig)
    backend.submit(_spec("older"), TFJobOptions())
    backend.submit(_spec("newer"), TFJobOptions())
    fake.tfjobs[("default", "older")]["metadata"]["creationTimestamp"] = "2026-01-01T10:00:00Z"
    fake.tfjobs[("default", "newer")]["metadata"]["creationTimestamp"] = "2026-01-02T10:00:00Z"
    foreign = render_tfjob(_spec("someone-elses"))
    del foreign["metadata"]["labels"]
    KubeClient().create(TFJOB, "default", foreign)
    fake.advance("default", "newer", "Created")
    statuses = backend.list()
    assert [(s.id, s.state) for s in statuses] == [("default/newer", JobState.PENDING), ("default/older", JobState.PENDING)]
    assert [s.id for s in backend.list(limit=1)] == ["default/newer"]
    assert fake.count("GET", r"/namespaces/default/tfjobs\?labelSelector=app\.kubernetes\.io/managed-by=tfjob$") == 2


# -- errors: one clear line each --------------------------------------------------------------
def test_forbidden_is_an_auth_error_and_nothing_is_recorded(fake: FakeKube, kubeconfig: str, backend: KubeflowBackend) -> None:
    fake.inject(403, method="POST", message='tfjobs.kubeflow.org is forbidden: User "dev" cannot create resource "tfjobs"')
    with pytest.raises(
        AuthError,
        match=r"^forbidden to create TFJob census-ps in namespace 'default': tfjobs\.kubeflow\.org is forbidden: .*kubectl auth can-i create tfjobs\.kubeflow\.org -n default`\)$",
    ):
        backend.submit(_spec(), TFJobOptions(kubeconfig=kubeconfig))
    assert JobStore().get("default/census-ps") is None


def test_unauthorized_is_an_auth_error(fake: FakeKube, kubeconfig: str, backend: KubeflowBackend) -> None:
    fake.inject(401, message="Unauthorized")
    with pytest.raises(AuthError, match=r"rejected the kubeconfig's credentials \(Unauthorized\); refresh them"):
        backend.submit(_spec(), TFJobOptions(kubeconfig=kubeconfig))


def test_a_name_taken_is_a_usage_error(fake: FakeKube, kubeconfig: str, backend: KubeflowBackend) -> None:
    backend.submit(_spec(), TFJobOptions(kubeconfig=kubeconfig))
    with (
        pytest.raises(
            UsageError,
            match=r"^a TFJob named 'census-ps' already exists in namespace 'default'; pick another --display-name, or delete it first with `tfjob cancel default/census-ps`$",
        ),
        cli_words(),
    ):
        backend.submit(_spec(), TFJobOptions(kubeconfig=kubeconfig))
    fake.inject(409, method="POST")
    with pytest.raises(UsageError, match=r"a TFJob named 'fresh' already exists"), cli_words():
        backend.submit(_spec("fresh"), TFJobOptions(kubeconfig=kubeconfig))


def test_no_crd_installed_is_told_apart_from_a_missing_namespace(fake: FakeKube, kubeconfig: str, backend: KubeflowBackend) -> None:
    with (
        pytest.raises(
            UsageError,
            match=r"^--namespace 'research' does not exist on the cluster at http://127\.0\.0\.1:\d+; pass --namespace of an existing one",
        ),
        cli_words(),
    ):
        backend.submit(_spec(), TFJobOptions(kubeconfig=kubeconfig, namespace="research"))
    fake.crd_installed = False
    with (
        pytest.raises(
            BackendError,
            match=r"^the TFJob resource \(tfjobs\.kubeflow\.org/v1\) is not installed on the cluster at http://127\.0\.0\.1:\d+: install the Kubeflow training operator",
        ),
        cli_words(),
    ):
        backend.submit(_spec(), TFJobOptions(kubeconfig=kubeconfig))
    assert fake.count("GET", r"^/apis/kubeflow\.org/v1$") == 2  # discovery decided, each time


def test_no_kubeconfig_a_missing_file_and_an_unknown_context_are_usage_errors(
    fake: FakeKube, kubeconfig: str, backend: KubeflowBackend, tmp_path: Path
) -> None:
    with (
        pytest.raises(
            UsageError, match=r"^no kubeconfig for --backend kubeflow: pass --kubeconfig FILE, set KUBECONFIG, or create ~/.kube/config"
        ),
        cli_words(),
    ):
        backend.submit(_spec(), TFJobOptions())
    with pytest.raises(UsageError, match=r"^--kubeconfig '.*/absent' does not exist; give the path of a kubeconfig file$"), cli_words():
        backend.submit(_spec(), TFJobOptions(kubeconfig=str(tmp_path / "absent")))
    with pytest.raises(UsageError, match=r"^--context 'prod' is not in .*kubeconfig; its contexts are fake$"), cli_words():
        backend.submit(_spec(), TFJobOptions(kubeconfig=kubeconfig, context="prod"))
    assert fake.requests == []


def test_an_unreachable_server_and_a_server_error_are_backend_errors(fake: FakeKube, kubeconfig: str, backend: KubeflowBackend) -> None:
    fake.inject(500, method="POST", message="etcdserver: request timed out")
    with pytest.raises(BackendError, match=r"answered 500 Internal Server Error to create TFJob census-ps: etcdserver: request timed out$"):
        backend.submit(_spec(), TFJobOptions(kubeconfig=kubeconfig))
    fake.stop()
    with pytest.raises(BackendError, match=r"^cannot reach the Kubernetes API at http://127\.0\.0\.1:\d+ to create TFJob census-ps"):
        backend.submit(_spec(), TFJobOptions(kubeconfig=kubeconfig))


def test_an_injected_api_client_is_used_instead_of_any_kubeconfig(fake: FakeKube, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``KubeflowBackend(api_client=…)``: submit, status, cancel go through the caller's
    configured client; no kubeconfig is looked for (there is none here)."""
    from kubernetes import client as k8s

    from tfjob import Job
    from tfjob.backends.kubeflow.backend import KubeflowBackend

    monkeypatch.delenv("KUBECONFIG", raising=False)
    configuration = k8s.Configuration()
    configuration.host = fake.url
    backend = KubeflowBackend(api_client=k8s.ApiClient(configuration), namespace="ml")
    handle = Job(module="trainer.task", image="img:1", workers=2, backend=backend).submit()
    assert handle.id.startswith("ml/") and ("ml", handle.id.split("/", 1)[1]) in fake.tfjobs
    assert handle.status().state.value in ("PENDING", "QUEUED", "RUNNING")
    handle.cancel()
    assert ("ml", handle.id.split("/", 1)[1]) not in fake.tfjobs
    # The registry's backend has no client given: it looks for a kubeconfig, and there is none.
    from tfjob.errors import UsageError

    with pytest.raises(UsageError, match="no kubeconfig for --backend kubeflow"), cli_words():
        Job(module="trainer.task", image="img:1", workers=2, backend="kubeflow").submit()


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("apiVersion: v1\nclusters: [\n", r"cannot be read: not valid YAML \(line 3\): expected the node content"),
        ("a: *b\n", r"cannot be read: not valid YAML \(line 1\): found undefined alias 'b'"),
        ("foo\n", r"is not a kubeconfig: a YAML mapping of clusters, contexts and users, not a str"),
        ("contexts: 5\n", r"is not a kubeconfig: contexts must be a list, not 5"),
        ("contexts: [{name: a, context: 5}]\ncurrent-context: a\n", r"each of its contexts is a mapping with a name and a context mapping"),
        ("users: [{name: u, user: 5}]\n", r"each of its users is a mapping with a name and a user mapping"),
        ("current-context: [1]\n", r"current-context must be a name"),
        (
            "clusters: [{name: c, cluster: {server: 5}}]\nusers: [{name: u, user: {}}]\n"
            "contexts: [{name: a, context: {cluster: c, user: u}}]\ncurrent-context: a\n",
            r"kubeconfig .* cannot be used: ",
        ),
        (
            "clusters: [{name: c, cluster: {server: 'http://127.0.0.1:1'}}]\nusers: [{name: u, user: {}}]\n"
            "contexts: [{name: a, context: {cluster: c, user: u, namespace: [1]}}]\ncurrent-context: a\n",
            r"the context's namespace must be a name",
        ),
        ("", r"cannot be read: Invalid kube-config.*empty"),
    ],
)
def test_a_kubeconfig_of_the_wrong_shape_is_one_line(tmp_path: Path, text: str, message: str) -> None:
    # The kubernetes client answers these with tracebacks of its own (TypeError, YAMLError…).
    path = tmp_path / "kubeconfig"
    path.write_text(text)
    with pytest.raises(UsageError, match=message) as caught:
        KubeClient(str(path))
    assert "\n" not in str(caught.value)


def test_a_kubeconfig_that_is_no_file_or_too_large_is_one_line(tmp_path: Path) -> None:
    from tfjob.backends.kubeflow.client import MAX_KUBECONFIG_BYTES
    from tfjob.errors import ConfigFileError

    with pytest.raises(UsageError, match=r"^kubeconfig='/dev/null' is not a regular file; give the path of a kubeconfig file$"):
        KubeClient("/dev/null")
    with pytest.raises(UsageError, match=r"does not exist"):
        KubeClient(str(tmp_path / "none"))
    big = tmp_path / "big"
    big.write_text("# padding\n" * (MAX_KUBECONFIG_BYTES // 10 + 1))
    with pytest.raises(ConfigFileError, match=r"^kubeconfig='.*big' is larger than 16384 KiB"):
        KubeClient(str(big))


def test_run_reports_a_pod_restarted_by_its_restart_policy(
    fake: FakeKube, kubeconfig: str, backend: KubeflowBackend, capsys: pytest.CaptureFixture[str]
) -> None:
    # Issue 29: a preempted worker (SIGTERM: exit 143) restarted in place by ExitCode, as the kubelet reports it.
    pod = fake.pod_name("census-ps", "worker-0")
    fake.script("default", "census-ps", "Created", "Running", lambda: fake.restart_pod("default", pod, 143), lambda: None, "Succeeded")
    backend.run(_spec(), TFJobOptions(kubeconfig=kubeconfig, poll_interval=0.5))
    err = capsys.readouterr().err.splitlines()
    assert "tfjob: job default/census-ps: worker-0 restarted after exit code 143, Error (restarts: 1)" in err
    assert err[-1] == "tfjob: job default/census-ps SUCCEEDED: TFJob default/census-ps successfully completed."


def test_leaving_a_follow_while_a_task_is_quiet_returns_at_once(fake: FakeKube, kubeconfig: str, backend: KubeflowBackend) -> None:
    """A follower left (Ctrl-C, a ``break``) while a task writes nothing — a parameter server
    waiting, its stream open with no line to come — returns at once: each stream's socket is
    shut before its response is closed, or the close would wait on the blocked read forever."""
    import threading

    lines = _following(fake, backend, kubeconfig)
    time.sleep(0.5)  # both readers now wait in recv() for a line that does not come
    closer = threading.Thread(target=lines.close, daemon=True)
    closer.start()
    closer.join(timeout=120)
    assert not closer.is_alive(), "closing the follow hung on a quiet stream"
