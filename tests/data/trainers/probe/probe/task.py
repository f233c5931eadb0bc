"""A trivial trainer: reports what its task was given, then behaves as the test asks.

Every task writes ``<job-dir>/tasks/<role>-<index>.json`` (its TaskInfo, cluster
variables, arguments, pid and start time), prints ``<task> ready``, then, if it is
one of the tasks named (``chief-0``, a role such as ``worker``, or ``all``):

--exit TASK=CODE      exit with CODE (after a line on stderr)
--hang TASK           never end on its own
--wait-for PATH       (chief) end once PATH exists
--wait-tasks N        (chief) end once N tasks have written their report
--ignore-sigterm TASK ignore SIGTERM (the launcher must use SIGKILL)
--grandchild TASK     start a child process that sleeps (it must die with the task)
--lines N             print N numbered lines first
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time

from tfjob.cluster import task_info_from_env
from tfjob.runtime.store import process_start_time


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--job-dir")
    parser.add_argument("--exit", action="append", default=[])
    parser.add_argument("--hang", action="append", default=[])
    parser.add_argument("--wait-for")
    parser.add_argument("--wait-tasks", type=int, default=0)
    parser.add_argument("--ignore-sigterm", action="append", default=[])
    parser.add_argument("--grandchild", action="append", default=[])
    parser.add_argument("--lines", type=int, default=0)
    args, rest = parser.parse_known_args()
    # Where the platform says the job dir is: --job-dir (AI Platform), AIP_MODEL_DIR's parent
    # (Vertex), or what the test gave every task (Kubeflow passes nothing).
    model_dir = os.environ.get("AIP_MODEL_DIR", "").rstrip("/")
    args.job_dir = args.job_dir or os.environ.get("PROBE_JOB_DIR") or (model_dir[: -len("/model")] if model_dir.endswith("/model") else None)
    info = task_info_from_env()
    name = f"{info.role}-{info.index}"

    def named(items: list[str]) -> bool:
        return any(item in (name, info.role, "all") for item in items)

    grandchild = None
    if named(args.grandchild):
        grandchild = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    if named(args.ignore_sigterm):
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    report = {
        "task": name,
        "role": info.role,
        "index": info.index,
        "is_chief": info.is_chief,
        "cluster": info.cluster.as_dict(),
        "pid": os.getpid(),
        "start": process_start_time(os.getpid()),
        "grandchild": grandchild.pid if grandchild else None,
        "grandchild_start": process_start_time(grandchild.pid) if grandchild else None,
        "argv": sys.argv[1:],
        "rest": rest,
        "cwd": os.getcwd(),
        "module_file": __file__,
        "env": {k: v for k, v in os.environ.items() if k in ("TF_CONFIG", "CLUSTER_SPEC", "PYTHONPATH", "TFJOB_JOB_ID") or k.startswith(("TFJOB_TASK", "TFJOB_IS", "AIP_"))},
    }
    if args.job_dir:
        out = os.path.join(args.job_dir, "tasks")
        os.makedirs(out, exist_ok=True)
        tmp = os.path.join(out, f".{name}.tmp")
        with open(tmp, "w") as f:
            json.dump(report, f)
        os.replace(tmp, os.path.join(out, f"{name}.json"))
    print(f"{name} ready", flush=True)
    for i in range(args.lines):
        print(f"{name} line {i}")
    sys.stdout.flush()
    codes = dict(item.split("=", 1) for item in args.exit)
    for key in (name, info.role, "all"):
        if key in codes:
            print(f"{name} exits with code {codes[key]} on purpose", file=sys.stderr, flush=True)
            return int(codes[key])
    if named(args.hang):
        while True:
            time.sleep(3600)
    if args.wait_for and name == "chief-0":
        while not os.path.exists(args.wait_for):
            time.sleep(0.02)
    if args.wait_tasks and args.job_dir and name == "chief-0":
        reports = os.path.join(args.job_dir, "tasks")
        while len([f for f in os.listdir(reports) if f.endswith(".json")]) < args.wait_tasks:
            time.sleep(0.02)
    return 0


if __name__ == "__main__":
    sys.exit(main())
