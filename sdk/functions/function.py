"""A Python function as a distributed job: :class:`RemoteFunction`.

``@tfjob.remote(workers=2, ps=1)`` (:func:`tfjob.job.remote`) on a function gives a :class:`RemoteFunction`: calling it
runs the function here, as before; ``.run(*args, **kwargs)`` runs it as a job on the chosen
backend and returns the chief's return value; ``.submit(...)`` returns a
:class:`tfjob.job.FunctionHandle` at once, whose ``result()`` waits and returns it (or re-raises the
function's exception with its remote traceback). The call is pickled into a package
(:mod:`tfjob.functions.package`) that runs as any trainer does; see ``docs/functions.md``.

The API makes the jobs and handles (:class:`JobMaker`, given by :mod:`tfjob.job`): nothing in
this package imports :mod:`tfjob.job`.
"""

from __future__ import annotations

import functools
import sys
import uuid
from typing import TYPE_CHECKING, Any, Callable, Generic, Iterator, Mapping, ParamSpec, Protocol, TypeVar

from ..errors import SpecError, TfjobError
from .retention import RESULTS, functions_dir

if TYPE_CHECKING:
    from .package import FunctionPackage

P = ParamSpec("P")
R = TypeVar("R")
R_co = TypeVar("R_co", covariant=True)

#: The backends whose tasks can write a local path the caller reads.
_LOCAL = ("local",)
#: The module every function job runs.
MODULE = "tfjob_function.run"


class ResultHandle(Protocol[R_co]):
    """What ``submit`` returns (a :class:`tfjob.job.FunctionHandle`): a job's handle whose
    ``result()`` is the function's return value."""

    @property
    def id(self) -> str: ...

    def result(self) -> R_co: ...

    def wait(self, timeout: float | None = None) -> Any: ...

    def status(self) -> Any: ...

    def logs(self, task: str | None = None, follow: bool = False, tail: int | None = None) -> Iterator[str]: ...

    def cancel(self) -> None: ...


class JobMaker(Protocol):
    """How a :class:`RemoteFunction` makes its job and its handles (:mod:`tfjob.job` gives them:
    this package never imports the API it serves)."""

    def job(self, package: str, module: str, name: str, settings: Mapping[str, Any]) -> Any:
        """A :class:`tfjob.Job` of the package and module, named, with the settings."""

    def handle(self, backend: Any, job_id: str, store: Any) -> Any:
        """A :class:`tfjob.job.FunctionHandle` of the job."""

    def default_name(self, stem: str) -> str:
        """A job's default name from a stem (``train`` → ``train-20261128-120000``)."""


def _echo(message: str) -> None:
    print(f"tfjob: {message}", file=sys.stderr, flush=True)


class RemoteFunction(Generic[P, R]):
    """A function that runs as a distributed job (made by :func:`tfjob.remote` or
    :meth:`tfjob.Job.from_function`). Calling it runs it here, unchanged."""

    def __init__(self, fn: Callable[P, R], settings: Mapping[str, Any], requirements: Any, maker: JobMaker) -> None:
        if not callable(fn):
            raise SpecError(f"remote: {fn!r:.60} is not a function")
        self.fn = fn
        self._maker = maker
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

    def job(self, *args: P.args, **kwargs: P.kwargs) -> Any:
        """The :class:`tfjob.Job` this call runs as (checked: a by-value function on an image
        of another Python is refused here, before anything is submitted)."""
        built = self.package(*args, **kwargs)
        settings = dict(self._settings)
        name = getattr(self.fn, "__name__", "function")
        settings.setdefault("name", None)
        if settings["name"] is None:
            settings["name"] = self._maker.default_name(name.strip("<>_") or "function")
        job_name = settings.pop("name")
        job = self._maker.job(str(built.directory), MODULE, job_name, settings)
        what = f"{getattr(self.fn, '__qualname__', 'the function')}"
        if built.by_value:
            from .interpreter import check_python

            check_python(job.backend_name, job.spec, job.options, what=what)
        if job.backend_name in _LOCAL and job.spec.job_dir and "://" not in str(job.spec.job_dir):
            import os

            # Tasks run in the package's directory: a relative job dir is the caller's, made absolute.
            job.spec = job.spec.replace(job_dir=os.path.abspath(str(job.spec.job_dir)))
        call = uuid.uuid4().hex
        if job.backend_name in _LOCAL and not job.spec.job_dir and any(job.spec.image_for(role) for role, _ in job.spec.tasks()):
            # Container tasks write only what is mounted: the job dir is (at its own path, writable),
            # a directory of this call's own: nothing else of $TFJOB_HOME is theirs to write.
            job.spec = job.spec.replace(job_dir=str(functions_dir() / RESULTS / call))
        uri = f"{_result_base(job)}/{RESULTS}/{call}.pkl"
        job.spec = job.spec.replace(args=("--result", uri, *job.spec.args))
        if not job.options.quiet:
            how = "by value (its code)" if built.by_value else "by reference"
            listed = ", ".join(built.requirements) or "none"
            if built.found or self._requirements is None:
                reqs = f"requirements found from its imports: {listed} (requirements= gives others)"
            else:
                reqs = f"requirements: {listed}"
            shipped = f" with cloudpickle {built.cloudpickle}" if built.cloudpickle else ""
            _echo(f"{what} pickled {how}, {built.size} bytes, in {built.directory}{shipped}; {reqs}")
        return job

    def render(self, *args: P.args, **kwargs: P.kwargs) -> dict[str, Any]:
        """The request the backend would send for this call (``--dry-run``: nothing submitted)."""
        body: dict[str, Any] = self.job(*args, **kwargs).render()
        return body

    def submit(self, *args: P.args, **kwargs: P.kwargs) -> ResultHandle[R]:
        """Start the call as a job and return its handle at once; ``handle.result()`` waits for
        the return value (also from another process: ``tfjob.get_job(handle.id).result()``)."""
        job = self.job(*args, **kwargs)
        _prune(job)
        handle = job.submit()
        made: ResultHandle[R] = self._maker.handle(job.backend, handle.id, job.store)
        return made

    def run(self, *args: P.args, **kwargs: P.kwargs) -> R:
        """Run the call as a job, its tasks' lines streamed as they come (``[chief-0] …``), and
        return the chief's return value; Ctrl-C (a kernel interrupt) cancels the job.

        Raises:
            the function's own exception, with its remote traceback (see :meth:`FunctionHandle.result`);
            JobFailedError, JobCancelledError: the job failed or was cancelled otherwise.
        """
        job = self.job(*args, **kwargs)
        _prune(job)
        job_id = job.backend.run(job.spec, job.options)
        handle: ResultHandle[R] = self._maker.handle(job.backend, job_id, job.store)
        return handle.result()


def _prune(job: Any) -> None:
    """What tfjob keeps of earlier function jobs, pruned (:mod:`.retention`) before this one is
    submitted; its own package and result are fresh, so kept. A prune that fails (a file of
    another user's, a busy store) leaves things as they are: the job goes on."""
    from .retention import prune

    try:
        prune(job.store, keep=[job.spec.package] if job.spec.package else [])
    except (OSError, TfjobError):
        pass


def _result_base(job: Any) -> str:
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
        return str(job_dir).rstrip("/")
    if backend in _LOCAL:
        return str(functions_dir())
    bucket = getattr(job.options, "staging_bucket", None) or getattr(job.options, "default_staging_bucket", None)
    if bucket:
        return f"{str(bucket).rstrip('/')}/tfjob/functions"
    raise SpecError(
        field="job_dir",
        problem=f"is needed on the {backend} backend: the function's result comes back through it",
        fix="give job_dir='gs://BUCKET/PATH'",
    )
