"""docs/airflow.md's recipe, run as written without Airflow: its first Python block is
executed, then its functions drive real local jobs — submit, poke until done, a failure
failing the sensor by task, on_kill cancelling, the deferrable trigger's event."""

from __future__ import annotations

import asyncio
import re
import shutil
import time
from pathlib import Path
from typing import Any

import pytest
from local_helpers import PROBE, no_leftover_jobs  # noqa: F401 - autouse: no cluster outlives a failed test

from tfjob.errors import JobFailedError

DOC = Path(__file__).resolve().parents[1] / "docs" / "airflow.md"


def recipe(monkeypatch: pytest.MonkeyPatch, where: Path) -> dict[str, Any]:
    """The doc's first python block, executed in ``where`` (where its ``my_trainer`` is)."""
    block = re.search(r"```python\n(.*?)```", DOC.read_text(), re.S)
    assert block is not None
    monkeypatch.chdir(where)
    names: dict[str, Any] = {}
    exec(compile(block.group(1), str(DOC), "exec"), names)
    return names


@pytest.fixture
def probe_as_my_trainer(tmp_path: Path) -> Path:
    """The probe trainer where the recipe looks for ``my_trainer``, its module named trainer.task."""
    trainer = tmp_path / "my_trainer" / "trainer"
    shutil.copytree(PROBE / "probe", trainer)
    return tmp_path


def poke_until(poke: Any, job_id: str, timeout: float = 120) -> None:
    """Poke as a sensor does, until it returns True (or raises)."""
    deadline = time.monotonic() + timeout
    while not poke(job_id):
        assert time.monotonic() < deadline, "the job did not end"
        time.sleep(0.2)


def test_submit_then_sensor_until_the_job_succeeds(probe_as_my_trainer: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    r = recipe(monkeypatch, probe_as_my_trainer)
    job_id = r["submit_training"](str(probe_as_my_trainer / "job"), train_steps=5)
    assert r["training_done"](job_id) in (False, True)  # a poke while it runs does not raise
    poke_until(r["training_done"], job_id)
    from tfjob import get_job

    assert get_job(job_id).state.value == "SUCCEEDED"


def test_a_failed_job_fails_the_sensor_naming_the_task(probe_as_my_trainer: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    r = recipe(monkeypatch, probe_as_my_trainer)
    from tfjob import Job

    # The recipe's own submit with the probe told to fail worker-1 (its --train-steps is ignored).
    job_id = Job("my_trainer", "trainer.task", workers=2, ps=1, args=["--exit", "worker-1=3", "--hang", "chief"]).submit().id
    with pytest.raises(JobFailedError, match=r"worker-1") as failed:
        poke_until(r["training_done"], job_id)
    assert failed.value.exit_code_of_task == 3


def test_on_kill_cancels_and_the_trigger_reports_the_end(probe_as_my_trainer: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    r = recipe(monkeypatch, probe_as_my_trainer)
    from tfjob import Job, get_job

    job_id = Job("my_trainer", "trainer.task", workers=1, args=["--hang", "all"]).submit().id

    async def first_event() -> dict[str, Any]:
        async for event in r["training_events"](job_id, poll_interval=0.1):
            return event
        raise AssertionError("no event")

    async def kill_then_listen() -> dict[str, Any]:
        listening = asyncio.ensure_future(first_event())
        await asyncio.sleep(1.0)
        assert not listening.done()  # the trigger waits while the job runs
        r["cancel_training"](job_id)
        return await asyncio.wait_for(listening, 60)

    event = asyncio.run(kill_then_listen())
    assert event == {"job_id": job_id, "state": "CANCELLED", "failed_task": None, "message": event["message"]}
    with pytest.raises(Exception, match="cancelled"):
        r["training_done"](job_id)
    assert get_job(job_id).state.value == "CANCELLED"
