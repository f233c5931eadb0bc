"""A function job's outcome, read back by the process that holds its handle.

The chief wrote it (:mod:`tfjob.functions.runner`) to the URI its ``--result`` argument names,
under the job dir: the return value, or the exception with the traceback it printed. Only
that file is unpickled, and only here: the job's own result, for the submitter or the holder
of its handle (``tfjob.get_job(ID).result()``).
"""

from __future__ import annotations

import os
import pickle
from typing import Any, Callable, Mapping, Sequence

from ..errors import JobFailedError

#: The largest result read back (a return value is a result, not a data set: write those to the job dir).
MAX_RESULT = 1024 * 1024 * 1024


class RemoteTraceback(Exception):
    """The traceback a function's exception had in its task: the ``__cause__`` of the exception
    re-raised in the caller, so Python prints it above the caller's own (as
    ``concurrent.futures`` does for a process pool)."""

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.text = text

    def __str__(self) -> str:
        return f'\n"""\n{self.text}"""'


def result_uri(args: Sequence[str] | None) -> str | None:
    """The result URI a function job's tasks were given (``--result URI``), else None."""
    items = list(args or ())
    for i, item in enumerate(items[:-1]):
        if item == "--result":
            return str(items[i + 1])
    return None


def read_result(uri: str, storage: Callable[[], Any]) -> bytes | None:
    """The result file's bytes, None if the chief wrote none (yet); ``storage()`` gives a
    Cloud Storage client for a ``gs://`` URI."""
    if uri.startswith("gs://"):
        bucket, _, name = uri[len("gs://") :].partition("/")
        blob = storage().bucket(bucket).get_blob(name)
        if blob is None:
            return None
        if blob.size is not None and blob.size > MAX_RESULT:
            raise JobFailedError(f"the function's result at {uri} is {blob.size} bytes, over {MAX_RESULT} read back; return less")
        data: bytes = blob.download_as_bytes()
        return data
    try:
        size = os.stat(uri).st_size
    except FileNotFoundError:
        return None
    if size > MAX_RESULT:
        raise JobFailedError(f"the function's result at {uri} is {size} bytes, over {MAX_RESULT} read back; return less")
    with open(uri, "rb") as f:
        return f.read(MAX_RESULT + 1)


def load_outcome(data: bytes, uri: str) -> Mapping[str, Any]:
    """The outcome the chief pickled (needs cloudpickle's reconstructors for by-value code)."""
    try:
        import cloudpickle  # type: ignore[import-untyped,import-not-found,unused-ignore]  # noqa: F401 - by-value code unpickles through its functions
    except ImportError:
        pass
    try:
        outcome = pickle.loads(data)  # noqa: S301 - the job's own result, written by its chief
    except (ImportError, AttributeError) as e:
        raise JobFailedError(
            f"the function's result at {uri} cannot be unpickled here ({type(e).__name__}: {e}); "
            "install what the value is made of (its classes' modules) where you read it"
        ) from None
    except Exception as e:
        raise JobFailedError(
            f"the function's result at {uri} is damaged ({type(e).__name__}: {e}): "
            "it is not the file the chief wrote whole; run the function again"
        ) from None
    if not _is_outcome(outcome):
        raise JobFailedError(f"{uri} is not a function result tfjob wrote (its chief writes ok, task and value or error)")
    return outcome  # type: ignore[no-any-return]


def _is_outcome(outcome: Any) -> bool:
    """Whether ``outcome`` has the shape the runner writes."""
    if not isinstance(outcome, dict) or not isinstance(outcome.get("ok"), bool):
        return False
    if outcome["ok"]:
        return "value" in outcome
    return all(isinstance(outcome.get(key), str) for key in ("type", "message", "traceback"))


def raise_outcome(outcome: Mapping[str, Any], job_id: str) -> None:
    """Raise the function's exception as it was raised in its task: its own type, its remote
    traceback as the cause, and a note naming the task and the job."""
    task = str(outcome.get("task") or "chief-0")
    text = str(outcome.get("traceback") or "")
    error = outcome.get("error")
    if isinstance(error, BaseException) and not isinstance(error, Exception):
        # sys.exit() or KeyboardInterrupt in the function: raised here it would end the caller.
        did = f"called sys.exit({error.code!r})" if isinstance(error, SystemExit) else f"raised {type(error).__name__}"
        raise JobFailedError(
            f"job {job_id}: the function {did} in task {task} instead of returning a value; "
            "return (or raise an exception) from the function instead (log_tail holds its traceback)",
            job_id=job_id,
            task=task,
            log_tail=text,
        )
    if isinstance(error, BaseException):
        note = f"raised in task {task} of job {job_id} (its traceback is the cause above)"
        add_note = getattr(error, "add_note", None)
        if add_note is not None:
            add_note(note)
        raise error from RemoteTraceback(text)
    raise JobFailedError(
        f"job {job_id}: task {task} raised {outcome.get('type')}: {outcome.get('message')} "
        "(the exception could not be pickled back; log_tail holds its traceback)",
        job_id=job_id,
        task=task,
        log_tail=text,
    )
