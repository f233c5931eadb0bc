"""The backend contract (issue 14): the same tests over every backend that runs jobs.

Each platform is driven the way its users meet it — local jobs are real processes, Vertex
AI is the REST stand-in reached through Google's client library, Kubeflow TFJobs, JobSets
and Trainer v2 TrainJobs are the Kubernetes API stand-in reached through the official
client, with a small "operator" here that moves a job along as its trainer module says
(``trainer.ok`` ends well, ``trainer.fail`` fails its worker 0 with exit code 3,
``trainer.slow`` runs on).

Every backend is met twice: placed by its typed settings (``backend=Vertex(project=…)``),
and as a backend object built with its default options and a temporary job store
(``backend=VertexBackend(store=JobStore(tmp))``: the platform comes from the environment),
so a backend that needs a setting only its settings class gives, or that records anywhere
but in its store, fails here.

A new backend gets a driver below and passes every test here, or it does not ship.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest
from helpers import CRDS
from fakes.kube_api import FakeKube, kube_fixture
from fakes.vertex_api import FakeVertex
from local_helpers import no_leftover_jobs  # noqa: F401 - autouse: no cluster outlives a failed test

from tfjob import Job, JobSet, Local, TFJob, TrainJob, Vertex
from tfjob.backends import get_backend
from tfjob.platforms import Platform
from tfjob.errors import JobCancelledError, JobFailedError, JobNotFoundError, JobTimeoutError, UsageError
from tfjob.job import JobHandle, get_job
from tfjob.runtime.store import JobStore
from tfjob.model import JobState

TRAINERS = {
    "ok": "print('hello from the trainer', flush=True)\n",
    "fail": (
        "import json, os, sys\n"
        "task = json.loads(os.environ.get('TF_CONFIG', '{}')).get('task', {})\n"
        "print('hello from the trainer', flush=True)\n"
        "if (task.get('type'), task.get('index')) == ('worker', 0):\n"
        "    sys.exit(3)\n"
        "import time; time.sleep(120)  # the others wait: the job ends with the worker's failure\n"
    ),
    "slow": "import time\nprint('hello from the trainer', flush=True)\ntime.sleep(120)\n",
    # Worker 0 imports a module the image lacks: a real ModuleNotFoundError (tfjob diagnoses it).
    "missing": (
        "import json, os, sys\n"
        "task = json.loads(os.environ.get('TF_CONFIG', '{}')).get('task', {})\n"
        "if (task.get('type'), task.get('index')) == ('worker', 0):\n"
        "    import census_feature_utils\n"
        "import time; time.sleep(120)\n"
    ),
}

#: What Python prints when worker 0 of ``trainer.missing`` fails (the platforms' logs hold it).
MISSING = "ModuleNotFoundError: No module named 'census_feature_utils'"


@pytest.fixture
def trainer(tmp_path: Path) -> Path:
    root = tmp_path / "src"
    pkg = root / "trainer"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    for name, text in TRAINERS.items():
        (pkg / f"{name}.py").write_text(text)
    return root


class Driver:
    """One backend as the contract sees it."""

    name: str
    #: An id of this backend's shape that no job has.
    unknown_id: str
    #: The typed settings that place a job on this backend.
    where: Platform
    #: The job store the backend records in: the user's ($TFJOB_HOME, the test's own).
    store: JobStore

    def defaults(self, store: JobStore) -> None:
        """Place jobs on a backend object built with its default options and a store of its
        own instead: nothing of the typed settings reaches it, the platform comes from the
        environment, and nothing reaches the user's store."""
        self.store = store
        self.where = type(get_backend(self.name))(store=store)  # type: ignore[assignment]

    def job(self, outcome: str, **kw: Any) -> Job:
        raise NotImplementedError

    def running(self) -> bool:
        """Whether a job of this backend is running now (as its platform says)."""
        raise NotImplementedError

    def cancel_calls(self) -> int:
        """How many times the platform was asked to stop a job."""
        raise NotImplementedError


class LocalDriver(Driver):
    name = "local"
    unknown_id = "trainer-20260101-000000-0000"

    def __init__(self, trainer: Path) -> None:
        self.trainer = trainer
        self.where = Local(grace=1.0)
        self.store = JobStore()
        self._ready()

    def defaults(self, store: JobStore) -> None:
        super().defaults(store)
        self._ready()

    def _ready(self) -> None:
        # The store made (in WAL mode) before `running()` reads it from another thread while a
        # job starts: two connections switching a new file to WAL at once is "database is locked".
        self.store.list(limit=1)

    def job(self, outcome: str, **kw: Any) -> Job:
        return Job(str(self.trainer), f"trainer.{outcome}", workers=1, quiet=True, backend=self.where, **kw)

    def running(self) -> bool:
        return any(r.state is JobState.RUNNING for r in self.store.list())

    def cancel_calls(self) -> int:
        return sum(1 for r in self.store.list() for e in self.store.events(r.id) if "cancel requested" in str(e))


class VertexDriver(Driver):
    name = "vertex"
    unknown_id = "1234567890123456789"

    def __init__(self, server: FakeVertex, monkeypatch: pytest.MonkeyPatch) -> None:
        self.server = server
        self.monkeypatch = monkeypatch
        self.store = JobStore()
        self.where = Vertex(project="p", region="us-central1", api_endpoint=server.endpoint)

    def defaults(self, store: JobStore) -> None:
        # The project, region and endpoint come from the environment (the fixture sets them),
        # the stand-in's credentials from GOOGLE_APPLICATION_CREDENTIALS, as for any user.
        super().defaults(store)
        self.monkeypatch.setenv("TFJOB_STAGING_BUCKET", "gs://b")

    def job(self, outcome: str, **kw: Any) -> Job:
        self.outcome = outcome
        self.server.script = {
            "ok": ("JOB_STATE_QUEUED", "JOB_STATE_RUNNING", "JOB_STATE_SUCCEEDED"),
            "fail": ("JOB_STATE_QUEUED", "JOB_STATE_RUNNING", "JOB_STATE_FAILED"),
            "missing": ("JOB_STATE_QUEUED", "JOB_STATE_RUNNING", "JOB_STATE_FAILED"),
            "slow": ("JOB_STATE_QUEUED",) + ("JOB_STATE_RUNNING",) * 100000,
        }[outcome]
        self.server.failure_message = "The replica workerpool1-0 exited with a non-zero status of 3."
        return Job(module=f"trainer.{outcome}", image="gcr.io/p/trainer:1", workers=1, quiet=True, backend=self.where, **kw)

    def on_created(self, job_id: str) -> None:
        self.server.add_log(job_id, "workerpool0-0", "hello from the trainer", 1.0)
        if getattr(self, "outcome", None) == "missing":
            self.server.add_log(job_id, "workerpool1-0", "Traceback (most recent call last):", 2.0)
            self.server.add_log(job_id, "workerpool1-0", MISSING, 3.0)

    def running(self) -> bool:
        with self.server.lock:
            return any(j["state"] == "JOB_STATE_RUNNING" for j in self.server.jobs.values())

    def cancel_calls(self) -> int:
        return sum(1 for method, path, _ in self.server.requests if method == "POST" and path.endswith(":cancel"))


class KubeDriver(Driver):
    """TFJob (``kubeflow``), JobSet (``jobset``) or TrainJob (``trainjob``) on the Kubernetes stand-in."""

    unknown_id = "default/no-such-job"

    def __init__(self, name: str, kube: FakeKube, kubeconfig: str) -> None:
        self.name = name
        self.kube = kube
        self.store = JobStore()
        self.where = {"kubeflow": TFJob, "jobset": JobSet, "trainjob": TrainJob}[name](kubeconfig=kubeconfig)
        self.count = 0

    def job(self, outcome: str, **kw: Any) -> Job:
        self.count += 1
        name = kw.pop("name", f"{outcome}-{self.count}")
        kube = self.kube
        # Each controller's own steps: the training operator, the JobSet controller, Kubeflow
        # Trainer (which runs the workers as its `node` job: worker-0 is the pod node-0).
        advance, done, worker = {
            "kubeflow": (kube.advance, "Succeeded", "worker-0"),
            "jobset": (kube.advance_jobset, "Completed", "worker-0"),
            "trainjob": (kube.advance_trainjob, "Complete", "node-0"),
        }[self.name]

        def pod(task: str) -> str:
            return kube.pod_name(name, task) if self.name == "kubeflow" else kube.jobset_pod_name(name, task)

        def operator() -> None:  # what the controller does by the first look at the job
            advance("default", name, "Created")
            advance("default", name, "Running")
            kube.write_log("default", pod("chief-0"), "hello from the trainer\n")
            if outcome == "ok":
                advance("default", name, done)
            elif outcome == "fail":
                advance("default", name, "Failed", failed_task=worker, exit_code=3)
            elif outcome == "missing":
                kube.write_log("default", pod(worker), f"Traceback (most recent call last):\n{MISSING}\n")
                advance("default", name, "Failed", failed_task=worker, exit_code=3)

        self.kube.script("default", name, operator)
        return Job(module=f"trainer.{outcome}", image="img:1", workers=1, name=name, quiet=True, backend=self.where, **kw)

    def running(self) -> bool:
        return any(p.obj["status"]["phase"] == "Running" for p in list(self.kube.pods.values()))

    def cancel_calls(self) -> int:
        return self.kube.count("DELETE", r"/(tfjobs|jobsets|trainjobs)/")


BACKENDS = ["local", "vertex", "kubeflow", "jobset", "trainjob"]
#: How a job is placed on its backend: by the typed settings, or on a backend object built
#: with its default options (the platform from the environment).
BUILT = ["settings", "defaults"]


@pytest.fixture(params=[pytest.param((name, built), id=f"{name}-{built}") for built in BUILT for name in BACKENDS])
def platform(request: pytest.FixtureRequest, trainer: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Driver]:
    for driver in _drivers(request.param[0], trainer, tmp_path, monkeypatch):
        if request.param[1] == "defaults":
            driver.defaults(JobStore(tmp_path / "temporary-store" / "jobs.db"))
        yield driver


def _drivers(name: str, trainer: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Driver]:
    if name == "local":
        yield LocalDriver(trainer)
    elif name == "vertex":
        with FakeVertex() as server:
            server.use_as_google(monkeypatch, tmp_path)
            # `list` asks the configured project, as `tfjob list` does.
            for var, value in (("TFJOB_PROJECT", "p"), ("TFJOB_REGION", "us-central1"), ("TFJOB_API_ENDPOINT", server.endpoint)):
                monkeypatch.setenv(var, value)
            yield VertexDriver(server, monkeypatch)
    else:
        for kube in kube_fixture(CRDS / "kubeflow.org_tfjobs.yaml", tmp_path, monkeypatch):
            kubeconfig = str(kube.write_kubeconfig(tmp_path / "kubeconfig", namespace="default"))
            monkeypatch.setenv("KUBECONFIG", kubeconfig)  # `list` asks the current context, as `tfjob list` does
            yield KubeDriver(name, kube, kubeconfig)


def _submit(platform: Driver, outcome: str, **kw: Any) -> JobHandle:
    handle = platform.job(outcome, poll_interval=0.05, **kw).submit()
    if isinstance(platform, VertexDriver):
        platform.on_created(handle.id)
    return handle


def _until(predicate: Callable[[], bool], timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out waiting"
        time.sleep(0.02)


# -- the contract ------------------------------------------------------------------------------
def test_a_job_runs_to_success_and_is_known_by_its_id(platform: Driver) -> None:
    handle = _submit(platform, "ok")
    assert handle.wait(timeout=60).state is JobState.SUCCEEDED
    assert handle.result().state is JobState.SUCCEEDED
    again = get_job(handle.id, store=platform.store)  # from the store alone, as another process would
    assert again == handle and again.status().state is JobState.SUCCEEDED
    assert handle.id in [s.id for s in again._backend.list()]


def test_a_job_submitted_here_is_waited_for_from_another_process(platform: Driver) -> None:
    # A pipeline's submit step and its wait step are two processes: the second knows the id only.
    handle = _submit(platform, "ok")
    code = (
        "import sys; from tfjob import get_job; from tfjob.runtime.store import JobStore; "
        "s = get_job(sys.argv[1], store=JobStore(sys.argv[2])).wait(timeout=60, poll_interval=0.05, max_interval=0.5); "
        "print(s.state.value, s.id)"
    )
    where = [handle.id[:12], str(platform.store.path)]
    done = subprocess.run([sys.executable, "-c", code, *where], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["SUCCEEDED", handle.id]


def test_logs_are_lines_prefixed_with_their_task(platform: Driver) -> None:
    handle = _submit(platform, "ok")
    handle.wait(timeout=60)
    lines = list(handle.logs())  # `[task] text`, exactly, on every backend
    assert "[chief-0] hello from the trainer" in lines, lines
    # One task's lines are that task's, all of them and no other: on the local backend the
    # launcher's own `[tfjob]` lines are in the job's logs, and not in the chief's.
    chief = list(handle.logs(task="chief-0"))
    assert "[chief-0] hello from the trainer" in chief and chief == [line for line in lines if line.startswith("[chief-0] ")], chief
    if platform.name == "local":
        assert any(line.startswith("[tfjob] ") for line in lines), lines
    # A task is read the same way everywhere: case and spaces ignored, AI Platform's `master` is the chief.
    assert "[chief-0] hello from the trainer" in list(handle.logs(task=" Master-0"))
    assert "[chief-0] hello from the trainer" in list(handle.logs(task="CHIEF-0"))


def test_a_failing_task_fails_the_job_and_is_named(platform: Driver) -> None:
    with pytest.raises(JobFailedError, match=r"^job \S+ FAILED: .*worker-0") as failed:
        platform.job("fail", poll_interval=0.05).run()
    assert failed.value.exit_code == 1
    assert failed.value.task == "worker-0", str(failed.value)
    assert failed.value.exit_code_of_task == 3
    assert "worker-0" in str(failed.value)
    with pytest.raises(JobFailedError, match=f"^job {re.escape(failed.value.job_id)} FAILED: "):
        get_job(failed.value.job_id, store=platform.store).result()


def test_a_failing_tasks_log_is_diagnosed(platform: Driver) -> None:
    """The same diagnosis on every backend, from the failing task's log as its platform keeps it
    (local files, Cloud Logging, pod logs): in JobFailedError and in `tfjob status --json`."""
    from click.testing import CliRunner

    from tfjob.cli.main import app

    handle = _submit(platform, "missing")
    handle.wait(timeout=120)
    with pytest.raises(JobFailedError, match="module 'census_feature_utils' is not installed") as failed:
        handle.result()
    assert [(d.code, d.task) for d in failed.value.diagnoses] == [("missing-module", "worker-0")]
    assert failed.value.diagnoses[0].evidence.endswith(MISSING)
    # The CLI's store is $TFJOB_HOME's: the backend's own, wherever it is.
    shown = CliRunner().invoke(app, ["status", handle.id, "--json"], env={"TFJOB_HOME": str(platform.store.path.parent)})
    assert shown.exit_code == 0, shown.output
    assert [d["code"] for d in json.loads(shown.stdout)["diagnoses"]] == ["missing-module"]


def test_wait_with_a_timeout_leaves_the_job_running_and_cancel_stops_it(platform: Driver) -> None:
    handle = _submit(platform, "slow")
    with pytest.raises(JobTimeoutError, match=f"job {handle.id} is still"):
        handle.wait(timeout=0.3)
    assert not handle.status().state.is_terminal
    handle.cancel()
    assert handle.wait(timeout=60).state is JobState.CANCELLED
    with pytest.raises(JobCancelledError, match=f"^job {re.escape(handle.id)} was cancelled") as cancelled:
        handle.result()
    assert cancelled.value.exit_code == 130


def test_run_with_a_timeout_cancels_the_job(platform: Driver) -> None:
    job = platform.job("slow", poll_interval=0.05)
    with pytest.raises(JobTimeoutError, match=r"did not end within 0.5s, so it was cancelled \(CANCELLED\)") as timed_out:
        job.run(timeout=0.5)
    assert timed_out.value.exit_code == 1
    _until(lambda: not platform.running(), timeout=30)


def test_cancelling_a_finished_job_leaves_it_as_it_ended(platform: Driver) -> None:
    handle = _submit(platform, "ok")
    handle.wait(timeout=60)
    before = platform.cancel_calls()
    handle.cancel()
    handle._backend.cancel(handle.id)  # the backend itself too, not only the handle
    assert platform.cancel_calls() == before
    assert handle.status().state is JobState.SUCCEEDED


@pytest.mark.timeout(180)
@pytest.mark.parametrize("cancel_on_interrupt", [False, True])
def test_ctrl_c_while_running(platform: Driver, cancel_on_interrupt: bool) -> None:
    job = platform.job("slow", poll_interval=0.05, cancel_on_interrupt=cancel_on_interrupt)
    stop = threading.Event()

    def ctrl_c() -> None:
        while not stop.is_set():
            if platform.running():
                time.sleep(0.2)
                os.kill(os.getpid(), signal.SIGINT)
                return
            time.sleep(0.02)

    sender = threading.Thread(target=ctrl_c, daemon=True)
    sender.start()
    # Exit 130 on every backend: JobCancelledError, or the KeyboardInterrupt going on when
    # the job keeps running on its platform. A local job runs in this process, so it
    # cannot keep running: it is cancelled either way.
    keeps_running = not cancel_on_interrupt and platform.name != "local"
    # Ctrl-C as a terminal delivers it: a shell starts a background job (`.ci/run &`) with
    # SIGINT ignored, and Python then leaves it ignored.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        # The interrupt goes on as it came (no text); a cancel says so.
        with pytest.raises(KeyboardInterrupt if keeps_running else JobCancelledError, match="^$" if keeps_running else "cancel"):
            job.run()
    finally:
        stop.set()
        sender.join(5)
        signal.signal(signal.SIGINT, previous)
    (record,) = platform.store.list()
    handle = JobHandle(platform.name, record.id, store=platform.store)
    if keeps_running:
        assert not handle.status().state.is_terminal
        handle.cancel()
    assert handle.wait(timeout=60).state is JobState.CANCELLED


def test_unknown_and_ambiguous_ids_are_usage_errors(platform: Driver) -> None:
    with pytest.raises(JobNotFoundError, match=re.escape(platform.unknown_id)) as missing:
        get_job(platform.unknown_id, store=platform.store).status()
    assert missing.value.exit_code == 2
    with pytest.raises(JobNotFoundError, match=re.escape(platform.unknown_id)):
        JobHandle(platform.name, platform.unknown_id, store=platform.store).status()
    first, second = _submit(platform, "ok"), _submit(platform, "ok")
    for handle in (first, second):
        handle.wait(timeout=60)
    common = os.path.commonprefix([first.id, second.id])
    with pytest.raises(UsageError, match="ambiguous") as ambiguous:
        get_job(common, store=platform.store)
    assert ambiguous.value.exit_code == 2
    assert get_job(first.id, store=platform.store) == first


def test_a_missing_trainer_module_is_a_usage_error(platform: Driver, trainer: Path) -> None:
    # A trainer the backend packages is checked before anything is sent or started.
    where = dataclasses.replace(platform.where, staging_bucket="gs://b") if isinstance(platform.where, Vertex) else platform.where
    job = Job(str(trainer), "trainer.nope", workers=1, name="nope", backend=where)
    with pytest.raises(UsageError, match="no trainer/nope.py") as refused:
        job.submit()
    assert refused.value.exit_code == 2


def test_a_backend_given_plain_submit_options_uses_its_own_defaults(platform: Driver) -> None:
    """``get_backend(NAME).submit(spec, SubmitOptions())``: what every backend takes is read from
    the options given, what only this backend takes is at its defaults (never an AttributeError)."""
    from tfjob.model import SubmitOptions

    spec = platform.job("ok").spec
    from tfjob.runtime.settings import load_settings

    backend = get_backend(platform.name, store=platform.store, settings=load_settings())  # the settings, resolved here as an edge does
    job_id = backend.submit(spec, SubmitOptions(quiet=True, poll_interval=0.05))
    if isinstance(platform, VertexDriver):
        platform.on_created(job_id)
    assert JobHandle(platform.name, job_id, store=platform.store).wait(timeout=60).state is JobState.SUCCEEDED


@pytest.mark.parametrize("name", BACKENDS + ["ai-platform"])
def test_another_backends_options_are_read_as_this_backends(name: str) -> None:
    """Options of another backend (a pipeline reusing one object) keep what every backend
    takes — here the strategy — and leave this backend's own fields at their defaults."""
    from tfjob.backends import options_type
    from tfjob.backends.local.options import LocalOptions
    from tfjob.backends.vertex.options import VertexOptions
    from tfjob.description.request import build_spec

    backend = get_backend(name)
    other = (
        LocalOptions(strategy="parameter-server", dialect="kubeflow")
        if name != "local"
        else VertexOptions(strategy="parameter-server", project="p")
    )
    typed = backend.typed(other)
    assert type(typed) is options_type(name) and typed.strategy == "parameter-server"
    assert backend.typed(typed) is typed
    spec = build_spec(dict(name="j", module="trainer.task", image="gcr.io/p/trainer:1", workers=1, ps=1))
    backend.render(spec, other)  # renders, with the strategy, as with the backend's own options
    assert "parameter-server" in json.dumps(backend.render(spec, other))


def test_every_backend_object_takes_the_options_its_registry_entry_names() -> None:
    """What `Job` builds for a backend (the registry's class) is what the backend object reads
    options as, for every backend: given nothing, it has its own class at its defaults."""
    from tfjob.backends import BACKENDS as registry
    from tfjob.backends import options_type

    for name in registry:
        backend = get_backend(name)
        assert backend.options_class is options_type(name), name
        assert type(backend.typed(None)) is options_type(name), name
