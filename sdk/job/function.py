"""A Python function as a job: :func:`remote` (``@tfjob.remote(workers=2)``), the API over
:mod:`tfjob.functions`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable, Mapping, ParamSpec, Sequence, TypeVar, overload

from ..backends import Backend
from ..description.spec import Accelerator
from ..model import Strategy, TFConfigMode

from .job import _FunctionJobs, _function_settings

if TYPE_CHECKING:
    from ..functions.function import RemoteFunction
    from ..platforms import Platform, Replicas, StrPath
    from ..runtime.store import JobStore

_P = ParamSpec("_P")
_R = TypeVar("_R")


@overload
def remote(fn: Callable[_P, _R], /) -> RemoteFunction[_P, _R]: ...


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
    strategy: Strategy | None = None,
    tf_config: TFConfigMode | None = None,
    quiet: bool = False,
    poll_interval: float | None = None,
    cancel_on_interrupt: bool = True,
    include_secrets: bool = False,
    container_engine: str | None = None,
    store: JobStore | None = None,
) -> Callable[[Callable[_P, _R]], RemoteFunction[_P, _R]]: ...


def remote(
    fn: Callable[_P, _R] | None = None,
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
    strategy: Strategy | None = None,
    tf_config: TFConfigMode | None = None,
    quiet: bool = False,
    poll_interval: float | None = None,
    cancel_on_interrupt: bool = True,
    include_secrets: bool = False,
    container_engine: str | None = None,
    store: JobStore | None = None,
) -> RemoteFunction[_P, _R] | Callable[[Callable[_P, _R]], RemoteFunction[_P, _R]]:
    """Make a function a distributed job: ``@tfjob.remote(workers=2, ps=1)``.

    The arguments are :class:`Job`'s (the roles, the backend and its settings, the image…),
    with these differences: ``strategy`` defaults to ``auto`` (parameter servers and workers
    serve TensorFlow when the cluster has parameter servers; otherwise the chief and every
    worker call the function, as ``multi-worker``); ``requirements`` is a requirements file or
    a list of lines (default: the distributions the function's imports come from, printed);
    ``cancel_on_interrupt`` defaults to True (Ctrl-C, a kernel interrupt, cancels the job);
    the function's return value comes back through ``job_dir`` (default: under
    ``$TFJOB_HOME/functions`` locally, the staging bucket on Vertex AI; a ``gs://`` URI on
    Kubernetes).

    The result, a :class:`tfjob.functions.function.RemoteFunction`: calling it runs the
    function here; ``.run(*args, **kwargs)`` runs it as a job and returns the chief's return
    value (or re-raises its exception, with the remote traceback); ``.submit(...)`` returns a
    :class:`FunctionHandle` at once; ``.render(...)`` is the dry run. Inside the function,
    ``tfjob.task()`` is the task (role, index, cluster) and ``tfjob.cluster_resolver()`` the
    resolver a ``tf.distribute`` strategy takes. ``docs/functions.md`` says what is pickled.
    """
    from ..functions.function import RemoteFunction

    settings = _function_settings(
        backend=backend, name=name, image=image, packages=packages, chief=chief, workers=workers, ps=ps,
        evaluators=evaluators, accelerator=accelerator, env=env, job_dir=job_dir, labels=labels,
        service_account=service_account, timeout=timeout, strategy=strategy, tf_config=tf_config, quiet=quiet,
        poll_interval=poll_interval, cancel_on_interrupt=cancel_on_interrupt, include_secrets=include_secrets,
        container_engine=container_engine, store=store,
    )  # fmt: skip

    def wrap(function: Callable[_P, _R]) -> RemoteFunction[_P, _R]:
        return RemoteFunction(function, settings, requirements, _FunctionJobs())

    return wrap(fn) if fn is not None else wrap
