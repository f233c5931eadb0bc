"""``tfjob tune`` through CliRunner and as a real process: studies, status, dry runs, errors."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
import yaml
from helpers import ROOT
from local_helpers import TFJOB
from click.testing import CliRunner

from tfjob.cli.main import app
from tfjob.runtime.store import JobStore

TUNE = ROOT / "tests" / "data" / "tune_trainers"
TOY = str(TUNE / "toy")
LEGACY = str(TUNE / "toy_legacy.yaml")
VERTEX = str(TUNE / "toy_vertex.yaml")


def _cli(*argv: str) -> object:
    return CliRunner().invoke(app, list(argv))


@pytest.fixture
def records(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    where = tmp_path / "records"
    monkeypatch.setenv("TOY_RECORD_DIR", str(where))
    return where


def test_a_study_prints_its_id_then_status_shows_the_trials(records: Path) -> None:
    result = _cli("tune", TOY, "-m", "toy.task", "--hparams", VERTEX, "--seed", "0", "--max-trials", "4", "--", "--layers", "3")
    assert result.exit_code == 0, result.stderr  # type: ignore[attr-defined]
    study_id = result.stdout.strip()  # type: ignore[attr-defined]
    assert "\n" not in study_id
    err = result.stderr  # type: ignore[attr-defined]
    assert "4 trials, 2 at a time, tpe search, minimize loss" in err
    assert "TRIAL  STATE      LOSS" in err and f"study {study_id} SUCCEEDED: 4 trials; best trial" in err
    seen = [json.loads(p.read_text()) for p in records.glob("*.json")]
    assert len(seen) == 4 and all(s["argv"][:2] == ["--layers", "3"] for s in seen)

    status = _cli("status", study_id)
    assert status.exit_code == 0
    text = status.stdout  # type: ignore[attr-defined]
    assert "backend   local" in text and "state     SUCCEEDED" in text
    assert "trials\n  4 of 4 trials, 4 succeeded, 0 failed of 2 allowed; 2 at a time; goal MINIMIZE loss" in text
    assert "  best trial " in text and "--optimizer=" in text
    data = json.loads(_cli("status", study_id, "--json").stdout)  # type: ignore[attr-defined]
    assert data["extra"]["kind"] == "study" and len(data["extra"]["trials"]) == 4
    assert data["extra"]["best"]["state"] == "SUCCEEDED"
    listed = _cli("list").stdout  # type: ignore[attr-defined]
    assert study_id in listed and sum(line.startswith("toy-trial-") for line in listed.splitlines()) == 4
    logs = _cli("logs", study_id).stdout  # type: ignore[attr-defined]
    assert "[study] study SUCCEEDED" in logs


def test_json_outcome(records: Path) -> None:
    result = _cli("tune", TOY, "-m", "toy.task", "--hparams", LEGACY, "--max-trials", "2", "--algorithm", "random", "--json", "-q")
    assert result.exit_code == 0, result.stderr  # type: ignore[attr-defined]
    data = json.loads(result.stdout)  # type: ignore[attr-defined]
    assert data["state"] == "SUCCEEDED" and len(data["trials"]) == 2
    assert data["best"]["metric"] == min(t["metric"] for t in data["trials"])
    assert "TRIAL" in result.stderr and "RUNNING" not in result.stderr  # type: ignore[attr-defined]  # --quiet: the end only


def test_reaching_max_failed_trials_exits_1_as_a_real_process(tmp_path: Path) -> None:
    hparams = tmp_path / "h.yaml"
    doc = yaml.safe_load(Path(LEGACY).read_text())
    doc["trainingInput"]["hyperparameters"]["params"][1]["categoricalValues"] = ["sgd"]
    hparams.write_text(yaml.safe_dump(doc))
    proc = subprocess.run(
        [TFJOB, "tune", TOY, "-m", "toy.task", "--hparams", str(hparams), "--parallel-trials", "1", "--", "--fail-optimizer", "sgd"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 1, proc.stderr
    study_id = proc.stdout.strip()
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith(
        f"error: study {study_id} FAILED: 2 trials failed, which reaches maxFailedTrials 2; last: trial 2: task chief-0 exited with code 3"
    )
    assert "Traceback" not in proc.stderr
    with JobStore() as store:
        record = store.get(study_id)
        assert record is not None and record.state.value == "FAILED" and len(record.extra["trials"]) == 2
    status = _cli("status", study_id).stdout  # type: ignore[attr-defined]
    assert "failed    trial-2" in status and "last lines of trial-2" in status and "refusing optimizer sgd" in status


def test_dry_run_prints_the_local_study(tmp_path: Path) -> None:
    result = _cli("tune", TOY, "-m", "toy.task", "--hparams", LEGACY, "--workers", "1", "--dry-run")
    assert result.exit_code == 0, result.stderr  # type: ignore[attr-defined]
    body = json.loads(result.stdout)  # type: ignore[attr-defined]
    assert body["backend"] == "local" and body["search"] == "tpe"
    assert body["studySpec"]["metrics"] == [{"metricId": "loss", "goal": "MINIMIZE"}]
    assert (body["maxTrialCount"], body["parallelTrialCount"], body["maxFailedTrialCount"]) == (6, 2, 2)
    assert body["trialArgs"] == ["--learning_rate=<DOUBLE 0.0001..0.1 UNIT_LOG_SCALE>", "--optimizer=<CATEGORICAL adam|sgd>"]
    assert [t["name"] for t in body["trialJob"]["tasks"]] == ["chief-0", "worker-0"]
    as_yaml = _cli("tune", TOY, "-m", "toy.task", "--hparams", LEGACY, "--dry-run", "-o", "yaml")
    assert yaml.safe_load(as_yaml.stdout)["search"] == "tpe"  # type: ignore[attr-defined]
    with JobStore() as store:
        assert store.list() == []  # a dry run records nothing


@pytest.mark.parametrize(
    "argv, pattern",
    [
        (["tune", TOY, "-m", "toy.task"], r"Missing option '--hparams'"),
        (["tune", TOY, "-m", "toy.task", "--hparams", "nope.yaml"], r"--hparams 'nope.yaml': no such file"),
        (["tune", TOY, "-m", "toy.task", "--hparams", "/dev/zero"], r"--hparams '/dev/zero' is not a regular file"),
        (
            ["tune", TOY, "-m", "toy.task", "--hparams", LEGACY, "--backend", "ai-platform"],
            r"--backend ai-platform cannot tune; tfjob tune runs on --backend local \(Optuna\) or vertex or kubeflow \(Optuna, or Katib\)",
        ),
        (["tune", TOY, "-m", "toy.task", "--hparams", LEGACY, "--async"], r"a local study runs in this process to its end; drop --async"),
        (
            ["tune", TOY, "-m", "toy.task", "--hparams", LEGACY, "--algorithm", "grid"],
            r"parameter learning_rate is a DOUBLE, and GRID_SEARCH needs",
        ),
        (["tune", TOY, "-m", "toy.task", "--hparams", LEGACY, "--algorithm", "hill-climb"], r"--algorithm 'hill-climb' is not known"),
        (["tune", TOY, "-m", "toy.task", "--hparams", LEGACY, "--parallel-trials", "9"], r"maxParallelTrials 9 is more than maxTrials 6"),
        (
            ["tune", TOY, "-m", "toy.task", "--hparams", str(ROOT / "tests/data/configs/legacy_hyperparameters.yaml"), "--config", LEGACY],
            r"describes the trials' cluster and so does --config",
        ),
        (
            ["tune", TOY, "-m", "toy.task", "--hparams", LEGACY, "--image", "gcr.io/p/t:1", "--container-engine", "podman"],
            r"image gcr.io/p/t:1 is not in \w+'s store|needs a container engine",
        ),
        (["tune", TOY, "-m", "toy.task", "--hparams", LEGACY, "--output", "xml", "--dry-run"], r"--output 'xml' must be json or yaml"),
    ],
)
def test_usage_errors_are_one_line_and_exit_2(argv: list[str], pattern: str) -> None:
    import re

    result = _cli(*argv)
    assert result.exit_code == 2, (result.stdout, result.stderr)  # type: ignore[attr-defined]
    lines = result.stderr.strip().splitlines()  # type: ignore[attr-defined]
    assert len(lines) == 1 and lines[0].startswith("error: ") and re.search(pattern, lines[0]), lines
    with JobStore() as store:
        assert store.list() == []
