"""The README's section "In production: quota, failover and price", run verbatim, in order,
in one directory: the Vertex AI stand-in (``TFJOB_API_ENDPOINT``, application-default
credentials whose token endpoint is the stand-in) and gcp-storage-emulator (bucket
``my-bucket``), the stand-in scripted to answer the first job with a stockout."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import test_readme
from helpers import BIN, readme_section_blocks, run_shell_blocks
from fakes.vertex_api import FakeVertex, shell_env

SECTION = "### In production: quota, failover and price"
#: gcp-storage-emulator with bucket ``my-bucket`` (project ``my-project``), as the whole-README test has it.
bucket = test_readme.emulator


def test_the_production_section_runs_as_written(tmp_path: Path, bucket: Any) -> None:
    blocks = readme_section_blocks(SECTION)
    assert len(blocks) == 3
    work = tmp_path / "work"
    work.mkdir()
    with FakeVertex(projects=("my-project",)) as vertex:
        vertex.next_jobs.append((("JOB_STATE_QUEUED", "JOB_STATE_PENDING", "JOB_STATE_FAILED"),
                                 {"code": 8, "message": "Resources are insufficient in region: us-central1. Please try a different region."}))  # fmt: skip
        env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}", **shell_env(vertex, tmp_path, "my-project")}
        price, refused, failover = run_shell_blocks(blocks, work, env)
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
