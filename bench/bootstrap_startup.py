"""How much tfjob-bootstrap adds to a task's start-up (target: under 60 ms).

Each round times, interleaved so machine load hits all alike:

* ``python -c pass`` (the interpreter alone);
* ``python -m noop``: a trainer module that does nothing (the baseline a task
  would pay without tfjob);
* ``python -m tfjob.container.bootstrap --module noop --check-port`` with a Vertex
  ``TF_CONFIG`` / ``CLUSTER_SPEC`` for the chief: parse, export, port check, then
  exec of the same ``python -m noop``;
* the same through the ``tfjob-bootstrap`` console script.

The bootstrap's overhead is its median minus the ``python -m noop`` median; it
includes the second interpreter start that exec'ing the trainer implies. Bytecode
caching is on (an image's pip install compiles tfjob).

    .venv/bin/python bench/bootstrap_startup.py [--runs 30] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TARGET_MS = 60.0


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _time(argv: list[str], env: dict[str, str], cwd: str) -> float:
    start = time.perf_counter()
    subprocess.run(argv, env=env, cwd=cwd, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def measure(runs: int) -> dict[str, object]:
    """Run the rounds; return medians (ms) and the overhead against the target."""
    from tfjob.cluster import render_task_env

    with tempfile.TemporaryDirectory() as tmp:
        Path(tmp, "noop.py").write_text("")
        cluster = {"chief": [f"127.0.0.1:{_free_port()}"], "worker": ["127.0.0.1:2"], "ps": ["127.0.0.1:3"]}
        # Bytecode caching on, as in an image where pip compiled tfjob at install time.
        drop = ("TF_CONFIG", "CLUSTER_SPEC", "PYTHONDONTWRITEBYTECODE")
        env = {k: v for k, v in os.environ.items() if k not in drop}
        task_env = {**env, **render_task_env(cluster, "chief", 0, "vertex", job_dir="/tmp/out")}
        script = str(Path(sys.executable).parent / "tfjob-bootstrap")
        commands = {
            "python -c pass": ([sys.executable, "-c", "pass"], env),
            "python -m noop": ([sys.executable, "-m", "noop"], env),
            "bootstrap (python -m)": (
                [sys.executable, "-m", "tfjob.container.bootstrap", "--module", "noop", "--check-port"],
                task_env,
            ),
            "tfjob-bootstrap script": ([script, "--module", "noop", "--check-port"], task_env),
        }
        samples: dict[str, list[float]] = {name: [] for name in commands}
        for argv, cmd_env in commands.values():  # warm the page cache and .pyc files
            _time(argv, cmd_env, tmp)
        for _ in range(runs):
            for name, (argv, cmd_env) in commands.items():
                samples[name].append(_time(argv, cmd_env, tmp))
    medians = {name: statistics.median(values) * 1000 for name, values in samples.items()}
    overhead = medians["bootstrap (python -m)"] - medians["python -m noop"]
    script_overhead = medians["tfjob-bootstrap script"] - medians["python -m noop"]
    return {
        "runs": runs,
        "median_ms": medians,
        "overhead_ms": overhead,
        "script_overhead_ms": script_overhead,
        "target_ms": TARGET_MS,
        "met": max(overhead, script_overhead) < TARGET_MS,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args()
    result = measure(args.runs)
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    print(f"tfjob-bootstrap start-up, median of {args.runs} interleaved runs")
    for name, ms in result["median_ms"].items():  # type: ignore[union-attr]
        print(f"  {name:<24} {ms:7.1f} ms")
    print(
        f"  overhead vs python -m noop: {result['overhead_ms']:.1f} ms (python -m), "
        f"{result['script_overhead_ms']:.1f} ms (script); target < {TARGET_MS:.0f} ms: "
        f"{'met' if result['met'] else 'NOT met'}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
