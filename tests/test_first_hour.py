"""The first hour (issue 39): local answers as the platforms do.

Each local task runs in its own working directory (as a replica starts in its container's),
the trainer is on the path rather than the working directory, so what a job writes never
lands in the trainer directory nor in the next package; and one rule decides, on every
backend, whether a directory is a trainer package.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from helpers import BIN, need_in_ci, write_trainer

TFJOB = str(BIN / "tfjob")

# Any attempt to reach a network or find credentials would fail loudly with these.
OFFLINE = {
    "HTTPS_PROXY": "http://127.0.0.1:9",
    "HTTP_PROXY": "http://127.0.0.1:9",
    "NO_PROXY": "",
    "GOOGLE_APPLICATION_CREDENTIALS": "/nonexistent/credentials.json",
}

#: Writes out/x.json where it stands, and a file into the --job-dir it is given.
TASK = """\
import argparse, json, os

parser = argparse.ArgumentParser()
parser.add_argument("--job-dir")
args, _ = parser.parse_known_args()
os.makedirs("out", exist_ok=True)
task = json.loads(os.environ.get("TF_CONFIG", "{}")).get("task")
with open(os.path.join("out", "x.json"), "w") as f:
    json.dump({"cwd": os.getcwd(), "task": task}, f)
if args.job_dir:
    os.makedirs(args.job_dir, exist_ok=True)
    with open(os.path.join(args.job_dir, "model.txt"), "w") as f:
        f.write("trained")
print("wrote out/x.json in", os.getcwd())
"""


def _tfjob(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([TFJOB, *args], cwd=cwd, capture_output=True, text=True, timeout=300, env={**os.environ, **(env or {})})


def _tree(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if "__pycache__" not in p.parts)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """``project/trainer/{__init__,task}.py``, the reader's trainer directory."""
    # beside nothing else (TFJOB_HOME is in tmp_path)
    return write_trainer(tmp_path / "src" / "project", TASK).parent


def _job_id(out: str) -> str:
    return next(line.split()[1] for line in out.splitlines() if line.startswith("job ") and ("SUCCEEDED" in line or "FAILED" in line))


@pytest.mark.parametrize("extra", [[], ["--", "--job-dir", "out"]], ids=["out-x-json", "job-dir-out"])
def test_what_a_local_job_writes_stays_out_of_the_trainer_directory_and_the_next_package(project: Path, extra: list[str]) -> None:
    before = _tree(project)
    done = _tfjob("submit", "project", "-m", "trainer.task", "--workers", "1", *extra, cwd=project.parent)
    assert done.returncode == 0, done.stdout + done.stderr
    # Nothing in the trainer directory (nor beside it): not out/x.json, not the --job-dir.
    assert _tree(project) == before
    assert sorted(p.name for p in project.parent.iterdir()) == ["project"]
    job_id = _job_id(done.stdout + done.stderr)

    # Each task wrote in its own working directory, under the job's record, named by `tfjob status`.
    status = _tfjob("status", job_id, cwd=project.parent)
    assert status.returncode == 0, status.stderr
    line = next(line for line in status.stdout.splitlines() if line.startswith("workdirs"))
    work = Path(line.split()[1].removesuffix("/<task>"))
    assert work == Path(os.environ["TFJOB_HOME"]) / "jobs" / job_id / "work"
    # (The worker may be stopped before it writes: the job ends with its chief, as on the platforms.)
    written = json.loads((work / "chief-0" / "out" / "x.json").read_text())
    assert written == {"cwd": str(work / "chief-0"), "task": {"type": "chief", "index": 0}}
    if extra:
        assert (work / "chief-0" / "out" / "model.txt").read_text() == "trained"
    assert sorted(p.name for p in work.iterdir()) == ["chief-0", "worker-0"]
    # The job's record names it too (what the Python API's status shows).
    from tfjob.runtime.store import JobStore

    with JobStore() as store:
        record = store.get(job_id)
    assert record is not None and record.extra["work_dir"] == str(work)
    manifest = json.loads((work.parent / "tasks.json").read_text())
    assert {t["name"]: t["cwd"] for t in manifest} == {"chief-0": str(work / "chief-0"), "worker-0": str(work / "worker-0")}

    # The next Vertex AI dry run packages the trainer's own files, and nothing the job wrote.
    dry = _tfjob("submit", "project", "-m", "trainer.task", "--backend", "vertex", "--dry-run", cwd=project.parent, env=OFFLINE)
    assert dry.returncode == 0, dry.stderr
    body = json.loads(dry.stdout)
    uri = body["jobSpec"]["workerPoolSpecs"][0]["pythonPackageSpec"]["packageUris"][0]
    digest, name = uri.split("/")[-2:]
    [sdist] = (Path(os.environ["TFJOB_HOME"]) / "build").rglob(name)
    assert hashlib.sha256(sdist.read_bytes()).hexdigest() == digest  # the very package the request names
    with tarfile.open(sdist) as tar:
        members = sorted(m.name.split("/", 1)[1] for m in tar.getmembers() if m.isfile())
    assert members == ["PKG-INFO", "setup.py", "trainer/__init__.py", "trainer/task.py"]


def test_a_script_trainer_runs_from_its_own_working_directory_too(tmp_path: Path) -> None:
    source = tmp_path / "scripts"
    source.mkdir()
    (source / "train.py").write_text(TASK)
    done = _tfjob("submit", "scripts", "--script", "train.py", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert _tree(source) == ["train.py"]


RENDERS = {
    "local": ["render", "--backend", "local"],
    "local-submit": ["submit", "--backend", "local"],
    "vertex": ["render", "--backend", "vertex"],
    "jobset": ["render", "--backend", "jobset", "--image", "localhost/tfjob-base:1"],
}


@pytest.mark.parametrize("backend", sorted(RENDERS))
def test_a_namespace_directory_is_refused_the_same_way_by_every_backend(tmp_path: Path, backend: str) -> None:
    """trainer/task.py with no trainer/__init__.py: Python imports it in place, but no installed
    sdist would carry it (its setup.py finds packages), so every backend refuses it alike."""
    namespace = tmp_path / "namespace"
    (namespace / "trainer").mkdir(parents=True)
    (namespace / "trainer" / "task.py").write_text("print('hi')\n")
    done = _tfjob(*RENDERS[backend], str(namespace), "-m", "trainer.task", cwd=tmp_path, env=OFFLINE)
    assert done.returncode == 2, (backend, done.stdout, done.stderr)
    [line] = done.stderr.strip().splitlines()
    assert line == (
        f"error: {namespace} has no __init__.py and no trainer/__init__.py: it is not a Python package; "
        "add an empty __init__.py (or a setup.py / pyproject.toml) to the trainer directory"
    ), (backend, line)


@pytest.mark.parametrize("module", ["train", "multi_worker_strategy-with-keras"])
def test_a_top_level_module_is_a_trainer_on_every_backend_and_its_sdist_runs_it(tmp_path: Path, module: str) -> None:
    """`-m train` with train.py and no package (TensorFlow's tutorials are such files): accepted
    by every backend alike, and the sdist the clouds install carries it, so `python -m` runs it
    there as here."""
    source = tmp_path / "tutorial"
    source.mkdir()
    (source / f"{module}.py").write_text("import helper, sys\nprint('ran', helper.NAME, sys.argv[1:])\n")
    (source / "helper.py").write_text("NAME = 'the tutorial'\n")
    for backend, argv in sorted(RENDERS.items()):
        done = _tfjob(*argv, "tutorial", "-m", module, cwd=tmp_path, env=OFFLINE)
        assert done.returncode == 0, (backend, done.stderr)
        if backend == "local-submit":
            assert "ran the tutorial []" in done.stdout + done.stderr
    assert sorted(p.name for p in source.iterdir()) == sorted([f"{module}.py", "helper.py"])
    # What a platform does with the sdist Vertex AI stages: pip install, then python -m.
    from tfjob.packaging import build_sdist

    built = build_sdist(source, tmp_path / "dist", module=module)
    site = tmp_path / "site"
    installed = subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation", "--no-index", "--target", str(site), str(built.path)],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert installed.returncode == 0, installed.stderr
    ran = subprocess.run([sys.executable, "-m", module, "--steps", "3"], cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(site)},
                         capture_output=True, text=True, timeout=120)  # fmt: skip
    assert ran.returncode == 0 and ran.stdout.strip() == "ran the tutorial ['--steps', '3']", ran.stderr


@pytest.mark.parametrize("backend", sorted(set(RENDERS) - {"local-submit"}))
def test_a_package_is_accepted_by_every_backend(project: Path, backend: str) -> None:
    done = _tfjob(*RENDERS[backend], "project", "-m", "trainer.task", cwd=project.parent, env=OFFLINE)
    assert done.returncode == 0, (backend, done.stderr)


def test_a_failing_trainers_traceback_is_shown_once_and_is_its_own(tmp_path: Path) -> None:
    """The trainer's frames only (not the bootstrap's nor runpy's), once on the console; the
    summary names the error it ended with."""
    root = tmp_path / "src"
    (root / "boom").mkdir(parents=True)
    (root / "boom" / "__init__.py").write_text("")
    (root / "boom" / "task.py").write_text('def load():\n    raise ValueError("no rows in the data")\n\n\nload()\n')
    done = _tfjob("submit", "src", "-m", "boom.task", cwd=tmp_path)
    assert done.returncode == 1
    out = done.stdout + done.stderr
    assert out.count("Traceback (most recent call last):") == 1, out
    assert out.count('raise ValueError("no rows in the data")') == 1
    assert "bootstrap.py" not in out and "runpy" not in out
    frames = [line for line in out.splitlines() if line.startswith('[chief-0]   File "')]
    assert [line.split('"')[1] for line in frames] == [str(root / "boom" / "task.py")] * 2
    assert "chief-0 ended with (its traceback is above): ValueError: no rows in the data" in done.stderr
    # The log keeps it as the task printed it, and the status shows its last lines.
    job_id = _job_id(out)
    status = _tfjob("status", job_id, cwd=tmp_path)
    assert "ValueError: no rows in the data" in status.stdout and "bootstrap.py" not in status.stdout


def test_tensorflows_peer_loss_errors_after_a_preemption_are_explained_once(tmp_path: Path) -> None:
    import io

    from tfjob.backends.local.logs import LogRouter

    console = io.StringIO()
    router = LogRouter(tmp_path / "logs", console, colour=False)
    chief = router.open_task("chief-0", "chief")
    noise = b"E0000 00:00:1795366117.924732    6098 grpc_server.cc:12] UNAVAILABLE: Socket closed\n"
    router.feed(chief, noise)  # nobody went away: TensorFlow's error stands as it is, unexplained
    router.expect_peer_loss("worker-1 is preempted")
    router.feed(chief, b"step 20\n")  # the trainer's own lines: nothing to explain yet
    router.feed(chief, noise * 3)
    router.feed(chief, noise)
    router.close()
    lines = console.getvalue().splitlines()
    notes = [n for n, line in enumerate(lines) if line.startswith("[tfjob] worker-1 is preempted: the gRPC errors")]
    assert len(notes) == 1 and lines[notes[0] - 1] == "[chief-0] step 20" and lines[notes[0] + 1].startswith("[chief-0] E0000")
    assert "expected, not a failure" in lines[notes[0]]
    assert sum(line.startswith("[chief-0] E0000") for line in lines) == 5  # explained, never hidden
    assert (tmp_path / "logs" / "chief-0.log").read_bytes() == noise + b"step 20\n" + noise * 4  # as the task printed it


def _no_cloud_settings() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GOOGLE_CLOUD_", "CLOUDSDK_", "TFJOB_STAGING"))}
    return {**env, **OFFLINE}


def test_a_cloud_build_dry_run_asks_for_nothing(tmp_path: Path) -> None:
    """`tfjob build --cloud-build --dry-run` with no project, bucket, base on a registry or
    credentials: the request, with what is missing shown as placeholders and said once each."""
    assert _tfjob("init", "census", "--template", "custom-container", cwd=tmp_path).returncode == 0
    repo = "us-central1-docker.pkg.dev/my-project/trainers/census"
    done = subprocess.run(
        [TFJOB, "build", "census", "-m", "trainer.task", "--cloud-build", "--dry-run", "--image-repo", repo],
        cwd=tmp_path, env=_no_cloud_settings(), capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    request = json.loads(done.stdout)
    (tag,) = request["images"]
    assert tag.startswith(f"{repo}:") and request["source"]["storageSource"]["bucket"] == "YOUR_STAGING_BUCKET"
    said = done.stderr.splitlines()
    assert any("no project set: the build request is for YOUR_PROJECT" in line for line in said)
    assert any("no staging bucket set: the build context shows as gs://YOUR_STAGING_BUCKET" in line for line in said)
    assert any(f"dry run: us-central1-docker.pkg.dev was not asked whether it has {tag}" in line for line in said)
    assert "Traceback" not in done.stderr


def test_an_engine_whose_daemon_is_down_is_said_so_when_building(tmp_path: Path) -> None:
    """Not "the base image is not in docker's store and cannot be pulled": the daemon is down
    (docker's socket, or podman's service through CONTAINER_HOST, which makes podman remote)."""
    import shutil

    engines = [e for e in ("docker", "podman") if shutil.which(e)]
    need_in_ci(bool(engines), "needs the docker or podman command line (no daemon need run)")
    engine = engines[0]
    assert _tfjob("init", "census", "--template", "custom-container", cwd=tmp_path).returncode == 0
    socket = f"unix://{tmp_path / 'none.sock'}"
    env = {**_no_cloud_settings(), "DOCKER_HOST" if engine == "docker" else "CONTAINER_HOST": socket}
    done = subprocess.run(
        [TFJOB, "submit", "census", "-m", "trainer.task", "--build", "--image-repo", "us-central1-docker.pkg.dev/p/r/census",
         "--container-engine", engine, "--backend", "vertex", "--dry-run"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 1, done.stderr
    (error,) = [line for line in done.stderr.splitlines() if line.startswith("error: ")]
    assert error.startswith(f"error: {engine}'s daemon is not reachable ("), error
    assert "store" not in error and "Traceback" not in done.stderr


def test_an_empty_image_repo_asks_for_a_repository(tmp_path: Path) -> None:
    """An unset $REPO (`--image-repo ""`) is a missing repository, not a missing image."""
    assert _tfjob("init", "census", "--template", "custom-container", cwd=tmp_path).returncode == 0
    done = _tfjob("submit", "census", "-m", "trainer.task", "--build", "--image-repo", "", "--backend", "vertex", "--dry-run", cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.strip() == (
        "error: --image-repo is empty; give the repository to push to, REGISTRY/PATH, e.g. us-central1-docker.pkg.dev/PROJECT/REPO/trainer"
    )


def test_an_ambiguous_job_id_says_how_many_more_match(tmp_path: Path) -> None:
    from tfjob.errors import UsageError
    from tfjob.model import JobState
    from tfjob.runtime.store import JobRecord, JobStore

    with JobStore(tmp_path / "jobs.db") as store:
        for n in range(7):
            store.add(JobRecord(id=f"census-{n:06x}", backend="local", name="census", state=JobState.SUCCEEDED, created=1000.0 + n))
        with pytest.raises(UsageError, match="is ambiguous") as caught:
            store.resolve("census-")
        message = str(caught.value)
        assert "census-000006, census-000005, census-000004, census-000003, census-000002 and 2 more" in message, message
        for n in range(5):  # five match: all named, no "more"
            store.add(JobRecord(id=f"tune-{n:06x}", backend="local", name="tune", state=JobState.SUCCEEDED, created=2000.0 + n))
        with pytest.raises(UsageError, match="is ambiguous") as caught:
            store.resolve("tune-")
        assert "tune-000000); give more of it" in str(caught.value) and " more)" not in str(caught.value)


@pytest.mark.parametrize("backend", ["local", "vertex"])
def test_the_report_page_says_a_local_jobs_machine_is_this_one(backend: str) -> None:
    from tfjob.model import JobState, JobStatus
    from tfjob.after.report import ReportData, render_report
    from tfjob.description.request import build_spec

    spec = build_spec(dict(name="census", module="trainer.task", package="my_trainer", workers=2, ps=1)).to_dict()
    page = render_report(ReportData(JobStatus("census-1", backend, "census", JobState.SUCCEEDED), spec=spec))
    spec_section = page.split("<h2>Spec</h2>", 1)[1]
    if backend == "local":
        assert "n1-standard-4" not in spec_section
        assert spec_section.count("this machine: a process per task (local; a cloud machine type does not apply)") == 3
    else:  # a cloud job's machine is the platform's
        assert spec_section.count("n1-standard-4") == 3 and "this machine" not in spec_section


def test_the_local_render_shows_each_tasks_tf_config_parsed(project: Path) -> None:
    done = _tfjob("render", "project", "-m", "trainer.task", "--workers", "2", "--ps", "1", "--backend", "local", "-o", "yaml",
                  cwd=project.parent)  # fmt: skip
    assert done.returncode == 0, done.stderr
    import yaml

    tasks = yaml.safe_load(done.stdout)["tasks"]
    for task in tasks:
        assert task["tf_config"] == json.loads(task["env"]["TF_CONFIG"])  # the same, readable
        assert task["tf_config"]["task"]["type"] == task["name"].split("-")[0]
        assert task["cwd"] == str(Path(os.environ["TFJOB_HOME"]) / "jobs" / "<job-id>" / "work" / task["name"])


@pytest.mark.parametrize("values", [[0.011, 0.017, 0.03, 0.052, 0.09], [0.001, 0.004, 0.02, 0.07, 0.1], [0.0123, 0.0131, 0.0145]])
def test_the_study_plots_log_axis_labels_do_not_overlap(values: list[float]) -> None:
    """A log-scaled parameter's axis: a few plain-number labels, none over another (matplotlib's
    default labels every minor tick of a span under a decade, and they run together)."""
    import importlib.util

    need_in_ci(importlib.util.find_spec("matplotlib") is not None, "needs matplotlib (the plots extra)")
    from tfjob.after.metrics import study_figure

    extra = {
        "study": {"metric": {"tag": "accuracy", "goal": "MAXIMIZE"}, "parameters": [{"name": "learning-rate", "scale": "UNIT_LOG_SCALE"}]},
        "trials": [{"id": str(n + 1), "metric": 0.8 + n / 100, "params": {"learning-rate": v}} for n, v in enumerate(values)],
    }
    fig = study_figure(extra)
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    ax = fig.axes[1]
    lo, hi = ax.get_xlim()
    labels = [t for t in ax.get_xticklabels(which="both") if t.get_text() and t.get_visible() and lo <= t.get_position()[0] <= hi]
    assert 1 <= len(labels), [t.get_text() for t in ax.get_xticklabels(which="both")]
    boxes = sorted((t.get_window_extent(renderer) for t in labels), key=lambda b: b.x0)
    assert all(a.x1 < b.x0 for a, b in zip(boxes, boxes[1:])), [t.get_text() for t in labels]
    assert all("\\times" not in t.get_text() and "^" not in t.get_text() for t in labels)  # plain numbers
