"""Real ParameterServerStrategy training through tfjob against a hand-written launcher (issue 17).

The census template (1 chief + 2 workers + 1 ps, 200 steps, generated data; with ``--quick``
1 + 1 + 1 and 2 steps) run two ways, interleaved in each round so machine load hits both alike:

* ``tfjob submit DIR -m trainer.task --workers 2 --ps 1 --quiet -- --train-steps N``;
* the baseline: the launcher a user would write by hand — one ``python -m trainer.task``
  process per task with hand-made ``TF_CONFIG``s on free 127.0.0.1 ports, waiting for the chief,
  then stopping the others (the trainer's ps and workers serve until stopped).

Figures: wall time (target: ≤ 1.05× the hand launcher, median of the interleaved runs)
and the summed peak RSS of each process tree, sampled the same way for both.

    .venv/bin/python bench/ps_training.py [--runs 5] [--quick] [--json FILE]
"""

from __future__ import annotations

import subprocess
import sys

from common import BIN, PYTHON, Figure, Sample, Target, clean_env, private_home, section_main
from proctree import MIB, run_sampled

SECTION = "ps_training"
TARGET_RATIO = 1.05
STEPS, QUICK_STEPS = 200, 2
#: Workers of the measured cluster (one chief and one ps besides); ``--quick`` only checks that
#: the figures come out, so it trains the smallest cluster the template takes (tests/test_bench.py).
WORKERS, QUICK_WORKERS = 2, 1

HAND_LAUNCHER = """\
import json, os, signal, socket, subprocess, sys

def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]

trainer, job_dir, steps, workers = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
roles = [("chief", 0), *(("worker", i) for i in range(workers)), ("ps", 0)]
cluster = {}
for role, _ in roles:
    cluster.setdefault(role, []).append(f"127.0.0.1:{free_port()}")
procs = {}
for role, index in roles:
    env = dict(os.environ, TF_CONFIG=json.dumps({"cluster": cluster, "task": {"type": role, "index": index}}))
    procs[(role, index)] = subprocess.Popen(
        [sys.executable, "-m", "trainer.task", "--job-dir", job_dir, "--train-steps", steps],
        cwd=trainer, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
code = procs[("chief", 0)].wait()
for key, proc in procs.items():
    if key != ("chief", 0):
        proc.send_signal(signal.SIGTERM)
for proc in procs.values():
    proc.wait()
sys.exit(code)
"""


def measure(runs: int, quick: bool = False) -> list[Figure]:
    """The census template through tfjob and through the hand launcher, interleaved."""
    steps = str(QUICK_STEPS if quick else STEPS)
    workers = str(QUICK_WORKERS if quick else WORKERS)
    warmup = 0 if quick else 1
    with private_home("tfjob-bench-ps-") as home:
        env = clean_env(TF_USE_LEGACY_KERAS="1", TF_CPP_MIN_LOG_LEVEL="2")
        project = home / "census"
        subprocess.run([str(BIN / "tfjob"), "init", str(project), "--template", "census-ps"], env=env, check=True, capture_output=True)
        launcher = home / "hand_launcher.py"
        launcher.write_text(HAND_LAUNCHER)
        wall: dict[str, list[float]] = {"tfjob": [], "hand": []}
        rss: dict[str, list[float]] = {"tfjob": [], "hand": []}
        for i in range(warmup + runs):
            for name in ("tfjob", "hand"):
                job_dir = home / f"{name}-{i}"  # a fresh job dir: no checkpoint to resume from
                argv = (
                    [str(BIN / "tfjob"), "submit", str(project), "-m", "trainer.task", "--workers", workers, "--ps", "1",
                     "--quiet", "--job-dir", str(job_dir), "--", "--train-steps", steps]
                    if name == "tfjob" else [PYTHON, str(launcher), str(project), str(job_dir), steps, workers]
                )  # fmt: skip
                sampler = run_sampled(argv, env=env, interval=0.1)
                if i >= warmup:
                    wall[name].append(sampler.elapsed)
                    rss[name].append(sampler.tree_peak / MIB)
    return [
        Figure("ps_training.wall", SECTION, f"census PS training 1+{workers}+1, {steps} steps: tfjob submit",
               Sample("tfjob", wall["tfjob"]), Sample("hand launcher", wall["hand"]), Target("ratio-max", TARGET_RATIO)),
        Figure("ps_training.rss", SECTION, f"census PS training 1+{workers}+1: summed peak RSS of the tree",
               Sample("tfjob", rss["tfjob"], "MiB"), Sample("hand launcher", rss["hand"], "MiB")),
    ]  # fmt: skip


if __name__ == "__main__":
    sys.exit(section_main(measure, __doc__))
