"""The module a function job's tasks run (``tfjob_function.run``): stdlib and cloudpickle only.

tfjob copies this file into every function package it builds, beside the pickled function
(``function.pkl``) and the caller's cloudpickle (``_vendor/cloudpickle``, put first on
``sys.path`` here), so the package runs on any image that has the bootstrap.
The bootstrap runs it as the trainer module on the tasks that run a module (the chief, and
each worker under ``multi-worker``); parameter servers — and workers under
``parameter-server`` — serve TensorFlow and never get here.

Each task that gets here calls the function with the arguments. The chief (worker 0 where
the cluster has no chief) writes the outcome to the result URI given as ``--result``: the
return value, or the exception with its traceback as this task printed it, pickled, written
whole or not at all (a ``sys.exit()`` or KeyboardInterrupt in the function too: the caller
says the function did not return). An exception then ends the task as an uncaught exception
does, so the job fails as any failing task makes it fail.
"""

from __future__ import annotations

import os
import sys

#: The pickled call beside this file: ``(function, args, kwargs)``.
PAYLOAD = "function.pkl"
#: The caller's cloudpickle, shipped beside this file (``_vendor/cloudpickle``): a pickle's
#: format is its cloudpickle's, and the image need not have it.
VENDOR = "_vendor"


def use_shipped_cloudpickle() -> None:
    """Put the package's own cloudpickle first on ``sys.path`` (before the image's, if any)."""
    vendor = os.path.join(os.path.dirname(os.path.abspath(__file__)), VENDOR)
    if os.path.isfile(os.path.join(vendor, "cloudpickle", "__init__.py")) and vendor not in sys.path:
        sys.path.insert(0, vendor)


def task_name() -> str:
    """``chief-0``, ``worker-1``… as the bootstrap exported it (``chief-0`` outside a cluster)."""
    return f"{os.environ.get('TFJOB_TASK_TYPE') or 'chief'}-{os.environ.get('TFJOB_TASK_INDEX') or '0'}"


def task_outcome_uri(result: str, task: str) -> str:
    """Where a task other than the chief keeps the outcome of a call that raised: beside the result."""
    return f"{result}.{task}"


def is_chief() -> bool:
    return os.environ.get("TFJOB_IS_CHIEF", "1") == "1"


def write(uri: str, data: bytes) -> None:
    """``data`` at ``uri`` (a path or ``gs://``), whole or not at all."""
    if uri.startswith("gs://"):
        _write_gcs(uri, data)
        return
    directory = os.path.dirname(uri) or "."
    os.makedirs(directory, exist_ok=True)
    partial = f"{uri}.{os.getpid()}.partial"
    with open(partial, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    os.replace(partial, uri)


def _write_gcs(uri: str, data: bytes) -> None:
    # Cloud Storage's client where the image has it (it honours STORAGE_EMULATOR_HOST), else
    # TensorFlow's file system, which every TensorFlow image has.
    try:
        from google.cloud import storage  # type: ignore[attr-defined,import-untyped,unused-ignore]
    except ImportError:
        import tensorflow as tf  # type: ignore[import-untyped,import-not-found,unused-ignore]

        with tf.io.gfile.GFile(uri, "wb") as f:
            f.write(data)
        return
    bucket, _, name = uri[len("gs://") :].partition("/")
    storage.Client().bucket(bucket).blob(name).upload_from_string(data, content_type="application/octet-stream")


def _outcome_of(error: BaseException, task: str) -> dict[str, object]:
    import traceback

    import cloudpickle  # type: ignore[import-untyped,import-not-found,unused-ignore]

    text = "".join(traceback.format_exception(type(error), error, error.__traceback__))
    outcome: dict[str, object] = {
        "ok": False,
        "task": task,
        "type": f"{type(error).__module__}.{type(error).__qualname__}",
        "message": str(error),
        "traceback": text,
        "error": None,
    }
    try:
        cloudpickle.dumps(error)  # an exception pickles as its type, args and state: no frames
        outcome["error"] = error
    except Exception:
        pass  # the caller raises a RemoteError of the type's name, message and traceback
    return outcome


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    result = None
    if len(args) >= 2 and args[0] == "--result":
        result = args[1]
    if not result:
        print("error: tfjob_function.run needs --result URI (tfjob gives it)", file=sys.stderr)
        return 2
    use_shipped_cloudpickle()
    import cloudpickle  # type: ignore[import-untyped,import-not-found,unused-ignore]

    with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), PAYLOAD), "rb") as f:
        fn, fn_args, fn_kwargs = cloudpickle.load(f)
    task = task_name()
    try:
        value = fn(*fn_args, **fn_kwargs)
    except BaseException as error:  # sys.exit() and KeyboardInterrupt too: the caller says which
        # The chief's outcome is the call's; another task's failure is kept beside it, for when
        # that task ends the job before the chief has written one.
        write(result if is_chief() else task_outcome_uri(result, task), cloudpickle.dumps(_outcome_of(error, task)))
        raise
    if is_chief():
        try:
            data = cloudpickle.dumps({"ok": True, "task": task, "value": value})
        except Exception as error:
            problem = TypeError(f"the function's return value ({type(value).__name__}) cannot be pickled: {error}")
            write(result, cloudpickle.dumps(_outcome_of(problem, task)))
            raise problem from error
        write(result, data)
    return 0


if __name__ == "__main__":
    sys.exit(main())
