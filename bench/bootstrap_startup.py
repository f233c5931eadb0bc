"""How much tfjob-bootstrap adds to a task's start-up (target: at most 60 ms).

Interleaved in each round, so machine load hits all alike:

* ``python -m noop``: a trainer module that does nothing (the baseline: what a task
  pays without tfjob);
* ``tfjob-bootstrap --module noop --check-port`` (the console script every task runs)
  with a Vertex ``TF_CONFIG`` / ``CLUSTER_SPEC`` for the chief: parse, export, port
  check, then the same module run in-process as ``python -m`` would;
* the same as ``python -m tfjob.container.bootstrap``.

The overhead is the bootstrap's median minus the ``python -m noop`` median. Bytecode
caching is on (an image's pip install compiles tfjob).

    .venv/bin/python bench/bootstrap_startup.py [--runs 5] [--quick] [--json FILE]
"""

from __future__ import annotations

import os
import socket
import sys
import tempfile
from pathlib import Path

from common import BIN, PYTHON, Figure, Target, command, rounds, section_main

SECTION = "bootstrap"
TARGET_OVERHEAD_S = 0.060


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def measure(runs: int, quick: bool = False) -> list[Figure]:
    """The three start-ups, interleaved; the overhead of each bootstrap form against the module alone."""
    from tfjob.cluster import render_task_env

    with tempfile.TemporaryDirectory(prefix="tfjob-bench-boot-") as tmp:
        Path(tmp, "noop.py").write_text("")
        cluster = {"chief": [f"127.0.0.1:{_free_port()}"], "worker": ["127.0.0.1:2"], "ps": ["127.0.0.1:3"]}
        # Bytecode caching on, as in an image where pip compiled tfjob at install time.
        drop = ("TF_CONFIG", "CLUSTER_SPEC", "PYTHONDONTWRITEBYTECODE")
        env = {k: v for k, v in os.environ.items() if k not in drop}
        task_env = {**env, **render_task_env(cluster, "chief", 0, "vertex", job_dir="/tmp/out")}
        samples = rounds(
            {
                "python -m noop": command([PYTHON, "-m", "noop"], env=env, cwd=tmp),
                "tfjob-bootstrap": command([BIN / "tfjob-bootstrap", "--module", "noop", "--check-port"], env=task_env, cwd=tmp),
                "python -m tfjob.container.bootstrap": command(
                    [PYTHON, "-m", "tfjob.container.bootstrap", "--module", "noop", "--check-port"], env=task_env, cwd=tmp
                ),
            },
            runs,
            warmup=1,  # even when quick: the first run writes the .pyc files
        )
    target = Target("overhead-max", TARGET_OVERHEAD_S)
    base = samples["python -m noop"]
    return [
        Figure("bootstrap.script", SECTION, "tfjob-bootstrap --module noop (vertex chief)", samples["tfjob-bootstrap"], base, target),
        Figure(
            "bootstrap.module",
            SECTION,
            "python -m tfjob.container.bootstrap --module noop",
            samples["python -m tfjob.container.bootstrap"],
            base,
            target,
        ),
    ]


if __name__ == "__main__":
    sys.exit(section_main(measure, __doc__))
