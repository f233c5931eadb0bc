"""Input from outside held to one line, and what reaches the terminal made inert (issue 36):
a registry that answers with more than 100 headers, numbers in another script's digits,
image references no registry takes (``python:é``, a sha256 digest of 32 hex digits), and
control characters in names the CLI prints (job-dir files, tags, a display name).
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Iterator

import fake_engine
from fakes.server import QuietHandler, serving
import pytest
from click.testing import CliRunner
from helpers import BIN, one_error, write_trainer

from tfjob.cli.main import app

TFJOB = str(BIN / "tfjob")
DIGITS = "٥"  # Arabic-Indic five: int() and float() read it as 5


@pytest.fixture
def trainer(tmp_path: Path) -> Path:
    return write_trainer(tmp_path / "work", "print('trained')\n").parent


def tfjob(*args: str, env: dict[str, str] | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([TFJOB, *args], capture_output=True, text=True, timeout=300, env={**os.environ, **(env or {})}, cwd=cwd)


# -- a registry that answers what HTTP does not -------------------------------------------------
@pytest.fixture
def many_headers() -> Iterator[str]:
    """A loopback "registry" whose every answer carries 150 headers (http.client takes 100)."""

    class Handler(QuietHandler):
        def do_HEAD(self) -> None:
            self.send_response(200)
            for i in range(150):
                self.send_header(f"X-Pad-{i}", "x")
            self.end_headers()

        do_GET = do_HEAD

    with serving(Handler) as host:
        yield host


def test_a_registry_with_too_many_headers_is_one_line_in_a_cloud_build_dry_run(trainer: Path, many_headers: str) -> None:
    done = tfjob("build", str(trainer), "-m", "trainer.task", "--cloud-build", "--project", "p", "--staging-bucket", "gs://builds",
                 "--api-endpoint", "http://127.0.0.1:9/", "--image-repo", f"{many_headers}/p/census",
                 "--base", f"{many_headers}/p/tfjob:1", "--dry-run")  # fmt: skip
    # A dry run asks nothing it cannot: what the registry answered is one line, and the request is still shown.
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr[-3000:]
    (said,) = [line for line in done.stderr.splitlines() if "was not looked up" in line]
    assert f"registry {many_headers} answered what is no registry's HTTP answer" in said and "more than 100 headers" in said


def test_a_registry_with_too_many_headers_is_one_line_in_a_push_check(trainer: Path, many_headers: str, tmp_path: Path) -> None:
    trace = tmp_path / "trace"
    trace.mkdir()
    engine = fake_engine.install(tmp_path)
    (trainer / "Dockerfile").write_text("FROM scratch\n")
    try:
        done = tfjob("build", str(trainer), "--container-engine", str(engine), "--image-repo", f"{many_headers}/p/census",
                     env={"FAKE_ENGINE_DIR": str(trace), "TMPDIR": str(tmp_path)})  # fmt: skip
    finally:
        fake_engine.cleanup(trace)
    one_error(done, 1, "answered what is no registry's HTTP answer", "more than 100 headers")
    assert [c for c in fake_engine.calls(trace) if c[:1] in (["build"], ["push"])] == []


# -- image references --------------------------------------------------------------------------------
@pytest.mark.parametrize("base, problem", [
    ("python:é", "is not an image reference"),
    ("python:3\u0661", "is not an image reference"),  # an Arabic-Indic one in the tag
    ("127.0.0.1:5000/p/tfjob@sha256:" + "a" * 32, "names a sha256 digest of 32 hex digits"),
    ("127.0.0.1:5000/p/tfjob@sha256:" + "A" * 64, "64 lower-case hex digits"),
])  # fmt: skip
def test_a_base_no_registry_takes_is_refused_before_anything(trainer: Path, base: str, problem: str) -> None:
    for cloud in ([], ["--cloud-build", "--project", "p", "--staging-bucket", "gs://b", "--image-repo", "127.0.0.1:5000/p/c", "--dry-run"]):
        done = tfjob("build", str(trainer), "-m", "trainer.task", "--base", base, *cloud)
        one_error(done, 2, "--base", problem)


def test_a_whole_digest_is_still_taken_by_the_cloud_build_dry_run(trainer: Path) -> None:
    digest = "sha256:" + "0123456789abcdef" * 4
    done = tfjob("build", str(trainer), "-m", "trainer.task", "--base", f"127.0.0.1:5000/p/tfjob@{digest}", "--cloud-build",
                 "--project", "p", "--staging-bucket", "gs://b", "--image-repo", "127.0.0.1:9/p/c", "--dry-run")  # fmt: skip
    # The base itself was taken: the dry run goes on to the image repository (nothing listens at
    # 127.0.0.1:9), says in one line it could not ask it, and shows the build.
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr[-3000:]
    assert "dry run: 127.0.0.1:9 was not asked whether it has 127.0.0.1:9/p/c:" in done.stderr
    assert "cannot be reached" in done.stderr or "Connection refused" in done.stderr


# -- numbers in ASCII digits only -------------------------------------------------------------------
@pytest.mark.parametrize("flag, value", [
    ("--max-restarts", DIGITS), ("--backoff-limit", DIGITS), ("--restart-delay", DIGITS + "s"), ("--grace", DIGITS),
    ("--preempt-grace", DIGITS + "s"), ("--preempt", f"worker-0@{DIGITS}s"), ("--preempt", f"worker-{DIGITS}@5s"),
    ("--max-restarts", "\uff15"),  # a fullwidth five
])  # fmt: skip
def test_numbers_in_another_scripts_digits_are_refused(trainer: Path, flag: str, value: str) -> None:
    rendered = CliRunner().invoke(app, ["render", str(trainer), "-m", "trainer.task", "--backend", "local", "--workers", "1", flag, value])
    one_error(rendered, 2, flag)
    # The command line as a shell gives it (submit reads a plain line without click first).
    done = tfjob("submit", str(trainer), "-m", "trainer.task", "--workers", "1", flag, value, env={"TFJOB_HOME": str(trainer / "home")})
    one_error(done, 2, flag)
    assert "trained" not in done.stdout + done.stderr


@pytest.mark.parametrize("args", [
    ["list", "--limit", DIGITS], ["logs", "some-job", "--tail", DIGITS],
    ["tune", "DIR", "--hparams", "h.yaml", "--max-trials", DIGITS], ["tune", "DIR", "--hparams", "h.yaml", "--seed", DIGITS],
    ["submit", "DIR", "--workers", "1" * 50], ["tensorboard", "some-job", "--port", DIGITS],
])  # fmt: skip
def test_every_numeric_option_takes_ascii_digits_only(args: list[str]) -> None:
    result = CliRunner().invoke(app, args)
    line = one_error(result, 2, "Invalid value for")
    assert "ASCII digits" in line or "longer than any number" in line


def test_ascii_numbers_are_still_taken(trainer: Path) -> None:
    rendered = CliRunner().invoke(app, ["render", str(trainer), "-m", "trainer.task", "--backend", "local", "--workers", "1",
                                        "--max-restarts", "5", "--backoff-limit", "2", "--restart-delay", "1.5s", "--grace", "2.5",
                                        "--preempt-grace", "10s", "--preempt", "worker-0@30s"])  # fmt: skip
    assert rendered.exit_code == 0, rendered.output


# -- what reaches the terminal ---------------------------------------------------------------------
CONTROL = ("\x1b", "\x07", "\u202e", "\r")


def _inert(text: str) -> None:
    for raw in CONTROL:
        assert raw not in text, repr(text)


def test_a_display_name_with_bidi_and_escapes_is_shown_inert_by_list_and_status(trainer: Path) -> None:
    from tfjob.model import JobState
    from tfjob.runtime.store import JobRecord, JobStore

    name = "census\u202egnp.exe\x1b]0;owned\x07\nFAKE-ROW  local  SUCCEEDED"
    with JobStore() as store:
        store.add(JobRecord(id="census-1", backend="local", name=name, state=JobState.SUCCEEDED, spec={}))
    runner = CliRunner()
    listed = runner.invoke(app, ["list"])
    assert listed.exit_code == 0, listed.output
    _inert(listed.stdout)
    assert len(listed.stdout.strip().splitlines()) == 2, listed.stdout  # the header and the job: no forged row
    assert "census\\u202egnp.exe\\x1b]0;owned\\x07\\nFAKE-ROW" in listed.stdout
    status = runner.invoke(app, ["status", "census-1"])
    assert status.exit_code == 0, status.output
    _inert(status.stdout)
    assert "name      census\\u202egnp.exe" in status.stdout


def test_job_dir_file_names_with_osc_bel_and_newlines_are_listed_inert(tmp_path: Path) -> None:
    from tfjob.model import JobState
    from tfjob.runtime.store import JobRecord, JobStore

    job_dir = tmp_path / "job"
    (job_dir / "model").mkdir(parents=True)
    (job_dir / "model" / "saved_model.pb").write_bytes(b"x")
    (job_dir / "evil\x1b]0;owned\x07.txt").write_bytes(b"x")
    (job_dir / "two\nlines   1 B  2026-01-01  other  forged.txt").write_bytes(b"x")
    with JobStore() as store:
        store.add(JobRecord(id="out-1", backend="local", name="out", state=JobState.SUCCEEDED, spec={"job_dir": str(job_dir)}))
    shown = CliRunner().invoke(app, ["outputs", "out-1"])
    assert shown.exit_code == 0, shown.output
    _inert(shown.stdout)
    assert "evil\\x1b]0;owned\\x07.txt" in shown.stdout and "two\\nlines" in shown.stdout
    assert not any(line.endswith("forged.txt") and "two" not in line for line in shown.stdout.splitlines())
    as_json = CliRunner().invoke(app, ["outputs", "out-1", "--json"])
    assert any("evil\x1b]0;owned\x07.txt" in f["path"] for f in json.loads(as_json.stdout)["files"])  # JSON keeps the name, escaped


def test_tags_with_newlines_and_escapes_are_shown_inert_in_the_metrics_table() -> None:
    from tfjob.after.metrics import render_final
    from tfjob.results import JobMetrics, ScalarPoint

    series = {"train": {"loss\nFAKE  tag  9  0.0": [ScalarPoint(1, 0.0, 0.5)], "acc\x1b[2J": [ScalarPoint(1, 0.0, 0.9)]}}
    metrics = JobMetrics(job_id="m-1", log_dir="/x", series=series)
    table = render_final(metrics)
    _inert(table)
    assert len(table.splitlines()) == 3 and "loss\\nFAKE" in table and "acc\\x1b[2J" in table


def test_the_api_checks_the_base_as_the_cli_does(trainer: Path) -> None:
    from tfjob import build_image
    from tfjob.errors import SpecError

    with pytest.raises(SpecError, match="names a sha256 digest of 32 hex digits"):
        build_image(trainer, module="trainer.task", base="127.0.0.1:5000/p/tfjob@sha256:" + "a" * 32, engine="/nonexistent/podman")
    with pytest.raises(SpecError, match="is not an image reference"):
        build_image(trainer, module="trainer.task", base="python:é", engine="/nonexistent/podman")
