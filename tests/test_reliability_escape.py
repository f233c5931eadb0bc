"""Processes that leave the job's process groups (``setsid`` double fork, ``start_new_session``,
``os.setpgid``), close every fd and rewrite or clear ``TFJOB_JOB_ID`` still end with the job —
at its end, on cancel, and when the launcher or the detached supervisor is SIGKILLed (then
``status``/``wait`` record it LOST and end them): checked by PID and by scanning every
process's command line for a marker only the job's processes carry."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
import time
import uuid
from pathlib import Path
from typing import Iterator

import pytest

from helpers import need_in_ci, write_trainer

from reliability import Reliability
from tfjob import Job
from tfjob.backends.local.contain import JobCgroup, is_job_cgroup, job_processes
from tfjob.runtime.store import JobStore

TRAINER = """\
import os, subprocess, sys, time
mode, out = sys.argv[1], sys.argv[2]
if mode == "popen":
    p = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"], start_new_session=True)
    open(out, "w").write(str(p.pid))
else:
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            open(out, "w").write(str(os.getpid()))
            time.sleep(300)
            os._exit(0)
        os._exit(0)
    while not os.path.exists(out):
        time.sleep(0.01)
print("chief done", flush=True)
"""


@pytest.fixture
def trainer(tmp_path: Path) -> Path:
    return write_trainer(tmp_path / "work", TRAINER).parent


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@pytest.mark.reliability
@pytest.mark.parametrize("mode", ["popen", "setsid"])
def test_an_escaped_process_ends_with_the_job(trainer: Path, tmp_path: Path, tfjob_exe: str, reliability: Reliability, mode: str) -> None:
    out = tmp_path / "escaped.pid"
    done = subprocess.run(
        [tfjob_exe, "submit", str(trainer), "-m", "trainer.task", "--workers", "1", "--", mode, str(out)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    reliability.tried()
    reliability.fault(f"chief {mode}")
    reliability.output(done.stderr)
    assert done.returncode == 0, done.stderr
    job_id = done.stdout.strip().splitlines()[-1]
    pid = int(out.read_text())
    assert not alive(pid), f"pid {pid} outlived job {job_id}"
    assert job_processes(job_id) == []
    assert "left their task's process group" in done.stderr


def still_running(proc: subprocess.Popen[bytes], seconds: float = 2.0) -> bool:
    """True if ``proc`` has not ended ``seconds`` from now: a signal already sent to it, or
    its reaping by another, would show by then (``poll()`` alone can run ahead of a SIGKILL)."""
    try:
        proc.wait(timeout=seconds)
    except subprocess.TimeoutExpired:
        return True
    return False


def test_in_a_pipeline_process_the_callers_children_are_left_alone(trainer: Path, tmp_path: Path) -> None:
    own = subprocess.Popen(["sleep", "30"])  # the pipeline's own child, not the job's
    try:
        out = tmp_path / "escaped.pid"
        handle = Job(str(trainer), "trainer.task", args=["setsid", str(out)], quiet=True).run()
        assert handle.state.value == "SUCCEEDED"
        pid = int(out.read_text())
        assert not alive(pid)
        assert still_running(own)  # still running, and still ours to wait for
    finally:
        own.kill()
        assert own.wait(timeout=60) == -9
    # No zombie of the job is left under this process (a child being reaped right now gets 60 s).
    deadline = time.monotonic() + 60
    while (zombies := _my_zombies()) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert zombies == []


def _my_zombies() -> list[str]:
    """The pids of this process's children that ended and were not waited for."""
    zombies = []
    for p in [p for p in os.listdir("/proc") if p.isdigit()]:
        try:
            with open(f"/proc/{p}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[0] == "Z" and int(fields[1]) == os.getpid():
            zombies.append(p)
    return zombies


# -- No survivor, whatever a task does to its session, group, environment or fds --------

HIDER = """\
import json, os, subprocess, sys, time
marker, out, mode = sys.argv[1:4]
task = json.loads(os.environ["TF_CONFIG"])["task"]
name = f"{task['type']}-{task['index']}"
# What each escapee runs: the marker in its argv is how the test finds it in /proc.
ESCAPEE = "import os, sys, time\\nopen(sys.argv[2] + '.tmp', 'w').write(str(os.getpid()))\\nos.rename(sys.argv[2] + '.tmp', sys.argv[2])\\ntime.sleep(600)\\n"
cleared = {k: v for k, v in os.environ.items() if k != "TFJOB_JOB_ID"}
# 1. setsid double fork, a group of its own, every fd closed, TFJOB_JOB_ID rewritten.
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        os.setpgid(0, 0)
        os.closerange(0, 4096)
        os.execve(sys.executable, [sys.executable, "-c", ESCAPEE, marker, f"{out}/{name}-daemon"], dict(cleared, TFJOB_JOB_ID="someone-else"))
    os._exit(0)
# 2. a new session, with no TFJOB_JOB_ID at all.
subprocess.Popen([sys.executable, "-c", ESCAPEE, marker, f"{out}/{name}-session"], env=cleared, start_new_session=True,
                 stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
# 3. os.setpgid into a group of its own, with an empty environment.
if os.fork() == 0:
    os.setpgid(0, 0)
    os.closerange(3, 4096)
    os.execve(sys.executable, [sys.executable, "-c", ESCAPEE, marker, f"{out}/{name}-group"], {})
# Each task waits for its own three; the chief of a job meant to end waits for everyone's.
prefix, count = (name, 3) if mode == "hang" or name != "chief-0" else ("", 6)
while len([p for p in os.listdir(out) if p.startswith(prefix) and not p.endswith(".tmp")]) < count:
    time.sleep(0.01)
print(f"{name} hid", flush=True)
if mode == "hang":
    time.sleep(600)
"""

#: Escapees per task (daemon, session, group), and tasks per job (chief, worker).
HIDDEN_PER_TASK, TASKS = 3, 2


@pytest.fixture
def hider(tmp_path: Path) -> Path:
    pkg = tmp_path / "hide" / "hider"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "task.py").write_text(HIDER)
    return pkg.parent


@pytest.fixture
def marker() -> Iterator[str]:
    """A word only this test's job processes carry in their argv; whatever a failed test left is killed."""
    word = f"hide-{uuid.uuid4().hex}"
    yield word
    for pid in marked(word):
        os.kill(pid, signal.SIGKILL)


def marked(marker: str) -> list[int]:
    """Live processes whose command line holds ``marker`` (found by scanning /proc)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                argv = f.read()
        except OSError:
            continue
        if marker.encode() in argv and alive(int(entry)):
            found.append(int(entry))
    return found


def assert_none_marked(marker: str, within: float = 30.0) -> None:
    deadline = time.monotonic() + within
    while marked(marker) and time.monotonic() < deadline:
        time.sleep(0.05)
    left = marked(marker)
    assert left == [], f"processes of the job outlived it: {left}"


#: Why a cgroup test cannot run (tfjob.backends.local.contain.JobCgroup.create said no).
NO_CGROUP = "no writable cgroup v2 with cgroup.kill here (Linux >= 5.14, as root or in a delegated cgroup; CI runs as root)"


def cgroups_here() -> bool:
    """True if tfjob can give a job a cgroup on this machine."""
    probe = JobCgroup.create(f"probe-{uuid.uuid4().hex[:6]}")
    if probe is None:
        return False
    probe.kill()
    return True


def hidden_all(out: Path, timeout: float = 90.0) -> list[int]:
    """Wait until every task's escapees run; return their pids."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        done = [p for p in out.iterdir() if not p.name.endswith(".tmp")]
        if len(done) == HIDDEN_PER_TASK * TASKS:
            return [int(p.read_text()) for p in done]
        time.sleep(0.05)
    raise AssertionError(f"escapees did not all start: {sorted(p.name for p in out.iterdir())}")


def _submit(tfjob_exe: str, hider: Path, marker: str, out: Path, mode: str, *extra: str) -> list[str]:
    out.mkdir()
    return [tfjob_exe, "submit", str(hider), "-m", "hider.task", "--workers", "1", "--grace", "2", *extra, "--", marker, str(out), mode]


def _state(tfjob_exe: str, *args: str) -> dict:
    shown = subprocess.run([tfjob_exe, *args, "--json"], capture_output=True, text=True, timeout=60)
    assert "Traceback" not in shown.stderr, shown.stderr
    return json.loads(shown.stdout)


@pytest.mark.reliability
def test_nothing_outlives_a_job_that_ends(hider: Path, marker: str, tmp_path: Path, tfjob_exe: str, reliability: Reliability) -> None:
    reliability.fault("setsid, setpgid, closed fds and a rewritten TFJOB_JOB_ID; normal end")
    done = subprocess.run(_submit(tfjob_exe, hider, marker, tmp_path / "hid", "done"), capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr
    assert len(hidden_all(tmp_path / "hid", timeout=1)) == HIDDEN_PER_TASK * TASKS
    assert_none_marked(marker, within=0)  # gone when the command returns, not some time later
    assert "left their task's process group" in done.stderr


@pytest.mark.reliability
def test_nothing_outlives_a_cancelled_job(hider: Path, marker: str, tmp_path: Path, tfjob_exe: str, reliability: Reliability) -> None:
    started = subprocess.run(
        _submit(tfjob_exe, hider, marker, tmp_path / "hid", "hang", "--detach"), capture_output=True, text=True, timeout=60
    )
    assert started.returncode == 0, started.stderr
    job_id = started.stdout.strip().splitlines()[-1]
    hidden_all(tmp_path / "hid")
    reliability.fault("tfjob cancel of a job whose tasks hid")
    subprocess.run([tfjob_exe, "cancel", job_id], check=True, capture_output=True, timeout=60)
    ended = subprocess.run([tfjob_exe, "wait", job_id], capture_output=True, text=True, timeout=60)
    assert ended.returncode == 130, ended.stderr
    assert_none_marked(marker, within=0)


@pytest.mark.reliability
@pytest.mark.parametrize("who", ["launcher", "supervisor"])
def test_nothing_outlives_a_sigkilled_launcher_or_supervisor(
    hider: Path, marker: str, tmp_path: Path, tfjob_exe: str, reliability: Reliability, who: str
) -> None:
    need_in_ci(
        cgroups_here(),
        "no writable cgroup v2 here: without one, a process that leaves its group and rewrites its environment is beyond reach once the launcher is SIGKILLed (README)",
    )
    argv = _submit(tfjob_exe, hider, marker, tmp_path / "hid", "hang", *(["--detach"] if who == "supervisor" else []))
    if who == "launcher":
        proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        hidden_all(tmp_path / "hid")
        with JobStore() as store:
            [record] = store.list()
        victim = proc.pid
    else:
        started = subprocess.run(argv, capture_output=True, text=True, timeout=60)
        assert started.returncode == 0, started.stderr
        hidden_all(tmp_path / "hid")
        with JobStore() as store:
            record = store.resolve(started.stdout.strip().splitlines()[-1])
        victim = record.supervisor_pid
    assert record.extra.get("cgroup"), "the job's cgroup is in its record"
    os.kill(victim, signal.SIGKILL)
    reliability.fault(f"SIGKILL to the {who} of a job whose tasks hid")
    if who == "launcher":
        proc.wait(timeout=30)
    if who == "supervisor":
        waited = subprocess.run([tfjob_exe, "wait", record.id], capture_output=True, text=True, timeout=60)
        assert waited.returncode == 1 and f"job {record.id} LOST" in waited.stderr, waited.stderr
    else:
        assert _state(tfjob_exe, "status", record.id)["state"] == "LOST"
    assert_none_marked(marker, within=0)  # status/wait ended them, not the passing of time
    assert not Path(record.extra["cgroup"]).exists()
    assert [entry["state"] for entry in _state(tfjob_exe, "list")] == ["LOST"]


def test_without_a_cgroup_the_subreaper_still_ends_what_hid(
    hider: Path, marker: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The fallback, where the machine gives no cgroup: the launcher (here a pipeline process
    # running Job.run()) adopts what the tasks orphaned, whatever its environment says.
    monkeypatch.setattr(JobCgroup, "create", classmethod(lambda cls, job_id: None))
    own = subprocess.Popen(["sleep", "30"])  # the pipeline's own child, not the job's
    try:
        out = tmp_path / "hid"
        out.mkdir()
        handle = Job(str(hider), "hider.task", workers=1, args=[marker, str(out), "done"], quiet=True).run()
        assert handle.state.value == "SUCCEEDED"
        assert len(hidden_all(out, timeout=1)) == HIDDEN_PER_TASK * TASKS
        assert_none_marked(marker, within=0)
        assert still_running(own)
    finally:
        own.kill()
        own.wait(timeout=60)


def test_a_record_cannot_choose_which_cgroup_is_killed(tmp_path: Path) -> None:
    # The LOST path kills the cgroup a job's record names: the store is data, so only a
    # cgroup v2 directory named after that very job is taken.
    job_id = f"rec-{uuid.uuid4().hex[:6]}"
    cgroup = JobCgroup.create(job_id)
    need_in_ci(cgroup is not None, NO_CGROUP)
    assert cgroup is not None
    try:
        assert is_job_cgroup(str(cgroup.path), job_id)
        assert not is_job_cgroup(str(cgroup.path), "another-job")
        assert not is_job_cgroup(str(cgroup.path.parent), job_id)  # the launcher's own cgroup
        link = tmp_path / "link" / f"tfjob-{job_id}"
        link.parent.mkdir()
        link.symlink_to(cgroup.path.parent)  # a link named after the job, to the launcher's cgroup
        assert not is_job_cgroup(str(link), job_id)
        fake = tmp_path / f"tfjob-{job_id}"
        fake.mkdir()
        (fake / "cgroup.kill").write_text("")
        assert not is_job_cgroup(str(fake), job_id)  # not in a cgroup hierarchy
    finally:
        cgroup.kill()
    assert not cgroup.path.exists()


def _joining() -> bool:
    return any(t.name == "tfjob-cgroup-join" for t in threading.enumerate())


def _cgroup_or_skip(job_id: str) -> JobCgroup:
    cgroup = JobCgroup.create(job_id)
    need_in_ci(cgroup is not None, NO_CGROUP)
    assert cgroup is not None
    return cgroup


def test_joining_ahead_puts_the_launcher_in_the_cgroup_for_the_start_and_back_out_after() -> None:
    # The launcher moves itself in while it plans the cluster (JobCgroup.join_ahead), so the
    # tasks it then starts are born in the job's cgroup; it is back in its own cgroup after.
    from tfjob.backends.local.contain import cgroup_pids

    cgroup = _cgroup_or_skip(f"ahead-{os.getpid()}")
    try:
        cgroup.join_ahead()
        with cgroup.entered():
            assert not _joining()  # entered waited for the move: no thread of it left
            assert os.getpid() in cgroup_pids(cgroup.path)
            child = subprocess.Popen(["sleep", "30"])
            assert child.pid in cgroup_pids(cgroup.path)
        assert os.getpid() not in cgroup_pids(cgroup.path)
        assert cgroup.kill() == [child.pid]
        child.wait(timeout=60)  # reaped by the kill (a subreaper's zombies are) or here
        assert not Path(f"/proc/{child.pid}").exists()
        assert not cgroup.path.exists()
    finally:
        cgroup.kill()


def test_a_job_ended_before_its_start_leaves_no_cgroup_and_the_launcher_outside() -> None:
    # Cancelled before it started: the launcher joined ahead but started no task; killing the
    # cgroup takes it back out first (never killing itself), and the cgroup is removed.
    from tfjob.backends.local.contain import cgroup_pids

    cgroup = _cgroup_or_skip(f"unstarted-{os.getpid()}")
    home = cgroup.path.parent
    cgroup.join_ahead()
    assert cgroup.kill() == []
    assert not cgroup.path.exists()
    assert os.getpid() in cgroup_pids(home) and not _joining()


def test_a_process_s_children_are_listed_per_thread_as_the_process_table_has_them(monkeypatch: pytest.MonkeyPatch) -> None:
    """``children()`` reads the kernel's per-thread lists: the same set as a scan of every
    process's parent — a child started by another thread and an unreaped zombie included —
    and the scan where the kernel has no lists."""
    from tfjob.backends.local import contain, procfs

    def scanned() -> set[int]:
        return {pid for pid, (_, ppid, _) in procfs.process_table().items() if ppid == os.getpid()}

    procs = [subprocess.Popen(["sleep", "30"])]
    started = threading.Thread(target=lambda: procs.append(subprocess.Popen(["sleep", "30"])))
    started.start()
    started.join()
    zombie = subprocess.Popen(["true"])
    try:
        while procfs.process_stat3(zombie.pid)[0] != "Z":  # type: ignore[index]
            time.sleep(0.01)
        mine = {p.pid for p in [*procs, zombie]}
        assert mine <= contain.children() == scanned()
        monkeypatch.setattr(contain, "_listed_children", lambda: None)
        assert mine <= contain.children() == scanned()
    finally:
        for p in [*procs, zombie]:
            p.kill()
            p.wait()


def _sleeper_in(cgroup: JobCgroup) -> subprocess.Popen[bytes]:
    """A process in its own session inside ``cgroup`` (as a task that called setsid)."""
    with cgroup.entered():
        return subprocess.Popen(["sleep", "60"], start_new_session=True)


def test_a_released_lifeline_leaves_and_kills_nothing() -> None:
    # The job ended with its launcher alive: the lifeline goes without touching the cgroup.
    from tfjob.backends.local.contain import Lifeline, cgroup_pids

    cgroup = _cgroup_or_skip(f"released-{os.getpid()}")
    lifeline = Lifeline.start(cgroup)
    assert lifeline is not None
    sleeper = _sleeper_in(cgroup)
    try:
        assert lifeline.pid not in cgroup_pids(cgroup.path)  # it watches from outside
        lifeline.release()
        assert not alive(lifeline.pid)
        assert still_running(sleeper) and cgroup_pids(cgroup.path) == [sleeper.pid]
    finally:
        cgroup.kill()
        sleeper.wait(timeout=60)


def _wait_ignoring(pid: int, sig: signal.Signals, timeout: float = 10.0) -> None:
    """Wait until process ``pid`` ignores ``sig`` (its ``SigIgn`` mask in /proc)."""
    deadline = time.monotonic() + timeout
    while True:
        status = Path(f"/proc/{pid}/status").read_text()
        ignored = int(next(line for line in status.splitlines() if line.startswith("SigIgn:")).split()[1], 16)
        if ignored >> (sig - 1) & 1:
            return
        assert time.monotonic() < deadline, f"process {pid} never ignored {sig.name}"
        time.sleep(0.005)


@pytest.mark.parametrize("first", [None, signal.SIGTERM, signal.SIGINT, signal.SIGHUP])
def test_a_launcher_s_death_kills_its_cgroup_through_the_lifeline(first: signal.Signals | None) -> None:
    # The pipe's end that only the launcher holds closes as it dies (even of SIGKILL): the
    # lifeline kills everything in the cgroup, a process in a session of its own included.
    # A signal to the lifeline before that (a terminal's, a group's) does not stop it.
    from tfjob.backends.local.contain import Lifeline, cgroup_pids

    cgroup = _cgroup_or_skip(f"lifeline-{os.getpid()}")
    lifeline = Lifeline.start(cgroup)
    assert lifeline is not None
    sleeper = _sleeper_in(cgroup)
    try:
        if first is not None:
            _wait_ignoring(lifeline.pid, first)  # its shell has set its trap
            os.killpg(lifeline.pid, first)
            assert still_running(lifeline._proc)  # a signal that would have ended it has by now
        lifeline._proc.stdin.close()  # type: ignore[union-attr]  # what the launcher's death does
        assert sleeper.wait(timeout=60) == -signal.SIGKILL
        lifeline._proc.wait(timeout=60)
        assert cgroup_pids(cgroup.path) == []
    finally:
        cgroup.kill()
        lifeline.release()
