"""The README's section "The model registered; tuning on Kubernetes", run as written.

Its blocks run with ``bash`` and the installed ``tfjob``, in order, in one directory, against
the project's stand-ins: the Vertex AI fake (``TFJOB_API_ENDPOINT``) and gcp-storage-emulator,
holding the SavedModel and the metrics the trainer would have left under the job dir; the
fake Kubernetes API (``KUBECONFIG``), whose JobSets this test moves along as the JobSet
controller would, each trial's chief echoing its reports as the bootstrap does."""

from __future__ import annotations

import json
import math
import os
import re
from pathlib import Path
from typing import Any

import yaml

import test_readme
from fakes.kube_api import FakeKube
from fakes.vertex_api import FakeVertex, shell_env
from helpers import BIN, readme_section_blocks, run_shell_blocks, write_trainer
from test_tune_kubernetes import Cluster

SECTION = "### The model registered; tuning on Kubernetes"
#: The whole-README test's stand-ins: gcp-storage-emulator (``my-bucket`` of ``my-project``), the fake Kubernetes API.
emulator, kube = test_readme.emulator, test_readme.kube


def _accuracy(args: list[str]) -> float:
    """What the census trainer would report: best near learning rate 0.01."""
    rate = float(next(a for a in args if a.startswith("--learning-rate=")).split("=", 1)[1])
    return 0.9 - 0.05 * (math.log10(rate) + 2) ** 2


def test_the_sections_commands_run_as_written(tmp_path: Path, emulator: Any, kube: FakeKube) -> None:
    register, dry_run, study = readme_section_blocks(SECTION)
    work = tmp_path / "work"
    write_trainer(work / "my_trainer")
    cluster = Cluster(kube, tmp_path, tag="accuracy", metric=_accuracy)
    for i in range(1, 5):
        cluster.script(f"census-tune-trial-{i}")
    bucket = emulator.bucket("my-bucket")
    for name, data in {"model/saved_model.pb": b"\x08\x01", "model/variables/variables.index": b"i",
                       "eval/metrics.json": b'{"accuracy": 0.86, "auc": 0.91, "global_step": 200}'}.items():  # fmt: skip
        bucket.blob(f"runs/census-1/{name}").upload_from_string(data)
    with FakeVertex(projects=("my-project",)) as vertex:
        env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}", **shell_env(vertex, tmp_path, "my-project", "0.05"),
               "KUBECONFIG": str(kube.write_kubeconfig(tmp_path / "kubeconfig"))}  # fmt: skip
        runs = run_shell_blocks((register, dry_run, study), work, env)

        (upload,) = vertex.uploads
        assert "parentModel" not in upload and upload["model"]["displayName"] == "census"
        assert upload["model"]["artifactUri"] == "gs://my-bucket/runs/census-1/model"
        assert upload["model"]["labels"]["tfjob-job-id"] == runs[0].stdout.strip()
        assert re.fullmatch(r"us-docker\.pkg\.dev/vertex-ai/prediction/tf2-cpu\.2-\d+:latest", upload["model"]["containerSpec"]["imageUri"])
        run = vertex.contexts["projects/my-project/locations/us-central1/metadataStores/default/contexts/census-run-1"]
        assert run["metadata"]["metrics"] == {"accuracy": 0.86, "auc": 0.91, "global_step": 200.0}

    experiment = yaml.safe_load((work / "census-experiment.yaml").read_text())
    assert experiment["kind"] == "Experiment" and experiment["spec"]["trialTemplate"]["trialSpec"]["kind"] == "JobSet"
    assert "--learning-rate=${trialParameters.learning-rate}" in json.dumps(experiment)

    assert cluster.most == 2
    best = min(cluster.losses, key=lambda n: -cluster.losses[n])  # the highest accuracy
    line = next(line for line in runs[2].stderr.splitlines() if "SUCCEEDED: 4 trials" in line)
    assert f"best trial {best.rsplit('-', 1)[1]}: accuracy=" in line
