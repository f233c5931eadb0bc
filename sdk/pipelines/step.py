"""One tfjob job as one pipeline step, without KFP: what the KFP component and an Airflow
task both call.

:func:`run_step` submits the job, streams its ``[task]`` log lines to the step's log,
waits for its end and returns a :class:`StepResult` — the job id and backend, the
SavedModel's URI and the final metrics — so the next step needs no knowledge of the job
dir's layout. The step's own end follows the job's:

- the step process is terminated (SIGTERM: a pipeline run cancelled, a pod deleted, an
  Airflow task killed) → the job is cancelled on its platform, and :class:`StepCancelled`;
- the job fails → :class:`~tfjob.errors.JobFailedError` naming the failing task.
"""

from __future__ import annotations

import json
import math
import signal
import sys
import threading
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable

from ..errors import JobCancelledError, SpecError, TfjobError

#: How long a terminated step waits for its job to reach CANCELLED before it ends anyway
#: (KFP and Kubernetes give a terminated pod 30 s before SIGKILL).
CANCEL_WAIT = 20.0
#: The metrics file the templates write under the job dir (their ``eval/metrics.json``).
METRICS_FILE = ("eval", "metrics.json")
#: At most this much of a metrics file is read back.
_MAX_METRICS_BYTES = 256 * 1024


class StepCancelled(JobCancelledError):
    """The step was terminated (SIGTERM) while its job ran; the job was cancelled."""


class _Terminated(BaseException):
    """Raised in the main thread by the SIGTERM handler: not an Exception, so no ``except
    Exception`` between the signal and :func:`run_step` swallows it."""


@dataclass
class StepResult:
    """What a finished job hands the next pipeline step.

    Attributes:
        job_id: the job's id on its backend (``tfjob status ID`` shows it).
        backend: the backend it ran on (``local``, ``vertex``, ``kubeflow``…).
        state: its final state (``SUCCEEDED``).
        job_dir: its job dir (local path or ``gs://`` URI), if it had one.
        model_uri: the SavedModel directory a serving or evaluation step loads, if found.
        metrics: the final metrics, name → number (the job dir's ``eval/metrics.json``).
    """

    job_id: str
    backend: str
    state: str
    job_dir: str | None = None
    model_uri: str | None = None
    metrics: dict[str, float] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def build_job(
    *,
    module: str = "",
    package: str = "",
    image: str = "",
    backend: str = "local",
    workers: int = 0,
    ps: int = 0,
    evaluators: int = 0,
    job_dir: str = "",
    args: list[str] | tuple[str, ...] = (),
    options: dict[str, Any] | None = None,
) -> Any:
    """A :class:`tfjob.Job` from a pipeline step's parameters (which have no ``None``: an
    empty text or a zero count means "not given"). ``options`` holds any other ``Job``
    keyword (``project``, ``region``, ``staging_bucket``, ``chief_machine_type``, ``env``…).

    A local job dir is made absolute: a step's working directory is no place to leave a model.
    """
    from ..job.job import job_from_keywords

    if isinstance(args, str):
        # One text (a pipeline parameter typed as text, a JSON list passed as text): read as a
        # JSON list when it is one, else as a command line (shlex), never letter by letter.
        args = _args_of_text(args)
    elif not isinstance(args, (list, tuple)) or not all(isinstance(a, str) for a in args):
        raise SpecError(f"args={args!r:.80} must be a list of texts, the trainer's own arguments")
    extra = dict(options or {})
    for name in ("module", "package", "image", "backend", "workers", "ps", "evaluators", "job_dir", "args"):
        if name in extra:
            raise SpecError(f"options holds {name!r}, which is a parameter of its own: give it as {name}=…")
    if job_dir and "://" not in job_dir:
        job_dir = str(Path(job_dir).expanduser().resolve())
    given: dict[str, Any] = {
        "backend": backend or None,
        "image": image or None,
        "workers": workers or None,
        "ps": ps or None,
        "evaluators": evaluators or None,
        "job_dir": job_dir or None,
        "args": list(args) if args else None,
    }
    return job_from_keywords(package or None, module or None, {**{k: v for k, v in given.items() if v is not None}, **extra})


def _args_of_text(text: str) -> list[str]:
    """A step's ``args`` given as one text: a JSON list of texts, or a command line."""
    import shlex

    if text.lstrip().startswith("["):
        try:
            listed = json.loads(text)
        except (ValueError, RecursionError):
            listed = None
        if isinstance(listed, list) and all(isinstance(a, str) for a in listed):
            return listed
        raise SpecError(f"args={text[:80]!r} starts like a JSON list but is not one of texts; give a list of texts")
    try:
        return shlex.split(text)
    except ValueError as e:
        raise SpecError(f"args={text[:80]!r} cannot be read as a command line: {e}") from None


def run_step(
    job: Any,
    *,
    timeout: float | None = None,
    stream_logs: bool = True,
    require_model: bool = False,
    out: Callable[[str], None] = print,
) -> StepResult:
    """Run ``job`` (a :class:`tfjob.Job`) to its end as a pipeline step.

    Args:
        job: the job.
        timeout: seconds after which the job is cancelled and the step fails
            (:class:`~tfjob.errors.JobTimeoutError`); None: no limit.
        stream_logs: print the job's ``[task]`` lines as they come (the step's log).
        require_model: fail when the job wrote no SavedModel under its job dir.
        out: where the log lines and tfjob's own lines go.

    Raises:
        JobFailedError: the job failed (its message names the failing task).
        StepCancelled: the step got SIGTERM; the job was cancelled first.
        JobTimeoutError: ``timeout`` passed; the job was cancelled.
        SpecError: the job cannot run as described, or ``require_model`` and no model.
    """
    from ..errors import JobTimeoutError

    handle = job.submit()
    out(f"tfjob: job {handle.id} submitted to the {handle.backend_name} backend")
    restore = _cancel_on_sigterm()
    try:
        if stream_logs:
            _stream(handle, out)
        try:
            status = handle.wait(timeout)
        except JobTimeoutError:
            handle.cancel()
            _wait_quietly(handle)
            raise
        handle.result()  # JobFailedError naming the task, or JobCancelledError
    except _Terminated:
        out(f"tfjob: the step was terminated: cancelling job {handle.id}")
        handle.cancel()
        final = _wait_quietly(handle)
        raise StepCancelled(f"the step was terminated, so job {handle.id} was cancelled ({final})") from None
    finally:
        restore()
    job_dir = job.spec.job_dir
    model_uri, metrics = job_outputs(handle, job_dir)
    if require_model and model_uri is None:
        raise SpecError(
            f"job {handle.id} succeeded but wrote no SavedModel under its job dir {job_dir or '(none given)'}; "
            "export the model to JOB_DIR/model (AIP_MODEL_DIR), or give job_dir"
        )
    out(f"tfjob: job {handle.id} {status.state.value}" + (f"; model {model_uri}" if model_uri else ""))
    return StepResult(handle.id, handle.backend_name, status.state.value, job_dir, model_uri, metrics)


def _stream(handle: Any, out: Callable[[str], None]) -> None:
    """Print the job's log lines until it ends; a platform whose logs cannot be read (no
    permission for Cloud Logging) is said once, and the step goes on waiting."""
    try:
        for line in handle.logs(follow=True):
            out(line)
    except TfjobError as e:
        out(f"tfjob: cannot stream the job's logs ({e}); waiting for its end")


def _wait_quietly(handle: Any) -> str:
    """The state a cancelled job reaches within :data:`CANCEL_WAIT`, as text."""
    from ..errors import JobTimeoutError

    try:
        state: str = handle.wait(CANCEL_WAIT).state.value
        return state
    except JobTimeoutError:
        return "still stopping"
    except TfjobError as e:
        return f"its state unknown: {e}"


def _cancel_on_sigterm() -> Callable[[], None]:
    """Make SIGTERM raise :class:`_Terminated` in the main thread; return the undo. Outside
    the main thread (a caller's worker thread) signals cannot be caught: nothing changes."""
    if threading.current_thread() is not threading.main_thread():
        return lambda: None

    def handler(signum: int, frame: Any) -> None:
        raise _Terminated()

    previous = signal.signal(signal.SIGTERM, handler)

    def undo() -> None:
        signal.signal(signal.SIGTERM, previous)

    return undo


# --- what the job left -----------------------------------------------------------------------


def job_outputs(handle: Any, job_dir: str | None) -> tuple[str | None, dict[str, float]]:
    """(the SavedModel's URI, the final metrics) of a finished job.

    The model is :meth:`JobHandle.outputs`' ``model_uri`` (the newest directory holding a
    ``saved_model.pb`` under the job dir, local or ``gs://``). The metrics are the numbers of
    the job dir's metrics file (the templates' ``eval/metrics.json``), then the last value of
    each TensorBoard scalar the job logged (:meth:`JobHandle.metrics`, as ``run/tag``).
    """
    if not job_dir:
        return None, {}
    outputs = handle.outputs()
    if not outputs.reachable:
        print(f"tfjob: the job dir cannot be read from here: {outputs.note}", file=sys.stderr)
        return None, {}
    metrics: dict[str, float] = {}
    files = [f.path for f in outputs.files if f.kind == "metrics" and f.path.endswith(".json")]
    chosen = "/".join(METRICS_FILE) if "/".join(METRICS_FILE) in files else (min(files, key=len) if files else None)
    if chosen is not None and outputs.root:
        metrics.update(_metrics_from_text(_read(handle, outputs.root.rstrip("/") + "/" + chosen)))
    if any(f.kind == "tensorboard" for f in outputs.files):
        try:
            metrics.update({k: v for k, v in handle.metrics().flat().items() if k not in metrics})
        except (TfjobError, ImportError) as e:  # the scalars are a bonus; the metrics file is the record
            print(f"tfjob: the TensorBoard scalars were not read: {e}", file=sys.stderr)
    return outputs.model_uri, metrics


def _read(handle: Any, uri: str) -> str:
    """A small text file of the job dir, local or ``gs://`` ('' when it cannot be read)."""
    if not uri.startswith("gs://"):
        from ..description.limits import read_bounded_text

        try:
            return read_bounded_text(uri, "the metrics file", _MAX_METRICS_BYTES, "a metrics JSON file", errors="replace")
        except TfjobError:
            return ""
    from ..after.outputs import split_gs

    bucket, name = split_gs(uri)
    try:
        blob = handle._storage().bucket(bucket).blob(name)
        text: str = blob.download_as_bytes(end=_MAX_METRICS_BYTES).decode("utf-8", "replace")
        return text
    except Exception as e:  # no permission, gone: the metrics are optional
        print(f"tfjob: {uri} was not read: {type(e).__name__}", file=sys.stderr)
        return ""


def _metrics_from_text(text: str) -> dict[str, float]:
    """The numbers of a metrics JSON object (``{"accuracy": 0.84, "auc": 0.86, …}``)."""
    if not text.strip():
        return {}
    try:
        record = json.loads(text)
    except (ValueError, RecursionError):  # not JSON, a number of too many digits, too deep
        return {}
    if not isinstance(record, dict):
        return {}
    out: dict[str, float] = {}
    for k, v in record.items():
        if not isinstance(v, (int, float)) or isinstance(v, bool):
            continue
        try:
            number = float(v)
        except OverflowError:  # an integer beyond any float (400 digits): no metric
            continue
        if math.isfinite(number):
            out[str(k)[:128]] = number
    return out
