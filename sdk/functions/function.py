"""A Python function as a distributed job: :func:`remote` and :class:`RemoteFunction`.

``@tfjob.remote(workers=2, ps=1)`` on a function gives a :class:`RemoteFunction`: calling it
runs the function here, as before; ``.run(*args, **kwargs)`` runs it as a job on the chosen
backend and returns the chief's return value; ``.submit(...)`` returns a
:class:`FunctionHandle` at once, whose ``result()`` waits and returns it (or re-raises the
function's exception with its remote traceback). The call is pickled into a package
(:mod:`tfjob.functions.package`) that runs as any trainer does; see ``docs/functions.md``.
"""

from __future__ import annotations

import functools
import sys
import uuid
from typing import TYPE_CHECKING, Any, Callable, Generic, Mapping, ParamSpec, Sequence, TypeVar, overload

from ..errors import JobFailedError, SpecError
from ..job import Job, JobHandle, default_job_name
from ..model import JobState

if TYPE_CHECKING:
    from ..backends import Backend
    from ..platforms import Platform, Replicas, StrPath
    from ..spec import Accelerator
    from ..store import JobStore
    from .package import FunctionPackage

P = ParamSpec("P")
R = TypeVar("R")

#: The backends whose tasks can write a local path the caller reads.
_LOCAL = ("local",)


class FunctionHandle(JobHandle, Generic[R]):
    """The handle of a function job: a :class:`tfjob.JobHandle` whose :meth:`result` is the
    function's return value. ``tfjob.get_job(ID)`` gives one for a function job, in any process."""

    def result(self) -> R:  # type: ignore[override]
        """Wait for the job's end; return the chief's return value.

        Raises:
            the function's own exception (its type, with the remote traceback as its cause and
            a note naming the task), when the chief's call raised one;
            JobFailedError: another task failed, or the job failed before the call ended;
            JobCancelledError: the job was cancelled.
        """
        from .result import load_outcome, raise_outcome, read_result, result_uri

        status = self.wait()
        spec = self.spec() or {}
        uri = result_uri(spec.get("args"))
        if uri is None:
            raise JobFailedError(f"job {self.id} is not a function job (it has no --result argument)", job_id=self.id)
        data = read_result(uri, self._storage)
        outcome = load_outcome(data, uri) if data is not None else None
        if outcome is not None and not outcome["ok"]:
            raise_outcome(outcome, self.id)
        if status.state is JobState.SUCCEEDED:
            if outcome is None:
                raise JobFailedError(f"job {self.id} SUCCEEDED but its chief wrote no result at {uri}", job_id=self.id)
            value: R = outcome["value"]
            return value
        JobHandle.result(self)  # raises: FAILED, LOST, CANCELLED, with the diagnosis
        raise JobFailedError(f"job {self.id} ended {status.state.value}", job_id=self.id)  # not reached


def _echo(message: str) -> None:
    print(f"tfjob: {message}", file=sys.stderr, flush=True)


class RemoteFunction(Generic[P, R]):
    """A function that runs as a distributed job (made by :func:`remote` or
    :meth:`tfjob.Job.from_function`). Calling it runs it here, unchanged."""

    def __init__(self, fn: Callable[P, R], settings: Mapping[str, Any], requirements: Any = None) -> None:
        if not callable(fn):
            raise SpecError(f"remote: {fn!r:.60} is not a function")
        self.fn = fn
        self._settings = dict(settings)
        self._requirements = requirements
        functools.update_wrapper(self, fn)

    def __repr__(self) -> str:
        return f"RemoteFunction({getattr(self.fn, '__qualname__', self.fn)!r})"

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> R:
        return self.fn(*args, **kwargs)

    def package(self, *args: P.args, **kwargs: P.kwargs) -> FunctionPackage:
        """The package this call ships: the pickled call and its requirements (built once)."""
        from .package import build_package, found_requirements, given_requirements, imported_modules, pickle_call, pickle_facts

        data = pickle_call(self.fn, args, kwargs)
        by_value, _ = pickle_facts(data)
        if self._requirements is not None:
            return build_package(data, given_requirements(self._requirements), by_value=by_value)
        found = found_requirements(imported_modules(self.fn, data))
        return build_package(data, found, found=found, by_value=by_value)

    def job(self, *args: P.args, **kwargs: P.kwargs) -> Job:
        """The :class:`tfjob.Job` this call runs as (checked: a by-value function on an image
        of another Python is refused here, before anything is submitted)."""
        built = self.package(*args, **kwargs)
        settings = dict(self._settings)
        name = getattr(self.fn, "__name__", "function")
        settings.setdefault("name", None)
        if settings["name"] is None:
            settings["name"] = default_job_name(name.strip("<>_") or "function", None)
        job = Job(built.directory, MODULE, **settings)
        what = f"{getattr(self.fn, '__qualname__', 'the function')}"
        if built.by_value:
            from .interpreter import check_python

            check_python(job.backend_name, job.spec, job.options, what=what)
        if job.backend_name in _LOCAL and not job.spec.job_dir and any(job.spec.image_for(role) for role, _ in job.spec.tasks()):
            from .package import functions_dir

            # Container tasks write only what is mounted: the job dir is (at its own path, writable).
            job.spec = job.spec.replace(job_dir=str(functions_dir()))
        uri = f"{_result_base(job)}/tfjob-results/{uuid.uuid4().hex}.pkl"
        job.spec = job.spec.replace(args=("--result", uri, *job.spec.args))
        if not job.options.quiet:
            how = "by value (its code)" if built.by_value else "by reference"
            if built.found or self._requirements is None:
                reqs = f"requirements found from its imports: {', '.join(built.requirements)} (requirements= gives others)"
            else:
                reqs = f"requirements: {', '.join(built.requirements)}"
            _echo(f"{what} pickled {how}, {built.size} bytes, in {built.directory}; {reqs}")
        return job

    def render(self, *args: P.args, **kwargs: P.kwargs) -> dict[str, Any]:
        """The request the backend would send for this call (``--dry-run``: nothing submitted)."""
        return self.job(*args, **kwargs).render()

    def submit(self, *args: P.args, **kwargs: P.kwargs) -> FunctionHandle[R]:
        """Start the call as a job and return its handle at once; ``handle.result()`` waits for
        the return value (also from another process: ``tfjob.get_job(handle.id).result()``)."""
        job = self.job(*args, **kwargs)
        handle = job.submit()
        return FunctionHandle[R](job.backend, handle.id, store=job.store)

    def run(self, *args: P.args, **kwargs: P.kwargs) -> R:
        """Run the call as a job, its tasks' lines streamed as they come (``[chief-0] …``), and
        return the chief's return value; Ctrl-C (a kernel interrupt) cancels the job.

        Raises:
            the function's own exception, with its remote traceback (see :meth:`FunctionHandle.result`);
            JobFailedError, JobCancelledError: the job failed or was cancelled otherwise.
        """
        job = self.job(*args, **kwargs)
        job_id = job.backend.run(job.spec, job.options)
        return FunctionHandle[R](job.backend, job_id, store=job.store).result()


#: The module every function job runs.
MODULE = "tfjob_function.run"


def _result_base(job: Job) -> str:
    """Where the call's result goes: under the job dir, else a default the caller can read."""
    job_dir = job.spec.job_dir
    backend = job.backend_name
    if job_dir:
        if backend not in _LOCAL and not job_dir.startswith("gs://"):
            raise SpecError(
                field="job_dir",
                value=job_dir,
                problem=f"is a path inside the {backend} job: its result must come back here",
                fix="give a gs:// URI",
            )
        return job_dir.rstrip("/")
    if backend in _LOCAL:
        from .package import functions_dir

        return str(functions_dir())
    bucket = getattr(job.options, "staging_bucket", None) or getattr(job.options, "default_staging_bucket", None)
    if bucket:
        return f"{str(bucket).rstrip('/')}/tfjob/functions"
    raise SpecError(
        field="job_dir",
        problem=f"is needed on the {backend} backend: the function's result comes back through it",
        fix="give job_dir='gs://BUCKET/PATH'",
    )


def _settings(**values: Any) -> dict[str, Any]:
    flags = ("quiet", "include_secrets")
    out = {k: v for k, v in values.items() if v is not None and not (k in flags and v is False)}
    if out.get("chief") is True:
        del out["chief"]
    out.setdefault("strategy", "auto")
    return out


@overload
def remote(fn: Callable[P, R], /) -> RemoteFunction[P, R]: ...


@overload
def remote(
    fn: None = None,
    /,
    *,
    backend: str | Platform | Backend | None = None,
    name: str | None = None,
    image: str | None = None,
    requirements: StrPath | Sequence[str] | None = None,
    packages: Sequence[str] | None = None,
    chief: Replicas | bool = True,
    workers: int | Replicas | None = None,
    ps: int | Replicas | None = None,
    evaluators: int | Replicas | None = None,
    accelerator: str | Accelerator | None = None,
    env: Mapping[str, str] | None = None,
    job_dir: StrPath | None = None,
    labels: Mapping[str, str] | None = None,
    service_account: str | None = None,
    timeout: float | None = None,
    strategy: str | None = None,
    tf_config: str | None = None,
    quiet: bool = False,
    poll_interval: float | None = None,
    cancel_on_interrupt: bool = True,
    include_secrets: bool = False,
    container_engine: str | None = None,
    store: JobStore | None = None,
) -> Callable[[Callable[P, R]], RemoteFunction[P, R]]: ...


def remote(
    fn: Callable[P, R] | None = None,
    /,
    *,
    backend: str | Platform | Backend | None = None,
    name: str | None = None,
    image: str | None = None,
    requirements: StrPath | Sequence[str] | None = None,
    packages: Sequence[str] | None = None,
    chief: Replicas | bool = True,
    workers: int | Replicas | None = None,
    ps: int | Replicas | None = None,
    evaluators: int | Replicas | None = None,
    accelerator: str | Accelerator | None = None,
    env: Mapping[str, str] | None = None,
    job_dir: StrPath | None = None,
    labels: Mapping[str, str] | None = None,
    service_account: str | None = None,
    timeout: float | None = None,
    strategy: str | None = None,
    tf_config: str | None = None,
    quiet: bool = False,
    poll_interval: float | None = None,
    cancel_on_interrupt: bool = True,
    include_secrets: bool = False,
    container_engine: str | None = None,
    store: JobStore | None = None,
) -> RemoteFunction[P, R] | Callable[[Callable[P, R]], RemoteFunction[P, R]]:
    """Make a function a distributed job: ``@tfjob.remote(workers=2, ps=1)``.

    The arguments are :class:`tfjob.Job`'s (the roles, the backend and its settings, the
    image…), with these differences: ``strategy`` defaults to ``auto`` (parameter servers
    and workers serve TensorFlow when the cluster has parameter servers; otherwise the chief
    and every worker call the function, ``multi-worker``); ``requirements`` is a requirements
    file or a list of lines (default: the distributions the function's imports come from,
    printed); ``cancel_on_interrupt`` defaults to True (Ctrl-C, a kernel interrupt, cancels
    the job); the function's return value comes back through ``job_dir`` (default: under
    ``$TFJOB_HOME/functions`` locally, the staging bucket on Vertex AI; a ``gs://`` URI on
    Kubernetes).

    Inside the function, ``tfjob.task()`` is the task (role, index, cluster) and
    ``tfjob.cluster_resolver()`` the resolver a ``tf.distribute`` strategy takes.
    """
    settings = _settings(
        backend=backend, name=name, image=image, packages=packages, chief=chief, workers=workers, ps=ps,
        evaluators=evaluators, accelerator=accelerator, env=env, job_dir=job_dir, labels=labels,
        service_account=service_account, timeout=timeout, strategy=strategy, tf_config=tf_config, quiet=quiet,
        poll_interval=poll_interval, cancel_on_interrupt=cancel_on_interrupt, include_secrets=include_secrets,
        container_engine=container_engine, store=store,
    )  # fmt: skip

    def wrap(function: Callable[P, R]) -> RemoteFunction[P, R]:
        return RemoteFunction(function, settings, requirements)

    return wrap(fn) if fn is not None else wrap
