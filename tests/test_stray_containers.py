"""No container outlives its job (issue 12.2): when the launcher of a local --image job dies
without recording the end (SIGKILL, a reboot), the next tfjob command that sees the job —
`status`, `list`, `wait` — records it LOST and removes every container labelled with it.

The engine is a stand-in executable that answers `ps` as podman would and records every
call, so the test runs on any machine; tests/test_images.py runs the real engine."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner

from tfjob.model import JobState
from tfjob.cli.main import app
from tfjob.description.request import build_spec
from tfjob.runtime.store import JobRecord, JobStore

FAKE_ENGINE = """#!{python}
import json, sys
log = {log!r}
with open(log, "a") as f:
    f.write(json.dumps(sys.argv[1:]) + "\\n")
if sys.argv[1:3] == ["ps", "-a"]:
    print("c1\\nc2")
if sys.argv[1:3] == ["network", "ls"]:
    print("n1")
"""


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def _record(spec_kwargs: dict, engine: str) -> JobRecord:  # type: ignore[type-arg]
    spec = build_spec(dict(name="img", module="trainer.task", workers=1, **spec_kwargs))
    return JobRecord(
        id="", backend="local", name=spec.name, state=JobState.RUNNING, spec=spec.to_dict(),
        options={"container_engine": engine}, supervisor_pid=_dead_pid(), supervisor_start=None,
    )  # fmt: skip


def test_the_next_command_removes_a_lost_jobs_containers(tmp_path: Path) -> None:
    log = tmp_path / "calls.jsonl"
    engine = tmp_path / "podman"
    engine.write_text(FAKE_ENGINE.format(python=sys.executable, log=str(log)))
    engine.chmod(0o755)
    with JobStore() as store:
        job_id = store.add_new(_record({"image": "r/x:1"}, str(engine))).id
    shown = CliRunner().invoke(app, ["status", job_id, "--json"])
    assert shown.exit_code == 0, shown.stderr
    assert json.loads(shown.stdout)["state"] == "LOST"
    calls = [json.loads(line) for line in log.read_text().splitlines()]
    assert ["ps", "-a", "-q", "--filter", f"label=tfjob.job={job_id}"] in calls
    assert ["rm", "-f", "-t", "0", "c1", "c2"] in calls
    # Then the job's private network, found by the same label.
    assert ["network", "ls", "-q", "--filter", f"label=tfjob.job={job_id}"] in calls and ["network", "rm", "-f", "n1"] in calls
    # Once LOST, later commands do not ask the engine again.
    before = len(calls)
    assert CliRunner().invoke(app, ["list"]).exit_code == 0
    assert len(log.read_text().splitlines()) == before


def test_a_process_job_never_asks_an_engine(tmp_path: Path) -> None:
    log = tmp_path / "calls.jsonl"
    engine = tmp_path / "podman"
    engine.write_text(FAKE_ENGINE.format(python=sys.executable, log=str(log)))
    engine.chmod(0o755)
    with JobStore() as store:
        job_id = store.add_new(_record({}, str(engine))).id
    assert json.loads(CliRunner().invoke(app, ["status", job_id, "--json"]).stdout)["state"] == "LOST"
    assert not log.exists()
