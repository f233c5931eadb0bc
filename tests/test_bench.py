"""bench/run.py: every figure comes out, finite, with its baseline and target (no speed is asserted here).

``--quick`` runs each section once at small sizes: it checks the plumbing, not the
figures (those are read from a full run: ``.venv/bin/python bench/run.py``).
"""

from __future__ import annotations

import json
import math
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from helpers import ROOT

BENCH = ROOT / "bench"
#: Every figure issue 8 asks for, by key.
FIGURES = {
    "cli": ["cli.help_vs_python", "cli.help_vs_aiplatform", "cli.parse"],
    "vertex": ["vertex.dry_run", "vertex.submit_imports"],
    "bootstrap": ["bootstrap.script", "bootstrap.module"],
    "packaging": ["packaging.sdist", "packaging.deterministic", "packaging.second_upload", "packaging.ignore_linear", "packaging.ignore_1mib"],
    "resubmit": ["resubmit.unchanged", "resubmit.changed"],
    "local": [
        "local.submit_1_4_2", "local.submit_cpu_1_4_2", "local.api_1_4_2", "local.submit_big", "local.teardown",
        "local.launcher_rss_1_4_2", "local.tree_rss_1_4_2", "local.launcher_rss_big", "local.tree_rss_big",
    ],
    "recovery": ["recovery.worker", "recovery.chief"],
    "growth": ["growth.small", "growth.medium", "growth.large", "growth.slope", "growth.cpu_small", "growth.cpu_medium",
               "growth.cpu_large", "growth.cpu_slope"],
    "ps_training": ["ps_training.wall", "ps_training.rss"],
    "scale": ["scale.vertex_render", "scale.kubeflow_render", "scale.tf_config_parse", "scale.local_render"],
}  # fmt: skip
#: The issue's targets: figure key → (kind, bound).
TARGETS = {
    "cli.help_vs_python": ("ratio-max", 3.0),
    "cli.help_vs_aiplatform": ("speedup-min", 10.0),
    "cli.parse": ("overhead-max", 0.020),
    "bootstrap.script": ("overhead-max", 0.060),
    "bootstrap.module": ("overhead-max", 0.060),
    "packaging.deterministic": ("equal", 1.0),
    "packaging.second_upload": ("equal", 0.0),
    "packaging.ignore_linear": ("ratio-max", 1.5),
    "packaging.ignore_1mib": ("max", 2.0),
    "resubmit.unchanged": ("ratio-max", 6.0),
    "resubmit.changed": ("overhead-max", None),  # 0.2 × the bare build + 6 × python -c pass, of the same run
    "local.submit_1_4_2": ("overhead-max", 0.15),
    "local.teardown": ("max", 0.5),
    "growth.slope": ("max", 0.005),
    "scale.vertex_render": ("max", 0.050),
    "scale.kubeflow_render": ("max", 0.050),
    "scale.local_render": ("ratio-max", 1.1),
    "ps_training.wall": ("ratio-max", 1.05),
}


def bench(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(BENCH / "run.py"), *args], capture_output=True, text=True, timeout=timeout, cwd=ROOT)


@pytest.fixture
def common(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    """bench/common.py, imported as bench/run.py imports it."""
    monkeypatch.syspath_prepend(str(BENCH))
    import common as module

    return module


def check_figures(doc: dict[str, Any], sections: list[str]) -> None:
    figures = {f["key"]: f for f in doc["figures"]}
    assert sorted(figures) == sorted(key for s in sections for key in FIGURES[s])
    for key, f in figures.items():
        assert f["section"] == key.split(".")[0] and f["name"]
        samples = [f["sample"]] + ([f["baseline"]] if key != "packaging.deterministic" else [])
        assert f["baseline"] is not None or key == "packaging.deterministic", key
        for sample in samples:
            assert sample["values"] and all(math.isfinite(v) for v in sample["values"]), (key, sample)
            assert sample["min"] <= sample["median"] <= sample["max"]
        if key in TARGETS:
            kind, bound = TARGETS[key]
            # Met or not; or, for a difference below the run's noise, unmeasurable (never "met").
            assert f["target"]["kind"] == kind and (isinstance(f["met"], bool) != bool(f["unmeasurable"])), key
            assert bound is None or f["target"]["bound"] == bound, key  # None: computed from the same run's baselines
        else:
            assert f["target"] is None and f["met"] is None, key
    assert doc["targets"] == sum(1 for key in figures if key in TARGETS)
    assert doc["machine"]["cpus"] and doc["date"]


@pytest.mark.slow
def test_quick_run_prints_and_writes_every_figure(tmp_path: Path) -> None:
    out = tmp_path / "bench.json"
    # Every section, TensorFlow training included: a bound for a loaded machine, not a figure.
    result = bench("--runs", "1", "--quick", "--json", str(out), timeout=560)
    assert result.returncode == 0, result.stderr
    doc = json.loads(out.read_text())
    check_figures(doc, list(FIGURES))
    # The growth plot, next to the JSON, and how tfjob's overhead grows per added task.
    assert Path(doc["plots"]["growth"]) == tmp_path / "bench.growth.png"
    assert (tmp_path / "bench.growth.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert [n for n, _, _ in doc["growth_per_task_s"]] == [4, 7, 11] and doc["growth_per_task_s"][0][2] is None
    assert any(line.startswith("growth: 11 tasks, tfjob's overhead ") for line in result.stdout.splitlines())
    assert doc["quick"] is True and doc["runs"] == 1 and doc["sections"] == list(FIGURES) and doc["skipped"] == {}
    lines = result.stdout.splitlines()
    assert lines[0].startswith("tfjob bench ") and f"{doc['machine']['cpus']} CPUs" in lines[0]
    assert lines[1].split()[:3] == ["section", "figure", "median"]
    for f in doc["figures"]:  # one row per figure, in the same order
        assert any(line.startswith(f["section"]) and f["name"] in line for line in lines), f["name"]
    unmeasurable = f", {doc['targets_unmeasurable']} unmeasurable" if doc["targets_unmeasurable"] else ""
    assert re.fullmatch(rf"{doc['targets_met']} of {doc['targets']} targets met{unmeasurable}; \d+ s in all", lines[-1]), lines[-1]
    # The same measurement is both figures' sample: the baselines differ.
    figures = {f["key"]: f for f in doc["figures"]}
    assert figures["cli.help_vs_python"]["sample"] == figures["cli.help_vs_aiplatform"]["sample"]
    # The packaging figures are counts, not times: one digest, nothing uploaded twice.
    assert figures["packaging.deterministic"]["sample"]["values"] == [1.0]
    assert figures["packaging.second_upload"]["sample"]["values"] == [0.0]
    assert figures["packaging.second_upload"]["baseline"]["median"] > 0


def test_only_runs_the_sections_named(tmp_path: Path) -> None:
    out = tmp_path / "scale.json"
    result = bench("--runs", "1", "--quick", "--only", "scale", "--json", str(out))
    assert result.returncode == 0, result.stderr
    doc = json.loads(out.read_text())
    assert doc["sections"] == ["scale"]
    check_figures(doc, ["scale"])


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["--only", "cli,nope"],
            "error: --only nope: no such section; choose from cli, vertex, bootstrap, packaging, resubmit, local, recovery, growth, ps_training, scale, containers, images",
        ),
        (["--runs", "0"], "error: --runs 0: give at least 1 run"),
    ],
)
def test_mistakes_are_one_line_and_exit_2(args: list[str], message: str) -> None:
    result = bench(*args)
    assert result.returncode == 2
    assert result.stderr.startswith(message) and len(result.stderr.strip().splitlines()) == 1
    assert result.stdout == ""


def test_targets_ratios_and_the_table(common: ModuleType) -> None:
    Sample, Figure, Target = common.Sample, common.Figure, common.Target
    fast, slow = Sample("tfjob --help", [0.10, 0.12, 0.11]), Sample("python -c pass", [0.02, 0.025, 0.03])
    ratio = Figure("cli.x", "cli", "tfjob --help", fast, slow, Target("ratio-max", 8))
    assert ratio.ratio == pytest.approx(0.11 / 0.025) and ratio.met is True and ratio.ratio_text() == "4.40×"
    assert Figure("cli.y", "cli", "x", fast, slow, Target("ratio-max", 4)).met is False
    speedup = Figure("cli.z", "cli", "tfjob --help", fast, Sample("import sdk", [2.5]), Target("speedup-min", 10))
    assert speedup.met is True and speedup.ratio_text() == "22.7× faster" and speedup.target.text("s") == "≥ 10× faster"
    overhead = Figure("boot", "bootstrap", "b", Sample("b", [0.045]), Sample("m", [0.030]), Target("overhead-max", 0.060))
    assert overhead.met is True and overhead.ratio_text() == "+15.0 ms (1.50×)" and overhead.target.text("s") == "overhead ≤ 60.0 ms"
    assert Figure("t", "local", "t", Sample("t", [0.6]), None, Target("max", 0.5)).met is False
    zero = Figure("p", "packaging", "p", Sample("second", [0.0], "B"), Sample("first", [22_800.0], "B"), Target("equal", 0))
    assert zero.met is True and zero.target.text("B") == "= 0 B" and zero.sample.show() == "0 B (0–0)"
    informational = Figure("s", "scale", "s", Sample("a", [0.0007]), Sample("b", [0.00007]))
    assert informational.met is None and informational.ratio_text() == "10.00×"
    table = common.render_table([ratio, speedup, overhead, zero, informational], "title")
    rows = table.splitlines()
    assert rows[0] == "title" and rows[1].startswith("section") and set(rows[2]) <= {"-", " "}
    assert len(rows) == 3 + 5
    assert "yes" in rows[3] and rows[-1].rstrip().endswith("—")
    assert "python -c pass: 25.0 ms (20.0–30.0)" in rows[3]
    with pytest.raises(ValueError, match="a ratio-max target needs a baseline"):
        Target("ratio-max", 8).met(fast, None)


def test_rounds_interleave_and_skip_the_warm_up(common: ModuleType) -> None:
    calls: list[str] = []

    def item(name: str, value: float) -> Any:
        def run() -> float:
            calls.append(name)
            return value

        return run

    samples = common.rounds({"a": item("a", 1.0), "b": item("b", 2.0)}, 3, warmup=1, units={"b": "B"})
    assert calls == ["a", "b"] * 4
    assert samples["a"].values == [1.0] * 3 and samples["b"].unit == "B" and samples["a"].unit == "s"


def test_a_negative_or_noise_dominated_difference_is_unmeasurable_not_met(common: ModuleType) -> None:
    Sample, Figure, Target = common.Sample, common.Figure, common.Target
    # The growth slope of a loaded run (issue 39): -33.2 ms per added task is no figure at all.
    slope = Figure(
        "growth.slope", "growth", "per task", Sample("41 → 161", [-0.0332, -0.02, -0.04]), None, Target("max", 0.003, difference=True)
    )
    assert slope.met is None and "negative" in slope.unmeasurable
    # Rounds from -10 ms to +12 ms: the median 1 ms would say "met" by luck.
    noisy = Figure(
        "growth.slope", "growth", "per task", Sample("41 → 161", [-0.010, 0.001, 0.012]), None, Target("max", 0.003, difference=True)
    )
    assert noisy.met is None and "noise-dominated" in noisy.unmeasurable
    # A clear slope either way is measured.
    assert Figure("g", "growth", "g", Sample("s", [0.001, 0.002, 0.0025]), None, Target("max", 0.003, difference=True)).met is True
    assert Figure("g", "growth", "g", Sample("s", [0.005, 0.006, 0.009]), None, Target("max", 0.003, difference=True)).met is False
    # A plain maximum of a time is not a difference: its value alone decides.
    assert Figure("t", "local", "t", Sample("t", [0.2, 0.3]), None, Target("max", 0.5)).unmeasurable is None
    # An overhead: the figure less its baseline.
    faster = Figure("b", "bootstrap", "b", Sample("b", [0.018]), Sample("m", [0.019]), Target("overhead-max", 0.060))
    assert faster.met is None and "negative" in faster.unmeasurable
    spread = Figure(
        "b", "bootstrap", "b", Sample("b", [0.020, 0.021, 0.120]), Sample("m", [0.019, 0.020, 0.025]), Target("overhead-max", 0.060)
    )
    assert spread.met is None and "noise-dominated" in spread.unmeasurable
    clear = Figure("b", "bootstrap", "b", Sample("b", [0.027, 0.0275]), Sample("m", [0.019, 0.0193]), Target("overhead-max", 0.060))
    assert clear.met is True and clear.unmeasurable is None
    # The table and the JSON say so; the count of targets met leaves them out.
    row = common.render_table([slope]).splitlines()[-1]
    assert row.rstrip().endswith("unmeasurable")
    doc = common.report([slope, clear], runs=3, quick=False, elapsed=1.0, sections=["growth"])
    assert (doc["targets_met"], doc["targets_unmeasurable"], doc["targets"]) == (1, 1, 2)
    assert doc["figures"][0]["met"] is None and "negative" in doc["figures"][0]["unmeasurable"]


def test_the_bench_runs_without_the_optional_extras(tmp_path: Path) -> None:
    """In a venv of tfjob alone (`pip install -e .`: no [vertex], no matplotlib, no TensorFlow),
    the sections that need an extra are named as skipped and the rest runs: exit 0."""
    import offline_venv

    venv = tmp_path / "bare"
    offline_venv.make_venv(venv)
    assert offline_venv.pip(venv, ["install", "-q", "-e", "."]) == 0
    python = str(venv / "bin" / "python")
    probe = subprocess.run([python, "-c", "import google.cloud.aiplatform"], capture_output=True, text=True)
    assert probe.returncode == 1 and "ModuleNotFoundError" in probe.stderr  # really without [vertex]
    out = tmp_path / "bench.json"
    result = subprocess.run(
        [python, str(BENCH / "run.py"), "--runs", "1", "--quick", "--only", "cli,vertex,bootstrap,scale", "--json", str(out)],
        capture_output=True, text=True, timeout=300, cwd=ROOT,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    for section in ("cli", "vertex", "scale"):
        assert f"[{section}: skipped, needs google.cloud.aiplatform" in result.stderr
        assert f"skipped: {section} (needs google.cloud.aiplatform" in result.stdout
    doc = json.loads(out.read_text())
    assert doc["sections"] == ["bootstrap"] and sorted(doc["skipped"]) == ["cli", "scale", "vertex"]
    check_figures(doc, ["bootstrap"])
