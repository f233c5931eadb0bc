"""What the local backend costs: a 1+4+2 and a 1+32+8 job against bare interpreters.

Each round, interleaved so machine load hits all alike:

* ``bare N``: N ``python -c pass`` started at once, waited for together;
* ``tfjob submit`` (a real CLI process, ``--quiet``) of a trivial trainer with the
  same N tasks, every task running its trainer (``--strategy multi-worker``);
* the same job through the Python API in this process (``LocalBackend.run``).

The overhead is the job's median minus the bare median. Teardown is measured on a
1+4+2 job whose workers and parameter servers never end on their own: the time from
the chief's exit to the job's recorded end (SIGTERM to 6 tasks, all reaped).

Targets (issue 4): overhead under 1 s for 1+4+2, teardown under 0.5 s, 1+32+8 completes.

    .venv/bin/python bench/local_cluster.py [--runs 5] [--json]
"""

from __future__ import annotations

import argparse
import io
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TARGET_OVERHEAD_S = 1.0
TARGET_TEARDOWN_S = 0.5

_TRAINER = '''\
import os, sys, time
role = os.environ["TFJOB_TASK_TYPE"]
marks = os.path.join(sys.argv[sys.argv.index("--job-dir") + 1], "up")
os.makedirs(marks, exist_ok=True)
open(os.path.join(marks, role + os.environ["TFJOB_TASK_INDEX"]), "w").close()
if "--hang" in sys.argv and role != "chief":
    while True:
        time.sleep(3600)
if "--hang" in sys.argv:
    while len(os.listdir(marks)) < int(sys.argv[sys.argv.index("--hang") + 1]):
        time.sleep(0.005)
'''


def _trainer(root: Path) -> Path:
    pkg = root / "trainer" / "triv"
    pkg.mkdir(parents=True, exist_ok=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "task.py").write_text(_TRAINER)
    return root / "trainer"


def _bare(n: int) -> float:
    start = time.perf_counter()
    procs = [subprocess.Popen([sys.executable, "-c", "pass"]) for _ in range(n)]
    for p in procs:
        p.wait()
    return time.perf_counter() - start


def _cli(trainer: Path, workers: int, ps: int, job_dir: Path) -> float:
    argv = [
        str(Path(sys.executable).parent / "tfjob"), "submit", str(trainer), "-m", "triv.task",
        "--workers", str(workers), "--ps", str(ps), "--strategy", "multi-worker", "--quiet", "--job-dir", str(job_dir),
    ]  # fmt: skip
    start = time.perf_counter()
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def _api(trainer: Path, workers: int, ps: int, job_dir: Path, *args: str) -> tuple[float, str]:
    from tfjob import Job

    job = Job(
        package=str(trainer), module="triv.task", workers=workers, ps=ps, strategy="multi-worker",
        backend="local", job_dir=str(job_dir), args=list(args), grace=5.0,
    )  # fmt: skip
    sink = io.StringIO()
    start = time.perf_counter()
    job_id = job.backend.run(job.spec, job.options, console=sink, summary=sink)
    return time.perf_counter() - start, job_id


def _teardown(job_id: str) -> float:
    from tfjob.store import JobStore

    with JobStore() as store:
        record = store.get(job_id)
        chief = next(t for t in store.tasks(job_id) if t.name == "chief-0")
    assert record is not None and record.state.value == "SUCCEEDED", record
    assert record.ended is not None and chief.ended is not None
    return record.ended - chief.ended


def _stats(values: list[float]) -> dict[str, float]:
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}


def measure(runs: int = 5) -> dict[str, object]:
    """Run the rounds in a private TFJOB_HOME; return the figures (seconds)."""
    with tempfile.TemporaryDirectory(prefix="tfjob-bench-") as tmp:
        root = Path(tmp)
        os.environ["TFJOB_HOME"] = str(root / "home")
        trainer = _trainer(root)
        samples: dict[str, list[float]] = {k: [] for k in ("bare7", "cli7", "api7", "teardown7", "bare41", "cli41")}
        for i in range(runs):
            samples["bare7"].append(_bare(7))
            samples["cli7"].append(_cli(trainer, 4, 2, root / f"c7-{i}"))
            samples["api7"].append(_api(trainer, 4, 2, root / f"a7-{i}")[0])
            _, job_id = _api(trainer, 4, 2, root / f"t7-{i}", "--hang", "7")
            samples["teardown7"].append(_teardown(job_id))
            samples["bare41"].append(_bare(41))
            samples["cli41"].append(_cli(trainer, 32, 8, root / f"c41-{i}"))
    stats = {k: _stats(v) for k, v in samples.items()}
    overhead = stats["cli7"]["median"] - stats["bare7"]["median"]
    return {
        "runs": runs,
        "cpus": os.cpu_count(),
        "seconds": stats,
        "overhead_1_4_2_cli": overhead,
        "overhead_1_4_2_api": stats["api7"]["median"] - stats["bare7"]["median"],
        "overhead_1_32_8_cli": stats["cli41"]["median"] - stats["bare41"]["median"],
        "teardown_1_4_2": stats["teardown7"]["median"],
        "targets_met": {
            "overhead_1_4_2_under_1s": overhead < TARGET_OVERHEAD_S,
            "teardown_under_0.5s": stats["teardown7"]["median"] < TARGET_TEARDOWN_S,
            "1_32_8_completes": len(samples["cli41"]) == runs,
        },
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args(argv)
    figures = measure(args.runs)
    if args.json:
        print(json.dumps(figures, indent=2))
        return 0
    s = figures["seconds"]
    assert isinstance(s, dict)
    line = "{:<34} {:>8.0f} ms  ({:.0f}–{:.0f})"
    print(f"local cluster, {figures['runs']} runs, {figures['cpus']} CPUs (median, min–max)")
    for key, label in [
        ("bare7", "7 × python -c pass"),
        ("cli7", "tfjob submit 1+4+2"),
        ("api7", "LocalBackend.run 1+4+2"),
        ("teardown7", "teardown after the chief (1+4+2)"),
        ("bare41", "41 × python -c pass"),
        ("cli41", "tfjob submit 1+32+8"),
    ]:
        print(line.format(label, s[key]["median"] * 1000, s[key]["min"] * 1000, s[key]["max"] * 1000))
    print(f"overhead 1+4+2 (CLI): {figures['overhead_1_4_2_cli'] * 1000:.0f} ms (target < {TARGET_OVERHEAD_S * 1000:.0f} ms)")
    print(f"overhead 1+4+2 (API): {figures['overhead_1_4_2_api'] * 1000:.0f} ms")
    print(f"overhead 1+32+8 (CLI): {figures['overhead_1_32_8_cli'] * 1000:.0f} ms")
    print(f"teardown: {figures['teardown_1_4_2'] * 1000:.0f} ms (target < {TARGET_TEARDOWN_S * 1000:.0f} ms)")
    print("targets met:", ", ".join(f"{k}={v}" for k, v in figures["targets_met"].items()))  # type: ignore[union-attr]
    return 0


if __name__ == "__main__":
    sys.exit(main())
