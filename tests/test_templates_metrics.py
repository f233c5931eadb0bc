"""Metric reporting for hyperparameter tuning (:mod:`tfjob.hypertune`), as the templates use it."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

import tfjob
from tfjob import hypertune


@pytest.fixture
def metric_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "hp" / "output.metrics"
    monkeypatch.setenv("CLOUD_ML_HP_METRIC_FILE", str(path))
    for name in ("CLOUD_ML_TRIAL_ID", "TFJOB_TRIAL"):
        monkeypatch.delenv(name, raising=False)
    return path


def test_report_writes_cloudml_hypertune_lines(metric_file: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CLOUD_ML_TRIAL_ID", "7")
    assert hypertune.report_metric("accuracy", 0.84, step=40) == metric_file
    hypertune.report_metric("loss", 0.31)
    lines = metric_file.read_text().splitlines()
    first = json.loads(lines[0])
    assert sorted(first) == ["accuracy", "global_step", "timestamp", "trial"]
    assert (first["accuracy"], first["global_step"], first["trial"]) == ("0.84", "40", "7")
    assert isinstance(first["timestamp"], float)
    assert lines[0] == json.dumps(first, sort_keys=True)
    assert json.loads(lines[1])["global_step"] == "0"


def test_the_file_is_readable_by_others_like_cloudml_hypertunes(metric_file: Path) -> None:
    hypertune.report_metric("accuracy", 0.5, 1)
    assert metric_file.stat().st_mode & 0o777 == 0o644
    metric_file.chmod(0o640)
    hypertune.report_metric("accuracy", 0.6, 2)
    assert metric_file.stat().st_mode & 0o777 == 0o640  # an existing file keeps its mode


def test_report_is_reachable_from_the_package_root(metric_file: Path) -> None:
    tfjob.report_metric("auc", 0.9, 3)
    assert json.loads(metric_file.read_text())["auc"] == "0.9"


def test_default_file_and_tag_are_cloudml_hypertunes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CLOUD_ML_HP_METRIC_FILE", raising=False)
    assert hypertune.metric_file() == Path("/tmp/hypertune/output.metrics")
    assert hypertune.metric_file({"CLOUD_ML_HP_METRIC_FILE": "/x/m"}) == Path("/x/m")
    line = hypertune.render_metric_line("", 1.0, None, "0", 1.0)
    assert json.loads(line)["training/hptuning/metric"] == "1.0"


@pytest.mark.parametrize(
    "env, trial",
    [
        ({}, "0"),
        ({"CLOUD_ML_TRIAL_ID": "4", "TF_CONFIG": '{"task": {"trial": "9"}}'}, "4"),
        ({"TFJOB_TRIAL": "5"}, "5"),
        ({"TF_CONFIG": '{"task": {"type": "chief", "index": 0, "trial": "3"}}'}, "3"),
        ({"CLUSTER_SPEC": '{"task": {"type": "workerpool0", "index": 0, "trial": "12"}}'}, "12"),
        ({"TF_CONFIG": "not json"}, "0"),
        ({"TF_CONFIG": '{"task": {"type": "chief"}}'}, "0"),
    ],
)
def test_trial_id_comes_from_the_platform(env: dict[str, str], trial: str) -> None:
    assert hypertune.trial_id(env) == trial


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_non_finite_values_are_refused(bad: float, metric_file: Path) -> None:
    with pytest.raises(ValueError, match=r"metric 'loss' is (nan|inf|-inf): report a finite number"):
        hypertune.report_metric("loss", bad, 1)
    assert not metric_file.exists()


def test_only_the_last_hundred_reports_are_kept(metric_file: Path) -> None:
    for step in range(1, 131):
        hypertune.report_metric("accuracy", step / 1000, step)
    reports = hypertune.parse_metric_lines(metric_file.read_text())
    assert len(reports) == hypertune.MAX_LINES
    assert [r["global_step"] for r in reports] == list(range(31, 131))
    assert not list(metric_file.parent.glob(".output.metrics.*"))  # no temporary file left behind


def test_parse_metric_lines_reads_reports_and_skips_garbage() -> None:
    text = "\n".join(
        [
            '{"accuracy": "0.5", "global_step": "10", "timestamp": 1.5, "trial": "2"}',
            "",
            '{"accuracy": "0.6", "global_step": "2',  # cut short by a crash
            "[1, 2]",
            '{"a": "1", "b": "2", "global_step": "1"}',  # two tags: not a report
            '{"loss": "nope", "global_step": "1"}',
            '{"loss": "0.25", "global_step": "20", "timestamp": 2.0, "trial": "2", "checkpoint_path": ""}',
        ]
    )
    assert hypertune.parse_metric_lines(text) == [
        {"tag": "accuracy", "value": 0.5, "global_step": 10, "trial": "2", "timestamp": 1.5},
        {"tag": "loss", "value": 0.25, "global_step": 20, "trial": "2", "timestamp": 2.0},
    ]


def test_round_trip_through_the_file(metric_file: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TF_CONFIG", json.dumps({"task": {"type": "chief", "index": 0, "trial": "8"}}))
    hypertune.report_metric("accuracy", 0.75, step=100)
    (report,) = hypertune.parse_metric_lines(metric_file.read_text())
    assert (report["tag"], report["value"], report["global_step"], report["trial"]) == ("accuracy", 0.75, 100, "8")
