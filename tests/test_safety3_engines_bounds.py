"""Container engines held to tfjob's bounds (issue 36): an engine that hangs, talks without
end, dies on Ctrl-C before tfjob does, or is interrupted or terminated while tfjob waits
on it — each ends in one line, the engine and what it started gone, no build context left
in $TMPDIR, nothing tagged.

The engine is a fake (:mod:`fake_engine`): a script named ``podman`` / ``docker`` that
behaves as a hung or noisy engine does and records its calls and processes.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Iterator

import fake_engine
from fakes.server import QuietHandler, serving
import pytest
from helpers import BIN, one_error, write_trainer

TFJOB = str(BIN / "tfjob")


class Rig:
    """A trainer directory, a fake engine, a private $TMPDIR and TFJOB_HOME."""

    def __init__(self, root: Path, engine: str = "podman") -> None:
        self.root = root
        self.trace = root / "trace"
        self.trace.mkdir()
        self.engine = fake_engine.install(root, engine)
        self.tmp = root / "tmp"
        self.tmp.mkdir()
        self.trainer = write_trainer(root / "slow", "print('hi')\n").parent
        (self.trainer / "Dockerfile").write_text("FROM scratch\nCOPY trainer /trainer\n")

    def env(self, mode: str = "", **extra: str) -> dict[str, str]:
        return {
            **os.environ, "FAKE_ENGINE_DIR": str(self.trace), "FAKE_ENGINE_MODE": mode, "TMPDIR": str(self.tmp),
            "TFJOB_HOME": str(self.root / "home"), **extra,
        }  # fmt: skip

    def run(self, *args: str, mode: str = "", timeout: float = 300, **extra: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([TFJOB, *args], capture_output=True, text=True, env=self.env(mode, **extra), timeout=timeout)

    def build(self, *args: str, mode: str = "", **extra: str) -> subprocess.CompletedProcess[str]:
        return self.run("build", str(self.trainer), "--container-engine", str(self.engine), *args, mode=mode, **extra)

    def start(self, *args: str, mode: str) -> subprocess.Popen[str]:
        """tfjob in its own session, as a shell runs a foreground command in its own group."""
        return subprocess.Popen([TFJOB, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=self.env(mode),
                                start_new_session=True)  # fmt: skip

    def wait_started(self, proc: subprocess.Popen[str], what: str) -> None:
        """Until the fake engine says it started ``what``'s long part (no clock: its trace)."""
        deadline = time.monotonic() + 300
        started = self.trace / "started"
        while not (started.exists() and what in started.read_text()):
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "the engine never started"
            time.sleep(0.05)

    def all_gone(self) -> None:
        # The engine's processes were ended and reaped by tfjob (their parent) before it exited.
        assert fake_engine.pids(self.trace), "the engine never ran"
        # A process SIGKILLed on a loaded machine may take a moment to be scheduled and end: 60 s
        # for that (one never signalled sleeps for an hour).
        deadline = time.monotonic() + 60
        while fake_engine.survivors(self.trace) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert fake_engine.survivors(self.trace) == [], "an engine process outlived tfjob"
        assert sorted(p.name for p in self.tmp.iterdir()) == [], "tfjob left files in $TMPDIR"

    def tagged(self) -> list[list[str]]:
        return [c for c in fake_engine.calls(self.trace) if c[:1] == ["tag"]]


@pytest.fixture
def rig(tmp_path: Path) -> Iterator[Rig]:
    made = Rig(tmp_path)
    yield made
    fake_engine.cleanup(made.trace)


# -- Ctrl-C and SIGTERM ------------------------------------------------------------------------
@pytest.mark.parametrize("command", ["build", "submit --build"])
@pytest.mark.parametrize("how", ["ctrl-c", "sigterm"])
def test_an_interrupted_build_ends_the_engine_tags_nothing_and_leaves_no_context(rig: Rig, how: str, command: str) -> None:
    args = ["build", str(rig.trainer)] if command == "build" else ["submit", str(rig.trainer), "-m", "trainer.task", "--build"]
    proc = rig.start(*args, "--container-engine", str(rig.engine), mode="build-slow")
    rig.wait_started(proc, "build")
    if how == "ctrl-c":
        os.killpg(proc.pid, signal.SIGINT)  # as a terminal's Ctrl-C reaches the whole foreground group
    else:
        os.kill(proc.pid, signal.SIGTERM)
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 130, err[-3000:]
    assert "error: interrupted" in err and "Traceback" not in err
    assert "failed" not in err, err  # not "the image build of … failed": the engine did not fail, it was stopped
    assert out == ""
    assert rig.tagged() == []
    rig.all_gone()
    assert "no jobs yet" in rig.run("list").stderr  # nothing recorded


def test_ctrl_c_of_a_build_holds_when_the_engine_would_die_first(rig: Rig) -> None:
    """Under load the engine (which Ctrl-C kills at once, with "Error: interrupted", as the
    fake does) used to end before tfjob saw its own SIGINT, and the build was reported
    failed with exit 1. The engine runs in its own session now: the terminal's Ctrl-C
    reaches tfjob alone, whatever the order the machine runs them in."""
    proc = rig.start("build", str(rig.trainer), "--container-engine", str(rig.engine), mode="build-slow")
    rig.wait_started(proc, "build")
    engine_pid = fake_engine.pids(rig.trace)[-2]  # the build's engine (the last is its sleep)
    assert os.getpgid(engine_pid) != os.getpgid(proc.pid), "the engine shares tfjob's process group"
    os.killpg(proc.pid, signal.SIGINT)
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 130 and "error: interrupted" in err, err[-3000:]
    assert rig.tagged() == []
    rig.all_gone()


@pytest.mark.parametrize("how", ["ctrl-c", "sigterm"])
def test_an_interrupted_engine_query_of_a_submit_ends_the_engine(rig: Rig, how: str) -> None:
    proc = rig.start("submit", str(rig.trainer), "-m", "trainer.task", "--image", "busybox:1", "--container-engine", str(rig.engine),
                     mode="inspect-hang")  # fmt: skip
    rig.wait_started(proc, "image inspect")
    if how == "ctrl-c":
        os.killpg(proc.pid, signal.SIGINT)
    else:
        os.kill(proc.pid, signal.SIGTERM)
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 130, err[-3000:]
    assert "interrupted" in err and "Traceback" not in err
    rig.all_gone()
    listed = rig.run("list")
    assert "no jobs yet" in listed.stderr, listed.stderr


# -- hung engines --------------------------------------------------------------------------------
# 20 s: long enough for the fake engine to start and print its steps on a loaded machine.
def test_a_build_step_that_never_ends_is_stopped_at_the_build_timeout(rig: Rig) -> None:
    done = rig.build(mode="build-hang", TFJOB_BUILD_TIMEOUT="20")
    line = one_error(done, 1, "did not end within 20 s", "was stopped", "STEP 2/2: RUN sleep 3600", "TFJOB_BUILD_TIMEOUT")
    assert str(rig.trainer) in line
    assert rig.tagged() == []
    rig.all_gone()


def test_a_push_that_never_ends_is_stopped_at_the_build_timeout(rig: Rig, registry_404: str) -> None:
    done = rig.build("--image-repo", f"{registry_404}/census", mode="push-hang", TFJOB_BUILD_TIMEOUT="20")
    one_error(done, 1, "pushing", f"to {registry_404} did not end within 20 s")
    rig.all_gone()


@pytest.mark.parametrize("value", ["0", "-5", "٥", "1e9", "soon", "99999999"])
def test_a_bad_build_timeout_is_one_line(rig: Rig, value: str) -> None:
    done = rig.build(TFJOB_BUILD_TIMEOUT=value)
    one_error(done, 2, "$TFJOB_BUILD_TIMEOUT", "whole number of seconds")


def test_a_hung_image_inspect_of_the_build_is_one_line(rig: Rig) -> None:
    (rig.trainer / "Dockerfile").write_text("ARG BASE_IMAGE\nFROM ${BASE_IMAGE}\n")
    done = rig.build("--base", "busybox:1", mode="inspect-hang")
    one_error(done, 1, "podman did not answer `podman image inspect busybox:1` within 30 s", "the engine is hung")
    rig.all_gone()


# -- output without bounds ---------------------------------------------------------------------
def _max_rss_mib(argv: list[str], env: dict[str, str]) -> tuple[subprocess.CompletedProcess[str], float]:
    """Run ``argv`` under a Python that reports its children's peak RSS (MiB): tfjob's and the engine's, not the test's."""
    wrapper = (
        "import json, resource, subprocess, sys\n"
        "done = subprocess.run(sys.argv[1:], capture_output=True, text=True)\n"
        "print(json.dumps([done.returncode, done.stdout, done.stderr, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss]))\n"
    )
    import json

    ran = subprocess.run([sys.executable, "-c", wrapper, *argv], capture_output=True, text=True, env=env, timeout=600)
    code, out, err, rss_kib = json.loads(ran.stdout)
    return subprocess.CompletedProcess(argv, code, out, err), rss_kib / 1024


def test_an_endless_image_inspect_answer_is_cut_and_said(rig: Rig) -> None:
    (rig.trainer / "Dockerfile").write_text("ARG BASE_IMAGE\nFROM ${BASE_IMAGE}\n")
    done, rss = _max_rss_mib([TFJOB, "build", str(rig.trainer), "--container-engine", str(rig.engine), "--base", "busybox:1"],
                             rig.env("inspect-endless"))  # fmt: skip
    one_error(done, 1, "podman answered `podman image inspect busybox:1` with more than 16 MiB", "so it was stopped")
    assert rss < 400, f"{rss:.0f} MiB"
    rig.all_gone()


def test_a_build_line_of_hundreds_of_mib_is_cut(rig: Rig) -> None:
    done, rss = _max_rss_mib([TFJOB, "build", str(rig.trainer), "--container-engine", str(rig.engine)],
                             rig.env("build-line", FAKE_ENGINE_LINE_MB="400"))  # fmt: skip
    one_error(done, 1, "failed at step RUN noisy", "exit status 3")
    assert len(done.stderr) < 20_000, len(done.stderr)
    # Before: the whole line was read (838 MB for 400 MB); now 4 KiB of it. tfjob and its engine, with TensorFlow nowhere.
    assert rss < 400, f"{rss:.0f} MiB"
    rig.all_gone()


def test_a_dockerfile_larger_than_a_dockerfile_is_refused_unread(rig: Rig) -> None:
    with open(rig.trainer / "Dockerfile", "wb") as f:
        f.write(b"ARG BASE_IMAGE\nFROM ${BASE_IMAGE}\n")
        f.truncate(1536 << 20)  # 1.5 GiB, sparse
    done, rss = _max_rss_mib([TFJOB, "build", str(rig.trainer), "--container-engine", str(rig.engine)], rig.env())
    one_error(done, 2, "the Dockerfile", "is larger than 1024 KiB")
    assert rss < 400, f"{rss:.0f} MiB"
    assert fake_engine.calls(rig.trace) == []


# -- what is shown ---------------------------------------------------------------------------------
def test_terminal_escapes_in_build_output_are_made_inert(rig: Rig) -> None:
    done = rig.build("--no-push", mode="build-escapes")
    assert done.returncode == 0, done.stderr[-3000:]
    assert "build step 2/2: RUN printf" in done.stderr
    for raw in ("\x1b", "\x07", "\u202e"):
        assert raw not in done.stderr + done.stdout, repr(done.stderr)
    assert "\\x1b]0;owned\\x07" in done.stderr and "\\u202e" in done.stderr
    assert done.stdout.strip().startswith("localhost/tfjob/slow:")
    assert len(rig.tagged()) == 1


def test_docker_without_its_daemon_is_said_as_such_by_build(tmp_path: Path) -> None:
    rig = Rig(tmp_path, "docker")
    (rig.trainer / "Dockerfile").write_text("ARG BASE_IMAGE\nFROM ${BASE_IMAGE}\n")
    done = rig.build(mode="no-daemon")
    line = one_error(done, 1, "docker's daemon is not reachable", "Cannot connect to the Docker daemon", "systemctl start docker")
    assert "store" not in line and "build the base image first" not in line


def test_a_build_that_fails_after_a_step_without_a_reason_says_so(rig: Rig) -> None:
    done = rig.build(mode="build-step-only")
    line = one_error(done, 1, "failed with exit status 1 after build step 1/1: FROM scratch", "the engine saying no reason")
    assert "failed: STEP" not in line


def test_a_dockerfile_linking_out_of_the_tree_is_said_as_such(rig: Rig) -> None:
    outside = rig.root / "elsewhere.Dockerfile"
    outside.write_text("FROM scratch\n")
    (rig.trainer / "Dockerfile").unlink()
    (rig.trainer / "Dockerfile").symlink_to(outside)
    done = rig.build()
    line = one_error(done, 2, "is a link to", "outside the trainer directory", "copy the Dockerfile into the directory")
    assert "ignore rule" not in line
    assert fake_engine.calls(rig.trace) == []


@pytest.fixture
def registry_404(tmp_path: Path) -> Iterator[str]:
    """A loopback registry that has no manifest (HEAD → 404): the push goes ahead."""

    class Handler(QuietHandler):
        def do_HEAD(self) -> None:
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()

    with serving(Handler) as host:
        yield host


def test_a_progress_line_is_never_given_as_the_reason_of_a_failure(rig: Rig) -> None:
    from tfjob.images.build import build_failure, plan_build

    plan = plan_build(rig.trainer, module=None, base=None, base_ref="tfjob:0.1.0")
    line = build_failure(["STEP 1/1: done"], plan, rig.trainer, 1)
    assert line == f"the image build of {rig.trainer} failed with exit status 1 after build step 1/1: done, the engine saying no reason"
    line = build_failure(["STEP 1/1: done"], plan, rig.trainer, 0)
    assert "ended with exit status 0 but the engine wrote no image id" in line
    # A line that is no progress is still the reason it gives.
    line = build_failure(["STEP 1/1: FROM x", "Error: no space left on device"], plan, rig.trainer, 125)
    assert line.endswith("failed: Error: no space left on device")
