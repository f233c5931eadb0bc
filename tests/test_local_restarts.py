"""Restart policies and preemptions on real local clusters (the probe trainer): a task
restarted in place by its policy, a Never policy failing fast, the backoff limit, the whole job
started again (--max-restarts), and `tfjob preempt`; no process outlives its job."""

from __future__ import annotations

import json
import signal
import time
from pathlib import Path

import pytest
from click.testing import CliRunner
from local_helpers import no_leftover_jobs  # noqa: F401 - autouse: no cluster outlives a failed test
from local_helpers import (
    assert_no_survivors,
    job_processes,
    only_job_id,
    probe_args,
    read_until,
    ready_lines,
    reports,
    start_cli,
    wait_for_reports,
)

from tfjob.cli.main import app
from tfjob.model import JobState
from tfjob.description.restarts import parse_policies, parse_preemptions, restart_delay, should_restart
from tfjob.runtime.store import JobRecord, JobStore


def _cli(*args: str):
    return CliRunner().invoke(app, list(args))


def _job(job_id: str):
    with JobStore() as store:
        return store.get(job_id), {t.name: t for t in store.tasks(job_id)}, [m for _, _, m in store.events(job_id)]


# -- the policies, pure ------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("policy", "ends"),
    [
        ("Never", {}),
        ("OnFailure", {(3, None), (127, None), (143, None), (255, None), (None, 9)}),
        ("ExitCode", {(143, None), (None, 9), (255, None)}),
        ("Always", {(0, None), (3, None), (127, None), (143, None), (None, 9), (255, None)}),
    ],
)
def test_each_policy_restarts_what_kubeflow_restarts(policy: str, ends: set) -> None:
    for end in [(0, None), (3, None), (127, None), (143, None), (255, None), (None, 9)]:
        assert should_restart(policy, *end) is (end in ends), (policy, end)


def test_policies_preemptions_and_delays_are_read_and_checked() -> None:
    assert parse_policies(["onfailure", "ps=Never"]) == {"default": "OnFailure", "ps": "Never"}
    assert parse_preemptions(["worker-1@30s", "Master-0@1.5m", "random:ps@500ms"])[1].at == 90.0
    assert [restart_delay(1.0, n) for n in (1, 2, 3)] == [1.0, 2.0, 4.0] and restart_delay(1.0, 40) == 300.0


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (
            ["--restart-policy", "Sometimes"],
            "error: --restart-policy 'Sometimes' is not a restart policy; choose one of Never, OnFailure, ExitCode, Always",
        ),
        (["--restart-policy", "boss=Never"], "error: --restart-policy boss=Never: 'boss' is not a role"),
        (["--preempt", "worker-7@3s"], "error: --preempt worker-7@…: the job has no task worker-7 (it has chief-0, worker-0)"),
        (["--preempt", "worker-0"], "error: --preempt 'worker-0': say when, as TASK@TIME (worker-1@30s) or random@MEAN (random@2m)"),
        (["--preempt", "worker-0@soon"], "error: --preempt 'soon' is not a duration (e.g. 30s, 500ms, 2m)"),
        (["--preempt-grace", "-1"], "error: --preempt-grace '-1' is not a duration"),
        (["--max-restarts", "-1"], "error: --max-restarts -1 must be a whole number from 0 to 10000"),
    ],
)
def test_mistakes_are_one_line_and_exit_2(flags: list[str], message: str) -> None:
    result = _cli(*probe_args(*flags))
    assert result.exit_code == 2 and result.stderr.startswith(message) and len(result.stderr.splitlines()) == 1, result.stderr


def test_preempt_is_for_local_jobs_and_running_tasks(tmp_path: Path) -> None:
    with JobStore() as store:
        store.add(JobRecord(id="v-1", backend="vertex", name="v", state=JobState.RUNNING))
    result = _cli("preempt", "v-1", "worker-0")
    assert result.exit_code == 2 and "error: tfjob preempt rehearses a preemption on a local job; job v-1 runs on vertex" in result.stderr


# -- real clusters -------------------------------------------------------------------------------
def test_a_preempted_worker_is_restarted_in_place_and_the_job_succeeds(tmp_path: Path) -> None:
    job_dir = tmp_path / "out"
    go = tmp_path / "go"
    proc = start_cli(probe_args("--restart-delay", "0.1s", "--", "--hang", "worker", "--wait-for", str(go), workers=2, job_dir=job_dir))
    read_until(proc, ready_lines(["chief-0", "worker-0", "worker-1"]))
    job_id = only_job_id()
    before = reports(job_dir)["worker-0"]
    first_run = job_processes(job_id)
    result = _cli("preempt", job_id, "Worker-0", "--grace", "5s")
    assert result.exit_code == 0 and f"preempting worker-0 of job {job_id}" in result.stderr, result.stderr
    read_until(proc, ["[tfjob] worker-0 restarted at 127.0.0.1:"])
    deadline = time.monotonic() + 60
    while wait_for_reports(job_dir, 3)["worker-0"]["pid"] == before["pid"] and time.monotonic() < deadline:
        time.sleep(0.02)  # the restarted worker-0 writes its report again
    after = reports(job_dir)["worker-0"]
    assert after["pid"] != before["pid"]
    # In place: the same role, index, TF_CONFIG / CLUSTER_SPEC and address.
    assert after["env"]["TF_CONFIG"] == before["env"]["TF_CONFIG"] and after["env"]["CLUSTER_SPEC"] == before["env"]["CLUSTER_SPEC"]
    status = _cli("status", job_id).stdout
    assert "RESTARTS" in status and [line.split()[-1] for line in status.splitlines() if line.strip().startswith("worker-0")] == ["1"]
    go.touch()
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    record, tasks, history = _job(job_id)
    assert record.state is JobState.SUCCEEDED
    assert tasks["worker-0"].restarts == 1 and tasks["worker-1"].restarts == 0
    (restart,) = tasks["worker-0"].restart_history
    assert (restart.signal, restart.reason) == (signal.SIGTERM, "preempted")
    assert any(m.startswith("preempting worker-0 (tfjob preempt): SIGTERM now, SIGKILL after 5s (request ") for m in history)
    assert any(
        m.startswith("worker-0 was killed by SIGTERM after its preemption; the platform restarts a preempted replica") for m in history
    )
    assert_no_survivors(first_run + job_processes(job_id))


def test_a_never_policy_fails_fast_naming_the_preempted_task(tmp_path: Path) -> None:
    job_dir = tmp_path / "out"
    result = _cli(*probe_args(
        "--restart-policy", "Never", "--preempt", "worker-0@1s", "--preempt-grace", "30s", "--",
        "--hang", "all", workers=1, job_dir=job_dir,
    ))  # fmt: skip
    assert result.exit_code == 1
    job_id = only_job_id()
    assert f"error: job {job_id} FAILED: task worker-0 was killed by SIGTERM after its preemption; its log:" in result.stderr
    record, tasks, history = _job(job_id)
    assert record.failed_task == "worker-0" and tasks["worker-0"].restarts == 0
    assert "preempting worker-0 (--preempt): SIGTERM now, SIGKILL after 30s" in history
    assert_no_survivors(job_processes(job_id, job_dir))


def test_a_task_deaf_to_sigterm_is_killed_after_the_grace_and_on_failure_restarts_it_up_to_the_backoff_limit(tmp_path: Path) -> None:
    job_dir = tmp_path / "out"
    result = _cli(*probe_args(
        "--restart-policy", "worker=OnFailure", "--backoff-limit", "2", "--restart-delay", "0.1s",
        "--preempt", "worker-0@0s", "--preempt-grace", "0.5s", "--",
        "--hang", "chief", "--ignore-sigterm", "worker", "--exit", "worker=3", workers=1, job_dir=job_dir,
    ))  # fmt: skip
    assert result.exit_code == 1, result.stderr
    job_id = only_job_id()
    record, tasks, history = _job(job_id)
    assert record.failed_task == "worker-0"
    assert (
        "restart policy OnFailure would restart it, but the job's tasks were restarted 2 times already (--backoff-limit 2)"
        in record.message
    )
    assert tasks["worker-0"].restarts == 2
    assert [r.reason for r in tasks["worker-0"].restart_history] in (["preempted", "exited"], ["exited", "exited"])
    assert any(m.startswith("worker-0 exited with code 3; restart policy OnFailure: restarting it in 0.2s (2/2") for m in history)
    assert_no_survivors(job_processes(job_id, job_dir))


def test_exit_code_policy_keeps_a_program_error_permanent(tmp_path: Path) -> None:
    result = _cli(*probe_args("--dialect", "kubeflow", "--", "--hang", "chief", "--exit", "worker=3", workers=1, job_dir=tmp_path / "out"))
    assert result.exit_code == 1
    record, tasks, _ = _job(only_job_id())
    assert record.failed_task == "worker-0" and tasks["worker-0"].restarts == 0


def test_max_restarts_starts_the_whole_job_again_after_its_chief_is_preempted(tmp_path: Path) -> None:
    job_dir = tmp_path / "out"
    go = tmp_path / "go"
    proc = start_cli(probe_args(
        "--restart-policy", "Never", "--max-restarts", "1", "--preempt-grace", "5s", "--",
        "--hang", "worker", "--wait-for", str(go), workers=1, job_dir=job_dir,
    ))  # fmt: skip
    read_until(proc, ready_lines(["chief-0", "worker-0"]))
    job_id = only_job_id()
    first_run = job_processes(job_id)
    assert _cli("preempt", job_id, "chief-0").exit_code == 0
    read_until(
        proc, ["[tfjob] restarting the whole job (1/1 of --max-restarts) after: task chief-0 was killed by SIGTERM after its preemption"]
    )
    assert_no_survivors(first_run)
    read_until(proc, ready_lines(["chief-0", "worker-0"]))
    go.touch()
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    record, tasks, history = _job(job_id)
    assert record.state is JobState.SUCCEEDED and len(record.extra["attempts"]) == 1
    assert {name: (t.restarts, [r.reason for r in t.restart_history]) for name, t in tasks.items()} == {
        "chief-0": (1, ["job restart"]),
        "worker-0": (1, ["job restart"]),
    }
    assert json.loads(_cli("status", job_id, "--json").stdout)["tasks"][0]["restarts"] == 1
    assert_no_survivors(job_processes(job_id))


# -- the same policy on the platforms, or one line saying it cannot be -------------------------
@pytest.mark.parametrize(
    ("backend", "flags", "message"),
    [
        (
            "vertex",
            ["--restart-policy", "OnFailure"],
            "error: --restart-policy OnFailure: Vertex AI cannot restart a replica by its exit code",
        ),
        (
            "vertex",
            ["--restart-policy", "worker=Never"],
            "error: --restart-policy ROLE=POLICY: Vertex AI has one retry setting for the whole job",
        ),
        (
            "vertex",
            ["--restart-policy", "Never", "--restart-job-on-worker-restart"],
            "error: --restart-policy Never turns Vertex AI's retries off",
        ),
        (
            "kubeflow",
            ["--max-restarts", "1"],
            "error: --max-restarts: a TFJob restarts its replicas (--restart-policy, up to --backoff-limit), not the whole job",
        ),
    ],
)
def test_a_policy_a_platform_cannot_say_is_one_line(backend: str, flags: list[str], message: str) -> None:
    result = _cli("render", "-m", "trainer.task", "--image", "img:1", "--workers", "1", "--backend", backend, *flags)
    assert result.exit_code == 2 and result.stderr.startswith(message) and len(result.stderr.splitlines()) == 1, result.stderr


def test_the_platforms_render_the_policies() -> None:
    vertex = json.loads(
        _cli("render", "-m", "t.task", "--image", "img:1", "--workers", "1", "--backend", "vertex", "--restart-policy", "Never").stdout
    )
    assert vertex["jobSpec"]["scheduling"] == {"disableRetries": True}
    import yaml

    tfjob = yaml.safe_load(_cli(
        "render", "-m", "t.task", "--image", "img:1", "--workers", "1", "--ps", "1", "--backend", "kubeflow",
        "--restart-policy", "OnFailure", "--restart-policy", "ps=Never", "--backoff-limit", "5", "-o", "yaml",
    ).stdout)  # fmt: skip
    specs = tfjob["spec"]["tfReplicaSpecs"]
    assert {role: s["restartPolicy"] for role, s in specs.items()} == {"Chief": "OnFailure", "Worker": "OnFailure", "PS": "Never"}
    assert tfjob["spec"]["runPolicy"]["backoffLimit"] == 5
    jobset = yaml.safe_load(
        _cli(
            "render", "-m", "t.task", "--image", "img:1", "--workers", "1", "--backend", "jobset", "--max-restarts", "2", "-o", "yaml"
        ).stdout
    )
    assert jobset["spec"]["failurePolicy"] == {"maxRestarts": 2}


def test_random_preemptions_of_one_role_for_a_soak_run(tmp_path: Path) -> None:
    job_dir = tmp_path / "out"
    go = tmp_path / "go"
    proc = start_cli(probe_args(
        "--preempt", "random:worker@0.5s", "--preempt-seed", "7", "--preempt-grace", "5s", "--restart-delay", "0s", "--backoff-limit", "100",
        "--", "--hang", "worker", "--wait-for", str(go), workers=2, job_dir=job_dir,
    ))  # fmt: skip
    read_until(proc, ready_lines(["chief-0", "worker-0", "worker-1"]))
    job_id = only_job_id()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        _, tasks, _ = _job(job_id)
        if sum(t.restarts for t in tasks.values()) >= 3:
            break
        time.sleep(0.1)
    go.touch()
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    record, tasks, history = _job(job_id)
    assert tasks["chief-0"].restarts == 0 and tasks["worker-0"].restarts + tasks["worker-1"].restarts >= 3
    assert all(r.reason == "preempted" for t in tasks.values() for r in t.restart_history)
    assert sum(m.startswith("preempting worker-") and "(--preempt random)" in m for m in history) >= 3
    assert_no_survivors(job_processes(job_id))
