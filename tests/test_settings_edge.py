"""Settings are resolved once, at the edge, and passed in; no backend reads a global (issue 35).

The edges — :class:`tfjob.Job` when it is made, :func:`tfjob.get_job` / :class:`tfjob.JobHandle`
/ :func:`tfjob.list_jobs`, and the CLI — call ``load_settings`` (flags or keywords, then the
environment, then ``$TFJOB_HOME/config.yaml``) and give the result to the backend they make
(``get_backend(name, store, settings)``, or bound to a user's backend object as its store is).
Below them — the backends, the lifecycle, tuning — nothing reads the settings again: a job's
backend uses what was resolved when the job was made, whatever the environment says later.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path
from typing import Any, Iterator

import pytest

from fakes.vertex_api import FakeVertex, vertex_fixture
from helpers import ROOT, write_trainer
from tfjob import Job, get_job
from tfjob.model import JobState
from tfjob.runtime import settings as settings_module
from tfjob.runtime.settings import ENV_VARS, Settings

SDK = ROOT / "sdk"

#: The modules of sdk/ that may name ``load_settings``, and why: where it is defined, the
#: edges that resolve the settings once (a Job when made; a handle, get_job and list_jobs),
#: and the CLI's import point (a re-export: it calls nothing). The CLI (cli/) is an edge too.
EDGE_MODULES = {
    "runtime/settings.py": "defines load_settings",
    "job/job.py": "Job(...) resolves its settings once, when it is made",
    "job/binding.py": "JobHandle / get_job / list_jobs resolve them once, when none are given (tfjob.job.binding)",
    "_internal.py": "re-exports load_settings for the CLI (tfjob build), calling nothing",
}


def _names_load_settings(tree: ast.AST) -> list[int]:
    """Lines where ``tree`` imports or calls ``load_settings`` (or reads it as an attribute)."""
    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and any(alias.name == "load_settings" for alias in node.names):
            lines.append(node.lineno)
        elif isinstance(node, ast.Name) and node.id == "load_settings":
            lines.append(node.lineno)
        elif isinstance(node, ast.Attribute) and node.attr == "load_settings":
            lines.append(node.lineno)
    return sorted(lines)


def test_only_the_edges_name_load_settings() -> None:
    """Walk sdk/: no module but the edges imports, calls or reads ``load_settings``."""
    offenders = []
    seen = set()
    for path in sorted(SDK.rglob("*.py")):
        relative = path.relative_to(SDK).as_posix()
        lines = _names_load_settings(ast.parse(path.read_text(), str(path)))
        if relative in EDGE_MODULES:
            if lines or relative == "runtime/settings.py":
                seen.add(relative)
            continue
        offenders += [f"sdk/{relative}:{line}" for line in lines]
    assert offenders == [], f"settings are resolved at the edge and passed in, not read here: {offenders}"
    # The allowed list is not wider than it needs to be: each edge does resolve settings.
    assert seen == set(EDGE_MODULES), sorted(set(EDGE_MODULES) - seen)


def test_the_structural_check_finds_an_import_a_call_and_an_attribute() -> None:
    """The walk above fails on each way a module could reach the global (so it can fail)."""
    found = _names_load_settings(
        ast.parse(
            "from ..runtime.settings import load_settings\n"
            "def f():\n    return load_settings()\n"
            "import tfjob.runtime.settings as s\nx = s.load_settings\n"
        )
    )
    assert found == [1, 3, 5]


def test_no_module_below_the_edge_reads_a_setting_s_variable() -> None:
    """Nor does any module name a settings variable (``TFJOB_PROJECT``…) to read it itself:
    only tfjob.runtime.settings knows them."""
    variables = {var for names in ENV_VARS.values() for var in names}
    offenders = []
    for folder in (SDK, ROOT / "cli"):
        for path in sorted(folder.rglob("*.py")):
            if path == SDK / "runtime" / "settings.py":
                continue
            for node in ast.walk(ast.parse(path.read_text(), str(path))):
                if isinstance(node, ast.Constant) and node.value in variables:
                    offenders.append(f"{path.relative_to(ROOT)}:{node.lineno}: {node.value}")
    assert offenders == []


# -- behaviour: what a job's backend uses was resolved when the job was made ---------------------
@pytest.fixture
def no_settings_read(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """A switch: once turned on (``.append("on")``), any call of ``load_settings`` — through
    ``tfjob.runtime.settings`` or any module that imported the name — fails the test."""
    switch: list[str] = []
    original = settings_module.load_settings

    def refuse(*args: Any, **kwargs: Any) -> Settings:
        if switch:
            raise AssertionError("load_settings was called after the edge had resolved the settings")
        return original(*args, **kwargs)

    monkeypatch.setattr(settings_module, "load_settings", refuse)
    for module in list(sys.modules.values()):
        if module is not None and getattr(module, "load_settings", None) is original:
            monkeypatch.setattr(module, "load_settings", refuse)
    yield switch


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> Iterator[FakeVertex]:
    yield from vertex_fixture(monkeypatch, tmp_path_factory.mktemp("adc"))


def _vertex_job(fake: FakeVertex, monkeypatch: pytest.MonkeyPatch, **kw: Any) -> Job:
    """A container job on Vertex AI whose project, region and endpoint come from the environment."""
    for var, value in (("TFJOB_PROJECT", "p"), ("TFJOB_REGION", "us-central1"), ("TFJOB_API_ENDPOINT", fake.endpoint)):
        monkeypatch.setenv(var, value)
    kw.setdefault("backend", "vertex")
    return Job(image="gcr.io/p/trainer:1", module="trainer.task", workers=1, name="edge", quiet=True, **kw)


def _elsewhere(monkeypatch: pytest.MonkeyPatch) -> None:
    """The environment changed after the job was made: another project, a dead endpoint, a poll
    interval that is no number (any of them read now would send the job elsewhere or fail)."""
    monkeypatch.setenv("TFJOB_PROJECT", "elsewhere")
    monkeypatch.setenv("TFJOB_REGION", "europe-west4")
    monkeypatch.setenv("TFJOB_API_ENDPOINT", "http://127.0.0.1:9")
    monkeypatch.setenv("TFJOB_POLL_INTERVAL", "fast")
    monkeypatch.setenv("TFJOB_NAMESPACE", "elsewhere")


def test_a_vertex_job_renders_submits_and_follows_without_reading_settings_again(
    fake: FakeVertex, monkeypatch: pytest.MonkeyPatch, no_settings_read: list[str]
) -> None:
    job = _vertex_job(fake, monkeypatch)
    assert (job.settings.project, job.settings.api_endpoint, job.settings.poll_interval) == ("p", fake.endpoint, "0.02")
    no_settings_read.append("on")
    _elsewhere(monkeypatch)

    body = job.render()
    assert body["displayName"] == "edge" and body["jobSpec"]["workerPoolSpecs"][0]["containerSpec"]["imageUri"] == "gcr.io/p/trainer:1"
    handle = job.submit()
    assert handle.settings is job.settings
    assert handle.status().state in (JobState.QUEUED, JobState.PENDING, JobState.RUNNING, JobState.SUCCEEDED)
    assert handle.wait(timeout=120, poll_interval=0.01).state is JobState.SUCCEEDED
    # The backend's own reads of its settings: the remote list asks the project and endpoint
    # resolved when the job was made (the environment now names another, and a dead endpoint).
    assert [s.id for s in job.backend.list()] == [handle.id]
    paths = [path for _, path, _ in fake.requests if path.startswith("/v1/")]
    assert paths and all(path.startswith("/v1/projects/p/locations/us-central1/") for path in paths), paths


def test_following_a_vertex_job_uses_the_poll_interval_resolved_when_it_was_made(
    fake: FakeVertex, monkeypatch: pytest.MonkeyPatch, no_settings_read: list[str]
) -> None:
    """``run()`` follows the job with the backend's poll interval setting: the one resolved
    with the job ("0.02"), not the environment's later "fast" (which would be a UsageError)."""
    job = _vertex_job(fake, monkeypatch)
    no_settings_read.append("on")
    _elsewhere(monkeypatch)
    handle = job.run()
    assert handle.status().state is JobState.SUCCEEDED
    assert all(path.startswith("/v1/projects/p/") for _, path, _ in fake.requests if path.startswith("/v1/"))


def test_a_users_backend_object_gets_the_job_s_settings_unless_it_has_its_own(fake: FakeVertex, monkeypatch: pytest.MonkeyPatch) -> None:
    from tfjob.backends.vertex.backend import VertexBackend

    plain = VertexBackend()
    job = _vertex_job(fake, monkeypatch, backend=plain)
    assert not plain.has_settings and job.backend.has_settings
    assert job.backend.settings is job.settings and job._unbound_backend().settings is job.settings
    own = Settings(project="own-project", region="asia-east1")
    mine = _vertex_job(fake, monkeypatch, backend=VertexBackend(settings=own))
    assert mine.backend.settings is own and mine._unbound_backend().settings is own  # not overwritten
    _elsewhere(monkeypatch)
    assert job.submit().settings is job.settings


def test_the_environment_changed_after_the_job_was_made_changes_nothing(fake: FakeVertex, monkeypatch: pytest.MonkeyPatch) -> None:
    job = _vertex_job(fake, monkeypatch)
    _elsewhere(monkeypatch)
    backend = job.backend
    assert (backend.settings.project, backend.settings.region, backend.settings.api_endpoint) == ("p", "us-central1", fake.endpoint)
    typed = backend.typed(None)  # what a plain SubmitOptions is filled with: the job's settings
    assert (typed.project, typed.region, typed.api_endpoint) == ("p", "us-central1", fake.endpoint)
    handle = job.submit()
    assert handle.wait(timeout=120, poll_interval=0.01).state is JobState.SUCCEEDED
    assert [s.id for s in backend.list()] == [handle.id]
    # A job made now is made with the environment as it is now: resolved once, each at its edge.
    later = Job(image="gcr.io/p/trainer:1", module="trainer.task", backend="vertex")
    assert (later.settings.project, later.backend.settings.project) == ("elsewhere", "elsewhere")


def test_a_handle_from_get_job_resolves_its_settings_once(fake: FakeVertex, monkeypatch: pytest.MonkeyPatch) -> None:
    job_id = _vertex_job(fake, monkeypatch).submit().id
    handle = get_job(job_id)
    assert handle.settings.project == "p"
    _elsewhere(monkeypatch)
    assert handle.status().state is not JobState.LOST
    assert handle._backend.settings is handle.settings and handle.settings.project == "p"
    assert get_job(job_id).settings.project == "elsewhere"  # a new handle: the environment as it is now
    given = Settings(project="given")
    assert get_job(job_id, settings=given)._backend.settings is given


def test_a_local_job_renders_and_runs_without_reading_settings_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, no_settings_read: list[str]
) -> None:
    from tfjob import Local

    trainer = write_trainer(tmp_path, "print('training at the edge')\n")
    job = Job(str(trainer), "trainer.task", quiet=True, backend=Local(python=sys.executable, grace=1))
    no_settings_read.append("on")
    _elsewhere(monkeypatch)
    assert job.render()
    handle = job.run()
    assert handle.status().state is JobState.SUCCEEDED
    assert any("training at the edge" in line for line in handle.logs())


def test_a_kubeflow_render_uses_the_namespace_resolved_when_the_job_was_made(
    monkeypatch: pytest.MonkeyPatch, no_settings_read: list[str]
) -> None:
    monkeypatch.setenv("TFJOB_NAMESPACE", "from-env")
    job = Job(image="r/x:1", module="trainer.task", workers=2, name="edge", backend="kubeflow")
    no_settings_read.append("on")
    _elsewhere(monkeypatch)
    manifest = job.render()
    assert manifest["kind"] == "TFJob" and manifest["metadata"]["namespace"] == "from-env"
    assert job._unbound_backend().settings.namespace == "from-env"


def test_a_backend_made_without_settings_has_none_and_reads_none(monkeypatch: pytest.MonkeyPatch, no_settings_read: list[str]) -> None:
    """``get_backend(name)`` without settings: every setting unset (the edge gives them)."""
    from tfjob.backends import get_backend

    monkeypatch.setenv("TFJOB_PROJECT", "from-env")
    monkeypatch.setenv("TFJOB_NAMESPACE", "from-env")
    no_settings_read.append("on")
    for name in ("vertex", "kubeflow", "local"):
        backend = get_backend(name)
        assert not backend.has_settings and backend.settings == Settings()
        typed = vars(backend.typed(None))
        assert typed.get("project") is None and typed.get("namespace") is None


def test_a_damaged_settings_file_stops_no_local_status_or_listing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The local backend reads no settings, so its handle resolves none: a damaged
    ``config.yaml`` is said when a cloud job's settings are needed, not by ``status`` of a local job."""
    from tfjob import Local, list_jobs
    from tfjob.errors import ConfigFileError

    trainer = write_trainer(tmp_path, "print('before the damage')\n")
    handle = Job(str(trainer), "trainer.task", quiet=True, backend=Local(python=sys.executable, grace=1)).run()
    home = Path(settings_module.tfjob_home())
    (home / "config.yaml").write_text("project: [unclosed\n")
    assert get_job(handle.id).status().state is JobState.SUCCEEDED
    assert [s.id for s in list_jobs(backend="local")] == [handle.id]
    with pytest.raises(ConfigFileError, match="config.yaml"):
        list_jobs(backend="vertex")
