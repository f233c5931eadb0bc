"""Issue 36, low: a refused preemption is no success, a restart policy for a role the job
lacks is refused, the typed API refuses wrong types in one clear error, a pipeline step's
args given as one text, ``tfjob import``'s nameless variables and ExitCode policies,
``render`` of a trainer that is not there, ignore rules that stay fast, and diagnoses
checked against the job's facts (and the ones that were missing)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from helpers import one_error, write_trainer
from click.testing import CliRunner

from safety3_jobs import recorded_job, tfjob
from tfjob.cli.main import app
from tfjob.results.diagnosis import diagnose
from tfjob.errors import JobFailedError, SpecError
from tfjob.job import Job, JobHandle, get_job
from tfjob.model import JobState, JobStatus, TaskStatus
from tfjob.platforms import Local


def _trainer(tmp_path: Path, body: str) -> Path:
    return write_trainer(tmp_path / "t", textwrap.dedent(body)).parent


# -- tfjob preempt ----------------------------------------------------------------------------------
def test_a_preemption_the_launcher_refuses_is_not_a_success(tmp_path: Path, tfjob_exe: str) -> None:
    go = tmp_path / "go"
    trainer = _trainer(tmp_path, f"""
        import json, os, time
        if json.loads(os.environ["TF_CONFIG"])["task"]["type"] == "worker":
            raise SystemExit(0)  # ends at once: nothing left to preempt
        while not os.path.exists({str(go)!r}):
            time.sleep(0.05)
    """)  # fmt: skip
    home = tmp_path / "home"
    env = {**os.environ, "TFJOB_HOME": str(home)}
    submit = [tfjob_exe, "submit", "--backend", "local", "--detach", "--package-path", str(trainer / "trainer"),
              "--module-name", "trainer.task", "--workers", "1", "--python", sys.executable]  # fmt: skip
    out = subprocess.run(submit, capture_output=True, text=True, timeout=300, env=env)
    assert out.returncode == 0, out.stderr[-3000:]
    job_id = out.stdout.strip().splitlines()[-1]
    try:
        deadline = time.monotonic() + 120
        while True:
            listed = json.loads(tfjob(tfjob_exe, home, "status", job_id, "--json").stdout)
            worker = next((t for t in listed["tasks"] if t["name"] == "worker-0"), None)
            if worker is not None and worker["state"] in ("SUCCEEDED", "STOPPED", "FAILED"):
                break
            assert time.monotonic() < deadline, listed
            time.sleep(0.1)
        line = one_error(tfjob(tfjob_exe, home, "preempt", job_id, "worker-0"), 2)
        assert line == f"error: job {job_id}'s launcher did not preempt worker-0: it is not running", line
        with_token = [e["message"] for e in json.loads(tfjob(tfjob_exe, home, "status", job_id, "--json").stdout)["events"]]
        assert any(m.startswith("not preempting worker-0 (tfjob preempt): it is not running (request ") for m in with_token)
    finally:
        go.touch()
        waited = tfjob(tfjob_exe, home, "wait", job_id, "--timeout", "120")
    assert waited.returncode == 0, waited.stderr[-2000:]


# -- restart policies ----------------------------------------------------------------------------------
def test_a_restart_policy_for_a_role_the_job_lacks_is_refused(tmp_path: Path, tfjob_exe: str) -> None:
    trainer = _trainer(tmp_path, "print('hi')\n")
    base = ["render", "--backend", "local", "--package-path", str(trainer / "trainer"), "--module-name", "trainer.task", "--workers", "1"]
    line = one_error(tfjob(tfjob_exe, tmp_path / "home", *base, "--restart-policy", "ps=Never"), 2)
    assert line == "error: --restart-policy ps=Never: the job has no ps task (it has chief-0, worker-0)"
    assert tfjob(tfjob_exe, tmp_path / "home", *base, "--restart-policy", "worker=Never").returncode == 0


# -- the typed API -----------------------------------------------------------------------------------
def test_the_api_refuses_wrong_types_in_one_clear_error(tmp_path: Path) -> None:
    with pytest.raises(SpecError, match=r"JobHandle: backend=<object object at .*> must be a backend's name"):
        JobHandle(object(), "j-1")
    with pytest.raises(SpecError, match=r"JobHandle: id=5 must be a job's id"):
        JobHandle("local", 5)  # type: ignore[arg-type]
    job_id = recorded_job(tmp_path / "tfjob-home", None, state=JobState.RUNNING)
    handle = get_job(job_id)
    with pytest.raises(SpecError, match=r"logs: task=5 must be a task's name"):
        handle.logs(task=5)  # type: ignore[arg-type]
    with pytest.raises(SpecError, match=r"preempt: task=7 must be a task's name"):
        handle.preempt(7)  # type: ignore[arg-type]
    for bad in (-1, 0, float("nan"), True, "1"):
        with pytest.raises(SpecError, match=r"wait: poll_interval=.* must be a number of seconds above 0"):
            handle.wait(poll_interval=bad)  # type: ignore[arg-type]
    with pytest.raises(SpecError, match=r"wait: max_interval=0 must be"):
        handle.wait(max_interval=0)


# -- the pipeline step, tfjob import, render ---------------------------------------------------------------
def test_a_step_takes_args_given_as_one_text() -> None:
    from tfjob.pipelines.step import build_job

    assert build_job(module="trainer.task", args="--epochs 5 --name 'a b'").spec.args == ("--epochs", "5", "--name", "a b")
    assert build_job(module="trainer.task", args='["--lr", "0.1"]').spec.args == ("--lr", "0.1")
    with pytest.raises(SpecError, match="must be a list of texts"):
        build_job(module="trainer.task", args=[1, 2])  # type: ignore[list-item]


def _manifest(tmp_path: Path, env: list[dict[str, object]], policy: str = "ExitCode") -> Path:
    container = {"name": "tensorflow", "image": "i:1", "command": ["python", "-m", "trainer.task"], "env": env}
    doc = {
        "apiVersion": "kubeflow.org/v1", "kind": "TFJob", "metadata": {"name": "j"},
        "spec": {"tfReplicaSpecs": {
            "Chief": {"replicas": 1, "template": {"spec": {"containers": [container]}}},
            "Worker": {"replicas": 2, "restartPolicy": policy, "template": {"spec": {"containers": [container]}}},
        }},
    }  # fmt: skip
    path = tmp_path / "tfjob.json"
    path.write_text(json.dumps(doc))
    return path


def test_import_leaves_out_a_variable_without_a_name_and_keeps_exit_code_policies(tmp_path: Path, tfjob_exe: str) -> None:
    path = _manifest(tmp_path, [{"value": "secret-ish"}, {"name": "A", "value": "1"}])
    for backend in ("jobset", "trainjob"):
        out = tfjob(tfjob_exe, tmp_path / "home", "import", str(path), "--backend", backend)
        assert out.returncode == 0, out.stderr
        assert "None=" not in out.stdout and "--env A=1" in out.stdout
        assert "--restart-policy worker=ExitCode" in out.stdout and "TFJob-only" not in out.stderr
        assert "an entry with no name" in out.stderr
        # The printed command renders on that backend, the policy as a podFailurePolicy.
        argv = out.stdout.split()[2:]
        rendered = tfjob(tfjob_exe, tmp_path / "home", "render", *argv)
        assert rendered.returncode == 0 and "podFailurePolicy" in rendered.stdout, rendered.stderr
    always = tfjob(tfjob_exe, tmp_path / "home", "import", str(_manifest(tmp_path, [], "Always")), "--backend", "jobset")
    assert "--restart-policy" not in always.stdout and "--restart-policy: TFJob-only" in always.stderr


def test_render_of_a_missing_trainer_directory_is_refused_locally(tmp_path: Path, tfjob_exe: str) -> None:
    missing = str(tmp_path / "nowhere")
    line = one_error(tfjob(tfjob_exe, tmp_path / "home", "render", "--backend", "local", "--module-name", "trainer.task", missing), 2)
    assert line == f"error: trainer directory {missing!r} does not exist; give the directory that holds your trainer package"


# -- ignore rules -----------------------------------------------------------------------------------
def test_ten_thousand_double_star_patterns_over_three_thousand_files_stay_bounded(tmp_path: Path) -> None:
    from tfjob.packaging import collect_files
    from tfjob.packaging.ignore import MAX_RULE_WORK, RuleSet, parse_ignore

    src = tmp_path / "src"
    for j in range(3000):
        d = src / f"pkg{j % 30}" / f"mod{j % 7}"
        d.mkdir(parents=True, exist_ok=True)
        (d / f"file{j}.py").write_text("x = 1\n")
    patterns = (
        [f"**/d{i}/**/f{i}" for i in range(2500)] + [f"src/**/x{i}/**" for i in range(2500)]
        + [f"**/a{i}**" for i in range(2499)] + [f"**/tmp{i}.*" for i in range(2499)]
        + ["**/pkg3/**/file3.py", "**/file4*"]
    )  # fmt: skip
    rules = RuleSet(parse_ignore("\n".join(patterns)))
    found = collect_files(src, rules)
    assert rules.work < MAX_RULE_WORK // 10, rules.work  # far from the bound: filed by name, start and end
    assert "pkg3/mod3/file3.py" not in found.files and not any(Path(f).name.startswith("file4") for f in found.files)
    assert len(found.files) == 3000 - 1 - sum(1 for j in range(3000) if str(j).startswith("4"))
    # Wildcards-only patterns over every path: bounded, one error naming the way out.
    wild = RuleSet(parse_ignore("\n".join(f"**/*{i}*/**/*q{i}*" for i in range(10_000))))
    from tfjob.errors import ConfigFileError

    try:
        collect_files(src, wild)
    except ConfigFileError as e:
        assert "take too long to apply" in str(e) and "name directories" in str(e)
    assert wild.work <= MAX_RULE_WORK + 10_000


# -- diagnoses --------------------------------------------------------------------------------------
def _failed(tail: str, tasks: list[TaskStatus] | None = None) -> JobStatus:
    return JobStatus("j1", "local", "j", JobState.FAILED, failed_task="chief-0", tasks=tasks or [], extra={"log_tail": tail})


def test_a_diagnosis_is_checked_against_the_jobs_tf_config() -> None:
    tail = "ValueError: Disallowed task type found in cluster spec: master"
    (said,) = diagnose(_failed(tail), dialect="vertex")
    assert said.code == "tf2-master" and not said.certain and "names it chief" in said.cause and "--tf-config tf2" not in said.fix
    (legacy,) = diagnose(_failed(tail), dialect="ai-platform")
    assert legacy.certain and "--tf-config tf2" in legacy.fix


def test_the_missing_diagnoses() -> None:
    chief = [TaskStatus("chief-0", JobState.FAILED), TaskStatus("worker-0", JobState.STOPPED)]
    (d,) = diagnose(_failed('tensorflow.python.framework.errors_impl.InternalError: Job "chief" was not defined in cluster', chief))
    assert d.code == "chief-not-in-cluster" and d.certain and "--no-chief" in d.fix
    (d,) = diagnose(_failed("AttributeError: module 'tensorflow.compat.v1' has no attribute 'contrib'"))
    assert d.code == "needs-tf1" and "TensorFlow 1.x" in d.cause and "1.15" in d.fix


def test_the_kubeflow_evaluator_hang_is_said_at_a_timed_out_jobs_end_and_in_status(tmp_path: Path) -> None:
    trainer = _trainer(tmp_path, """
        import json, os, time
        if json.loads(os.environ["TF_CONFIG"])["task"]["type"] == "evaluator":
            raise SystemExit(0)
        time.sleep(600)
    """)  # fmt: skip
    job = Job(str(trainer), "trainer.task", workers=1, ps=1, evaluators=1, quiet=True, timeout=20,
              backend=Local(dialect="kubeflow", python=sys.executable, grace=1))  # fmt: skip
    with pytest.raises(JobFailedError, match=r"timed out") as failed:
        job.run()
    assert [d.code for d in failed.value.diagnoses] == ["ps-waits-for-evaluator"], str(failed.value)
    assert "hung until its timeout" in str(failed.value) and "evaluator-0" in str(failed.value)
    shown = CliRunner().invoke(app, ["status", failed.value.job_id])
    assert "diagnosis (chief-0): the job hung until its timeout" in shown.output, shown.output
