"""Tuning on Kubernetes (issue 37.5): ``tfjob tune --backend kubeflow|jobset|trainjob``.

The study renders as a Katib ``Experiment`` whose trial template is the job tfjob renders
for the backend — validated against Katib's vendored CRD and, strictly, against Katib's own
API types (its ``swagger.json``), the trial template against its own kind's CRD — and, on a
cluster (the Kubernetes stand-in), runs its trials as jobs of that backend, proposed by the
local study's search, each trial's metric read from the reports the bootstrap echoes to its
chief's log."""

from __future__ import annotations

import io
import json
import math
import os
import re
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any, Callable

import pytest
import yaml
from click.testing import CliRunner

from fakes.kube_api import FakeKube, kube_fixture
from helpers import CRDS, ROOT
from test_render_kubeflow import _strict
from tfjob.cli.main import app
from tfjob.hypertune import ECHO_PREFIX, echo_metric_file, metric_text_from_log, render_metric_line
from tfjob.tuning.metrics import parse_trial_metric

HPARAMS = ROOT / "tests" / "data" / "tune_trainers" / "toy_vertex.yaml"
IMAGE = "us-docker.pkg.dev/proj/trainers/toy:1.0"
KATIB_CRD = CRDS / "kubeflow.org_experiments.yaml"
KATIB_TYPES = CRDS / "katib.v1beta1.swagger.json"
KIND_CRDS = {
    "JobSet": (CRDS / "jobset.x-k8s.io_jobsets.yaml", "v1alpha2"),
    "TFJob": (CRDS / "kubeflow.org_tfjobs.yaml", "v1"),
    "TrainJob": (CRDS / "trainer.kubeflow.org_trainjobs.yaml", "v1alpha1"),
    "ClusterTrainingRuntime": (CRDS / "trainer.kubeflow.org_clustertrainingruntimes.yaml", "v1alpha1"),
}
#: What Katib v0.19's controllers take (its Go constants; swagger.json types them as strings).
KATIB_PARAMETER_TYPES = {"double", "int", "discrete", "categorical"}
KATIB_DISTRIBUTIONS = {"uniform", "logUniform", "normal", "logNormal"}
KATIB_ALGORITHMS = {"random", "grid", "tpe", "multivariate-tpe", "bayesianoptimization", "cmaes", "hyperband"}


def _schema(crd_path: Path, version: str) -> Any:
    crd = yaml.safe_load(crd_path.read_text())
    return next(v for v in crd["spec"]["versions"] if v["name"] == version)["schema"]["openAPIV3Schema"]


def _katib_types_validator() -> Any:
    """Katib's Experiment type, strict: every object of Katib's own types refuses unknown fields;
    the Kubernetes types it names (ObjectMeta, Container, the trial's unstructured object) are
    objects, checked by their own schemas elsewhere."""
    import jsonschema

    doc = json.loads(KATIB_TYPES.read_text())
    definitions = {k: _strict(v) for k, v in doc["definitions"].items()}
    for ref in set(re.findall(r'"#/definitions/([^"]+)"', json.dumps(doc))) - set(definitions):
        definitions[ref] = {"type": "object"}
    return jsonschema.Draft7Validator({"$ref": "#/definitions/v1beta1.Experiment", "definitions": definitions})


def _errors(validator: Any, obj: Any) -> list[str]:
    return [f"{'.'.join(map(str, e.path))}: {e.message}" for e in validator.iter_errors(obj)]


def _dry_run(backend: str, *more: str) -> dict[str, Any]:
    argv = ["tune", "--backend", backend, "--image", IMAGE, "-m", "trainer.task", "--hparams", str(HPARAMS),
            "--max-trials", "4", "--parallel-trials", "2", "--display-name", "toy", "--namespace", "ml", "--dry-run", *more,
            "--", "--train-steps", "20"]  # fmt: skip
    done = CliRunner().invoke(app, argv)
    assert done.exit_code == 0, done.output
    return json.loads(done.stdout)  # type: ignore[no-any-return]


def _substituted(experiment: dict[str, Any], values: dict[str, str], trial: str) -> dict[str, Any]:
    """The trial's job as Katib makes it: each ``${trialParameters.NAME}`` replaced by its value
    (Katib replaces the text), ``${trialSpec.Name}`` by the trial's name."""
    template = experiment["spec"]["trialTemplate"]
    text = json.dumps(template["trialSpec"])
    for parameter in template["trialParameters"]:
        value = trial if parameter["reference"] == "${trialSpec.Name}" else values[parameter["reference"]]
        placeholder = "${trialParameters.%s}" % parameter["name"]
        assert placeholder in text, f"trial parameter {parameter['name']} is not used in the trial template"
        text = text.replace(placeholder, value)
    assert "${" not in text
    job = json.loads(text)
    job["metadata"] = {**job.get("metadata", {}), "name": trial, "namespace": "ml"}
    return job  # type: ignore[no-any-return]


@pytest.mark.parametrize(("backend", "more"), [("jobset", ("--workers", "2")), ("kubeflow", ("--workers", "2")),
                                               ("trainjob", ("--workers", "2", "--no-chief"))])  # fmt: skip
def test_the_dry_run_is_a_katib_experiment_valid_against_katib_and_the_trials_kind(backend: str, more: tuple[str, ...]) -> None:
    import jsonschema

    printed = _dry_run(backend, *more)
    *companions, experiment = printed["items"] if printed["kind"] == "List" else [printed]
    assert (experiment["apiVersion"], experiment["kind"]) == ("kubeflow.org/v1beta1", "Experiment")
    assert _errors(jsonschema.Draft7Validator(_schema(KATIB_CRD, "v1beta1")), experiment) == []
    assert _errors(_katib_types_validator(), experiment) == []
    spec = experiment["spec"]
    assert (spec["maxTrialCount"], spec["parallelTrialCount"], spec["maxFailedTrialCount"]) == (4, 2, 2)
    assert spec["objective"] == {"type": "minimize", "objectiveMetricName": "loss"}
    assert spec["algorithm"]["algorithmName"] in KATIB_ALGORITHMS
    assert {p["parameterType"] for p in spec["parameters"]} <= KATIB_PARAMETER_TYPES
    assert all(p["feasibleSpace"].get("distribution", "uniform") in KATIB_DISTRIBUTIONS for p in spec["parameters"])
    lr = next(p for p in spec["parameters"] if p["name"] == "learning_rate")
    assert lr["feasibleSpace"] == {"min": "0.0001", "max": "0.1", "distribution": "logUniform"}
    # The trainer's reports (tfjob.report_metric / cloudml-hypertune) are the file Katib's File collector reads as JSON.
    assert spec["metricsCollectorSpec"] == {
        "collector": {"kind": "File"},
        "source": {"fileSystemPath": {"path": "/tmp/hypertune/output.metrics", "kind": "File", "format": "JSON"}},
    }
    template = spec["trialTemplate"]
    kind = template["trialSpec"]["kind"]
    assert kind == {"jobset": "JobSet", "kubeflow": "TFJob", "trainjob": "TrainJob"}[backend]
    done_when = {"JobSet": "Completed", "TFJob": "Succeeded", "TrainJob": "Complete"}[kind]
    assert template["successCondition"] == f'status.conditions.#(type=="{done_when}")#|#(status=="True")#'
    assert template["failureCondition"] == 'status.conditions.#(type=="Failed")#|#(status=="True")#'
    assert template["primaryContainerName"] == ("node" if kind == "TrainJob" else "tensorflow")
    assert list(template["primaryPodLabels"].values()) == [{"JobSet": "chief", "TFJob": "chief", "TrainJob": "node"}[kind]]

    job = _substituted(experiment, {"learning_rate": "0.01", "optimizer": "adam"}, "toy-x7k2p")
    crd, version = KIND_CRDS[kind]
    assert _errors(jsonschema.Draft7Validator(_strict(_schema(crd, version))), job) == []
    text = json.dumps(job)
    assert '"--train-steps", "20", "--learning_rate=0.01", "--optimizer=adam"' in text
    assert '{"name": "CLOUD_ML_TRIAL_ID", "value": "toy-x7k2p"}' in text
    for obj in companions:  # a TrainJob's runtime: the same for every trial, without placeholders
        assert "${" not in json.dumps(obj)
        crd, version = KIND_CRDS[obj["kind"]]
        assert _errors(jsonschema.Draft7Validator(_strict(_schema(crd, version))), obj) == []


def test_what_katib_cannot_run_is_one_line() -> None:
    argv = ["tune", "--backend", "trainjob", "--image", IMAGE, "-m", "trainer.task", "--hparams", str(HPARAMS),
            "--workers", "2", "--dry-run"]  # fmt: skip
    done = CliRunner().invoke(app, argv)
    assert done.exit_code == 2
    assert done.stderr.splitlines()[-1].startswith("error: --backend trainjob cannot pass a Katib trial's values to the chief task(s)")
    assert "--backend jobset" in done.stderr and "Traceback" not in done.output


# -- the bootstrap echoes a trial's reports to its log ------------------------------------------
def test_the_bootstrap_echoes_the_trainers_reports_as_it_ends(tmp_path: Path) -> None:
    (tmp_path / "reporter.py").write_text(
        "import tfjob\nfor step, loss in ((10, 0.9), (20, 0.4)):\n    tfjob.report_metric('loss', loss, step=step)\nprint('trained')\n"
    )
    env = {
        **os.environ,
        "TFJOB_ECHO_METRICS": "1",
        "CLOUD_ML_HP_METRIC_FILE": str(tmp_path / "m" / "out.metrics"),
        "CLOUD_ML_TRIAL_ID": "3",
    }
    env.pop("TF_CONFIG", None)
    run = subprocess.run([sys.executable, "-m", "tfjob.container.bootstrap", "--module", "reporter"], cwd=tmp_path, env=env,
                         capture_output=True, text=True, timeout=120)  # fmt: skip
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    assert lines[0] == "trained" and all(line.startswith(ECHO_PREFIX) for line in lines[1:]) and len(lines) == 3
    reading = parse_trial_metric(metric_text_from_log(f"[chief-0] {line}" for line in lines), "loss", maximize=False)
    assert (reading.value, reading.step, reading.reports) == (0.4, 20, 2)
    quiet = subprocess.run([sys.executable, "-m", "tfjob.container.bootstrap", "--module", "reporter"], cwd=tmp_path,
                           env={**env, "TFJOB_ECHO_METRICS": ""}, capture_output=True, text=True, timeout=120)  # fmt: skip
    assert quiet.stdout == "trained\n"


# -- a study whose trials run on the cluster (the Kubernetes stand-in) ---------------------------
@pytest.fixture
def fake(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setenv("TFJOB_POLL_INTERVAL", "0.05")
    yield from kube_fixture(CRDS / "kubeflow.org_tfjobs.yaml", tmp_path, monkeypatch)


def _toy_loss(args: list[str]) -> float:
    """What the toy trainer would report: lowest at learning_rate 0.01 with adam."""
    values = dict(a[2:].split("=", 1) for a in args if a.startswith("--") and "=" in a)
    return (math.log10(float(values["learning_rate"])) + 2) ** 2 + (0.0 if values["optimizer"] == "adam" else 0.5)


class Cluster:
    """The controllers and the trainers: each trial's JobSet made, run, its chief's reports
    echoed to its log by the bootstrap's own code, and completed — one step per look at it."""

    def __init__(self, fake: FakeKube, tmp_path: Path, tag: str = "loss", metric: Callable[[list[str]], float] | None = None) -> None:
        self.fake, self.tmp = fake, tmp_path
        self.tag, self.metric = tag, metric or _toy_loss
        self.live: set[str] = set()
        self.most = 0
        self.losses: dict[str, float] = {}
        self.lock = threading.Lock()

    def script(self, name: str, fail: bool = False) -> None:
        steps = (lambda: self.created(name), lambda: self.fake.advance_jobset("default", name, "Running"),
                 lambda: self.end(name, fail))  # fmt: skip
        self.fake.script("default", name, *steps)

    def created(self, name: str) -> None:
        with self.lock:
            self.live.add(name)
            self.most = max(self.most, len(self.live))
        self.fake.advance_jobset("default", name, "Created")

    def end(self, name: str, fail: bool) -> None:
        chief = self.fake.jobset_pod_name(name, "chief-0")
        container = self.fake.pods[("default", chief)].obj["spec"]["containers"][0]
        env = {e["name"]: e.get("value") for e in container["env"]}
        assert env["TFJOB_ECHO_METRICS"] == "1" and env["CLOUD_ML_TRIAL_ID"] == name.rsplit("-", 1)[1]
        if fail:
            self.fake.write_log("default", chief, "ValueError: diverged\n")
            self.fake.advance_jobset("default", name, "Failed", failed_task="chief-0")
        else:
            loss = self.metric(container["args"])
            metrics = self.tmp / f"{name}.metrics"
            metrics.write_text(render_metric_line(self.tag, loss + 1.0, 10, env["CLOUD_ML_TRIAL_ID"], 1.0) + "\n"
                               + render_metric_line(self.tag, loss, 20, env["CLOUD_ML_TRIAL_ID"], 2.0) + "\n")  # fmt: skip
            out = io.StringIO()
            echo_metric_file({"CLOUD_ML_HP_METRIC_FILE": str(metrics)}, out)
            self.fake.write_log("default", chief, "step 20 done\n" + out.getvalue())
            self.losses[name] = loss
            self.fake.advance_jobset("default", name, "Completed")
        with self.lock:
            self.live.discard(name)


def _tune(kubeconfig: str, *more: str) -> list[str]:
    return ["tune", "--backend", "jobset", "--kubeconfig", kubeconfig, "--image", IMAGE, "-m", "trainer.task",
            "--hparams", str(HPARAMS), "--display-name", "toy", "--seed", "0", *more, "--", "--train-steps", "20"]  # fmt: skip


def test_a_study_of_four_trials_two_at_a_time_runs_on_the_cluster_and_names_its_best(fake: FakeKube, tmp_path: Path) -> None:
    kubeconfig = str(fake.write_kubeconfig(tmp_path / "kubeconfig"))
    cluster = Cluster(fake, tmp_path)
    for i in range(1, 5):
        cluster.script(f"toy-trial-{i}")
    done = CliRunner().invoke(app, _tune(kubeconfig, "--max-trials", "4", "--parallel-trials", "2", "--json"))
    assert done.exit_code == 0, done.output
    result = json.loads(done.stdout)
    assert result["state"] == "SUCCEEDED"
    assert [t["state"] for t in result["trials"]] == ["SUCCEEDED"] * 4
    assert cluster.most == 2  # two at a time, never more
    assert {t["job_id"] for t in result["trials"]} == {f"default/toy-trial-{i}" for i in range(1, 5)}
    best_name = min(cluster.losses, key=lambda n: cluster.losses[n])
    assert result["best"]["job_id"] == f"default/{best_name}"
    assert result["best"]["metric"] == pytest.approx(cluster.losses[best_name]) and result["best"]["step"] == 20
    for trial in result["trials"]:  # each trial ran with its own values, and its last report counted
        args = fake.jobsets[("default", trial["job_id"].split("/")[1])]["spec"]["replicatedJobs"][0]
        args = args["template"]["spec"]["template"]["spec"]["containers"][0]["args"]
        assert args[-3:] == ["20", f"--learning_rate={trial['params']['learning_rate']!r}", f"--optimizer={trial['params']['optimizer']}"]
        assert trial["metric"] == pytest.approx(_toy_loss(args))
    assert f"best trial {result['best']['id']}: loss=" in done.stderr
    shown = CliRunner().invoke(app, ["status", result["id"]])
    assert shown.exit_code == 0, shown.output
    assert "4 of 4 trials, 4 succeeded, 0 failed" in shown.stdout and f"*{result['best']['id']}" in shown.stdout


def test_failed_trials_stop_the_study_at_max_failed_trials(fake: FakeKube, tmp_path: Path) -> None:
    kubeconfig = str(fake.write_kubeconfig(tmp_path / "kubeconfig"))
    cluster = Cluster(fake, tmp_path)
    for i in range(1, 7):
        cluster.script(f"toy-trial-{i}", fail=True)
    done = CliRunner().invoke(app, [*_tune(kubeconfig, "--max-trials", "6", "--parallel-trials", "1", "--max-failed-trials", "2")])
    assert done.exit_code == 1
    assert "2 trials failed, which reaches maxFailedTrials 2" in done.stderr
    assert sorted(n for (_, n) in fake.jobsets) == ["toy-trial-1", "toy-trial-2"]  # no third trial started


def test_async_creates_the_experiment_where_katib_is_served_and_says_how_otherwise(fake: FakeKube, tmp_path: Path) -> None:
    kubeconfig = str(fake.write_kubeconfig(tmp_path / "kubeconfig"))
    argv = _tune(kubeconfig, "--max-trials", "4", "--parallel-trials", "2", "--async")
    refused = CliRunner().invoke(app, argv)
    assert refused.exit_code == 2 and refused.stderr.splitlines()[-1].startswith(
        "error: the cluster does not serve Katib's Experiment (kubeflow.org/v1beta1); install Katib"
    )
    fake.katib_installed = True
    fake.katib_schema = _schema(KATIB_CRD, "v1beta1")
    created = CliRunner().invoke(app, argv)
    assert created.exit_code == 0, created.output
    assert created.stdout == "default/toy\n"
    (experiment,) = fake.experiments.values()
    assert experiment["spec"]["trialTemplate"]["trialSpec"]["kind"] == "JobSet" and not fake.jobsets


def test_tfjob_cancel_stops_the_study_and_deletes_its_running_trials(fake: FakeKube, tmp_path: Path) -> None:
    import time

    from tfjob.runtime.store import JobStore

    kubeconfig = str(fake.write_kubeconfig(tmp_path / "kubeconfig"))
    for i in (1, 2):  # made and running, never ending: only a cancel ends them
        fake.script("default", f"toy-trial-{i}", lambda i=i: fake.advance_jobset("default", f"toy-trial-{i}", "Created"),
                    lambda i=i: fake.advance_jobset("default", f"toy-trial-{i}", "Running"))  # fmt: skip
    cancelled: list[Any] = []

    def cancel_when_both_run() -> None:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if len(fake.jobsets) == 2 and all(j.get("status") is not None for j in fake.jobsets.values()):
                with JobStore() as store:
                    (study,) = [r for r in store.list() if r.extra.get("kind") == "study"]
                cancelled.append(CliRunner().invoke(app, ["cancel", study.id]))
                return
            time.sleep(0.05)

    helper = threading.Thread(target=cancel_when_both_run)
    helper.start()
    done = CliRunner().invoke(app, _tune(kubeconfig, "--max-trials", "4", "--parallel-trials", "2"))
    helper.join()
    assert cancelled and cancelled[0].exit_code == 0, cancelled and cancelled[0].output
    assert done.exit_code != 0 and "was cancelled" in done.stderr and "cancelled by `tfjob cancel`" in done.stderr
    assert fake.jobsets == {}  # both running trials deleted, no other started
    shown = CliRunner().invoke(app, ["status", done.stdout.strip()])
    assert "CANCELLED" in shown.stdout and "2 of 4 trials" in shown.stdout


def test_where_katib_is_served_the_study_is_its_experiment_followed_to_its_best_trial(fake: FakeKube, tmp_path: Path) -> None:
    import time

    kubeconfig = str(fake.write_kubeconfig(tmp_path / "kubeconfig"))
    fake.katib_installed = True
    fake.katib_schema = _schema(KATIB_CRD, "v1beta1")
    losses: dict[str, float] = {}

    def katib() -> None:
        """Katib's controllers: each trial made from the experiment's template (as Katib substitutes
        it), run, and its metric observed from the trainer's reports; then the experiment Succeeded."""
        deadline = time.monotonic() + 120
        while not fake.experiments and time.monotonic() < deadline:
            time.sleep(0.02)
        ((_, experiment),) = fake.experiments.items()
        for i, (rate, optimizer) in enumerate([("0.05", "sgd"), ("0.01", "adam"), ("0.002", "adam"), ("0.03", "sgd")], 1):
            name = f"toy-{i}abc"
            job = _substituted(experiment, {"learning_rate": rate, "optimizer": optimizer}, name)
            args = job["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]["containers"][0]["args"]
            losses[name] = _toy_loss(args)
            with fake._cond:
                fake.trials[("default", name)] = {
                    "apiVersion": "kubeflow.org/v1beta1", "kind": "Trial",
                    "metadata": {"name": name, "namespace": "default", "labels": {"katib.kubeflow.org/experiment": "toy"},
                                 "creationTimestamp": f"2026-01-01T00:00:0{i}Z"},
                    "spec": {"parameterAssignments": [{"name": "learning_rate", "value": rate}, {"name": "optimizer", "value": optimizer}]},
                    "status": {"conditions": [{"type": "Succeeded", "status": "True"}],
                               "observation": {"metrics": [{"name": "loss", "latest": str(losses[name]), "min": "0", "max": "9"}]}},
                }  # fmt: skip
            time.sleep(0.05)
        with fake._cond:
            experiment["status"] = {"conditions": [{"type": "Succeeded", "status": "True", "reason": "ExperimentMaxTrialsReached"}]}

    helper = threading.Thread(target=katib)
    helper.start()
    done = CliRunner().invoke(app, _tune(kubeconfig, "--max-trials", "4", "--parallel-trials", "2", "--json"))
    helper.join()
    assert done.exit_code == 0, done.output
    result = json.loads(done.stdout)
    assert result["state"] == "SUCCEEDED" and not fake.jobsets  # Katib ran the trials, not tfjob
    assert [t["job_id"] for t in result["trials"]] == [f"default/toy-{i}abc" for i in range(1, 5)]
    assert result["best"]["job_id"] == "default/toy-2abc" and result["best"]["params"] == {"learning_rate": 0.01, "optimizer": "adam"}
    assert result["best"]["metric"] == pytest.approx(min(losses.values()))
    assert "Katib Experiment default/toy created" in done.stderr


def test_a_study_whose_process_died_is_lost(fake: FakeKube, tmp_path: Path) -> None:
    import subprocess

    from tfjob.model import JobState
    from tfjob.runtime.store import JobRecord, JobStore, process_start_time

    gone = subprocess.Popen(["true"])
    gone.wait()
    with JobStore() as store:
        record = JobRecord(id="", backend="jobset", name="toy", state=JobState.RUNNING, spec={}, options={},
                           supervisor_pid=gone.pid, supervisor_start=(process_start_time(os.getpid()) or 0) - 1,
                           extra={"kind": "study", "study": {}, "trials": []})  # fmt: skip
        store.add_new(record)
    shown = CliRunner().invoke(app, ["status", record.id, "--json"])
    assert shown.exit_code == 0, shown.output
    status = json.loads(shown.stdout)
    assert status["state"] == "LOST" and f"the process that ran the study (pid {gone.pid}) ended" in status["message"]
