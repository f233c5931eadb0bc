"""The price before a submit and the cost after it (issue 37.3): the shipped table, --dry-run,
`tfjob render` and `tfjob cost`, --spot, --max-cost, a user's table, and the estimated cost of a
finished job in `tfjob status`, its JSON and its report (the Vertex AI stand-in)."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

import test_vertex_e2e as e2e
from fakes.vertex_api import FakeVertex
from test_vertex_e2e import run, submit_cmd
from tfjob.cli.main import app
from tfjob.pricing import SHIPPED, load_table

# The stand-ins of test_vertex_e2e: gcp-storage-emulator (bucket b), the Vertex AI stand-in, a trainer.
emulator, fake, trainer = e2e.emulator, e2e.fake, e2e.trainer
A2 = ["--backend", "vertex", "--workers", "4", "--ps", "2", "--worker-machine-type", "a2-highgpu-1g"]
TOTAL = re.compile(r"total\s+\$([\d,.]+)/h on-demand\s+\$([\d,.]+)/h Spot\s+\(this job: ([\w-]+)")


def cli(tfjob_exe: str, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([tfjob_exe, *args], capture_output=True, text=True, timeout=120, cwd=cwd)


def test_the_shipped_table_says_its_date_and_source() -> None:
    data = json.loads(SHIPPED.read_text())
    assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", data["date"]) and "cloud.google.com/vertex-ai/pricing" in data["source"]
    table = load_table()
    prices = table.regions["us-central1"]
    assert prices["machines"]["n1-standard-4"][0] > prices["machines"]["n1-standard-4"][1] > 0  # on-demand over Spot
    assert "NVIDIA_L4" in prices["accelerators"] and "pd-ssd" in prices["disks"]


def test_dry_run_prices_each_pool_and_spot_lowers_it(trainer: Path, tfjob_exe: str, tmp_path: Path) -> None:
    date = load_table().date
    out = cli(tfjob_exe, "submit", str(trainer), "-m", "trainer.task", *A2, "--dry-run", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    json.loads(out.stdout)  # stdout stays the request
    lines = out.stderr.splitlines()
    assert any(f"price table of {date}" in line for line in lines)
    pools = {line.split()[1]: line for line in lines if re.match(r"tfjob:\s+(chief|worker|ps)\s", line)}
    assert set(pools) == {"chief", "worker", "ps"}
    assert "4 x a2-highgpu-1g + 1 x NVIDIA_TESLA_A100" in pools["worker"] and "2 x n1-standard-4" in pools["ps"]
    on_demand, spot, chosen = TOTAL.search(out.stderr).groups()  # type: ignore[union-attr]
    assert chosen == "on-demand"
    on_spot = cli(tfjob_exe, "render", str(trainer), "-m", "trainer.task", *A2, "--spot", cwd=tmp_path)
    assert on_spot.returncode == 0, on_spot.stderr
    again, spot_again, chosen = TOTAL.search(on_spot.stderr).groups()  # type: ignore[union-attr]
    assert chosen == "Spot" and (again, spot_again) == (on_demand, spot)
    assert float(spot.replace(",", "")) < float(on_demand.replace(",", ""))
    assert json.loads(on_spot.stdout)["jobSpec"]["scheduling"]["strategy"] == "SPOT"


def test_max_cost_refuses_in_one_line(trainer: Path, tfjob_exe: str, tmp_path: Path) -> None:
    out = cli(
        tfjob_exe, "submit", str(trainer), "-m", "trainer.task", *A2, "--dry-run", "--max-cost", "1", "--timeout", "24h", cwd=tmp_path
    )
    assert out.returncode == 2, out.stderr
    errors = [line for line in out.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "Traceback" not in out.stderr and out.stdout == ""
    assert re.search(r"estimate for its timeout 24 h is \$[\d,.]+ .* over --max-cost 1; give a shorter --timeout", errors[0])
    fits = cli(tfjob_exe, "render", str(trainer), "-m", "trainer.task", *A2, "--max-cost", "1000", "--timeout", "24h", cwd=tmp_path)
    assert fits.returncode == 0, fits.stderr


def test_tfjob_cost_text_json_and_local(trainer: Path, tfjob_exe: str, tmp_path: Path) -> None:
    out = cli(tfjob_exe, "cost", str(trainer), "-m", "trainer.task", *A2, "--timeout", "2h", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("price per hour (estimate; USD, us-central1, price table of ")
    assert "for its timeout (2 h): $" in out.stdout
    data = json.loads(cli(tfjob_exe, "cost", str(trainer), "-m", "trainer.task", *A2, "--spot", "-o", "json", cwd=tmp_path).stdout)
    assert data["estimate"] is True and data["strategy"] == "SPOT" and data["per_hour"] == round(data["spot"], 6)
    assert [p["role"] for p in data["pools"]] == ["chief", "worker", "ps"] and data["pools"][1]["replicas"] == 4
    local = cli(tfjob_exe, "cost", str(trainer), "-m", "trainer.task", "--backend", "local", "--workers", "2", cwd=tmp_path)
    assert local.returncode == 0 and local.stdout.strip() == "price: $0.00/h: the job runs on this machine (no platform charge)"


def test_a_users_table_and_a_region_it_lacks(trainer: Path, tfjob_exe: str, tmp_path: Path) -> None:
    mine = tmp_path / "prices.json"
    mine.write_text(json.dumps({"date": "2030-01-01", "source": "mine", "regions": {"europe-west4": {
        "machines": {"n1-standard-4": [1.0, 0.5]}, "accelerators": {}, "disks": {"pd-ssd": [0.0, 0.0]}}}}))  # fmt: skip
    base = ["cost", str(trainer), "-m", "trainer.task", "--backend", "vertex", "--workers", "1"]
    out = cli(tfjob_exe, *base, "--region", "europe-west4", "--price-table", str(mine), cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert "price table of 2030-01-01, mine" in out.stdout and re.search(r"total\s+\$2.00/h on-demand\s+\$1.00/h Spot", out.stdout)
    lacking = cli(tfjob_exe, *base, "--region", "asia-east1", cwd=tmp_path)
    assert lacking.returncode == 0 and "has no prices for asia-east1" in lacking.stdout
    broken = tmp_path / "broken.json"
    broken.write_text("{")
    bad = cli(tfjob_exe, *base, "--price-table", str(broken), cwd=tmp_path)
    assert bad.returncode == 2 and bad.stderr.startswith("error: price table ") and "Traceback" not in bad.stderr


def test_a_finished_job_shows_its_estimated_cost(emulator: object, fake: FakeVertex, trainer: Path, tfjob_exe: str, tmp_path: Path) -> None:
    out = run(submit_cmd(tfjob_exe, trainer, fake))
    assert out.returncode == 0, out.stderr
    job_id = out.stdout.strip()
    runner = CliRunner()
    text = runner.invoke(app, ["status", job_id])
    assert text.exit_code == 0, text.output
    # The stand-in's job ran 55 s (startTime +5 s, endTime +60 s).
    [line] = [line for line in text.stdout.splitlines() if line.startswith("cost ")]
    assert re.fullmatch(r"cost\s+~\$[\d.]+ \(an estimate: 0\.02 h at \$[\d.]+/h, price table of \d{4}-\d{2}-\d{2}\)", line), line
    data = json.loads(runner.invoke(app, ["status", job_id, "--json"]).stdout)
    cost = data["estimated_cost"]
    assert cost["estimate"] is True and cost["hours"] == round(55 / 3600, 4)
    assert cost["cost"] == pytest.approx(cost["per_hour"] * 55 / 3600, abs=1e-3) and cost["per_hour"] > 0
    page = tmp_path / "r.html"
    made = runner.invoke(app, ["report", job_id, "-o", str(page)])
    assert made.exit_code == 0, made.output
    assert "<th>estimated cost</th><td>~$" in page.read_text()


def test_kubernetes_and_ai_platform_are_said_unpriced(tmp_path: Path) -> None:
    runner = CliRunner()
    k8s = runner.invoke(app, ["cost", "-m", "trainer.task", "--image", "r/x:1", "--workers", "2", "--backend", "jobset"])
    assert k8s.exit_code == 0, k8s.output
    assert k8s.stdout.strip() == "price: the cluster's machines are priced by its owner (tfjob has no prices for them)"
    local_max = runner.invoke(app, ["submit", "-m", "trainer.task", "--image", "r/x:1", "--max-cost", "1", "--dry-run"])
    assert local_max.exit_code == 2 and "--max-cost" in local_max.stderr and "Traceback" not in local_max.output
