"""Quota, rate limiting and capacity told apart (issue 37.1): the classifier on the words each
platform prints, and the real CLI against the Vertex AI stand-in — a quota 429 is one line,
never retried; a rate-limit 429 is retried; a stockout is a diagnosis."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from fakes.vertex_api import FakeVertex
import test_vertex_e2e as e2e
from test_vertex_e2e import run, submit_cmd
from tfjob.results.capacity import classify
from tfjob.cli.main import app
from tfjob.results.diagnosis import diagnose
from tfjob.model import JobState, JobStatus, TaskStatus

L4 = "aiplatform.googleapis.com/custom_model_training_nvidia_l4_gpus"
# The stand-ins of test_vertex_e2e: gcp-storage-emulator (bucket b), the Vertex AI stand-in, a trainer.
emulator, fake, trainer = e2e.emulator, e2e.fake, e2e.trainer
CREATE = r"^POST /v1/projects/p/locations/us-central1/customJobs$"


@pytest.mark.parametrize(
    ("text", "kind", "metric", "limit"),
    [
        (f"The following quota metrics exceed quota limits: {L4}", "quota", L4, None),
        ("Quota exceeded for aiplatform.googleapis.com/custom_model_training_cpus with base model: none. Limit: 24", "quota",
         "aiplatform.googleapis.com/custom_model_training_cpus", "24"),
        ("Quota exceeded for quota metric 'Resource management (CRUD) requests' and limit 'Resource management (CRUD) requests "
         "per minute per region' of service 'aiplatform.googleapis.com'", "rate", "Resource management (CRUD) requests", None),
        ("Quota failure for project p. The request for 8 K80 accelerators exceeds the allowed maximum of 0 K80, 0 P100.", "quota",
         "K80 accelerators", "0"),
        ("Resources are insufficient in region: us-central1. Please try a different region.", "stockout", None, None),
        ("The zone 'projects/p/zones/us-central1-a' does not have enough resources available to fulfill the request. "
         "'(resource type:compute)'. ZONE_RESOURCE_POOL_EXHAUSTED", "stockout", None, None),
        ("0/3 nodes are available: 3 Insufficient nvidia.com/gpu. preemption: 0/3 nodes are available.", "no-fit", "nvidia.com/gpu", None),
        ("couldn't assign flavors to pod set worker: insufficient unused quota for nvidia.com/gpu in flavor a100, 4 more needed",
         "queue", "nvidia.com/gpu in flavor a100", None),
        ('pods "j-worker-0" is forbidden: exceeded quota: compute, requested: requests.nvidia.com/gpu=4, used: '
         "requests.nvidia.com/gpu=0, limited: requests.nvidia.com/gpu=2", "quota", "requests.nvidia.com/gpu (ResourceQuota compute)", "2"),
        ("The replica workerpool1-0 exited with a non-zero status of 1.", None, None, None),
    ],
)  # fmt: skip
def test_the_words_each_platform_prints(text: str, kind: str | None, metric: str | None, limit: str | None) -> None:
    found = classify(text)
    if kind is None:
        assert found is None
        return
    assert found is not None and (found.kind, found.metric, found.limit) == (kind, metric, limit)


def test_error_info_metadata_decides() -> None:
    meta = {
        "quota_metric": L4,
        "quota_limit_value": "2",
        "quota_location": "us-east4",
        "quota_limit": "CustomModelTrainingL4GPUsPerProjectPerRegion",
    }
    found = classify("Quota exceeded.", reason="RESOURCE_QUOTA_EXCEEDED", metadata=meta)
    assert found is not None and (found.kind, found.metric, found.limit, found.region) == ("quota", L4, "2", "us-east4")
    rate = classify(
        "Quota exceeded.", reason="RATE_LIMIT_EXCEEDED", metadata={"quota_metric": "aiplatform.googleapis.com/online_prediction_requests"}
    )
    assert rate is not None and rate.kind == "rate"


def test_a_long_message_is_read_bounded() -> None:
    found = classify("x " * 1_000_000 + f"exceed quota limits: {L4}")
    assert found is None  # beyond the bound: not read


def test_a_quota_429_is_one_line_and_never_retried(emulator: object, fake: FakeVertex, trainer: Path, tfjob_exe: str) -> None:
    fake.fail(CREATE, 429, f"The following quota metrics exceed quota limits: {L4}")
    out = run(submit_cmd(tfjob_exe, trainer, fake, "--worker-accelerator", "NVIDIA_L4:1", "--worker-machine-type", "g2-standard-8"))
    assert out.returncode == 1, out.stderr
    creates = [r for r in fake.requests if r[0] == "POST" and r[1].endswith("/customJobs")]
    assert len(creates) == 1  # no retry
    assert not any(r[0] == "GET" and r[1].endswith("/customJobs") for r in fake.requests)  # nor a look-up: nothing was created
    errors = [line for line in out.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "Traceback" not in out.stderr
    line = errors[0]
    assert "custom_model_training_nvidia_l4_gpus" in line and "us-central1" in line
    assert "request an increase at https://console.cloud.google.com/iam-admin/quotas?project=p&metric=aiplatform.googleapis.com%2F" in line
    assert "--region A,B" in line and "--spot" in line and "rate limiting" not in line
    assert "retry" not in out.stderr


def test_a_rate_limit_429_is_still_retried(emulator: object, fake: FakeVertex, trainer: Path, tfjob_exe: str) -> None:
    fake.fail(CREATE, 429, "Quota exceeded for quota metric 'Resource management (CRUD) requests' and limit "
              "'Resource management (CRUD) requests per minute per region' of service 'aiplatform.googleapis.com'")  # fmt: skip
    out = run(submit_cmd(tfjob_exe, trainer, fake, "--async"))
    assert out.returncode == 0, out.stderr
    assert len(fake.created_bodies()) == 2 and "retry 1" in out.stderr


def test_a_stockout_is_a_diagnosis(emulator: object, fake: FakeVertex, trainer: Path, tfjob_exe: str) -> None:
    fake.next_jobs.append((("JOB_STATE_QUEUED", "JOB_STATE_PENDING", "JOB_STATE_FAILED"),
                           {"code": 8, "message": "Resources are insufficient in region: us-central1. Please try a different region."}))  # fmt: skip
    out = run(submit_cmd(tfjob_exe, trainer, fake))
    assert out.returncode == 1, out.stderr
    assert "diagnosis: the machines asked for are not available in us-central1 now (a stockout)" in out.stderr
    assert "--region A,B" in out.stderr
    job_id = fake.created_bodies() and next(iter(fake.jobs))
    status = CliRunner().invoke(app, ["status", str(job_id), "--json"])
    assert status.exit_code == 0, status.output
    data = json.loads(status.stdout)
    assert [d["code"] for d in data["diagnoses"]] == ["capacity-stockout"]


def test_pending_pods_and_queues_are_diagnosed() -> None:
    pending = JobStatus(id="j", backend="kubeflow", name="j", state=JobState.PENDING,
                        extra={"waiting": "worker-0 Unschedulable: 0/3 nodes are available: 3 Insufficient nvidia.com/gpu."})  # fmt: skip
    [d] = diagnose(pending)
    assert d.code == "no-node-fits" and "nvidia.com/gpu" in d.fix
    task = TaskStatus(
        name="worker-0",
        state=JobState.PENDING,
        reason="Unschedulable: 0/2 nodes are available: 2 node(s) didn't match Pod's node affinity/selector.",
    )
    [d] = diagnose(JobStatus(id="j", backend="jobset", name="j", state=JobState.PENDING, tasks=[task]))
    assert d.code == "no-node-fits" and d.task == "worker-0"
    queued = JobStatus(id="j", backend="jobset", name="j", state=JobState.QUEUED,
                       message="couldn't assign flavors to pod set worker: insufficient unused quota for nvidia.com/gpu in flavor a100, 4 more needed")  # fmt: skip
    [d] = diagnose(queued)
    assert d.code == "queue-not-admitted" and "kueue.x-k8s.io/queue-name" in d.fix
    done = JobStatus(id="j", backend="jobset", name="j", state=JobState.SUCCEEDED, message="Resources are insufficient in region: x")
    assert diagnose(done) == []


def test_the_api_raises_with_the_diagnosis_and_a_capacity_error(emulator: object, fake: FakeVertex, trainer: Path) -> None:
    from tfjob import CapacityError, Job, JobFailedError, Vertex

    def job() -> Job:
        return Job(str(trainer), "trainer.task", workers=1,
                   backend=Vertex(project="p", region="us-central1", staging_bucket="gs://b", api_endpoint=fake.endpoint))  # fmt: skip

    fake.next_jobs.append(
        (("JOB_STATE_QUEUED", "JOB_STATE_FAILED"), {"code": 8, "message": "ZONE_RESOURCE_POOL_EXHAUSTED in us-central1-a"})
    )
    with pytest.raises(JobFailedError, match="ZONE_RESOURCE_POOL_EXHAUSTED") as failed:
        job().run()
    assert [d.code for d in failed.value.diagnoses] == ["capacity-stockout"]
    fake.fail(CREATE, 429, f"The following quota metrics exceed quota limits: {L4}")
    with pytest.raises(CapacityError, match="custom_model_training_nvidia_l4_gpus in us-central1 does not allow this job") as refused:
        job().submit()
    assert refused.value.capacity.kind == "quota" and refused.value.capacity.metric == L4 and refused.value.region == "us-central1"
    assert refused.value.exit_code == 1
