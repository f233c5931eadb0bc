"""Failover (issue 37.2): `--region A,B` against the Vertex AI stand-in — a stockout or a quota
refusal in one region becomes attempt 2 of the same tfjob job in the next, every attempt in
`tfjob status`, its JSON and the report; never on the trainer's own failure."""

from __future__ import annotations

import json
import re
from pathlib import Path

from click.testing import CliRunner

import test_vertex_e2e as e2e
from fakes.vertex_api import FakeVertex
from test_vertex_e2e import run, submit_cmd
from tfjob.cli.main import app
from tfjob.model import JobState
from tfjob.runtime.store import JobStore

# The stand-ins of test_vertex_e2e: gcp-storage-emulator (bucket b, in US), the Vertex AI stand-in, a trainer.
emulator, fake, trainer = e2e.emulator, e2e.fake, e2e.trainer
STOCKOUT = "Resources are insufficient in region: us-central1. Please try a different region."
L4 = "aiplatform.googleapis.com/custom_model_training_nvidia_l4_gpus"


def two_regions(tfjob_exe: str, trainer: Path, fake: FakeVertex, *extra: str) -> list[str]:
    cmd = submit_cmd(tfjob_exe, trainer, fake, *extra)
    cmd[cmd.index("us-central1")] = "us-central1,us-east4"
    return cmd


def creates(fake: FakeVertex) -> list[str]:
    return [path for method, path, _ in fake.requests if method == "POST" and path.endswith("/customJobs")]


def test_a_stockout_fails_over_to_the_next_region_as_attempt_2(
    emulator: object, fake: FakeVertex, trainer: Path, tfjob_exe: str, tmp_path: Path
) -> None:
    fake.next_jobs.append((("JOB_STATE_QUEUED", "JOB_STATE_PENDING", "JOB_STATE_FAILED"), {"code": 8, "message": STOCKOUT}))
    out = run(two_regions(tfjob_exe, trainer, fake))
    assert out.returncode == 0, out.stderr
    job_id = out.stdout.strip()
    assert creates(fake) == ["/v1/projects/p/locations/us-central1/customJobs", "/v1/projects/p/locations/us-east4/customJobs"]
    assert re.search(r"attempt 1 ended with a stockout in us-central1: submitted in us-east4 as attempt 2", out.stderr)
    second = fake.created_bodies()[1]
    assert (
        second["displayName"].endswith("-attempt2") and second["jobSpec"] == fake.created_bodies()[0]["jobSpec"]
    )  # the staged package reused

    with JobStore() as store:
        record = store.get(job_id)
    assert record.state is JobState.SUCCEEDED and record.options["region"] == "us-east4"
    attempts = record.extra["attempts"]
    assert [(a["region"], a["state"]) for a in attempts] == [("us-central1", "FAILED"), ("us-east4", "SUCCEEDED")]
    assert attempts[0]["reason"] == "a stockout"
    # The cost is of what ran: the price of us-east4 (the table's us-east4 figures), not us-central1's.
    assert record.extra["price"]["region"] == "us-east4"
    from tfjob.pricing import estimate

    assert record.extra["price"]["per_hour"] == round(estimate(second, region="us-east4").per_hour, 6)
    assert record.extra["price"]["per_hour"] > estimate(second, region="us-central1").per_hour

    runner = CliRunner()
    status = runner.invoke(app, ["status", job_id])
    assert status.exit_code == 0, status.output
    text = status.stdout
    assert "attempts" in text and re.search(r"  1  projects/p/locations/us-central1/customJobs/\d+  FAILED .* a stockout", text)
    assert re.search(r"  2  projects/p/locations/us-east4/customJobs/\d+  SUCCEEDED", text)
    data = json.loads(runner.invoke(app, ["status", job_id, "--json"]).stdout)
    assert [a["region"] for a in data["extra"]["attempts"]] == ["us-central1", "us-east4"]
    page = tmp_path / "r.html"
    assert runner.invoke(app, ["report", job_id, "-o", str(page)]).exit_code == 0
    html = page.read_text()
    assert "<th>attempt 1</th>" in html and "us-central1 FAILED a stockout" in html and "us-east4 SUCCEEDED" in html


def test_a_quota_refusal_at_the_create_goes_to_the_next_region(emulator: object, fake: FakeVertex, trainer: Path, tfjob_exe: str) -> None:
    fake.fail(r"^POST /v1/projects/p/locations/us-central1/customJobs$", 429, f"The following quota metrics exceed quota limits: {L4}")
    out = run(two_regions(tfjob_exe, trainer, fake))
    assert out.returncode == 0, out.stderr
    assert creates(fake) == ["/v1/projects/p/locations/us-central1/customJobs", "/v1/projects/p/locations/us-east4/customJobs"]
    assert "custom_model_training_nvidia_l4_gpus" in out.stderr and "trying us-east4 (attempt 2)" in out.stderr
    with JobStore() as store:
        record = store.get(out.stdout.strip())
    assert [(a["region"], a["state"]) for a in record.extra["attempts"]] == [("us-central1", "REFUSED"), ("us-east4", "SUCCEEDED")]
    assert len(fake.jobs) == 1  # only the accepted create made a job


def test_every_region_refusing_is_one_line(emulator: object, fake: FakeVertex, trainer: Path, tfjob_exe: str) -> None:
    for region in ("us-central1", "us-east4"):
        fake.fail(rf"^POST /v1/projects/p/locations/{region}/customJobs$", 429, f"The following quota metrics exceed quota limits: {L4}")
    out = run(two_regions(tfjob_exe, trainer, fake))
    assert out.returncode == 1
    errors = [line for line in out.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "every candidate of --region / the fallback lists was tried: us-central1; us-east4" in errors[0]
    assert len(creates(fake)) == 2 and "Traceback" not in out.stderr
    with JobStore() as store:
        assert store.list(backend="vertex") == []  # nothing was created, nothing is left pending


def test_the_trainers_own_failure_never_fails_over(emulator: object, fake: FakeVertex, trainer: Path, tfjob_exe: str) -> None:
    own = "The replica workerpool1-0 exited with a non-zero status of 1. Resources are insufficient in region: us-central1."
    fake.next_jobs.append((("JOB_STATE_QUEUED", "JOB_STATE_RUNNING", "JOB_STATE_FAILED"), {"code": 3, "message": own}))
    out = run(two_regions(tfjob_exe, trainer, fake))
    assert out.returncode == 1
    assert len(creates(fake)) == 1 and "attempt 2" not in out.stderr
    # The diagnosis says the same: the trainer failed (its task, its exit code); the stockout is only quoted.
    assert "diagnosis (worker-0): the trainer failed: worker-0 exited with code 1" in out.stderr, out.stderr
    assert "quotes a capacity error (the machines asked for are not available in us-central1 now (a stockout))" in out.stderr
    assert "now (a stockout)\n" not in out.stderr and "--region A,B" not in out.stderr  # no stockout diagnosis, no failover advice
    job_id = next(iter(fake.jobs))
    status = CliRunner().invoke(app, ["status", job_id, "--json"])
    assert status.exit_code == 0, status.output
    data = json.loads(status.stdout)
    assert [d["code"] for d in data["diagnoses"]] == ["trainer-failed"] and data["failure"]["exit_code"] == 1


def test_a_region_the_bucket_cannot_serve_is_refused_before_anything_is_created(
    emulator: object, fake: FakeVertex, trainer: Path, tfjob_exe: str
) -> None:
    cmd = submit_cmd(tfjob_exe, trainer, fake)
    cmd[cmd.index("us-central1")] = "us-central1,europe-west4"
    out = run(cmd)
    assert out.returncode == 2, out.stderr
    assert "staging bucket gs://b is in US, but the job runs in europe-west4" in out.stderr
    assert creates(fake) == []


def test_region_lists_are_checked() -> None:
    runner = CliRunner()
    for value, said in (("us-central1,us-central1", "names a region twice"), ("us-central1,", "has an empty region"),
                        ("us-central1,Mars", "is not a Google Cloud region")):  # fmt: skip
        out = runner.invoke(app, ["render", "--image", "i:1", "--backend", "vertex", "--region", value])
        assert out.exit_code == 2 and said in out.stderr, out.output


def test_an_accelerator_fallback_list_tries_the_next_machines(emulator: object, fake: FakeVertex, trainer: Path, tfjob_exe: str) -> None:
    fake.fail(r"^POST /v1/projects/p/locations/us-central1/customJobs$", 429, f"The following quota metrics exceed quota limits: {L4}")
    lists = ["--worker-accelerator", "NVIDIA_L4:1,NVIDIA_TESLA_T4:1", "--worker-machine-type", "g2-standard-8,n1-standard-8"]
    out = run(submit_cmd(tfjob_exe, trainer, fake, *lists))
    assert out.returncode == 0, out.stderr
    first, second = fake.created_bodies()
    machines = [[p["machineSpec"] for p in body["jobSpec"]["workerPoolSpecs"]] for body in (first, second)]
    # (the REST transport sends the AcceleratorType enum by its number: NVIDIA_L4 11, NVIDIA_TESLA_T4 5)
    assert machines[0][1] == {"machineType": "g2-standard-8", "acceleratorType": 11, "acceleratorCount": 1}
    assert machines[1][1] == {"machineType": "n1-standard-8", "acceleratorType": 5, "acceleratorCount": 1}
    assert machines[0][0] == machines[1][0] and machines[0][2] == machines[1][2]  # the other pools as they were
    assert "trying us-central1 with worker-accelerator NVIDIA_TESLA_T4:1, worker-machine-type n1-standard-8 (attempt 2)" in out.stderr
    with JobStore() as store:
        record = store.get(out.stdout.strip())
    assert [a["state"] for a in record.extra["attempts"]] == ["REFUSED", "SUCCEEDED"]


def test_fallback_lists_in_a_dry_run_and_where_they_are_not_taken(trainer: Path) -> None:
    runner = CliRunner()
    base = ["render", str(trainer), "-m", "trainer.task", "--workers", "2", "--worker-accelerator", "NVIDIA_L4:1,NVIDIA_TESLA_T4:1",
            "--worker-machine-type", "g2-standard-8,n1-standard-8"]  # fmt: skip
    out = runner.invoke(app, [*base, "--backend", "vertex", "--region", "us-central1,us-east4"])
    assert out.exit_code == 0, out.output
    assert json.loads(out.stdout)["jobSpec"]["workerPoolSpecs"][1]["machineSpec"]["acceleratorType"] == "NVIDIA_L4"  # the first choice
    assert ("on a quota refusal or a stockout, tries in turn: us-central1; us-central1 with worker-accelerator NVIDIA_TESLA_T4:1, "
            "worker-machine-type n1-standard-8; us-east4; us-east4 with") in out.stderr  # fmt: skip
    local = runner.invoke(app, [*base, "--backend", "kubeflow", "--image", "i:1"])
    assert local.exit_code == 2 and "lists choices to fall back to, which kubeflow does not try" in local.stderr, local.output
    bad = runner.invoke(app, ["render", "--image", "i:1", "--backend", "vertex", "--worker-accelerator", "NVIDIA_L4:1,NVIDIA_NOPE:1"])
    assert bad.exit_code == 2 and "NVIDIA_NOPE" in bad.stderr and "Traceback" not in bad.output


def test_a_status_read_between_the_attempts_is_not_the_end(emulator: object, fake: FakeVertex, trainer: Path, tfjob_exe: str) -> None:
    fake.next_jobs.append((("JOB_STATE_QUEUED", "JOB_STATE_FAILED"), {"code": 8, "message": STOCKOUT}))
    out = run(two_regions(tfjob_exe, trainer, fake, "--async"))
    assert out.returncode == 0, out.stderr
    job_id = out.stdout.strip()
    runner = CliRunner()
    states = []
    for _ in range(4):  # each read moves the stand-in's job one step: QUEUED, then FAILED (a stockout)
        data = json.loads(runner.invoke(app, ["status", job_id, "--json"]).stdout)
        states.append(data["state"])
    assert "FAILED" not in states and states[-1] == "RUNNING", states
    assert data["message"] == f"a stockout ended attempt 1 in us-central1; `tfjob wait {job_id}` tries the next candidate (us-east4)"
    assert len(creates(fake)) == 1  # a one-shot read makes no attempt
    with JobStore() as store:
        assert store.get(job_id).state is not JobState.FAILED
    # The follow loop (what `tfjob submit` runs, as for --max-restarts; `tfjob wait`: test_failover_detached) makes attempt 2.
    from tfjob.backends.vertex.options import VertexOptions
    from tfjob.backends.vertex.service import follow_job

    assert follow_job(job_id, VertexOptions(project="p"), store=JobStore()).state is JobState.SUCCEEDED
    assert creates(fake)[-1] == "/v1/projects/p/locations/us-east4/customJobs"
    with JobStore() as store:
        assert store.get(job_id).state is JobState.SUCCEEDED
