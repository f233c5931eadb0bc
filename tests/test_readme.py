"""Every example of the README runs, in order, in one shell and one directory, as typed.

The README is run as a reader follows it: one bash session, from the first command (which
makes ``.venv`` and installs tfjob with the ``tf`` extra) through ``source
.venv/bin/activate`` and every block after it, in order, so its variables and its PATH
carry from block to block as in a terminal. Nothing is installed that the README does not
say to: its ``python3 -m venv`` and ``pip install`` commands run through the offline
stand-ins of ``tests/offline_venv.py``, which put into the reader's venv exactly the
distributions a command names (linked from this suite's venv, no network); this suite's
own venv is not on PATH. The second block must be exactly what ``.ci/run`` runs. Cloud
services are the project's local stand-ins: the Vertex AI fake server
(``TFJOB_API_ENDPOINT``), gcp-storage-emulator (``STORAGE_EMULATOR_HOST``) and the fake
Kubernetes API (``KUBECONFIG``). A block preceded by ``<!-- not run: … -->`` is skipped (it
says why).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

import pytest

from helpers import BIN, CRDS, ROOT, readme_section_blocks, requires_tf
from fakes.gcs import storage_emulator
from fakes.kube_api import FakeKube, kube_fixture
from fakes.vertex_api import FakeVertex, write_service_account
import test_templates_census as census_template

README = ROOT / "README.md"
_FENCE = re.compile(
    r"(?P<skip><!-- not run: [^>]*-->\n)?(?P<containers><!-- containers: [^>]*-->\n)?```(?P<lang>\w+)\n(?P<code>.*?)```", re.S
)
#: Printed between the blocks of the README's shell session, on stdout and stderr, to tell their outputs apart.
_MARK = "@@tfjob-readme-block {}@@"


@dataclass
class Block:
    lang: str
    code: str
    run: bool
    #: Preceded by ``<!-- containers: … -->``: run by the container test, with podman and a registry.
    containers: bool = False


def readme_blocks() -> list[Block]:
    """The README's fenced blocks, in order."""
    return [Block(m["lang"], m["code"], m["skip"] is None, m["containers"] is not None) for m in _FENCE.finditer(README.read_text())]


def command_line(block: Block) -> str:
    """The one command of a block (its comment lines dropped)."""
    lines = [line for line in block.code.splitlines() if line.strip() and not line.startswith("#")]
    assert len(lines) == 1, block.code
    return lines[0]


def test_the_readme_opens_with_the_two_commands() -> None:
    first, second = readme_blocks()[:2]
    main = command_line(first).split(" && ")
    assert main[0] == "python3 -m venv .venv" and ".venv/bin/pip install -e '.[tf]'" in main
    # The pip a new venv comes with (23.x) backtracks for many minutes over the Google
    # client libraries' constraints; a current one resolves them in about a minute.
    assert main[1] == ".venv/bin/pip install -q --upgrade pip"
    assert any(step.startswith(".venv/bin/tfjob submit ") and "--workers 4 --ps 2" in step for step in main)
    tests = command_line(second)
    assert ".venv/bin/pip install -q -e '.[test,tf]'" in tests and ".venv/bin/python -m pytest" in tests


def test_ci_runs_exactly_the_readme_test_command() -> None:
    ci_lines = [
        line for line in (ROOT / ".ci" / "run").read_text().splitlines() if line and not line.startswith(("#", "set ", "cd ", "export "))
    ]
    assert ci_lines == [command_line(readme_blocks()[1])]


@pytest.fixture
def emulator(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    with storage_emulator(monkeypatch, "my-project", "my-bucket") as client:
        yield client


@pytest.fixture
def kube(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeKube]:
    yield from kube_fixture(CRDS / "kubeflow.org_tfjobs.yaml", tmp_path, monkeypatch)


def reader_session(blocks: list[Block], scripts: Path) -> str:
    """The README's runnable blocks as one bash session: shell blocks as they are, a Python
    block as the reader runs a saved example (``python FILE``, the ``python`` on PATH)."""
    lines = ["set -euo pipefail"]
    for n, block in enumerate(blocks):
        lines.append(f"printf '\\n{_MARK.format(n)}\\n'; printf '\\n{_MARK.format(n)}\\n' >&2")
        if block.lang == "python":
            # From a file, as a user runs a script: KFP reads a component's source from it.
            script = scripts / f"readme_example_{n}.py"
            script.write_text(block.code)
            lines.append(f"python {shlex.quote(str(script))}")
        else:
            lines.append(block.code)
    return "\n".join(lines) + "\n"


def split_session(done: subprocess.CompletedProcess[str], count: int) -> list[subprocess.CompletedProcess[str]]:
    """Each block's output, from the session's (the last one started failed, if the session did)."""

    def parts(text: str) -> dict[int, str]:
        found = re.split(r"\n@@tfjob-readme-block (\d+)@@\n", "\n" + text)
        return {int(found[i]): found[i + 1] for i in range(1, len(found) - 1, 2)}

    out, err = parts(done.stdout), parts(done.stderr)
    last = max(out, default=-1)
    return [
        subprocess.CompletedProcess([str(n)], 0 if n < last or done.returncode == 0 else done.returncode, out.get(n, ""), err.get(n, ""))
        for n in range(min(count, last + 1))
    ]


def reader_environment(tmp_path: Path, base: dict[str, str]) -> dict[str, str]:
    """A reader's shell: no venv active, this suite's venv not on PATH, and the offline
    stand-in of ``python3 -m venv`` (whose pip installs from this suite's venv) first."""
    import shutil

    import offline_venv

    env = {k: v for k, v in base.items() if k not in ("VIRTUAL_ENV", "PYTHONHOME", "PYTHONPATH")}
    path = [p for p in env.get("PATH", os.defpath).split(os.pathsep) if p and Path(p).resolve() != BIN.resolve()]
    real = shutil.which("python3", path=os.pathsep.join(path)) or str(Path(sys.base_prefix, "bin", "python3"))
    stand_ins = offline_venv.install_stand_ins(tmp_path / "stand-ins", real)
    env["PATH"] = os.pathsep.join([str(stand_ins), *path])
    return env


def _run(block: Block, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    if block.lang == "python":
        # From a file, as a user runs a script: KFP reads a component's source from it.
        script = cwd.parent / f"readme_example_{abs(hash(block.code))}.py"
        script.write_text(block.code)
        argv = [str(BIN / "python"), str(script)]
    else:
        argv = ["bash", "-euo", "pipefail", "-c", block.code]
    return subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=600)


@requires_tf
@pytest.mark.slow
# Every example is a real run (the census model is trained several times: the first command,
# the detached job, the API, the preemption rehearsal, the pipeline): more than the default 600 s
# on a loaded 2-core machine.
@pytest.mark.timeout(1800)
def test_every_readme_example_runs_in_order(tmp_path: Path, emulator: Any, kube: FakeKube, monkeypatch: pytest.MonkeyPatch) -> None:
    work = tmp_path / "work"
    work.mkdir()
    kubeconfig = kube.write_kubeconfig(tmp_path / "kubeconfig")
    with FakeVertex(projects=("my-project",)) as vertex:
        env = reader_environment(tmp_path, dict(os.environ))
        env.update(
            TFJOB_API_ENDPOINT=vertex.endpoint,
            # Application-default credentials whose token endpoint is the stand-in, as a user has ADC.
            GOOGLE_APPLICATION_CREDENTIALS=str(write_service_account(tmp_path / "adc.json", f"{vertex.endpoint}/token", "my-project")),
            TFJOB_POLL_INTERVAL="0.02",
            KUBECONFIG=str(kubeconfig),
        )
        # The key file the README's credentials example reads (its token endpoint is the stand-in).
        write_service_account(work / "sa.json", f"{vertex.endpoint}/token", "my-project")
        blocks = readme_blocks()
        main = blocks[0]  # the first command, install included; blocks[1] is the test command (.ci/run)
        session = [b for b in [main, *blocks[2:]] if b.run and not b.containers and b.lang in ("sh", "python")]
        script = tmp_path / "readme-session.sh"
        script.write_text(reader_session(session, tmp_path))
        done = subprocess.run(["bash", str(script)], cwd=work, env=env, capture_output=True, text=True, timeout=1700)
        outputs = split_session(done, len(session))
        if done.returncode != 0:
            failed = session[len(outputs) - 1] if outputs else session[0]
            last = outputs[-1] if outputs else done
            raise AssertionError(
                f"README example failed:\n{failed.code}\n--- stdout\n{last.stdout[-4000:]}\n--- stderr\n{last.stderr[-4000:]}"
            )
        assert len(outputs) == len(session)
        # The reader's venv holds what the README installed, and nothing else: not the test extra's.
        site = next((work / ".venv" / "lib").glob("python3*/site-packages"))
        assert (site / "tensorflow").is_dir() and (site / "optuna").is_dir() and (site / "matplotlib").is_dir()
        assert not (site / "pytest").exists() and not (site / "hypothesis").exists()

        # What the examples promise, checked on what they left behind.
        census = work / "runs" / "census"
        assert sorted(p.name for p in (census / "checkpoints").glob("ckpt-200*"))
        metrics = json.loads((census / "eval" / "metrics.json").read_text())
        assert 0.0 <= metrics["accuracy"] <= 1.0 and metrics["loss"] == metrics["loss"]
        assert (census / "model" / "saved_model.pb").is_file()
        # After the job: its outputs listed, its curves drawn, its report page written.
        assert any(f"model       {census / 'model'}" in o.stdout and "saved_model  model/saved_model.pb" in o.stdout for o in outputs)
        assert any("\nlog dir" in o.stdout and "eval   accuracy" in o.stdout for o in outputs)
        assert (work / "census-metrics.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        page = (work / "census-report.html").read_text()
        assert "SUCCEEDED" in page and "ps-1" in page and "<svg" in page and "<script" not in page
        assert "SUCCEEDED" in outputs[0].stderr
        created = vertex.created_bodies()
        assert len(created) == 2  # the CLI's submit, and the Job given its own credentials
        assert all([int(p["replicaCount"]) for p in body["jobSpec"]["workerPoolSpecs"]] == [1, 4, 2] for body in created)
        assert any(o.stdout.strip() == "SUCCEEDED" for o in outputs)
        assert [key[0] for key in kube.tfjobs] == ["default"]
        assert sorted(p.name for p in (work / "runs" / "tune").iterdir()) == ["1", "2"]
        _the_study_read_each_trials_census_accuracy(work)
        # Preemption (issue 29): worker-1 preempted by `tfjob preempt`, restarted in place, the job SUCCEEDED.
        preempted = next(o for o in outputs if "preempting worker-1 of job" in o.stderr)
        assert re.search(r"^  worker-1\s+STOPPED\s+\S+\s+\S+\s+[12]\b", preempted.stdout, re.M), preempted.stdout
        assert "SUCCEEDED" in preempted.stdout and "preempting worker-1 (tfjob preempt)" in preempted.stdout
        # ClusterCoordinator runs a step at least once: a preempted worker's step in flight may have reached
        # the ps and run again elsewhere (tests/test_preemption_tf.py), so 200 steps, or one more per preemption.
        assert 200 <= json.loads((work / "runs" / "preempted" / "eval" / "metrics.json").read_text())["global_step"] <= 202
        # In a pipeline: the step trained and exported, the next step loaded the model and read its metrics.
        assert (work / "runs" / "pipeline" / "model" / "saved_model.pb").is_file()
        pipeline = json.loads((work / "runs" / "pipeline" / "eval" / "metrics.json").read_text())
        assert any(o.stdout.strip().endswith(f"accuracy {pipeline['accuracy']}") for o in outputs)
        assert "comp-tfjob-train" in (work / "census-pipeline.yaml").read_text()
        _the_pipeline_step_as_kfp_recorded_it(work, outputs)
        # From a notebook (run here as a script; tests/test_remote_notebook.py runs it as a notebook cell):
        # the function trained on 1+2+1, its submitted call came back through get_job, its ValueError as itself.
        function = next(o for o in outputs if "raised: ValueError bad lr" in o.stdout)
        assert "metrics {'loss': [" in function.stdout and "/job:ps/" in function.stdout and "\nmse " in function.stdout
        # Last, as it evaluates and exports runs/census again: the census template's own README on this run.
        _the_census_template_readme_on_the_first_commands_job(work, main, env)


def _the_study_read_each_trials_census_accuracy(work: Path) -> None:
    """The README's study is the suite's real census tuning (tests/test_tune_local.py and
    test_tune_parts.py hold the algorithms and the files): each trial trained in its own job dir,
    and the study's metric is the accuracy that trial's evaluation wrote."""
    from tfjob.runtime.store import JobStore

    with JobStore() as store:
        (study,) = [r for r in store.list() if r.extra.get("kind") == "study"]
    trials = study.extra["trials"]
    assert [t["state"] for t in trials] == ["SUCCEEDED", "SUCCEEDED"], trials
    for trial in trials:
        evaluated = json.loads((work / "runs" / "tune" / trial["id"] / "eval" / "metrics.json").read_text())
        assert evaluated["global_step"] == 40
        assert trial["metric"] == pytest.approx(evaluated["accuracy"]) and 0.0 <= trial["metric"] <= 1.0
        assert 0.001 <= trial["params"]["learning-rate"] <= 0.1
    assert study.extra["best"]["metric"] == max(t["metric"] for t in trials)


def _the_pipeline_step_as_kfp_recorded_it(work: Path, outputs: list[subprocess.CompletedProcess[str]]) -> None:
    """The README's pipeline is the suite's real two-step kfp.local run (tests/test_pipelines.py has the
    compiled spec, a failing job and a cancelled step): the training step's job ran 1+2+1 to the end,
    its lines are the step's log, and its artifacts are the job's own SavedModel and final metrics."""
    from tfjob import get_job

    job_dir = work / "runs" / "pipeline"
    (found,) = sorted((work / "runs" / "pipeline-root").glob("*/tfjob-train/executor_output.json"))
    recorded = json.loads(found.read_text())
    job_id = recorded["parameterValues"]["job_id"]
    assert recorded["parameterValues"] == {"job_id": job_id, "backend": "local"}
    status = get_job(job_id).status()
    assert status.state.value == "SUCCEEDED"
    assert sorted(t.name for t in status.tasks) == ["chief-0", "ps-0", "worker-0", "worker-1"]
    written = json.loads((job_dir / "eval" / "metrics.json").read_text())
    assert written["global_step"] == 8
    run = next(o for o in outputs if o.stdout.strip().endswith(f"accuracy {written['accuracy']}"))
    assert "[chief-0]" in run.stdout + run.stderr and "[worker-1]" in run.stdout + run.stderr  # the job's lines: the step's log
    model = recorded["artifacts"]["model"]["artifacts"][0]
    assert Path(work, model["uri"]).resolve() == (job_dir / "model").resolve()  # the exported SavedModel, not a copy
    assert model["metadata"] == {"framework": "tensorflow", "format": "SavedModel", "job_id": job_id, "backend": "local"}
    logged = recorded["artifacts"]["metrics"]["artifacts"][0]["metadata"]
    assert logged["accuracy"] == pytest.approx(written["accuracy"]) and logged["auc"] == pytest.approx(written["auc"])


def _the_census_template_readme_on_the_first_commands_job(work: Path, main: Block, env: dict[str, str]) -> None:
    """The census-ps template's README (my_trainer/README.md): its local command is the README's first
    command — the same 1+4+2 job of 200 steps, named from inside the trainer — so the census model is
    trained once per run, here, and the template's other local examples read that job: its prediction
    snippet loads the model, and the one-process command finds it trained (it resumes at step 200,
    evaluates and exports without a training epoch)."""
    trainer, job_dir = work / "my_trainer", work / "runs" / "census"
    readme = (trainer / "README.md").read_text()
    commands = census_template.readme_commands(readme)
    (submit,) = [step.removeprefix(".venv/bin/") for step in command_line(main).split(" && ") if step.startswith(".venv/bin/tfjob submit ")]
    assert shlex.split(commands[0]) == shlex.split(submit.replace(" my_trainer ", " . ").replace("runs/census", "../census-job"))
    census_template.assert_trained(job_dir, 200, predict=False)
    (work / "census-job").symlink_to(job_dir)  # the template README's ../census-job, seen from my_trainer
    (snippet,) = census_template.readme_blocks(readme, "python")
    predicted = subprocess.run([sys.executable, "-c", snippet], cwd=trainer, env=env, capture_output=True, text=True, timeout=180)
    assert predicted.returncode == 0, predicted.stderr[-3000:]
    assert "probabilities" in predicted.stdout and "classes" in predicted.stdout
    alone = shlex.split(commands[1])
    assert alone[:3] == ["python", "-m", "trainer.task"]
    quiet = {**env, "CLOUD_ML_HP_METRIC_FILE": str(work.parent / "hypertune" / "output.metrics")}  # not in /tmp
    rerun = subprocess.run([sys.executable, *alone[1:]], cwd=trainer, env=quiet, capture_output=True, text=True, timeout=300)
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    assert "at step 200" in rerun.stderr and "Epoch" not in rerun.stdout  # already trained: evaluates, exports
    assert json.loads((job_dir / "eval" / "metrics.json").read_text())["resumed_from_step"] == 200


@requires_tf
@pytest.mark.slow
@pytest.mark.containers
def test_the_readme_container_section_runs(tmp_path: Path, base_image: str, podman_env: dict[str, str], kube: FakeKube) -> None:
    """The README's container block, as written: from `tfjob init --template custom-container` to a
    local 1+2+1 container cluster, then the pushed digest on Vertex AI (the stand-in) and on
    Kubernetes (the fake API server) — with real podman and a real registry as $REPO."""
    import shlex

    import podman_ci
    import registry_ci

    registry_ci.ensure()
    (block,) = [b for b in readme_blocks() if b.containers]
    work = tmp_path / "work"
    work.mkdir()
    registry = registry_ci.start(tmp_path / "registry")
    repo = f"{registry.host}/readme/census"
    try:
        with FakeVertex(projects=("my-project",)) as vertex:
            env = {**podman_env, "TFJOB_HOME": os.environ["TFJOB_HOME"], "PATH": f"{BIN}{os.pathsep}{podman_env.get('PATH', '')}",
                   "REPO": repo, "TFJOB_API_ENDPOINT": vertex.endpoint, "TFJOB_POLL_INTERVAL": "0.02",
                   "GOOGLE_APPLICATION_CREDENTIALS": str(write_service_account(tmp_path / "adc.json", f"{vertex.endpoint}/token", "my-project")),
                   "KUBECONFIG": str(kube.write_kubeconfig(tmp_path / "kubeconfig")),
                   "TFJOB_BUILD_FLAGS": shlex.join(podman_ci.BUILD_FLAGS)}  # fmt: skip
            done = _run(block, work, env)
            assert done.returncode == 0, f"README example failed:\n{block.code}\n--- stderr\n{done.stderr[-4000:]}"
            created = vertex.created_bodies()
        refs = set(re.findall(rf"{re.escape(repo)}@sha256:[0-9a-f]{{64}}", done.stderr))
        assert len(refs) == 1, done.stderr[-3000:]
        (reference,) = refs
        assert "SUCCEEDED: chief-0 exited with code 0" in done.stderr
        assert list((work / "runs" / "census-image").rglob("saved_model.pb"))
        assert len(created) == 1 and {p["containerSpec"]["imageUri"] for p in created[0]["jobSpec"]["workerPoolSpecs"]} == {reference}
        ((_, job),) = kube.tfjobs.items()
        assert {c["image"] for r in job["spec"]["tfReplicaSpecs"].values() for c in r["template"]["spec"]["containers"]} == {reference}
        assert done.stderr.count("nothing to build or push") == 2  # the cloud submits pushed nothing
    finally:
        registry.stop()
        listed = subprocess.run(
            ["podman", "images", "-q", "--filter", "label=dev.tfjob.build.key"], capture_output=True, text=True, env=podman_env
        )
        podman_ci.remove_images(podman_env, *sorted(set(listed.stdout.split())))


def test_the_cleaning_up_section_runs(tmp_path: Path) -> None:
    """The section "Cleaning up", run as written: the job's record and directory go; the prunes list, then remove, nothing newer than 30 days."""
    [block] = readme_section_blocks("### Cleaning up")
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
    done = subprocess.run(["bash", "-euo", "pipefail", "-c", block], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    home = Path(os.environ["TFJOB_HOME"])
    job_id = done.stdout.split()[-1]
    assert "would remove 0 jobs, 0 B" in done.stderr and "removed 0 jobs, 0 B" in done.stderr
    assert "freed" in done.stderr and not (home / "jobs" / job_id).exists()
    assert not any((home / "jobs").iterdir())
    assert subprocess.run([str(BIN / "tfjob"), "list", "--json"], env=env, capture_output=True, text=True).stdout.strip() == "[]"
