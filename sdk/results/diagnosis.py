"""Why a task failed, read from what it printed and what its platform said, with the fix.

Pure: :func:`diagnose_text` reads log text, :func:`diagnose` a :class:`~tfjob.model.JobStatus`
(its failing task's last lines, its message, every task's reason and end) — the same on
every backend. :func:`kernel_oom_record` is the one impure helper: what the kernel says
about a process it killed for memory, when this machine lets us read it.

The patterns are the lines TensorFlow, Python, the kernel and the platforms print
(``tests/test_diagnosis.py`` feeds each one as it is printed). A cause tfjob only infers
(a SIGKILL with no kernel record) says so: ``certain=False``.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Iterable

from ..lazy import LazyPattern
from .oom import cgroup_oom_kills as cgroup_oom_kills  # its home: read at every local job's start
from ..model import JobState, JobStatus
from . import Diagnosis

if TYPE_CHECKING:
    from .capacity import Capacity

#: How much of a log is read for patterns (its end): a runaway line cannot stall a status.
MAX_TEXT = 64 * 1024
MAX_EVIDENCE = 240

#: The backends whose cluster holds evaluators (Kubeflow's TF_CONFIG lists them).
_KUBEFLOW_BACKENDS = ("kubeflow", "jobset", "trainjob")


#: What an out-of-memory kill is and its fix, whether a log or the platform said it.
_OOM_CAUSE = "the task ran out of memory and was killed"
_OOM_FIX = "give it a machine with more memory (--master-machine-type / --worker-machine-type, --memory on Kubernetes), or make the batch or the model smaller"


@dataclass(frozen=True)
class _Pattern:
    code: str
    regex: LazyPattern  # compiled on first use: a job that fails with no log to read never compiles them
    cause: Callable[[re.Match[str], str], str]
    fix: Callable[[re.Match[str], str], str]


def _job_dir_fix(m: re.Match[str], backend: str) -> str:
    if backend in ("vertex", "vertex-tuning"):
        return (
            "Vertex AI passes no --job-dir: give it to the trainer after `--` "
            "(tfjob submit … -- --job-dir gs://BUCKET/DIR), or make the flag optional and default it "
            "to os.environ['AIP_MODEL_DIR'] (set from --job-dir / baseOutputDirectory)"
        )
    return "give it to the trainer after `--` (tfjob submit … -- --job-dir DIR), or default it to os.environ['AIP_MODEL_DIR']"


def _batch_fix(m: re.Match[str], backend: str) -> str:
    if backend in ("vertex", "vertex-tuning", "aiplatform"):
        return (
            "Vertex AI always runs a chief, which a MultiWorkerMirroredStrategy counts as a replica: make the "
            "global batch a multiple of strategy.num_replicas_in_sync (or scale it by it)"
        )
    return (
        "--no-chief (worker 0 is then the chief, as the program counts it), or make the global batch "
        "a multiple of strategy.num_replicas_in_sync"
    )


_PATTERNS = (
    _Pattern(
        "tf2-master",
        LazyPattern(r"Disallowed task type found in cluster spec"),
        lambda m, b: "a TensorFlow 2 strategy was given a TF_CONFIG whose primary task is `master`, which TF2 strategies refuse",
        lambda m, b: (
            "--tf-config tf2 (every task's TF_CONFIG says chief, evaluators out of the cluster), or --use-chief (AI Platform's legacy TF_CONFIG)"
        ),
    ),
    _Pattern(
        "chief-not-in-cluster",
        LazyPattern(r'Job "?(chief|master)"? was not defined in cluster'),
        lambda m, b: (
            f"the program builds its cluster from TF_CONFIG without the {m.group(1)} task, yet the job has one "
            "(a TensorFlow 1 program written for a cluster of workers and parameter servers only)"
        ),
        lambda m, b: "--no-chief (worker 0 is then the chief, as the program expects), or add the chief to the program's cluster",
    ),
    _Pattern(
        "needs-tf1",
        LazyPattern(r"module 'tensorflow(?:\.compat\.v1)?' has no attribute '(contrib|estimator\.contrib|app\.flags)'"),
        lambda m, b: f"the program uses tf.{m.group(1)}, which TensorFlow 2 no longer has: it needs TensorFlow 1.x",
        lambda m, b: (
            "run it on a TensorFlow 1.15 image (--image, e.g. a tensorflow/tensorflow:1.15 based one, or --runtime-version 1.15 "
            "on AI Platform), or port it off tf.contrib"
        ),
    ),
    _Pattern(
        "job-dir-required",
        LazyPattern(r"error: the following arguments are required: (?:[^\n]*?)(--job[-_]dir)"),
        lambda m, b: f"the trainer requires {m.group(1)}, and the job gave it none",
        _job_dir_fix,
    ),
    _Pattern(
        "batch-not-divisible",
        LazyPattern(r"`?global_batch_size`? (\d+) is not divisible by `?num_replicas_in_sync`? (\d+)"),
        lambda m, b: (
            f"the global batch size {m.group(1)} does not divide among {m.group(2)} replicas: the cluster has "
            "a replica the program does not count (a chief besides the workers)"
        ),
        _batch_fix,
    ),
    _Pattern(
        "port-in-use",
        LazyPattern(
            r"(?:port of task \S+ \(\S+\) is already in use"
            r"|Could not start gRPC server"
            r"|\[Errno 98\] Address already in use"
            r"|Failed to add port to server)"
        ),
        lambda m, b: "a task could not listen on its port: another process holds it",
        lambda m, b: "stop what holds the port (ss -ltnp shows it), or let tfjob pick free ports (leave the ports out)",
    ),
    _Pattern(
        "missing-module",
        LazyPattern(r"ModuleNotFoundError: No module named '([^']+)'"),
        lambda m, b: f"module {m.group(1)!r} is not installed where the task runs",
        lambda m, b: (
            f"add the distribution that provides {m.group(1).split('.')[0]!r} to the trainer's requirements "
            "(--requirements, or install_requires in setup.py / dependencies in pyproject.toml) or install it in the image"
        ),
    ),
    _Pattern(
        "out-of-memory",
        LazyPattern(r"ran out-of-memory and exited|OOMKilled|(?:Memory cgroup o|O)ut of memory: Killed process"),
        lambda m, b: _OOM_CAUSE,
        lambda m, b: _OOM_FIX,
    ),
)

_IMAGE_PULL = LazyPattern(r"\b(ImagePullBackOff|ErrImagePull|InvalidImageName|ErrImageNeverPull)\b")
#: mm/oom_kill.c: "%s: Killed process %d (%s) total-vm:…" (the message is "Out of memory" or
#: "Memory cgroup out of memory"; kernels before 5.0 printed no prefix).
_OOM_KERNEL = LazyPattern(r"(?:(?:Memory cgroup out of memory|Out of memory): )?Killed process (\d+) \(([^)]*)\) total-vm")


def _evidence(text: str, match: re.Match[str]) -> str:
    start = text.rfind("\n", 0, match.start()) + 1
    end = text.find("\n", match.end())
    line = text[start : end if end != -1 else len(text)].strip()
    return line if len(line) <= MAX_EVIDENCE else line[: MAX_EVIDENCE - 1] + "…"


def diagnose_text(text: str, *, task: str | None = None, backend: str = "local") -> list[Diagnosis]:
    """The causes recognised in ``text`` (a task's last lines, a platform's message), once each,
    the most specific first (in the order of the table in the README)."""
    text = text[-MAX_TEXT:]
    found: list[Diagnosis] = []
    for pattern in _PATTERNS:
        match = None
        for match in pattern.regex.finditer(text):
            pass  # the last occurrence: the one closest to the end
        if match is not None:
            found.append(Diagnosis(pattern.code, task, pattern.cause(match, backend), pattern.fix(match, backend), _evidence(text, match)))
    return found


#: The dialects whose TF_CONFIG always names the primary task ``chief`` (never ``master``).
_CHIEF_DIALECTS = ("vertex", "kubeflow")


def _checked(d: Diagnosis, status: JobStatus, dialect: str | None) -> Diagnosis:
    """``d`` against the job's own facts: a cause its setup rules out is said as inferred,
    with what the facts say (a trainer that prints TensorFlow's ``master`` error when its
    TF_CONFIG named the chief built that cluster itself)."""
    if d.code == "tf2-master" and dialect in _CHIEF_DIALECTS:
        return Diagnosis(
            d.code,
            d.task,
            "the trainer printed TensorFlow's error for a cluster whose primary task is `master`, but this job's TF_CONFIG "
            f"names it chief ({dialect} dialect): the program, or a library it uses, builds a cluster with a master itself",
            "make the program take the cluster from TF_CONFIG as given, or name its primary task chief",
            d.evidence,
            certain=False,
        )
    if d.code == "chief-not-in-cluster" and not any(t.name.startswith(("chief-", "master-")) for t in status.tasks) and status.tasks:
        return Diagnosis(d.code, d.task, d.cause, d.fix, d.evidence, certain=False)
    return d


def _image_pull(task: str, reason: str) -> Diagnosis:
    return Diagnosis(
        "image-pull",
        task,
        "the cluster cannot pull the task's image",
        "check the image name and tag (pushed to that registry?), and that the cluster may pull it "
        "(imagePullSecrets in --pod-template, or a registry its nodes reach)",
        reason[:MAX_EVIDENCE],
    )


def _killed_without_record(task: str, evidence: str) -> Diagnosis:
    return Diagnosis(
        "out-of-memory",
        task,
        "the task was killed by SIGKILL, which is what the kernel's out-of-memory killer sends "
        "(no kernel record was readable here to confirm it)",
        "if it ran out of memory: a machine with more memory or a smaller batch; `dmesg | grep -i 'killed process'` "
        "on the machine tells (it may also have been killed by hand)",
        evidence,
        certain=False,
    )


def diagnose(
    status: JobStatus,
    *,
    dialect: str | None = None,
    strategy: str | None = None,
    log_of: Callable[[str], str] | None = None,
) -> list[Diagnosis]:
    """What tfjob can tell of why ``status``'s job failed, or why it hangs; [] when nothing.

    Args:
        status: the job as its backend sees it (``extra["log_tail"]`` is the failing task's end).
        dialect: the TF_CONFIG dialect the tasks got (``kubeflow`` puts evaluators in the cluster).
        strategy: the bootstrap's strategy (``parameter-server``…), when known.
        log_of: the last lines of a task, for a backend whose status carries none (Vertex AI).
    """
    backend = status.backend
    found: list[Diagnosis] = []
    if status.state in (JobState.FAILED, JobState.LOST):
        task = status.failed_task
        tail = str(status.extra.get("log_tail") or "")
        if not tail and task and log_of is not None:
            try:
                tail = log_of(task)
            except Exception:  # a log that cannot be read leaves the other evidence
                tail = ""
        found += diagnose_text(tail, task=task, backend=backend)
        found += [d for d in diagnose_text(status.message, task=task, backend=backend) if d.code not in {f.code for f in found}]
        found = [_checked(d, status, dialect) for d in found]
        oom = str(status.extra.get("oom_evidence") or "")
        if oom and "out-of-memory" not in {d.code for d in found}:
            certain = bool(_OOM_KERNEL.search(oom))
            if certain:
                found.append(Diagnosis("out-of-memory", task, _OOM_CAUSE, _OOM_FIX, oom[:MAX_EVIDENCE]))
            else:
                found.append(_killed_without_record(task or "?", oom[:MAX_EVIDENCE]))
        for t in status.tasks:
            if t.reason and "OOMKilled" in t.reason and "out-of-memory" not in {d.code for d in found}:
                found.append(Diagnosis("out-of-memory", t.name, _OOM_CAUSE, _OOM_FIX, t.reason[:MAX_EVIDENCE]))
        killed = next((t for t in status.tasks if t.name == task and t.signal == 9), None)
        # Only when the SIGKILL is what failed the job (not the teardown after a --timeout).
        if (
            killed is not None
            and "out-of-memory" not in {d.code for d in found}
            and backend == "local"
            and "killed by SIGKILL" in status.message
        ):
            found.append(_killed_without_record(killed.name, f"{killed.name} was killed by SIGKILL"))
    for t in status.tasks:
        match = _IMAGE_PULL.search(t.reason or "")
        if match and "image-pull" not in {d.code for d in found}:
            found.append(_image_pull(t.name, t.reason or ""))
    waiting = str(status.extra.get("waiting") or "")
    if _IMAGE_PULL.search(waiting) and "image-pull" not in {d.code for d in found}:
        found.append(_image_pull(waiting.split(" ", 1)[0], waiting))
    hang = evaluator_hang(status, dialect, strategy)
    if hang is not None and "image-pull" not in {d.code for d in found}:
        found.append(hang)
    short = capacity_of(status)
    if short is not None and short.code not in {d.code for d in found}:
        # A capacity shortage is why the job ended: first. A trainer's own failure that quotes one
        # comes after what its log says.
        found.insert(len(found) if short.code == "trainer-failed" else 0, short)
    return found


#: A platform's word that a replica of the trainer exited non-zero: "The replica workerpool1-0 exited
#: with a non-zero status of 1." (Vertex AI), "The replica master 0 exited with a non-zero status of 1." (AI Platform).
_REPLICA_EXIT = LazyPattern(r"\breplica ([\w-]{1,40}(?: \d{1,6})?) (?:[^.\n]{0,80} )?exited with a non-zero status of (-?\d{1,4})\b")


def capacity_of(status: JobStatus) -> Diagnosis | None:
    """A quota, stockout, unschedulable pod or unadmitted queue that holds or failed the job
    (:mod:`tfjob.results.capacity`), read from its message, its waiting reason and its tasks' reasons.

    A job that failed because a task of the trainer exited non-zero (its ``failed_task`` and
    ``extra["task_exit_code"]``: "The replica workerpool1-0 exited with a non-zero status of 1. …")
    failed by the program's own doing, whatever words its message quotes — as the failover never
    moves it elsewhere: a capacity error in that message is said to be quoted, not diagnosed
    (:func:`_quoted_capacity`)."""
    from .capacity import capacity_diagnosis, classify

    if status.state.is_terminal and status.state not in (JobState.FAILED, JobState.LOST):
        return None
    texts: list[tuple[str | None, str]] = [(t.name, t.reason or "") for t in status.tasks]  # a task's own first: it is named
    texts += [(None, status.message), (None, str(status.extra.get("waiting") or ""))]
    region = status.extra.get("region")
    for task, text in texts:
        found = classify(text) if text else None
        if found is not None:
            own = _quoted_capacity(status, found)
            if own is not None:
                return own
            return capacity_diagnosis(
                found,
                backend=status.backend,
                project=status.extra.get("project"),
                region=region if isinstance(region, str) else None,
                task=task,
            )
    return None


def _quoted_capacity(status: JobStatus, found: Capacity) -> Diagnosis | None:
    """Where the job failed because its trainer exited non-zero: that failure, its message's
    capacity words (``found``, a :class:`~tfjob.results.capacity.Capacity`) said to be quoted; else None."""
    from .capacity import describe

    code = status.extra.get("task_exit_code")
    task = status.failed_task
    if status.state is not JobState.FAILED:
        return None
    if not task or not isinstance(code, int) or isinstance(code, bool):
        said = _REPLICA_EXIT.search(status.message[:MAX_TEXT])  # a platform that names no task (AI Platform's message)
        if said is None:
            return None
        task, code = said.group(1), int(said.group(2))
    if code == 0:
        return None
    what = describe(found)
    return Diagnosis(
        "trainer-failed",
        task,
        f"the trainer failed: {task} exited with code {code} — the program's own failure, so the job was not tried "
        f"elsewhere; its message quotes a capacity error ({what}), not the reason the job ended",
        f"read {task}'s log (`tfjob logs {status.id}{'' if ' ' in task else ' --task ' + task}`) for why the program exited; the capacity error "
        "is one the program met or printed (a call of its own to a cloud API), not the job's machines",
        status.message[:MAX_EVIDENCE],
    )


def evaluator_hang(status: JobStatus, dialect: str | None = None, strategy: str | None = None) -> Diagnosis | None:
    """A parameter-server chief still running after an evaluator ended, where the evaluator is in
    the cluster (Kubeflow's TF_CONFIG): the chief waits for a task that will never answer."""
    kubeflow = status.backend in _KUBEFLOW_BACKENDS or dialect == "kubeflow"
    # While it hangs, or at the end of a job stopped by its --timeout (the hang's usual end).
    timed_out = status.state is JobState.FAILED and status.message.lower().startswith(("timed out", "deadline"))
    if (status.state is not JobState.RUNNING and not timed_out) or not kubeflow:
        return None
    tasks = {t.name: t for t in status.tasks}
    has_ps = any(name.startswith("ps-") for name in tasks)
    if not has_ps or (strategy is not None and strategy not in ("parameter-server", "module", "auto")):
        return None
    chief = tasks.get("chief-0") or tasks.get("worker-0")
    if chief is None:
        return None
    if timed_out:
        # The chief was still running when the time ran out; the evaluator had ended before.
        still = status.message.partition("still running:")[2]
        ended = [
            t for t in status.tasks
            if t.name.startswith("evaluator-") and t.state.is_terminal and t.name not in still
            and (t.ended is None or chief.ended is None or t.ended < chief.ended)
        ]  # fmt: skip
        if chief.name not in still or not ended:
            return None
    else:
        ended = [t for t in status.tasks if t.name.startswith("evaluator-") and t.state.is_terminal]
        if chief.state.is_terminal or not ended:
            return None
    return Diagnosis(
        "ps-waits-for-evaluator",
        chief.name,
        f"the job {'hung until its timeout' if timed_out else 'hangs'}: its chief runs a parameter-server strategy and waits for {ended[0].name}, which already "
        f"ended ({ended[0].state.value}) — Kubeflow's TF_CONFIG puts evaluators in the cluster the chief connects to",
        "--tf-config tf2 (evaluators out of the cluster), or keep the evaluator running until the chief ends"
        + ("" if timed_out else f"; `tfjob cancel {status.id}` stops this one"),
        f"{ended[0].name} {ended[0].state.value}, {chief.name} {chief.state.value}",
        certain=False,
    )


def kernel_oom_record(pid: int | None, *, since: float | None = None, kmsg: str = "/dev/kmsg", limit: int = 2 * 1024 * 1024) -> str | None:
    """The kernel's out-of-memory line for ``pid`` (``Out of memory: Killed process 1234
    (python3) …``), when this machine lets us read its log (root, or kernel.dmesg_restrict=0);
    else None. With ``since`` (seconds on the monotonic clock, which /dev/kmsg stamps records
    with), an older record of a reused pid is not taken. Bounded: at most ``limit`` bytes,
    never blocks."""
    if pid is None:
        return None
    try:
        fd = os.open(kmsg, os.O_RDONLY | os.O_NONBLOCK)
    except OSError:
        return None
    found = None
    read = 0
    try:
        while read < limit:
            try:
                record = os.read(fd, 8192)
            except BlockingIOError:
                break
            except OSError:  # EPIPE: a record overwritten while reading; go on with the next
                continue
            if not record:
                break
            read += len(record)
            for line in record.decode("utf-8", "replace").splitlines():
                head, _, text = line.partition(";")  # a /dev/kmsg record: "6,1234,5678,-;text"
                fields = head.split(",")
                stamp = int(fields[2]) / 1e6 if len(fields) > 2 and fields[2].isdigit() else None
                match = _OOM_KERNEL.search(text.strip())
                if match and int(match.group(1)) == pid and (since is None or stamp is None or stamp >= since):
                    found = text.strip()
    finally:
        os.close(fd)
    return found


def explain(diagnoses: Iterable[Diagnosis]) -> str:
    """The diagnoses as lines for a terminal (``diagnosis: … — fix: …``); '' for none."""
    return "\n".join(
        f"diagnosis{' (' + d.task + ')' if d.task else ''}: {d.cause}{'' if d.certain else ' (inferred)'}\n  fix: {d.fix}"
        for d in diagnoses
    )
