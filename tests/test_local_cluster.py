"""Real local clusters: every task gets its own, correct cluster variables in every dialect."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from local_helpers import no_leftover_jobs  # noqa: F401 - autouse: no cluster outlives a failed test
from local_helpers import (
    TFJOB,
    assert_no_survivors,
    job_processes,
    only_job_id,
    probe_args,
    reports,
)
from click.testing import CliRunner

from tfjob.cli.main import app
from tfjob.cluster.task import parse_cluster_spec, parse_tf_config
from tfjob.runtime.store import JobStore

TASKS = ["chief-0", "worker-0", "worker-1", "worker-2", "worker-3", "ps-0", "ps-1"]


def _log_dir(job_id: str) -> Path:
    with JobStore() as store:
        return Path(store.get(job_id).log_dir)  # type: ignore[union-attr, arg-type]


def _manifest(job_id: str) -> dict[str, dict]:
    log_dir = _log_dir(job_id)
    return {t["name"]: t for t in json.loads((log_dir / "tasks.json").read_text())}


def _check_cluster(job_dir: Path, job_id: str, dialect: str, primary: str) -> None:
    seen = reports(job_dir)
    assert sorted(seen) == sorted(TASKS)
    manifest = _manifest(job_id)
    addresses = {name: manifest[name]["address"] for name in TASKS}
    assert len(set(addresses.values())) == 7 and all(a.startswith("127.0.0.1:") for a in addresses.values())
    expected_cluster = {
        "chief": [addresses["chief-0"]],
        "worker": [addresses[f"worker-{i}"] for i in range(4)],
        "ps": [addresses["ps-0"], addresses["ps-1"]],
    }
    for name in TASKS:
        role, index = name.split("-")[0], int(name.split("-")[1])
        report = seen[name]
        # What the trainer sees: the platform's TF_CONFIG as written, its own task.
        assert (report["role"], report["index"]) == (role, index)
        assert report["cluster"] == expected_cluster
        assert report["is_chief"] == (role == "chief")
        env = manifest[name]["env"]
        assert report["env"]["TF_CONFIG"] == env["TF_CONFIG"]
        assert report["env"]["TFJOB_TASK_TYPE"] == role and report["env"]["TFJOB_JOB_ID"] == job_id
        # Its own working directory (recorded), as in a container: the trainer is on the path, not the cwd.
        assert report["cwd"] == manifest[name]["cwd"] == str(Path(_log_dir(job_id), "work", name)) and report["rest"] == []
        # --job-dir reaches the trainer only where the platform passes it (AI Platform).
        assert ("--job-dir" in report["argv"]) == (dialect == "ai-platform")
        # What the platform of the dialect set, as the launcher gave it.
        raw = json.loads(env["TF_CONFIG"])
        assert raw["task"] == {"type": primary if role == "chief" else role, "index": index}
        assert raw["cluster"][primary] == [addresses["chief-0"]]
        info = parse_tf_config(env["TF_CONFIG"])
        assert (info.role, info.index) == (role, index)
        if dialect == "vertex":
            pools = json.loads(env["CLUSTER_SPEC"])
            assert pools["task"] == {"type": f"workerpool{['chief', 'worker', 'ps'].index(role)}", "index": index}
            assert pools["cluster"]["workerpool1"] == expected_cluster["worker"]
            assert report["env"]["AIP_MODEL_DIR"] == f"{job_dir}/model/"
        elif dialect == "ai-platform":
            legacy = parse_cluster_spec(env["CLUSTER_SPEC"])
            assert legacy.role == role and "master" in json.loads(env["CLUSTER_SPEC"])["cluster"]
        else:
            assert "CLUSTER_SPEC" not in env and raw["environment"] == "cloud"


@pytest.mark.parametrize(
    ("flags", "dialect", "primary"),
    [
        (["--dialect", "vertex"], "vertex", "chief"),
        (["--dialect", "ai-platform", "--use-master"], "ai-platform", "master"),
        (["--dialect", "ai-platform", "--use-chief"], "ai-platform", "chief"),
        (["--dialect", "kubeflow"], "kubeflow", "chief"),
    ],
)
def test_1_chief_4_workers_2_ps_in_each_dialect(tmp_path: Path, flags: list[str], dialect: str, primary: str) -> None:
    job_dir = tmp_path / "out"
    argv = probe_args(*flags, "--strategy", "multi-worker", "--quiet", "--", "--wait-tasks", "7", workers=4, ps=2, job_dir=job_dir)
    result = CliRunner().invoke(app, argv)
    assert result.exit_code == 0, result.stderr
    job_id = only_job_id()
    assert result.stdout.strip() == job_id
    assert f"job {job_id} SUCCEEDED: chief-0 exited with code 0" in result.stderr
    assert "TASK" in result.stderr and "[worker-0]" not in result.stderr  # --quiet: the summary only
    _check_cluster(job_dir, job_id, dialect, primary)
    assert_no_survivors(job_processes(job_id, job_dir))


def test_a_cluster_through_the_real_command_streams_prefixed_lines(tmp_path: Path) -> None:
    job_dir = tmp_path / "out"
    argv = probe_args("--strategy", "multi-worker", "--", "--wait-tasks", "3", "--lines", "2", workers=1, ps=1, job_dir=job_dir)
    done = subprocess.run([TFJOB, *argv], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    job_id = done.stdout.strip()
    lines = done.stderr.splitlines()
    assert lines[0].startswith("tfjob: no cloud project configured, so the cluster runs on this machine")
    for name in ("chief-0", "worker-0", "ps-0"):
        prefix = f"[{name}] "  # as Vertex AI's and Kubernetes' logs read
        assert f"{prefix}{name} ready" in lines
        assert f"{prefix}{name} line 1" in lines
    assert "\033[" not in done.stderr  # not a terminal: no colours
    summary = lines[lines.index(f"job {job_id} SUCCEEDED: chief-0 exited with code 0") + 1 :]
    assert summary[0].split() == ["TASK", "STATE", "EXIT", "DURATION"]
    assert summary[1].split()[:3] == ["chief-0", "SUCCEEDED", "0"]
    with JobStore() as store:
        log_dir = Path(store.get(job_id).log_dir)  # type: ignore[union-attr, arg-type]
    assert (log_dir / "worker-0.log").read_text().splitlines()[:2] == ["worker-0 ready", "worker-0 line 0"]
    assert "[ps-0] ps-0 line 1" in (log_dir / "job.log").read_text()
    assert_no_survivors(job_processes(job_id, job_dir))


def test_an_evaluator_gets_its_own_task_outside_the_training_cluster(tmp_path: Path) -> None:
    job_dir = tmp_path / "out"
    argv = probe_args("--evaluators", "1", "--python", sys.executable, "--quiet", "--", "--wait-tasks", "3", workers=1, job_dir=job_dir)
    result = CliRunner().invoke(app, argv)
    assert result.exit_code == 0, result.stderr
    job_id = only_job_id()
    seen = reports(job_dir)
    assert seen["evaluator-0"]["role"] == "evaluator" and not seen["evaluator-0"]["is_chief"]
    assert json.loads(seen["evaluator-0"]["env"]["TF_CONFIG"])["task"] == {"type": "evaluator", "index": 0}
    assert "evaluator" not in json.loads(seen["chief-0"]["env"]["TF_CONFIG"])["cluster"]
    manifest = _manifest(job_id)
    pools = json.loads(manifest["evaluator-0"]["env"]["CLUSTER_SPEC"])
    assert pools["task"] == {"type": "workerpool3", "index": 0}
    assert pools["cluster"]["workerpool3"] == [manifest["evaluator-0"]["address"]]
    assert manifest["chief-0"]["argv"][0] == sys.executable
    assert_no_survivors(job_processes(job_id, job_dir))
