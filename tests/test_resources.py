"""A replica's neutral :class:`tfjob.Resources` (issue 35 item 2), read by each platform in its own
terms: Kubernetes renders requests and limits (the accelerator an extended resource, GKE's node
selector only on a GKE cluster), Vertex AI and AI Platform choose the smallest Compute Engine
machine that fits (or check the one hinted), and the local backend runs the job and says in one
line what it ignores."""

from __future__ import annotations

import json
import subprocess
import warnings
from pathlib import Path
from typing import Any

import pytest
from helpers import write_trainer

from tfjob import AIPlatform, Job, JobSet, Kubernetes, Replicas, Resources, SpecError, Vertex
from tfjob.description.resources import choose_machine
from tfjob.description.spec import JobSpec

IMAGE = "us-docker.pkg.dev/p/trainers/t:1"
L4_WORKERS = Replicas(2, resources=Resources(cpu=4, memory="16Gi", accelerator="NVIDIA_L4:1"))


@pytest.fixture(autouse=True)
def trainer(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """``trainer/``, a trainer package in the working directory (what the jobs here run)."""
    write_trainer(tmp_path / "trainer", "import json, os\nprint('task', json.loads(os.environ['TF_CONFIG'])['task']['type'], flush=True)\n")
    monkeypatch.chdir(tmp_path)
    return tmp_path / "trainer"


def _pod_specs(manifest: Any) -> dict[str, dict[str, Any]]:
    """Every pod spec of a rendered Kubernetes job, by replica name (JobSet: replicatedJobs; TFJob: tfReplicaSpecs)."""
    if manifest.get("kind") == "List":  # the job with what it ships (a ConfigMap of the packages)
        (manifest,) = [item for item in manifest["items"] if item["kind"] in ("JobSet", "TFJob")]
    spec = manifest["spec"]
    if "replicatedJobs" in spec:
        return {j["name"]: j["template"]["spec"]["template"]["spec"] for j in spec["replicatedJobs"]}
    return {name.lower(): r["template"]["spec"] for name, r in spec["tfReplicaSpecs"].items()}


def test_a_jobset_s_worker_pods_ask_for_the_resources_and_a_gke_node() -> None:
    job = Job("trainer", "trainer.task", image=IMAGE, workers=L4_WORKERS, backend=JobSet(namespace="ml"))
    pods = _pod_specs(job.render())
    (worker,) = pods["worker"]["containers"]
    assert worker["resources"] == {
        "requests": {"cpu": "4", "memory": "16Gi"},
        "limits": {"cpu": "4", "memory": "16Gi", "nvidia.com/gpu": 1},
    }
    assert pods["worker"]["nodeSelector"] == {"cloud.google.com/gke-accelerator": "nvidia-l4"}
    # The chief asked for nothing of its own: the machine type's amounts, as before, no accelerator.
    assert pods["chief"]["containers"][0]["resources"]["limits"] == {"cpu": "4", "memory": "15360Mi"}
    assert "nodeSelector" not in pods["chief"]


def test_on_a_generic_cluster_the_accelerator_resource_alone_places_the_pod() -> None:
    for platform in (JobSet(namespace="ml", cluster_kind="generic"), Kubernetes(namespace="ml", cluster_kind="generic")):
        pods = _pod_specs(Job("trainer", "trainer.task", image=IMAGE, workers=L4_WORKERS, backend=platform).render())
        assert pods["worker"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] == 1
        assert "nodeSelector" not in pods["worker"], platform
    with pytest.raises(SpecError, match=r"^cluster_kind='eks' is not known; choose gke or generic$"):
        Job("trainer", "trainer.task", image=IMAGE, workers=L4_WORKERS, backend=JobSet(cluster_kind="eks")).render()


def test_kubernetes_quantities_and_tpus() -> None:
    asked = Replicas(1, resources=Resources(cpu=0.5, memory="512Mi"))
    pods = _pod_specs(Job("trainer", "trainer.task", image=IMAGE, workers=asked, backend=Kubernetes()).render())
    assert pods["worker"]["containers"][0]["resources"] == {
        "requests": {"cpu": "500m", "memory": "512Mi"},
        "limits": {"cpu": "500m", "memory": "512Mi"},
    }
    tpu = Replicas(1, resources=Resources(accelerator="TPU_V5_LITEPOD:4"))
    pods = _pod_specs(Job("trainer", "trainer.task", image=IMAGE, workers=tpu, backend=JobSet()).render())
    assert pods["worker"]["containers"][0]["resources"] == {"limits": {"google.com/tpu": 4}}
    assert pods["worker"]["nodeSelector"] == {
        "cloud.google.com/gke-tpu-accelerator": "tpu-v5-lite-podslice",
        "cloud.google.com/gke-tpu-topology": "2x2",
    }
    legacy_tpu = Replicas(1, resources=Resources(accelerator="TPU_V3:8"))
    with pytest.raises(
        SpecError,
        match=r"^workers=Replicas\(…, resources='TPU_V3'\) is not offered to Kubernetes pods; use an NVIDIA GPU or TPU_V5_LITEPOD",
    ):
        Job("trainer", "trainer.task", image=IMAGE, workers=legacy_tpu, backend=JobSet()).render()


def test_vertex_names_the_smallest_machine_that_fits(capsys: pytest.CaptureFixture[str]) -> None:
    job = Job("trainer", "trainer.task", workers=L4_WORKERS, backend=Vertex(project="p", region="us-central1"))
    body = job.render()
    chief, workers = body["jobSpec"]["workerPoolSpecs"]
    assert chief["machineSpec"] == {"machineType": "n1-standard-4"}
    assert workers["machineSpec"] == {"machineType": "g2-standard-4", "acceleratorType": "NVIDIA_L4", "acceleratorCount": 1}
    assert workers["replicaCount"] == "2"
    said = capsys.readouterr().err
    assert (
        "tfjob: worker replicas run on g2-standard-4 with NVIDIA_L4:1, the smallest machine type for "
        "cpu=4, memory=16Gi, accelerator=NVIDIA_L4:1\n" in said
    )
    # AI Platform reads the same resources in its own terms.
    legacy = Job("trainer", "trainer.task", workers=Replicas(2, resources=Resources(cpu=8, memory="30Gi")), backend=AIPlatform(project="p"))
    assert legacy.render()["trainingInput"]["workerType"] == "n1-standard-8"


@pytest.mark.parametrize(
    "resources, machine, accelerator",
    [
        (Resources(cpu=4, memory="16Gi"), "n2-standard-4", None),
        (Resources(cpu=2), "n2-standard-2", None),
        (Resources(memory="100Gi"), "n1-highmem-16", None),
        (Resources(accelerator="NVIDIA_L4:1"), "g2-standard-4", ("NVIDIA_L4", 1)),
        (Resources(cpu=10, accelerator="NVIDIA_L4:1"), "g2-standard-12", ("NVIDIA_L4", 1)),
        (Resources(accelerator="NVIDIA_TESLA_T4:2", memory="40Gi"), "n1-highmem-8", ("NVIDIA_TESLA_T4", 2)),
        (Resources(accelerator="TPU_V5_LITEPOD:4"), "ct5lp-hightpu-4t", None),
        (Resources(cpu=16, machine_type="n2-standard-16"), "n2-standard-16", None),
    ],
)
def test_the_machine_chosen_for_what_a_replica_asks(resources: Resources, machine: str, accelerator: tuple[str, int] | None) -> None:
    chosen = choose_machine(resources)
    assert chosen.type == machine
    assert (None if chosen.accelerator is None else (chosen.accelerator.type, chosen.accelerator.count)) == accelerator


def test_a_replica_that_fits_no_machine_or_not_its_hinted_one_is_one_line() -> None:
    too_big = Replicas(1, resources=Resources(cpu=4, memory="16Ti"))
    with pytest.raises(
        SpecError, match=r"^workers=Replicas\(…, resources='cpu=4, memory=16Ti'\) fits no Compute Engine machine type tfjob knows; "
    ):
        Job("trainer", "trainer.task", workers=too_big, backend=Vertex(project="p")).render()
    hint = Replicas(1, resources=Resources(cpu=8, machine_type="n2-standard-4"))
    with pytest.raises(
        SpecError, match=r"'cpu=8, machine_type=n2-standard-4'\) does not fit machine type n2-standard-4 \(4 CPUs, 16 GB\); ask for less"
    ):
        Job("trainer", "trainer.task", workers=hint, backend=Vertex(project="p")).render()
    typo = Replicas(1, resources=Resources(machine_type="n2-standrd-4"))
    with pytest.raises(
        SpecError, match=r"^workers=Replicas\(…, resources='n2-standrd-4'\) is not known \(did you mean 'n2-standard-4'\?\)"
    ):
        Job("trainer", "trainer.task", workers=typo, backend=Vertex(project="p")).render()
    # The same job is a Kubernetes job's business only in Kubernetes terms: the hint is not checked there.
    assert Job("trainer", "trainer.task", image=IMAGE, workers=typo, backend=JobSet()).render()


@pytest.mark.parametrize(
    "given, message",
    [
        ({"cpu": 0}, r"^cpu=0 must be more than 0 and at most 100000 CPUs$"),
        ({"cpu": True}, r"^cpu=True must be a number of CPUs"),
        ({"cpu": "4 cores"}, r"^cpu='4 cores' is not a number of CPUs \(4, 0.5\) or a Kubernetes quantity \(500m\)$"),
        ({"memory": "16GB"}, r"^memory='16GB' is not a Kubernetes quantity \(16Gi, 512Mi, 8G\)$"),
        ({"memory": 16}, r"^memory=16 must be a Kubernetes quantity"),
        ({"accelerator": "NVIDIA_L5:1"}, r"^accelerator='NVIDIA_L5' is not known \(did you mean 'NVIDIA_L4'\?\)"),
    ],
)
def test_resources_are_checked_when_made(given: dict[str, Any], message: str) -> None:
    with pytest.raises(SpecError, match=message):
        Resources(**given)


def test_resources_and_a_machine_type_for_the_same_role_are_refused() -> None:
    with pytest.raises(SpecError, match=r"^workers=Replicas\(…, resources=…\) and workers=Replicas\(…, machine_type=…\) both say what"):
        Job("trainer", "trainer.task", workers=Replicas(2, machine_type="n1-standard-8", resources=Resources(cpu=4)))


def test_the_spec_keeps_its_resources_through_the_job_store() -> None:
    spec = Job("trainer", "trainer.task", workers=L4_WORKERS).spec
    again = JobSpec.from_dict(json.loads(json.dumps(spec.to_dict())))
    assert again == spec and again.pool("worker").resources == L4_WORKERS.resources  # type: ignore[union-attr]


def test_cli_flags_ask_for_a_role_s_resources(trainer: Path, tfjob_exe: str) -> None:
    common = [tfjob_exe, "render", str(trainer), "-m", "trainer.task", "--workers", "2"]
    asked = ["--worker-cpu", "4", "--worker-memory", "16Gi", "--worker-accelerator", "NVIDIA_L4:1"]
    vertex = subprocess.run([*common, *asked, "--backend", "vertex", "--project", "p"], capture_output=True, text=True, timeout=120)
    assert vertex.returncode == 0, vertex.stderr
    assert json.loads(vertex.stdout)["jobSpec"]["workerPoolSpecs"][1]["machineSpec"]["machineType"] == "g2-standard-4"
    assert "worker replicas run on g2-standard-4 with NVIDIA_L4:1" in vertex.stderr
    jobset = subprocess.run([*common, *asked, "--image", IMAGE, "--backend", "jobset"], capture_output=True, text=True, timeout=120)
    assert jobset.returncode == 0, jobset.stderr
    limits = _pod_specs(json.loads(jobset.stdout))["worker"]["containers"][0]["resources"]["limits"]
    assert limits == {"cpu": "4", "memory": "16Gi", "nvidia.com/gpu": 1}
    wrong = subprocess.run(
        [*common, "--worker-memory", "16GB", "--backend", "jobset", "--image", IMAGE], capture_output=True, text=True, timeout=120
    )
    assert (wrong.returncode, wrong.stderr) == (2, "error: --worker-memory '16GB' is not a Kubernetes quantity (16Gi, 512Mi, 8G)\n")


def test_a_local_run_runs_and_says_what_it_ignores(trainer: Path, tfjob_exe: str) -> None:
    argv = [tfjob_exe, "submit", str(trainer), "-m", "trainer.task", "--workers", "2",
            "--worker-cpu", "4", "--worker-memory", "16Gi", "--worker-accelerator", "NVIDIA_L4:1"]  # fmt: skip
    done = subprocess.run(argv, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    ignored = [line for line in done.stderr.splitlines() if "ignores" in line]
    assert ignored == [
        "tfjob: warning: the local backend runs every task on this machine and ignores the resources asked for: "
        "worker (cpu=4, memory=16Gi, accelerator=NVIDIA_L4:1)"
    ]
    assert "task chief" in done.stderr and "chief-0   SUCCEEDED" in done.stderr and "worker-1" in done.stderr
    # And from Python: the job runs, the same line a warning.
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        status = Job(str(trainer), "trainer.task", workers=L4_WORKERS, quiet=True).run(timeout=300)
    assert status.state.value == "SUCCEEDED"
    assert [str(w.message) for w in seen if "ignores" in str(w.message)] == [ignored[0].removeprefix("tfjob: warning: ")]


def test_locally_an_accelerator_without_a_machine_type_is_asked_for_not_checked_against_n1() -> None:
    """``--worker-accelerator NVIDIA_L4:1`` alone: the default n1 machine takes no L4, which only
    Vertex AI and AI Platform need to know; the local backend takes it and says it ignores it."""
    with pytest.warns(
        UserWarning, match=r"ignores the resources asked for: chief \(accelerator=NVIDIA_L4:1\); worker \(accelerator=NVIDIA_L4:1\)$"
    ):
        job = Job("trainer", "trainer.task", workers=1, accelerator="NVIDIA_L4:1")
        job.render()
    assert [p.resources for p in job.spec.pools] == [Resources(accelerator="NVIDIA_L4:1")] * 2
    with pytest.raises(SpecError, match=r"^workers=Replicas\(…, accelerator='NVIDIA_L5'\) is not known"):
        Job("trainer", "trainer.task", workers=Replicas(1, accelerator="NVIDIA_L5"))
    # On Vertex AI the same job is a machine to check: the default n1 takes no L4.
    with pytest.raises(SpecError, match=r"cannot take accelerator NVIDIA_L4"):
        Job("trainer", "trainer.task", workers=1, accelerator="NVIDIA_L4:1", backend=Vertex(project="p"))
