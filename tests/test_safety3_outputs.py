"""Issue 36, medium: what a job left, read and written where it cannot be — output paths that
take no file, a ``gs://`` job dir without credentials, a bucket holding ``x`` and ``x/y``, a
job dir 1,400 levels deep, more files than are listed, a port in use, a preemption racing the
job's end, and a metrics file holding a 400-digit number. One line each, never a traceback."""

from __future__ import annotations

import json
import os
import socket
import sys
import threading
import time
from pathlib import Path
from typing import Any, Iterator

import pytest

from helpers import one_error
from safety3_jobs import recorded_job, remove_tree, scalar_events, tfjob, write_events
from fakes.gcs import storage_emulator
from tfjob.model import JobState


@pytest.fixture
def job(tmp_path: Path) -> tuple[Path, str, Path]:
    """(TFJOB_HOME, job id, job dir) of an ended local job that logged a scalar and wrote a file."""
    home, job_dir = tmp_path / "home", tmp_path / "out"
    write_events(job_dir / "logs" / "events.out.tfevents.1.h", scalar_events((s, "loss", 1.0 / (s + 1)) for s in range(3)))
    (job_dir / "eval").mkdir()
    (job_dir / "eval" / "metrics.json").write_text('{"loss": 0.5}')
    return home, recorded_job(home, str(job_dir)), job_dir


# -- output paths -------------------------------------------------------------------------------
def _places(tmp_path: Path, job_dir: Path) -> dict[str, tuple[str, str]]:
    """Where a file cannot go: (path, what the error says)."""
    (tmp_path / "adir").mkdir(exist_ok=True)
    return {
        "missing-dir": (str(tmp_path / "nowhere" / "f.{ext}"), "does not exist; create it first"),
        "a-directory": (str(tmp_path / "adir"), "is a directory"),
        "dev-full": ("/dev/full", "is not a regular file"),
        "dev-null": ("/dev/null", "is not a regular file"),
        "the-job-dir": (str(job_dir), "is a directory"),
        "empty": ("", "names no file"),
    }


@pytest.mark.parametrize("place", ["missing-dir", "a-directory", "dev-full", "dev-null", "the-job-dir", "empty"])
def test_a_report_or_plot_where_no_file_can_go_is_one_line(job: tuple[Path, str, Path], tmp_path: Path, tfjob_exe: str, place: str) -> None:
    home, job_id, job_dir = job
    path, says = _places(tmp_path, job_dir)[place]
    line = one_error(tfjob(tfjob_exe, home, "report", job_id, "-o", path.replace("{ext}", "html")), 2)
    assert line.startswith("error: --output") and says in line, line
    plot = path.replace("{ext}", "png") if path.endswith("}") or not path or path.startswith("/dev") else path
    out = tfjob(tfjob_exe, home, "metrics", job_id, "--plot", plot)
    line = one_error(out, 2)
    assert line.startswith("error: --plot"), line


def test_an_existing_file_is_replaced_and_a_failed_write_is_one_line(job: tuple[Path, str, Path], tmp_path: Path, tfjob_exe: str) -> None:
    home, job_id, _ = job
    page = tmp_path / "r.html"
    page.write_text("old")
    assert tfjob(tfjob_exe, home, "report", job_id, "-o", str(page)).returncode == 0
    assert page.read_text().startswith("<!DOCTYPE html>")
    # /proc/self takes no new file: the write itself fails, said in one line, exit 1.
    line = one_error(tfjob(tfjob_exe, home, "report", job_id, "-o", "/proc/self/report.html"), 1)
    assert line.startswith("error: could not write /proc/self/report.html: ")
    line = one_error(tfjob(tfjob_exe, home, "metrics", job_id, "--plot", "/proc/self/m.png"), 1)
    assert line.startswith("error: could not write /proc/self/m.png: ")


def test_a_report_to_stdout(job: tuple[Path, str, Path], tmp_path: Path, tfjob_exe: str) -> None:
    home, job_id, _ = job
    out = tfjob(tfjob_exe, home, "report", job_id, "-o", "-", cwd=tmp_path)
    assert out.returncode == 0 and out.stdout.startswith("<!DOCTYPE html>") and not (tmp_path / "-").exists()


@pytest.mark.parametrize("place", ["empty", "a-file", "dev-null", "the-job-dir", "inside-the-job-dir"])
def test_a_download_where_no_directory_can_be_is_one_line(job: tuple[Path, str, Path], tmp_path: Path, tfjob_exe: str, place: str) -> None:
    home, job_id, job_dir = job
    (tmp_path / "a-file").write_text("x")
    path = {
        "empty": "",
        "a-file": str(tmp_path / "a-file"),
        "dev-null": "/dev/null",
        "the-job-dir": str(job_dir),
        "inside-the-job-dir": str(job_dir / "copy"),
    }[place]
    line = one_error(tfjob(tfjob_exe, home, "outputs", job_id, "--download", path, cwd=tmp_path), 2)
    assert line.startswith("error: --download"), line
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["a-file", "home", "out"])  # nothing written in the working directory
    assert not (job_dir / "copy").exists()


def test_a_download_of_more_files_than_listed_says_what_was_left(tmp_path: Path, tfjob_exe: str) -> None:
    from tfjob.after.outputs import MAX_FILES

    home, job_dir = tmp_path / "home", tmp_path / "out"
    job_dir.mkdir()
    for i in range(MAX_FILES + 5):
        (job_dir / f"f{i:05d}.txt").write_text("x")
    job_id = recorded_job(home, str(job_dir))
    out = tfjob(tfjob_exe, home, "outputs", job_id, "--download", str(tmp_path / "copy"))
    assert out.returncode == 0, out.stderr[-2000:]
    assert f"downloaded {MAX_FILES} files" in out.stderr
    assert f"only the first {MAX_FILES} files were listed and copied: there are more under {job_dir}" in out.stderr
    assert len(list((tmp_path / "copy").iterdir())) == MAX_FILES


# -- a job dir 1,400 levels deep ----------------------------------------------------------------
@pytest.fixture
def deep_trees(tmp_path: Path) -> Iterator[None]:
    yield
    for name in ("out", "copy"):
        remove_tree(tmp_path / name)


def test_a_job_dir_1400_levels_deep_is_read(tmp_path: Path, tfjob_exe: str, deep_trees: None) -> None:
    home, job_dir = tmp_path / "home", tmp_path / "out"
    deep = job_dir
    deep.mkdir()
    for _ in range(1400):  # level by level: pathlib's mkdir(parents=True) recurses
        deep = deep / "d"
        os.mkdir(deep)
    (deep / "eval").mkdir()
    (deep / "eval" / "metrics.json").write_text("{}")
    write_events(deep / "events.out.tfevents.1.h", scalar_events([(1, "loss", 0.25)]))
    job_id = recorded_job(home, str(job_dir))
    for args in (["outputs", job_id], ["outputs", job_id, "--json"], ["metrics", job_id, "--json"], ["status", job_id, "--json"]):
        out = tfjob(tfjob_exe, home, *args)
        assert out.returncode == 0 and "Traceback" not in out.stderr and "RecursionError" not in out.stdout, (args, out.stderr[-2000:])
    data = json.loads(tfjob(tfjob_exe, home, "metrics", job_id, "--json").stdout)
    assert list(data["final"].values()) == [{"loss": 0.25}]
    assert tfjob(tfjob_exe, home, "report", job_id, "-o", str(tmp_path / "r.html")).returncode == 0
    copied = tfjob(tfjob_exe, home, "outputs", job_id, "--download", str(tmp_path / "copy"))
    assert copied.returncode == 0 and "downloaded 2 files" in copied.stderr, copied.stderr[-2000:]


# -- gs:// --------------------------------------------------------------------------------------
@pytest.fixture
def no_google(tmp_path: Path) -> dict[str, str]:
    """An environment with no Google credentials anywhere (no ADC file, no metadata server)."""
    return {
        "HOME": str(tmp_path / "nohome"), "CLOUDSDK_CONFIG": str(tmp_path / "gcloud"), "GCE_METADATA_HOST": "127.0.0.1:9",
        "GCE_METADATA_IP": "127.0.0.1:9", "NO_GCE_CHECK": "true", "STORAGE_EMULATOR_HOST": "",
    }  # fmt: skip


def test_a_gs_job_dir_without_credentials_is_one_line(tmp_path: Path, tfjob_exe: str, no_google: dict[str, str]) -> None:
    home = tmp_path / "home"
    env = {k: v for k, v in no_google.items()}
    job_id = recorded_job(home, "gs://some-bucket/runs/1")
    base = {**os.environ, **env}
    base.pop("STORAGE_EMULATOR_HOST", None)
    base.pop("GOOGLE_APPLICATION_CREDENTIALS", None)
    import subprocess

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([tfjob_exe, *args], capture_output=True, text=True, timeout=300, env={**base, "TFJOB_HOME": str(home)})

    for args in (["outputs", job_id], ["metrics", job_id], ["tensorboard", job_id, "--port", "0"]):
        line = one_error(run(*args), 1)
        assert "no Google Cloud credentials found" in line and "gcloud auth application-default login" in line, line
    out = run("status", job_id, "--json")
    assert out.returncode == 0 and "Traceback" not in out.stderr, out.stderr[-2000:]
    assert "no Google Cloud credentials found" in json.loads(out.stdout)["outputs_note"]
    out = run("report", job_id, "-o", str(tmp_path / "r.html"))
    assert out.returncode == 0 and "Traceback" not in out.stderr, out.stderr[-2000:]
    assert "no Google Cloud credentials found" in (tmp_path / "r.html").read_text()


@pytest.fixture
def bucket(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    with storage_emulator(monkeypatch) as client:
        yield client.create_bucket("outs")


def test_a_bucket_holding_x_and_x_slash_y_downloads_the_rest(bucket: Any, tmp_path: Path) -> None:
    from tfjob.after.outputs import download, job_outputs

    for name, text in (("runs/1/x", "file"), ("runs/1/x/y", "inside"), ("runs/1/a/b", "b"), ("runs/1/z", "z")):
        bucket.blob(name).upload_from_string(text)
    found = job_outputs("j", "vertex", "gs://outs/runs/1", client=bucket.client)
    notes: list[str] = []
    written = download(found, tmp_path / "d", client=bucket.client, notes=notes)
    assert sorted(str(p.relative_to(tmp_path / "d")) for p in written) == ["a/b", "x/y", "z"]
    assert (tmp_path / "d" / "x" / "y").read_text() == "inside"
    assert len(notes) == 1 and notes[0].startswith("1 not copied (a name that is also a folder of other outputs") and "x" in notes[0]


# -- tensorboard --------------------------------------------------------------------------------
def test_tensorboard_on_a_port_in_use_is_one_line(job: tuple[Path, str, Path], tfjob_exe: str) -> None:
    home, job_id, _ = job
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        line = one_error(tfjob(tfjob_exe, home, "tensorboard", job_id, "--port", str(port)), 2)
    assert line == f"error: --port {port}: the port is in use on 127.0.0.1; choose another (--port 0: any free one)"


# -- preempt racing the job's end ---------------------------------------------------------------
def test_a_preemption_racing_the_jobs_end_is_said_at_once_and_taken_back(tmp_path: Path) -> None:
    from tfjob.backends.local.backend import LocalBackend
    from tfjob.errors import UsageError
    from tfjob.runtime.store import JobStore, process_start_time

    store = JobStore(tmp_path / "jobs.db")
    job_id = recorded_job(tmp_path, None, state=JobState.RUNNING)
    # This process stands for the job's launcher: alive, and it never takes the request.
    store.update(job_id, supervisor_pid=os.getpid(), supervisor_start=process_start_time(os.getpid()), ended=None)
    ended = threading.Event()

    def end_the_job() -> None:
        while not store.pending_requests(job_id):
            time.sleep(0.01)
        JobStore(store.path).set_state(job_id, JobState.SUCCEEDED, "the chief finished")
        ended.set()

    threading.Thread(target=end_the_job, daemon=True).start()
    with pytest.raises(UsageError, match=rf"job {job_id} ended \(SUCCEEDED\) before worker-0 could be preempted"):
        LocalBackend(store=store).preempt(job_id, "worker-0", wait=3600)
    assert ended.is_set() and store.pending_requests(job_id) == 0


# -- the pipeline step ----------------------------------------------------------------------------
def test_a_step_reads_a_metrics_file_with_a_400_digit_number(job: tuple[Path, str, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    from tfjob import get_job
    from tfjob.pipelines.step import job_outputs

    home, job_id, job_dir = job
    monkeypatch.setenv("TFJOB_HOME", str(home))
    (job_dir / "eval" / "metrics.json").write_text('{"big": ' + "9" * 400 + ', "loss": 0.5, "nan": NaN, "small": -' + "9" * 400 + "}")
    _, metrics = job_outputs(get_job(job_id), str(job_dir))
    assert metrics == {"eval/metrics.json"[:0] + "loss": 0.5, "./loss": pytest.approx(1 / 3)}
    (job_dir / "eval" / "metrics.json").write_text('{"deep": ' + "[" * 100_000 + "]" * 100_000 + "}")
    assert job_outputs(get_job(job_id), str(job_dir))[1] == {"./loss": pytest.approx(1 / 3)}


def test_a_step_whose_gs_job_dir_has_no_credentials_fails_in_one_line(tmp_path: Path, tfjob_exe: str, no_google: dict[str, str]) -> None:
    """The KFP component's own code path: job_outputs after the job, its error one line."""
    import subprocess

    home = tmp_path / "home"
    job_id = recorded_job(home, "gs://some-bucket/runs/1")
    script = (
        "import sys\n"
        "from tfjob import get_job\n"
        "from tfjob.errors import TfjobError\n"
        "from tfjob.pipelines.step import job_outputs\n"
        "try:\n"
        f"    job_outputs(get_job({job_id!r}), 'gs://some-bucket/runs/1')\n"
        "except TfjobError as e:\n"
        "    print(f'error: {e}', file=sys.stderr)\n"
        "    raise SystemExit(e.exit_code)\n"
    )
    env = {**os.environ, **no_google, "TFJOB_HOME": str(home)}
    env.pop("STORAGE_EMULATOR_HOST", None)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300, env=env)
    line = one_error(out, 1)
    assert "no Google Cloud credentials found" in line, line


def test_a_report_and_a_plot_get_the_usual_permissions(job: tuple[Path, str, Path], tmp_path: Path, tfjob_exe: str) -> None:
    home, job_id, _ = job
    mask = os.umask(0o022)
    os.umask(mask)
    for args, path in ((["report", job_id, "-o"], tmp_path / "r.html"), (["metrics", job_id, "--plot"], tmp_path / "m.png")):
        assert tfjob(tfjob_exe, home, *args, str(path)).returncode == 0
        assert path.stat().st_mode & 0o777 == 0o666 & ~mask
        path.chmod(0o640)  # a file written again keeps its permissions
        assert tfjob(tfjob_exe, home, *args, str(path)).returncode == 0
        assert path.stat().st_mode & 0o777 == 0o640
        assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temporary file left
