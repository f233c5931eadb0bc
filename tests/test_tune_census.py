"""The census template's evaluation metric drives a real local study (TensorFlow; slow)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
import yaml
from helpers import requires_tf

from tfjob.store import JobStore

STUDY = {
    "maxTrialCount": 2,
    "parallelTrialCount": 1,
    "maxFailedTrialCount": 1,
    "studySpec": {
        "metrics": [{"metricId": "accuracy", "goal": "MAXIMIZE"}],
        "algorithm": "GRID_SEARCH",
        "parameters": [{"parameterId": "learning_rate", "discreteValueSpec": {"values": [0.001, 0.05]}}],
    },
}


@pytest.mark.slow
@requires_tf
def test_tuning_the_census_template_reads_its_eval_accuracy(tfjob_exe: str, tmp_path: Path) -> None:
    trainer, job_dir, hparams = tmp_path / "census", tmp_path / "job", tmp_path / "hparams.yaml"
    assert subprocess.run([tfjob_exe, "init", str(trainer), "--template", "census-ps"], capture_output=True, timeout=60).returncode == 0
    hparams.write_text(yaml.safe_dump(STUDY))
    env = {k: v for k, v in os.environ.items() if k not in ("TF_CONFIG", "CLUSTER_SPEC")}
    env.update(TF_USE_LEGACY_KERAS="1", TF_CPP_MIN_LOG_LEVEL="2")
    done = subprocess.run(
        [tfjob_exe, "tune", str(trainer), "-m", "trainer.task", "--hparams", str(hparams), "--job-dir", str(job_dir),
         "--json", "--", "--train-steps", "10", "--eval-steps", "2"],
        capture_output=True, text=True, env=env, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-4000:]
    result = json.loads(done.stdout)
    assert result["state"] == "SUCCEEDED" and [t["state"] for t in result["trials"]] == ["SUCCEEDED", "SUCCEEDED"]
    assert sorted(t["params"]["learning_rate"] for t in result["trials"]) == [0.001, 0.05]
    for trial in result["trials"]:
        # Each trial trained in its own job dir, and the study's metric is the accuracy it evaluated.
        evaluated = json.loads((job_dir / trial["id"] / "eval" / "metrics.json").read_text())
        assert evaluated["global_step"] == 10
        assert trial["metric"] == pytest.approx(evaluated["accuracy"]) and 0.0 <= trial["metric"] <= 1.0
    assert result["best"]["metric"] == max(t["metric"] for t in result["trials"])
    with JobStore() as store:
        assert store.get(result["id"]).extra["best"]["id"] == result["best"]["id"]  # type: ignore[union-attr]
