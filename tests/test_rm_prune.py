"""``tfjob rm`` and ``tfjob prune``: ended jobs' records removed with what tfjob keeps of them
under ``$TFJOB_HOME``, on real local jobs and records of cloud jobs; nothing of the user's touched."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

from click.testing import CliRunner
from local_helpers import no_leftover_jobs  # noqa: F401 - autouse: no cluster outlives a failed test
from local_helpers import TFJOB, assert_no_survivors, job_processes, probe_args, wait_for_reports
from helpers import one_error

from tfjob.cli.main import app
from tfjob.job.removal import prune
from tfjob.model import JobState
from tfjob.runtime.removal import ended_before, remove_tree, take_ended
from tfjob.runtime.store import JobRecord, JobStore


def _cli(*argv: str, input: str | None = None) -> object:
    return CliRunner().invoke(app, list(argv), input=input)


def _run(*extra: str, **kw: object) -> str:
    """A local probe job run to its end; its id."""
    result = CliRunner().invoke(app, probe_args("--quiet", *extra, **kw))  # type: ignore[arg-type]
    with JobStore() as store:
        return result.stdout.strip() or store.list(limit=1)[0].id


def _home() -> Path:
    return Path(os.environ["TFJOB_HOME"])


def _record(job_id: str, backend: str = "local", state: JobState = JobState.SUCCEEDED, age: float = 0.0, **kw: object) -> JobRecord:
    """A record made through the store, ended ``age`` seconds ago."""
    ended = time.time() - age
    record = JobRecord(id=job_id, backend=backend, name=job_id, state=state, created=ended - 10, **kw)  # type: ignore[arg-type]
    if state.is_terminal:
        record.ended = ended
    with JobStore() as store:
        store.add(record)
    return record


def test_rm_of_ended_local_jobs_removes_record_and_directory_not_the_job_dir(tmp_path: Path) -> None:
    out = tmp_path / "out"
    job_id = _run("--", "--lines", "3", workers=1, job_dir=out)
    own = _home() / "jobs" / job_id
    assert own.is_dir() and any(own.rglob("*.log")), list(own.rglob("*"))
    user_files = sorted(p.relative_to(out) for p in out.rglob("*"))
    assert user_files  # the probe reports its tasks in the job dir
    done = _cli("rm", job_id)
    assert done.exit_code == 0, done.stderr
    assert done.stdout.strip() == job_id and "freed" in done.stderr
    assert not own.exists() and not list((_home() / "jobs").iterdir())
    with JobStore() as store:
        assert store.get(job_id) is None and store.events(job_id) == [] and store.tasks(job_id) == []
    assert sorted(p.relative_to(out) for p in out.rglob("*")) == user_files  # the user's outputs stay
    again = _cli("rm", job_id)
    one_error(again, 2, f"no job {job_id!r}")


def test_rm_of_a_running_job_is_refused_and_force_cancels_it(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, probe_args("--detach", "--", "--hang", "all", workers=1, job_dir=tmp_path / "out"))
    job_id = result.stdout.strip()
    wait_for_reports(tmp_path / "out", 2, timeout=120)
    refused = _cli("rm", job_id)
    one_error(refused, 2, f"job {job_id} is RUNNING", f"tfjob cancel {job_id}", "--force")
    with JobStore() as store:
        assert store.get(job_id) is not None
    assert (_home() / "jobs" / job_id).is_dir()
    processes = job_processes(job_id, tmp_path / "out")
    forced = _cli("rm", "--force", job_id)
    assert forced.exit_code == 0, forced.stderr
    assert forced.stdout.strip() == job_id
    assert_no_survivors(processes)
    with JobStore() as store:
        assert store.get(job_id) is None
    assert not (_home() / "jobs" / job_id).exists()


def test_rm_of_a_cloud_record_removes_only_the_record_and_says_so() -> None:
    _record("projects/p/locations/us-central1/customJobs/1", backend="vertex", spec={"job_dir": "gs://bucket/run"})
    done = _cli("rm", "projects/p/locations/us-central1/customJobs/1")
    assert done.exit_code == 0, done.stderr
    assert "ran on vertex: only tfjob's record of it was removed" in done.stderr
    assert "the platform's job and its outputs (job dir, bucket) are untouched" in done.stderr
    with JobStore() as store:
        assert store.list() == []


def test_unknown_ids_are_reported_and_the_known_ones_removed() -> None:
    _record("known-1")
    _record("known-2")
    done = _cli("rm", "nope-1", "known-1", "nope-2")
    assert done.exit_code == 2
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 2 and "'nope-1'" in errors[0] and "'nope-2'" in errors[1] and "Traceback" not in done.stderr
    assert done.stdout.split() == ["known-1"]
    with JobStore() as store:
        assert [r.id for r in store.list()] == ["known-2"]


def test_a_job_dir_inside_the_jobs_own_directory_is_kept() -> None:
    own = _home() / "jobs" / "inside-1"
    outputs = own / "work" / "chief-0" / "out"
    outputs.mkdir(parents=True)
    (outputs / "model.bin").write_bytes(b"weights")
    (own / "chief-0.log").write_text("log\n")
    _record("inside-1", spec={"job_dir": str(outputs)})
    done = _cli("rm", "inside-1")
    assert done.exit_code == 0, done.stderr
    assert f"kept {own}: job inside-1's --job-dir {outputs} overlaps it" in done.stderr
    assert (outputs / "model.bin").read_bytes() == b"weights" and (own / "chief-0.log").exists()
    with JobStore() as store:
        assert store.get("inside-1") is None


def test_a_symlink_out_of_tfjob_home_is_not_followed(tmp_path: Path) -> None:
    precious = tmp_path / "precious"
    (precious / "deep").mkdir(parents=True)
    (precious / "deep" / "data.txt").write_text("keep me")
    own = _home() / "jobs" / "linked-1"
    (own / "work" / "chief-0").mkdir(parents=True)
    (own / "work" / "chief-0" / "to-precious").symlink_to(precious, target_is_directory=True)
    (own / "to-file").symlink_to(precious / "deep" / "data.txt")
    # A deep tree, beyond any recursion limit, and a read-only directory inside.
    fd = os.open(own / "work", os.O_RDONLY)
    for _ in range(1500):
        os.mkdir("d", dir_fd=fd)
        fd, old = os.open("d", os.O_RDONLY, dir_fd=fd), fd
        os.close(old)
    os.close(fd)
    (own / "ro" / "x").mkdir(parents=True)
    (own / "ro" / "x" / "f").write_text("f")
    os.chmod(own / "ro" / "x", 0o500)
    os.chmod(own / "ro", 0o500)
    _record("linked-1")
    done = _cli("rm", "linked-1")
    assert done.exit_code == 0, done.stderr
    assert not own.exists() and not any(p.name.startswith(".removing-") for p in (_home() / "jobs").iterdir())
    assert (precious / "deep" / "data.txt").read_text() == "keep me"
    # The job's directory itself a link out of TFJOB_HOME: the link goes, not its target.
    (_home() / "jobs" / "linked-2").symlink_to(precious, target_is_directory=True)
    _record("linked-2")
    assert _cli("rm", "linked-2").exit_code == 0
    assert not (_home() / "jobs" / "linked-2").is_symlink() and (precious / "deep" / "data.txt").exists()
    assert remove_tree(precious / "missing") == []


def test_prune_removes_old_ended_jobs_only() -> None:
    for i in range(3):
        _record(f"old-{i}", age=40 * 86400)
        (_home() / "jobs" / f"old-{i}").mkdir(parents=True, exist_ok=True)
        (_home() / "jobs" / f"old-{i}" / "chief-0.log").write_bytes(b"x" * 1000)
    _record("recent-1", age=3600)
    _record("old-vertex", backend="vertex", age=40 * 86400)
    _record("old-running", backend="vertex", state=JobState.RUNNING, age=40 * 86400)
    preview = _cli("prune", "--dry-run")
    assert preview.exit_code == 0, preview.stderr
    assert [line.split()[0] for line in preview.stdout.splitlines()] == ["old-0", "old-1", "old-2", "old-vertex"]
    assert "would remove 4 jobs, 2.9 KiB" in preview.stderr
    with JobStore() as store:
        assert len(store.list()) == 6
    refused = _cli("prune")  # CliRunner's stdin is not a terminal
    one_error(refused, 2, "stdin is not a terminal", "--yes", "--dry-run")
    only_local = _cli("prune", "--backend", "local", "--older-than", "30d", "--yes")
    assert only_local.exit_code == 0, only_local.stderr
    assert only_local.stdout.split() == ["old-0", "old-1", "old-2"] and "removed 3 jobs, 2.9 KiB" in only_local.stderr
    assert not any((_home() / "jobs").iterdir())
    with JobStore() as store:
        assert sorted(r.id for r in store.list()) == ["old-running", "old-vertex", "recent-1"]
    assert _cli("prune", "--older-than", "30m", "--yes").stdout.split() == ["old-vertex", "recent-1"]
    one_error(_cli("prune", "--older-than", "soon", "--yes"), 2, "soon")
    one_error(_cli("prune", "--backend", "vertx", "--yes"), 2, "'vertx' is not a backend")


def test_prune_pages_through_the_store(tmp_path: Path) -> None:
    store = JobStore(tmp_path / "jobs.db")
    for i in range(23):
        store.add(JobRecord(id=f"j-{i:03}", backend="local", name="j", state=JobState.FAILED, created=1.0, ended=2.0))
    store.add(JobRecord(id="live", backend="local", name="j", state=JobState.RUNNING, created=1.0))
    assert [r.id for r in ended_before(store, 100.0, page=5)] == [f"j-{i:03}" for i in range(23)]
    removed = [d.id for d in prune(store, 10.0, now=100.0)]
    assert len(removed) == 23 and [r.id for r in store.list()] == ["live"]
    store.close()


def _times(n: int) -> int:
    return n * 7


def test_a_function_jobs_result_goes_with_its_record_and_its_package_once_unnamed() -> None:
    import tfjob
    from tfjob.functions.result import result_uri

    handle = tfjob.remote(quiet=True)(_times).submit(3)
    assert handle.result() == 21
    spec = handle.spec() or {}
    result, package = Path(str(result_uri(spec["args"]))), Path(spec["package"])
    assert result.exists() and package.is_dir()
    removed = handle.remove()
    assert removed.id == handle.id and str(result) in removed.paths and removed.bytes > 0
    assert not result.exists() and not list(result.parent.glob(f"{handle.id}*"))
    assert package.is_dir()  # shared by every call of the function: kept while recent
    then = time.time() - 2 * 86400
    for path in [package, *package.rglob("*")]:
        os.utime(path, (then, then), follow_symlinks=False)
    pruned = _cli("prune", "--yes")
    assert pruned.exit_code == 0 and "removed 0 jobs" in pruned.stderr, pruned.stderr
    assert not package.exists()  # no record names it any more, and it is a day old


def test_a_cloud_id_never_names_a_directory_and_a_new_job_under_a_taken_id_keeps_its_own() -> None:
    stray = _home() / "jobs" / "default" / "census"
    stray.mkdir(parents=True)
    (stray / "f").write_text("not tfjob's to remove by this id")
    _record("default/census", backend="kubeflow")
    done = _cli("rm", "default/census")
    assert done.exit_code == 0 and "ran on kubeflow" in done.stderr, done.stderr
    assert (stray / "f").exists()
    # The record and the directory are taken in one transaction: the directory is renamed aside,
    # so a job recorded later under the same id (a new run) has a directory of its own.
    _record("same-1")
    (_home() / "jobs" / "same-1").mkdir()
    (_home() / "jobs" / "same-1" / "old.log").write_text("old")
    with JobStore() as store:
        taken = take_ended(store, "same-1")
        assert taken is not None and taken.taken and taken.aside is not None and store.get("same-1") is None
        store.add(JobRecord(id="same-1", backend="local", name="same", state=JobState.RUNNING))
        (_home() / "jobs" / "same-1").mkdir()
        (_home() / "jobs" / "same-1" / "new.log").write_text("new")
        assert remove_tree(taken.aside) == []
        refused = take_ended(store, "same-1")
        assert refused is not None and not refused.taken and store.get("same-1") is not None
        store.set_state("same-1", JobState.CANCELLED, "test over")
    assert (_home() / "jobs" / "same-1" / "new.log").read_text() == "new" and not taken.aside.exists()


def _prune_on_a_terminal(answer: str) -> subprocess.CompletedProcess[str]:
    """``tfjob prune`` with a terminal for stdin (a pseudo-terminal), answering its question."""
    main, secondary = os.openpty()
    try:
        proc = subprocess.Popen([TFJOB, "prune"], stdin=secondary, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        os.write(main, answer.encode() + b"\n")
        out, err = proc.communicate(timeout=120)
    finally:
        os.close(main)
        os.close(secondary)
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def test_prune_on_a_terminal_asks_first() -> None:
    _record("old-a", age=40 * 86400)
    _record("new-a", age=60)
    declined = _prune_on_a_terminal("n")
    assert declined.returncode == 0 and "remove this job (0 B)?" in declined.stderr and "nothing removed" in declined.stderr
    assert declined.stdout.split()[:1] == ["old-a"]
    with JobStore() as store:
        assert store.get("old-a") is not None
    accepted = _prune_on_a_terminal("y")
    assert accepted.returncode == 0 and "removed 1 job, 0 B" in accepted.stderr, accepted.stderr
    with JobStore() as store:
        assert [r.id for r in store.list()] == ["new-a"]


def test_a_job_dir_that_holds_tfjob_home_keeps_the_jobs_directory() -> None:
    # A real job whose --job-dir is $TFJOB_HOME itself: its outputs and tfjob's directory of it mix.
    job_id = _run("--", "--lines", "1", workers=0, job_dir=_home())
    own = _home() / "jobs" / job_id
    reports = sorted((_home() / "tasks").glob("*.json"))
    assert own.is_dir() and reports
    done = _cli("rm", job_id)
    assert done.exit_code == 0, done.stderr
    assert f"kept {own}: job {job_id}'s --job-dir {_home()} overlaps it" in done.stderr
    assert own.is_dir() and sorted((_home() / "tasks").glob("*.json")) == reports
    with JobStore() as store:
        assert store.get(job_id) is None
