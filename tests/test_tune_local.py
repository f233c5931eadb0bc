"""Local studies end to end: every trial a real local job of the toy trainer (pure Python).

The toy's loss is lowest at learning_rate 0.01 with adam; each task records what it
saw (argv, TF_CONFIG, CLUSTER_SPEC, trial variables) under $TOY_RECORD_DIR.
"""

from __future__ import annotations

import io
import json
import math
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from helpers import ROOT
from local_helpers import assert_no_survivors, job_processes

from tfjob.model import JobState
from tfjob.job import get_job
from tfjob.runtime.store import JobStore
from tfjob.tuning.study import MetricSpec, ParameterSpec, StudySpec
from tfjob.tuning.hparams import parse_hparams
from tfjob.errors import JobFailedError
from tfjob import Job, Local
from tfjob.tune import Tuning, check_result

TUNE = ROOT / "tests" / "data" / "tune_trainers"
TOY = TUNE / "toy"
LR = ParameterSpec("learning_rate", "DOUBLE", 1e-4, 1e-1, scale="UNIT_LOG_SCALE")
OPT = ParameterSpec("optimizer", "CATEGORICAL", values=("adam", "sgd"))


@pytest.fixture
def records(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    where = tmp_path / "records"
    monkeypatch.setenv("TOY_RECORD_DIR", str(where))
    return where


def _seen(records: Path) -> dict[str, dict[str, Any]]:
    return {p.stem: json.loads(p.read_text()) for p in records.glob("*.json")}


def _study(**kw: Any) -> StudySpec:
    values: dict[str, Any] = {"max_trials": 6, "parallel_trials": 2, "max_failed_trials": 3}
    values.update(kw)
    return StudySpec(MetricSpec("loss", "MINIMIZE"), (LR, OPT), **values)


def test_six_trials_two_at_a_time_find_the_optimum(records: Path, tmp_path: Path) -> None:
    rendezvous = tmp_path / "rendezvous"
    stream = io.StringIO()
    tuning = Tuning(
        Job(str(TOY), "toy.task", workers=1, job_dir=str(tmp_path / "out"), args=["--rendezvous", str(rendezvous)], name="toy-study"),
        parse_hparams(TUNE / "toy_legacy.yaml"),
        seed=0,
    )
    result = check_result(tuning.run(stream, cores=4))

    assert result.state is JobState.SUCCEEDED and len(result.trials) == 6
    assert all(t.state == "SUCCEEDED" for t in result.trials)
    # The best trial is the one with the lowest loss, and in the known optimum region.
    best = result.best
    assert best is not None and best.metric == min(t.metric for t in result.trials)  # type: ignore[type-var]
    assert best.params["optimizer"] == "adam" and 1e-3 <= best.params["learning_rate"] <= 1e-1
    assert best.metric == pytest.approx((math.log10(best.params["learning_rate"]) + 2) ** 2)
    assert f"best trial {best.id}: loss=" in result.message

    seen = _seen(records)
    assert len(seen) == 12  # 6 trials × (chief, worker)
    for trial in result.trials:
        chief, worker = seen[f"{trial.id}-chief-0"], seen[f"{trial.id}-worker-0"]
        for task in (chief, worker):
            assert task["tf_config_task"]["trial"] == trial.id
            assert task["cluster_spec_task"]["trial"] == trial.id
            assert task["trial_env"] == trial.id
            assert f"--learning_rate={trial.params['learning_rate']!r}" in task["argv"]
            assert f"--optimizer={trial.params['optimizer']}" in task["argv"]
            assert task["argv"][:2] == ["--rendezvous", str(rendezvous)]  # the user's args come first
            assert task["job_dir"] is None  # Vertex AI passes no --job-dir: AIP_MODEL_DIR, per trial
            assert task["aip_model_dir"] == f"{tmp_path / 'out' / trial.id}/model/"
        assert chief["loss"] == pytest.approx(trial.metric)
    assert len({s["metric_file"] for s in seen.values()}) == 6
    # Two trials ran at once (trial 1 waited at the rendezvous for trial 2), never more.
    spans = [(s["started"], s["ended"]) for k, s in seen.items() if k.endswith("chief-0")]
    most = max(sum(1 for a, b in spans if a <= t < b) for t, _ in spans)
    assert most == 2

    # The study is a job: its record holds the trials and the best one, and status shows them.
    with JobStore() as store:
        record = store.get(result.id)
        assert record is not None and record.state is JobState.SUCCEEDED and record.extra["kind"] == "study"
        assert record.extra["best"]["id"] == best.id and len(record.extra["trials"]) == 6
        trial_jobs = [store.get(t.job_id) for t in result.trials]  # type: ignore[arg-type]
        assert all(j is not None and j.state is JobState.SUCCEEDED and j.extra["study"] == result.id for j in trial_jobs)
        assert [t.name for t in store.tasks(result.id)] == [f"trial-{i}" for i in range(1, 7)]
    handle = get_job(result.id)
    assert handle.status().state is JobState.SUCCEEDED
    assert any("[chief-0]" in line for line in handle.logs(task=f"trial-{best.id}"))
    text = stream.getvalue()
    assert "tfjob: study toy-study-" in text and "6 trials, 2 at a time, tpe search, minimize loss" in text
    assert f"*{best.id}" in text and text.rstrip().endswith(result.message)
    assert_no_survivors([p for t in result.trials for p in job_processes(t.job_id or "")])


def test_a_failing_trial_is_reported_and_counted(records: Path) -> None:
    # The grid has 2 sgd points of 4: exactly 2 trials fail, fewer than maxFailedTrials 3.
    layers = ParameterSpec("layers", "INTEGER", 1, 2)
    study = StudySpec(MetricSpec("loss", "MINIMIZE"), (layers, OPT), max_trials=4, max_failed_trials=3, algorithm="GRID_SEARCH")
    result = Tuning(Job(str(TOY), "toy.task", args=["--fail-optimizer", "sgd"], backend=Local(dialect="ai-platform")), study).run(None)
    failed = [t for t in result.trials if t.state == "FAILED"]
    assert result.state is JobState.SUCCEEDED and len(result.trials) == 4
    assert len(failed) == 2 and all(t.params["optimizer"] == "sgd" for t in failed)
    assert all("task chief-0 exited with code 3" in t.message for t in failed)
    assert result.message.startswith(f"4 trials, {len(failed)} failed; best trial")
    assert result.best is not None and result.best.params["optimizer"] == "adam"
    # The AI Platform dialect sets TF_CONFIG (with the trial) even for a single-task job,
    # and the trainer reads it as the platform wrote it: AI Platform's master.
    assert {s["tf_config_task"]["type"] for s in _seen(records).values()} == {"master"}
    assert sorted(s["tf_config_task"]["trial"] for s in _seen(records).values()) == ["1", "2", "3", "4"]


def test_reaching_max_failed_trials_stops_the_study(records: Path) -> None:
    study = StudySpec(
        MetricSpec("loss", "MINIMIZE"),
        (LR, ParameterSpec("optimizer", "CATEGORICAL", values=("sgd",))),
        max_trials=6,
        parallel_trials=1,
        max_failed_trials=2,
    )
    result = Tuning(Job(str(TOY), "toy.task", args=["--fail-optimizer", "sgd"]), study).run(None)
    assert result.state is JobState.FAILED and len(result.trials) == 2
    assert result.message == (
        "2 trials failed, which reaches maxFailedTrials 2; last: trial 2: task chief-0 exited with code 3; "
        f"its log: {_log_of(result.trials[1].job_id)}"
    )
    assert result.failed_trial == "trial-2" and "refusing optimizer sgd" in result.log_tail
    with pytest.raises(JobFailedError, match=r"study .* FAILED: 2 trials failed, which reaches maxFailedTrials 2") as info:
        check_result(result)
    assert info.value.task == "trial-2"
    status = get_job(result.id).status()
    assert status.state is JobState.FAILED and status.failed_task == "trial-2"


def _log_of(job_id: str | None) -> str:
    with JobStore() as store:
        record = store.get(job_id or "")
        assert record is not None
        return f"{record.log_dir}/chief-0.log"


def test_a_trial_without_the_metric_is_infeasible(records: Path) -> None:
    study = _study(max_trials=1, parallel_trials=1, max_failed_trials=0)
    result = Tuning(Job(str(TOY), "toy.task", args=["--tag", "accuracy"]), study).run(None)
    (trial,) = result.trials
    assert trial.state == "INFEASIBLE" and trial.metric is None
    assert "the trainer ended without reporting 'loss'; it reported accuracy" in trial.message
    assert result.state is JobState.FAILED and result.message.startswith("no trial reported 'loss'; last: trial 1")


def test_a_trainer_that_knows_nothing_of_tfjob_reports_in_the_hypertune_format(records: Path) -> None:
    study = _study(max_trials=2, parallel_trials=1, algorithm="RANDOM_SEARCH")
    result = check_result(Tuning(Job(str(TOY), "toy.task", args=["--reporter", "raw"]), study, seed=1).run(None))
    assert all(t.state == "SUCCEEDED" and t.metric is not None for t in result.trials)
    seen = _seen(records)
    assert [round(seen[f"{t.id}-chief-0"]["loss"], 9) for t in result.trials] == [round(t.metric, 9) for t in result.trials]  # type: ignore[arg-type]


def test_grid_search_tries_every_point_once(records: Path) -> None:
    study = StudySpec(
        MetricSpec("loss", "MINIMIZE"),
        (ParameterSpec("layers", "INTEGER", 1, 2), ParameterSpec("learning_rate", "DISCRETE", values=(0.01, 0.1)), OPT),
        max_trials=20,
        parallel_trials=2,
        algorithm="GRID_SEARCH",
    )
    stream = io.StringIO()
    result = check_result(Tuning(Job(str(TOY), "toy.task"), study).run(stream, cores=2))
    points = sorted((t.params["layers"], t.params["learning_rate"], t.params["optimizer"]) for t in result.trials)
    assert points == sorted((n, lr, o) for n in (1, 2) for lr in (0.01, 0.1) for o in ("adam", "sgd"))
    assert "the grid has 8 points, so the study runs 8 trials, not maxTrials 20" in stream.getvalue()
    assert result.best is not None and result.best.params["optimizer"] == "adam" and result.best.params["learning_rate"] == 0.01
    argv = _seen(records)[f"{result.best.id}-chief-0"]["argv"]
    assert "--learning_rate=0.01" in argv and any(a.startswith("--layers=") for a in argv)


def test_cancelling_the_study_cancels_its_running_trial(records: Path, tmp_path: Path) -> None:
    # One trial at a time waits at a rendezvous no other trial reaches: it runs until cancelled.
    study = _study(max_trials=3, parallel_trials=1)
    tuning = Tuning(Job(str(TOY), "toy.task", args=["--rendezvous", str(tmp_path / "alone")], backend=Local(grace=1)), study)
    box: dict[str, Any] = {}
    thread = threading.Thread(target=lambda: box.update(result=tuning.run(None)))
    thread.start()
    deadline = time.monotonic() + 30
    study_id = trial_job = None
    while time.monotonic() < deadline and trial_job is None:
        with JobStore() as store:
            for record in store.list():
                if record.extra.get("kind") == "study":
                    study_id = record.id
                elif record.extra.get("study") and record.state is JobState.RUNNING:
                    trial_job = record.id
        time.sleep(0.05)
    assert study_id and trial_job, "the study never started its first trial"
    get_job(study_id).cancel()
    thread.join(30)
    result = box["result"]
    assert result.state is JobState.CANCELLED and result.message == "cancelled by `tfjob cancel`"
    assert [t.state for t in result.trials] == ["CANCELLED"]
    with JobStore() as store:
        assert store.get(trial_job).state is JobState.CANCELLED  # type: ignore[union-attr]
    assert_no_survivors(job_processes(trial_job))
