"""What the local backend costs: 1+4+2 and 1+32+8 jobs against bare interpreters of the same run.

Interleaved in each round, so machine load hits all alike:

* ``bare N``: N ``python -c pass`` started at once, waited for together;
* ``tfjob submit`` (a real CLI process, ``--quiet``) of a trivial trainer with the same
  N tasks, every task running the trainer (``--strategy multi-worker``: no TensorFlow);
* the 1+4+2 job through the Python API in this process (``LocalBackend.run``);
* teardown: a 1+4+2 job whose workers and parameter servers never end on their own,
  from the chief's exit to the job's recorded end (SIGTERM to 6 tasks, all reaped),
  against SIGTERM to 6 bare sleeping interpreters and reaping them.

Peak memory, in rounds of their own (the /proc sampling would disturb the timings):
the launcher's own high-water mark (``VmHWM``) and the largest total ``VmRSS`` over its
process tree, against a bare interpreter that starts N bare interpreters at once (the
timing baseline, as a tree), sampled the same way.

Targets: overhead ≤ 150 ms for 1+4+2 (issue 17; it was 1 s), teardown ≤ 0.5 s. Beside the
1+4+2 wall time, the CPU time (user + system) of ``tfjob submit`` and its tasks against the
bare interpreters' (``local.submit_cpu_1_4_2``), which other load on a shared machine moves
far less.

    .venv/bin/python bench/local_cluster.py [--runs 5] [--quick] [--json FILE]
"""

from __future__ import annotations

import io
import subprocess
import sys
import time
from pathlib import Path

from common import BIN, PYTHON, Figure, Run, Sample, Target, clean_env, command, private_home, rounds, section_main, with_cpu
from proctree import MIB, run_sampled

SECTION = "local"
TARGET_OVERHEAD_S = 0.15  # issue 17: tfjob submit 1+4+2 at most 150 ms over 7 bare interpreters
TARGET_TEARDOWN_S = 0.5

_TRAINER = """\
import os, sys, time
role = os.environ["TFJOB_TASK_TYPE"]
marks = os.path.join(os.environ["AIP_MODEL_DIR"].rstrip("/").rsplit("/", 1)[0], "up")  # Vertex: the job dir's model/
os.makedirs(marks, exist_ok=True)
open(os.path.join(marks, role + os.environ["TFJOB_TASK_INDEX"]), "w").close()
if "--hang" in sys.argv and role != "chief":
    while True:
        time.sleep(3600)
if "--hang" in sys.argv:
    while len(os.listdir(marks)) < int(sys.argv[sys.argv.index("--hang") + 1]):
        time.sleep(0.005)
"""
_SLEEPER = "import sys, time; sys.stdout.write('up\\n'); sys.stdout.flush(); time.sleep(60)"
_BARE_TREE = "import subprocess, sys; ps = [subprocess.Popen([sys.executable, '-c', 'pass']) for _ in range({n})]; [p.wait() for p in ps]"


def write_trainer(root: Path) -> Path:
    """The trivial trainer ``triv.task``: marks its task as up; with ``--hang N`` only the chief ends."""
    pkg = root / "trainer" / "triv"
    pkg.mkdir(parents=True, exist_ok=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "task.py").write_text(_TRAINER)
    return root / "trainer"


def bare(n: int) -> Run:
    """N bare interpreters started at once, waited for together."""

    def run() -> float:
        start = time.perf_counter()
        procs = [subprocess.Popen([PYTHON, "-c", "pass"]) for _ in range(n)]
        for p in procs:
            p.wait()
        return time.perf_counter() - start

    return run


def submit_argv(trainer: Path, workers: int, ps: int, job_dir: Path) -> list[str]:
    """``tfjob submit`` of the trivial trainer with ``workers`` and ``ps`` (quiet, its own job dir)."""
    return [
        str(BIN / "tfjob"), "submit", str(trainer), "-m", "triv.task", "--workers", str(workers), "--ps", str(ps),
        "--strategy", "multi-worker", "--quiet", "--job-dir", str(job_dir),
    ]  # fmt: skip


def cli(trainer: Path, workers: int, ps: int, root: Path) -> Run:
    """``tfjob submit`` of the trivial trainer as a real process (a new job dir each run)."""
    count = [0]

    def run() -> float:
        count[0] += 1
        return command(submit_argv(trainer, workers, ps, root / f"cli-{workers}-{count[0]}"), env=clean_env())()

    return run


def _api_job(trainer: Path, job_dir: Path, *args: str) -> tuple[float, str]:
    from tfjob import Job, Local

    job = Job(
        package=str(trainer), module="triv.task", workers=4, ps=2, strategy="multi-worker",
        backend=Local(grace=5.0), job_dir=str(job_dir), args=list(args),
    )  # fmt: skip
    sink = io.StringIO()
    start = time.perf_counter()
    job_id = job.backend.run(job.spec, job.options, console=sink, summary=sink)
    return time.perf_counter() - start, job_id


def api(trainer: Path, root: Path) -> Run:
    """The 1+4+2 job through ``LocalBackend.run`` in this process."""
    count = [0]

    def run() -> float:
        count[0] += 1
        return _api_job(trainer, root / f"api-{count[0]}")[0]

    return run


def teardown(trainer: Path, root: Path) -> Run:
    """Seconds from the chief's exit to the job's recorded end, 6 tasks still running then."""
    from tfjob.runtime.store import JobStore

    count = [0]

    def run() -> float:
        count[0] += 1
        _, job_id = _api_job(trainer, root / f"teardown-{count[0]}", "--hang", "7")
        with JobStore() as store:
            record = store.get(job_id)
            chief = next(t for t in store.tasks(job_id) if t.name == "chief-0")
        if record is None or record.state.value != "SUCCEEDED" or record.ended is None or chief.ended is None:
            raise RuntimeError(f"teardown job {job_id} did not succeed: {record}")
        return record.ended - chief.ended

    return run


def bare_teardown(n: int) -> Run:
    """SIGTERM to N bare sleeping interpreters (all up) and reaping them."""

    def run() -> float:
        procs = [subprocess.Popen([PYTHON, "-c", _SLEEPER], stdout=subprocess.PIPE) for _ in range(n)]
        for p in procs:
            assert p.stdout is not None
            p.stdout.readline()  # up: the interpreter has started
        start = time.perf_counter()
        for p in procs:
            p.terminate()
        for p in procs:
            p.wait()
        elapsed = time.perf_counter() - start
        for p in procs:
            p.stdout.close()  # type: ignore[union-attr]
        return elapsed

    return run


def memory(trainer: Path, workers: int, ps: int, root: Path) -> tuple[Run, Run, Run, Run]:
    """Runs returning MiB: the launcher's peak, its tree's peak, and the same for the bare baseline.

    Each pair shares one sampled process: the first run of a pair runs it, the second
    returns what the first saw.
    """
    tasks = 1 + workers + ps
    seen: dict[str, float] = {}
    count = [0]

    def launcher() -> float:
        count[0] += 1
        argv = submit_argv(trainer, workers, ps, root / f"rss-{workers}-{count[0]}")
        sampler = run_sampled(argv, env=clean_env())
        seen["tree"] = sampler.tree_peak / MIB
        return sampler.own_peak / MIB

    def bare_launcher() -> float:
        sampler = run_sampled([PYTHON, "-c", _BARE_TREE.format(n=tasks)], env=clean_env())
        seen["bare tree"] = sampler.tree_peak / MIB
        return sampler.own_peak / MIB

    return launcher, (lambda: seen["tree"]), bare_launcher, (lambda: seen["bare tree"])


def measure(runs: int, quick: bool = False) -> list[Figure]:
    """Every local-cluster figure, in a private TFJOB_HOME."""
    big_workers, big_ps = (8, 2) if quick else (32, 8)
    big = 1 + big_workers + big_ps
    warmup = 0 if quick else 1
    with private_home("tfjob-bench-local-") as root:
        trainer = write_trainer(root)
        cpu: dict[str, list[float]] = {"bare 7": [], "cli 7": []}
        timed = rounds(
            {
                "bare 7": with_cpu(bare(7), cpu["bare 7"]),
                "cli 7": with_cpu(cli(trainer, 4, 2, root), cpu["cli 7"]),
                "api 7": api(trainer, root),
                "teardown 7": teardown(trainer, root),
                "bare teardown 6": bare_teardown(6),
                f"bare {big}": bare(big),
                f"cli {big}": cli(trainer, big_workers, big_ps, root),
            },
            runs,
            warmup=warmup,
        )
        mib = {}
        for label, workers, ps in (("1+4+2", 4, 2), (f"1+{big_workers}+{big_ps}", big_workers, big_ps)):
            own, tree, bare_own, bare_tree = memory(trainer, workers, ps, root)
            n = 1 + workers + ps
            names = (f"launcher {label}", f"tree {label}", f"bare launcher of {n}", f"bare tree of {n}")
            got = rounds(dict(zip(names, (own, tree, bare_own, bare_tree))), runs, warmup=0, units=dict.fromkeys(names, "MiB"))
            mib[label] = [got[name] for name in names]

    big_label = f"1+{big_workers}+{big_ps}"
    overhead = Target("overhead-max", TARGET_OVERHEAD_S)
    figures = [
        Figure("local.submit_1_4_2", SECTION, "tfjob submit 1+4+2 (trivial trainer)", timed["cli 7"], timed["bare 7"], overhead),
        Figure(
            "local.submit_cpu_1_4_2",
            SECTION,
            "CPU time of tfjob submit 1+4+2 and its tasks",
            Sample("cli 7 CPU", cpu["cli 7"][warmup:]),
            Sample("bare 7 CPU", cpu["bare 7"][warmup:]),
        ),
        Figure("local.api_1_4_2", SECTION, "LocalBackend.run 1+4+2 (Python API)", timed["api 7"], timed["bare 7"]),
        Figure("local.submit_big", SECTION, f"tfjob submit {big_label} (trivial trainer)", timed[f"cli {big}"], timed[f"bare {big}"]),
        Figure(
            "local.teardown",
            SECTION,
            "teardown after the chief exits (1+4+2)",
            timed["teardown 7"],
            timed["bare teardown 6"],
            Target("max", TARGET_TEARDOWN_S),
        ),
    ]
    for label, key in (("1+4+2", "1_4_2"), (big_label, "big")):
        own, tree, bare_own, bare_tree = mib[label]
        figures.append(Figure(f"local.launcher_rss_{key}", SECTION, f"launcher peak RSS (VmHWM), {label}", own, bare_own))
        figures.append(Figure(f"local.tree_rss_{key}", SECTION, f"launcher + tasks peak total RSS, {label}", tree, bare_tree))
    return figures


if __name__ == "__main__":
    sys.exit(section_main(measure, __doc__))
