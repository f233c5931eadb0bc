"""The README's section "In production: quota, failover and price", run verbatim, in order,
in one directory: the Vertex AI stand-in (``TFJOB_API_ENDPOINT``, application-default
credentials whose token endpoint is the stand-in) and gcp-storage-emulator (bucket
``my-bucket``), the stand-in scripted to answer the first job with a stockout."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path
from typing import Any, Iterator

import pytest

from helpers import BIN, ROOT
from fakes.gcs import storage_emulator
from fakes.vertex_api import FakeVertex, write_service_account

SECTION = "### In production: quota, failover and price"
_FENCE = re.compile(r"```sh\n(.*?)```", re.S)


def section_blocks() -> list[str]:
    text = (ROOT / "README.md").read_text()
    start = text.index(SECTION)
    end = text.index("\n## ", start)
    return _FENCE.findall(text[start:end])


@pytest.fixture
def bucket(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    with storage_emulator(monkeypatch, "my-project", "my-bucket") as client:
        yield client


def test_the_production_section_runs_as_written(tmp_path: Path, bucket: Any) -> None:
    blocks = section_blocks()
    assert len(blocks) == 3
    work = tmp_path / "work"
    work.mkdir()
    with FakeVertex(projects=("my-project",)) as vertex:
        vertex.next_jobs.append((("JOB_STATE_QUEUED", "JOB_STATE_PENDING", "JOB_STATE_FAILED"),
                                 {"code": 8, "message": "Resources are insufficient in region: us-central1. Please try a different region."}))  # fmt: skip
        env = dict(os.environ)
        env.update(
            PATH=f"{BIN}{os.pathsep}{env.get('PATH', '')}",
            TFJOB_API_ENDPOINT=vertex.endpoint,
            GOOGLE_APPLICATION_CREDENTIALS=str(write_service_account(tmp_path / "adc.json", f"{vertex.endpoint}/token", "my-project")),
            TFJOB_POLL_INTERVAL="0.02",
        )
        done = []
        for code in blocks:
            out = subprocess.run(["bash", "-euo", "pipefail", "-c", code], cwd=work, env=env, capture_output=True, text=True, timeout=600)
            assert out.returncode == 0, f"README example failed:\n{code}\n--- stdout\n{out.stdout}\n--- stderr\n{out.stderr[-4000:]}"
            done.append(out)

        price, refused, failover = done
        # The price: per pool and in total, with the table's date; Spot lowers it; a local job is 0.
        totals = re.findall(r"total\s+\$([\d,.]+)/h on-demand\s+\$([\d,.]+)/h Spot\s+\(this job: ([\w-]+)\)", price.stdout)
        assert [t[2] for t in totals] == ["on-demand", "Spot"] and float(totals[0][1]) < float(totals[0][0].replace(",", ""))
        assert re.search(r"price table of \d{4}-\d{2}-\d{2}", price.stdout) and "for its timeout (24 h): $" in price.stdout
        assert re.search(r"^\s+worker\s+4 x a2-highgpu-1g \+ 1 x NVIDIA_TESLA_A100", price.stdout, re.M)
        assert price.stdout.rstrip().endswith("price: $0.00/h: the job runs on this machine (no platform charge)")
        # --max-cost: one line, exit 2, nothing rendered.
        assert refused.stdout.strip() == "refused (exit 2)"
        [line] = [line for line in refused.stderr.splitlines() if line.startswith("error:")]
        assert "over --max-cost 1" in line
        # Failover: the stockout in us-central1, attempt 2 in us-central1 with the fallbacks... then the job succeeded.
        assert [path.split("/")[5] for method, path, _ in vertex.requests if method == "POST" and path.endswith("/customJobs")] == [
            "us-central1",
            "us-central1",
        ]
        assert re.search(r"^state\s+SUCCEEDED$", failover.stdout, re.M)
        assert re.search(r"^  1  projects/my-project/locations/us-central1/customJobs/\d+  FAILED .* a stockout$", failover.stdout, re.M)
        assert re.search(r"^  2  projects/my-project/locations/us-central1/customJobs/\d+  SUCCEEDED", failover.stdout, re.M)
        assert re.search(r"^cost\s+~\$[\d.]+ \(an estimate: ", failover.stdout, re.M)
        second = vertex.created_bodies()[1]["jobSpec"]["workerPoolSpecs"][1]["machineSpec"]
        assert second["machineType"] == "n1-standard-8"
