"""Prices from the Cloud Billing Catalog API (issue 37.3): the real google-cloud-billing client
(REST transport) against a local stand-in of the API, through tools/refresh_prices.py and
`tfjob cost --price-table catalog`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Iterator

import pytest

from fakes.billing_api import FakeBilling
from fakes.vertex_api import write_service_account
from helpers import need_in_ci, write_trainer

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def billing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeBilling]:
    import importlib.util

    need_in_ci(importlib.util.find_spec("google.cloud.billing_v1") is not None, "google-cloud-billing (the billing extra) is not installed")
    with FakeBilling() as server:
        monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(write_service_account(tmp_path / "adc.json", f"{server.endpoint}/token")))
        monkeypatch.setenv("TFJOB_BILLING_ENDPOINT", server.endpoint)
        both = ["us-central1", "us-east4"]
        server.add_sku("A1", "Training on N1 Predefined Instance Core running in Americas", 0.035, both)
        server.add_sku("A2", "Training on N1 Predefined Instance Ram running in Americas", 0.005, both, unit="GiBy.h")
        server.add_sku(
            "A3", "Spot Preemptible Training on N1 Predefined Instance Core running in Americas", 0.01, both, usage="Preemptible"
        )
        server.add_sku(
            "A4",
            "Spot Preemptible Training on N1 Predefined Instance Ram running in Americas",
            0.002,
            both,
            unit="GiBy.h",
            usage="Preemptible",
        )
        server.add_sku("A5", "Training on Nvidia Tesla T4 GPU running in Americas", 0.4025, ["us-central1"])
        server.add_sku("A6", "Prediction on Nvidia Tesla T4 GPU running in Americas", 9.0, ["us-central1"])  # not training: left out
        yield server


def test_the_refresh_script_writes_a_table(billing: FakeBilling, tmp_path: Path) -> None:
    out = tmp_path / "prices.json"
    done = subprocess.run([sys.executable, str(ROOT / "tools" / "refresh_prices.py"), "--out", str(out)],
                          capture_output=True, text=True, timeout=120, env=dict(os.environ))  # fmt: skip
    assert done.returncode == 0, done.stderr
    table = json.loads(out.read_text())
    assert table["source"].startswith("Cloud Billing Catalog API (http://127.0.0.1:") and table["date"]
    n1 = table["regions"]["us-central1"]["machines"]["n1-standard-4"]
    assert n1 == [pytest.approx(4 * 0.035 + 15 * 0.005), pytest.approx(4 * 0.01 + 15 * 0.002)]
    assert table["regions"]["us-central1"]["accelerators"] == {"NVIDIA_TESLA_T4": [0.4025, 0.4025]}
    assert table["regions"]["us-east4"]["accelerators"] == {}
    # Paged (2 a page here): every page of SKUs was read, each request with the credentials'
    # bearer token (google-auth signs a service account's JWT itself for a scoped client).
    assert sum("/skus?" in r for r in billing.requests) == 3
    sent = [a for a, r in zip(billing.authorizations, billing.requests) if "/v1/" in r]
    assert len(sent) == 4 and all(a.startswith("Bearer ") and len(a) > 40 for a in sent)


def test_tfjob_cost_reads_the_catalog(billing: FakeBilling, tmp_path: Path, tfjob_exe: str) -> None:
    pkg = write_trainer(tmp_path, "print(1)\n")
    done = subprocess.run([tfjob_exe, "cost", str(pkg), "-m", "trainer.task", "--backend", "vertex", "--workers", "2",
                           "--price-table", "catalog"], capture_output=True, text=True, timeout=120, cwd=tmp_path)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "Cloud Billing Catalog API" in done.stdout
    assert "not in the price table (priced 0): pd-ssd" in done.stdout  # the stand-in has no disk SKU
    per = 4 * 0.035 + 15 * 0.005
    assert f"${3 * per:.3f}/h on-demand" in done.stdout
