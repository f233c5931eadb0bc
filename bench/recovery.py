"""How long a local job takes to recover from a preemption (issue 29), beside the start-up figures.

A 1+2 job of a trivial trainer (no TensorFlow: the figure is tfjob's, not TensorFlow's
start-up) is preempted (``tfjob preempt``) once every task's trainer runs; the figure runs from the launcher's
"preempting" line in the job's history to the moment the task's trainer runs again (the
time it writes on start):

* a worker, restarted in place by the platform default (a preempted replica comes back);
* the chief, lost for good (``--restart-policy Never``) and recovered by starting the
  whole job again (``--max-restarts 1``): the other tasks stopped, all three started.

Baselines: starting one bare interpreter (the worker), three at once (the chief: the
whole cluster starts again). ``--restart-delay 0``: the delay is the user's choice.

    .venv/bin/python bench/recovery.py [--runs 5] [--quick] [--json FILE]
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from common import Figure, Run, private_home, rounds, section_main
from local_cluster import bare

SECTION = "recovery"

_TRAINER = """\
import os, sys, time
marks, target = sys.argv[1], sys.argv[2]
name = os.environ["TFJOB_TASK_TYPE"] + "-" + os.environ["TFJOB_TASK_INDEX"]
with open(os.path.join(marks, name), "a") as f:
    f.write(f"{time.time()}\\n")


def starts(task):
    path = os.path.join(marks, task)
    return len(open(path).read().split()) if os.path.exists(path) else 0


if name != "chief-0":
    while True:
        time.sleep(3600)
while starts(target) < 2:  # the job ends once the preempted task has started again
    time.sleep(0.005)
"""


def write_trainer(root: Path) -> Path:
    pkg = root / "trainer" / "revive"
    pkg.mkdir(parents=True, exist_ok=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "task.py").write_text(_TRAINER)
    return root / "trainer"


def recovery(trainer: Path, root: Path, task: str, **options: object) -> Run:
    """Seconds from the preemption of ``task`` (once every task's trainer runs) to its trainer running again."""
    from tfjob import Job, Local
    from tfjob.runtime.store import JobStore

    count = [0]

    def run() -> float:
        count[0] += 1
        marks = root / f"marks-{task}-{count[0]}"
        marks.mkdir()
        job = Job(
            package=str(trainer), module="revive.task", workers=2, args=[str(marks), task],
            backend=Local(preempt_grace=5.0, restart_delay=0.0, grace=5.0, **options),  # type: ignore[arg-type]
        )  # fmt: skip
        handle = job.submit()
        try:
            deadline = time.monotonic() + 120
            while len(list(marks.iterdir())) < 3:  # every trainer runs: a preemption now is mid-job
                if time.monotonic() > deadline:
                    raise RuntimeError(f"the {task} recovery job did not start: {handle.status().message}")
                time.sleep(0.01)
            handle.preempt(task, 5.0)
            handle.wait(timeout=120)
        finally:
            handle.cancel()
        with JobStore() as store:
            record = store.get(handle.id)
            preempted = [ts for ts, _, message in store.events(handle.id) if message.startswith(f"preempting {task} ")]
        if record is None or record.state.value != "SUCCEEDED" or not preempted:
            raise RuntimeError(f"the {task} recovery job did not recover: {record and record.message}")
        started = [float(t) for t in (marks / task).read_text().split()]
        return started[1] - preempted[0]

    return run


def measure(runs: int, quick: bool = False) -> list[Figure]:
    warmup = 0 if quick else 1
    with private_home("tfjob-bench-recovery-") as root:
        trainer = write_trainer(root)
        timed = rounds(
            {
                "worker": recovery(trainer, root, "worker-0"),
                "bare 1": bare(1),
                "chief": recovery(trainer, root, "chief-0", restart_policy=["Never"], max_restarts=1),
                "bare 3": bare(3),
            },
            runs,
            warmup=warmup,
        )
    return [
        Figure("recovery.worker", SECTION, "worker preempted → its trainer runs again (in place)", timed["worker"], timed["bare 1"]),
        Figure(
            "recovery.chief", SECTION, "chief preempted → the job's trainer runs again (--max-restarts)", timed["chief"], timed["bare 3"]
        ),
    ]


if __name__ == "__main__":
    sys.exit(section_main(measure, __doc__))
