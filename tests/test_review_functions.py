"""Review of ``tfjob.remote`` as its first user: what a function does that is not returning
(``sys.exit``, KeyboardInterrupt), a relative job dir, and a result file that was tampered
with — each said in one clear error, never a stray SystemExit, KeyError or misleading hint."""

from __future__ import annotations

import pickle
import sys
from pathlib import Path
from typing import Any

import pytest

import tfjob
from local_helpers import assert_no_survivors, job_processes, no_leftover_jobs  # noqa: F401 - the fixture
from tfjob import JobFailedError
from tfjob.runtime.store import JobStore
from tfjob.functions.result import result_uri

from test_vertex_e2e import emulator  # noqa: F401 - the fixture


def exits(code: int | None) -> int:
    sys.exit(code)


def interrupted() -> int:
    raise KeyboardInterrupt


def seven() -> int:
    return 7


@pytest.mark.parametrize("code", [0, 3])
def test_a_function_that_calls_sys_exit_is_a_job_failure_not_a_systemexit_here(code: int) -> None:
    # sys.exit(0) used to end the task "successfully" with no result; sys.exit(3) said only an
    # exit code. Re-raised here, a SystemExit would end the caller's own program.
    remote = tfjob.remote(quiet=True)(exits)
    with pytest.raises(JobFailedError, match=rf"the function called sys\.exit\({code}\) in task chief-0 instead of returning") as raised:
        remote.run(code)
    assert "SystemExit" in raised.value.log_tail and raised.value.task == "chief-0"
    with JobStore() as store:
        (record,) = store.list()
    assert_no_survivors(job_processes(record.id))


def test_a_keyboard_interrupt_in_the_function_is_not_raised_in_the_caller() -> None:
    with pytest.raises(JobFailedError, match="the function raised KeyboardInterrupt in task chief-0"):
        tfjob.remote(quiet=True)(interrupted).run()


def test_a_relative_job_dir_is_the_callers_and_the_result_comes_back(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The tasks run in the package's directory: a relative job dir was written there (inside the
    # content-addressed package) and the caller found no result.
    monkeypatch.chdir(tmp_path)
    assert tfjob.remote(quiet=True, job_dir="out")(seven).run() == 7
    assert list((tmp_path / "out" / "tfjob-results").glob("*.pkl"))


def test_a_tampered_result_file_is_said_not_a_key_error_or_a_missing_module() -> None:
    handle = tfjob.remote(quiet=True)(seven).submit()
    assert handle.result() == 7
    uri = result_uri(tfjob.get_job(handle.id).spec()["args"])  # type: ignore[index]
    assert uri is not None
    path = Path(uri)
    path.write_bytes(pickle.dumps({"ok": True}))  # no value
    with pytest.raises(JobFailedError, match="is not a function result tfjob wrote"):
        tfjob.get_job(handle.id).result()
    path.write_bytes(pickle.dumps({"ok": False, "error": "x"}))  # no type, message, traceback
    with pytest.raises(JobFailedError, match="is not a function result tfjob wrote"):
        tfjob.get_job(handle.id).result()
    path.write_bytes(pickle.dumps({"ok": True, "value": 7})[:-5])  # cut short
    with pytest.raises(JobFailedError, match="is damaged") as raised:
        tfjob.get_job(handle.id).result()
    assert "install what the value is made of" not in str(raised.value)
    path.unlink()
    with pytest.raises(JobFailedError, match="SUCCEEDED but its chief wrote no result"):
        tfjob.get_job(handle.id).result()


def big(n: int) -> bytes:
    return b"x" * n


def test_a_local_function_job_with_a_gs_job_dir_reads_its_result_back_and_bounds_it(
    emulator: Any,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The tasks write through the storage emulator (its variable is theirs too); the handle,
    # here and from get_job, reads the blob back, refusing one over the bound without reading it.
    import tfjob.functions.result as result

    remote = tfjob.remote(quiet=True, job_dir="gs://b/fn")(big)
    handle = remote.submit(1000)
    assert handle.result() == b"x" * 1000
    uri = result_uri(tfjob.get_job(handle.id).spec()["args"])  # type: ignore[index]
    assert uri is not None and uri.startswith("gs://b/fn/tfjob-results/")
    assert emulator.bucket("b").get_blob(uri.removeprefix("gs://b/")) is not None
    monkeypatch.setattr(result, "MAX_RESULT", 100)
    with pytest.raises(JobFailedError, match=r"result at gs://b/fn/tfjob-results/.* is \d+ bytes, over 100 read back"):
        tfjob.get_job(handle.id).result()
    emulator.bucket("b").blob(uri.removeprefix("gs://b/")).delete()
    with pytest.raises(JobFailedError, match="SUCCEEDED but its chief wrote no result at gs://b/fn/"):
        tfjob.get_job(handle.id).result()


def test_a_local_container_function_job_mounts_a_directory_of_its_own_only() -> None:
    # Its job dir was all of $TFJOB_HOME/functions, mounted writable (and chowned by podman's :U)
    # into every container: a task could rewrite other jobs' packages and results.
    from tfjob.functions.retention import RESULTS, functions_dir

    remote = tfjob.remote(image="localhost/tfjob:0.1.0", workers=1, quiet=True)(seven)
    (chief, worker) = remote.render()["tasks"]
    for task in (chief, worker):
        argv = task["argv"]
        mounts = [argv[i + 1] for i, arg in enumerate(argv) if arg == "-v"]
        writable = [m for m in mounts if not m.endswith(":ro")]
        (own,) = writable
        path = Path(own.split(":")[0])
        assert path.parent == functions_dir() / RESULTS and own == f"{path}:{path}:U"
        uri = argv[argv.index("--result") + 1]
        assert Path(uri).is_relative_to(path)
    assert not (functions_dir() / RESULTS).exists()  # a dry run makes no directory
