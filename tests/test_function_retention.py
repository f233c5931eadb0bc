"""What tfjob keeps of its function jobs under ``$TFJOB_HOME/functions`` (tfjob.functions.retention):
each function job submitted prunes the results and packages of older ones, keeping those of the
newest jobs (``tfjob.get_job(ID).result()`` reads them again, in any process) up to a byte bound,
those of a job not ended, and anything of the last day; a job dir the caller gave is never
touched; a result removed is said so; two processes never prune at once, nor while one finds a
package. Real function jobs (local processes) and the real job store; only file times are set back."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

import tfjob
import tfjob.functions.retention as retention
from local_helpers import no_leftover_jobs  # noqa: F401 - the fixture
from tfjob import JobFailedError, JobState
from tfjob.functions.retention import functions_dir
from tfjob.functions.result import result_uri
from tfjob.runtime.store import JobRecord, JobStore

DAY = 24 * 3600


def times(n: int) -> int:
    return n * 7


def _age(root: Path, seconds: float = 2 * DAY) -> None:
    """Every file and directory under ``root`` (itself included) changed ``seconds`` ago."""
    then = time.time() - seconds
    for path in [root, *root.rglob("*")]:
        os.utime(path, (then, then), follow_symlinks=False)


def _result_path(job_id: str) -> Path:
    uri = result_uri(tfjob.get_job(job_id).spec()["args"])  # type: ignore[index]
    assert uri is not None
    return Path(uri)


def _package(job_id: str) -> Path:
    return Path(tfjob.get_job(job_id).spec()["package"])  # type: ignore[index]


def _submit(n: int) -> str:
    handle = tfjob.remote(quiet=True)(times).submit(n)
    assert handle.result() == n * 7
    return handle.id


def test_the_newest_jobs_results_and_packages_are_kept_and_older_ones_removed_once_a_day_old(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(retention, "KEEP_JOBS", 2)
    old, kept, newer = _submit(1), _submit(2), _submit(3)
    paths = {job: (_result_path(job), _package(job)) for job in (old, kept, newer)}
    assert all(p.exists() for pair in paths.values() for p in pair)
    # A day later, another function job: only the oldest of the three is beyond the newest two
    # when it prunes (its own package is new, its result not written yet).
    _age(functions_dir())
    latest = _submit(4)
    assert not any(p.exists() for p in paths[old])
    assert all(p.exists() for job in (kept, newer) for p in paths[job])
    assert tfjob.get_job(kept).result() == 14 and tfjob.get_job(latest).result() == 28
    with pytest.raises(
        JobFailedError, match=r"wrote no result at .* \(or tfjob removed it: it keeps the results of the newest 2 function jobs"
    ):
        tfjob.get_job(old).result()
    # Nothing of the last day is removed, whatever the count: the next prune keeps `kept`'s
    # package, touched by a call that reuses it, while its result, a day old, goes.
    _age(functions_dir())
    assert tfjob.remote(quiet=True)(times).package(2).directory == paths[kept][1]
    _submit(5)
    assert not paths[kept][0].exists() and paths[kept][1].exists()
    assert paths[newer][0].exists() and tfjob.get_job(newer).result() == 21


def test_a_byte_bound_applies_beyond_the_newest_job_and_a_running_jobs_files_stay(monkeypatch: pytest.MonkeyPatch) -> None:
    first, second = _submit(1), _submit(2)
    # A job not ended (its record RUNNING, as a launcher in another process keeps it) names a
    # day-old result and package: both stay however many jobs come after.
    running_result = functions_dir() / retention.RESULTS / "0123abcd.pkl"
    running_result.write_bytes(b"x")
    running_package = functions_dir() / "running-package"
    (running_package / "tfjob_function").mkdir(parents=True)
    spec = {"module": "tfjob_function.run", "args": ["--result", str(running_result)], "package": str(running_package)}
    with JobStore() as store:
        running = store.add_new(JobRecord(id="", backend="local", name="running", state=JobState.RUNNING, spec=spec, created=0.0)).id
    _age(functions_dir())
    monkeypatch.setattr(
        retention, "KEEP_BYTES", sum(f.stat().st_size for f in (_result_path(second), *_package(second).rglob("*")) if f.is_file())
    )
    _submit(3)
    assert _result_path(second).exists() and _package(second).exists()  # the newest, within the bound
    assert not _result_path(first).exists() and not _package(first).exists()  # over it
    assert running_result.exists() and running_package.exists()
    with JobStore() as store:
        store.remove(running)  # no launcher: the record was this test's alone


def test_what_no_record_names_goes_once_a_day_old_and_a_given_job_dir_is_never_touched(tmp_path: Path) -> None:
    given = tmp_path / "out"
    handle = tfjob.remote(quiet=True, job_dir=str(given))(times).submit(1)
    assert handle.result() == 7
    mine = _result_path(handle.id)
    assert mine.is_relative_to(given)
    results = functions_dir() / retention.RESULTS
    results.mkdir(parents=True, exist_ok=True)
    orphan, fresh = results / "feedface.pkl", results / "cafe"
    orphan.write_bytes(b"x")
    (results / "feedface.pkl.123.partial").write_bytes(b"x")  # a write its chief did not finish
    (functions_dir() / ".partial-abc" / "tfjob_function").mkdir(parents=True)  # an interrupted package write
    _age(functions_dir())
    _age(given)
    fresh.mkdir()
    (fresh / "model").write_bytes(b"x")  # a container job's own directory, written today
    removed = retention.prune(JobStore())
    assert sorted(p.name for p in removed) == [".partial-abc", "feedface.pkl", "feedface.pkl.123.partial"]
    assert not orphan.exists() and fresh.exists() and mine.exists()
    assert _package(handle.id).exists()  # its record is one of the newest
    assert tfjob.get_job(handle.id).result() == 7
    assert [p.name for p in functions_dir().iterdir() if p.name.startswith(".removing-")] == []


HOLD = """
import fcntl, sys
with open(sys.argv[1], "a") as f:
    fcntl.flock(f, fcntl.LOCK_EX)
    print("held", flush=True)
    sys.stdin.read()
"""


def test_while_another_process_holds_the_lock_nothing_is_pruned_and_a_package_waits() -> None:
    job = _submit(1)
    left = {_result_path(job).resolve(), _package(job).resolve()}
    _age(functions_dir())
    with JobStore() as store:
        store.remove(job)  # its record gone: its result and package are no one's
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(functions_dir() / retention.LOCK)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        assert retention.prune(JobStore()) == []  # another process prunes: this one skips
        built: list[Path] = []
        finder = threading.Thread(target=lambda: built.append(tfjob.remote(quiet=True)(times).package(9).directory))
        finder.start()
        finder.join(timeout=2)
        assert finder.is_alive() and not built  # a package is not found or written while a prune runs
    finally:
        assert holder.stdin is not None
        holder.stdin.close()
        holder.wait(timeout=60)
    finder.join(timeout=120)
    assert built and built[0].is_dir()
    assert all(p.exists() for p in left)
    assert set(retention.prune(JobStore())) == left  # the lock free again: what no record names goes
    assert not any(p.exists() for p in left)
    assert built[0].is_dir()  # just written: kept


def test_the_store_lists_only_the_jobs_whose_spec_holds_the_text() -> None:
    # What a prune reads of the store: the records of function jobs (a --result argument), not every job's.
    with JobStore() as store:
        plain = store.add_new(JobRecord(id="", backend="local", name="plain", state=JobState.SUCCEEDED, spec={"args": ["--steps", "1"]}))
        fn = store.add_new(
            JobRecord(id="", backend="vertex", name="fn", state=JobState.SUCCEEDED, spec={"args": ["--result", "gs://b/r.pkl"]})
        )
        assert [r.id for r in store.list(spec_holds="--result")] == [fn.id]
        assert [r.id for r in store.list(backend="local")] == [plain.id]
        assert [r.id for r in store.list(backend="local", spec_holds="--result")] == []
        assert {r.id for r in store.list()} == {plain.id, fn.id}
