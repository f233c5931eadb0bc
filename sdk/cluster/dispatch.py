"""What every task of a job starts: one source for the local plan and every platform's request.

Every task on every backend runs ``tfjob-bootstrap`` (``python -m
tfjob.container.bootstrap`` locally) with the arguments :func:`bootstrap_args` gives,
so role dispatch, the ``TF_CONFIG`` handling and ``--job-dir`` are the same wherever
the job runs. Stdlib only: the bootstrap imports this before TensorFlow.

Dispatch (``--strategy``), recorded in the job and applied on every backend:

- ``module`` (the default, what the platforms do): every task — chief, workers,
  parameter servers, evaluators — runs the trainer module, which dispatches on its
  role itself (TensorFlow's tutorials, the Kubeflow examples and Google's samples do);
- ``parameter-server``: for a chief-only trainer, the bootstrap itself serves the ps
  and worker tasks (a ``tf.distribute.Server`` each) and runs the module on the chief
  and evaluators only;
- ``auto``: ``parameter-server`` when the job has parameter servers, else ``module``;
- ``multi-worker``: the same as ``module`` (every task runs the module), kept as the
  name MultiWorkerMirroredStrategy users know.
"""

from __future__ import annotations

# Not `from typing import TYPE_CHECKING`: importing typing costs the bootstrap ~3 ms.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Literal, Protocol, Sequence

    #: What a strategy resolves to (:func:`resolve_strategy`): what the bootstrap runs.
    Resolved = Literal["module", "parameter-server"]

    class DispatchOptions(Protocol):
        """What a job's options say about dispatch (every backend's options have both)."""

        @property
        def strategy(self) -> str | None: ...
        @property
        def tf_config(self) -> str | None: ...


STRATEGIES: tuple[str, ...] = ("module", "parameter-server", "auto", "multi-worker")
DEFAULT_STRATEGY = "module"
#: The platforms that pass ``--job-dir`` to the trainer (legacy AI Platform and its
#: ``gcloud ai-platform local train``); Vertex AI sets ``AIP_MODEL_DIR`` instead and
#: the Kubeflow operator passes nothing.
JOB_DIR_ARG_DIALECTS: tuple[str, ...] = ("ai-platform", "gcloud-local")

#: The bootstrap command a container runs a trainer module through.
BOOTSTRAP = "tfjob-bootstrap"
#: The module a package replica runs (``pythonModule``): the bootstrap, from the
#: ``tfjob-bootstrap`` wheel staged next to the trainer (``tfjob.container.wheel``).
BOOTSTRAP_MODULE = "tfjob.container.bootstrap"
#: Where a task finds the trainer's packages when they travel beside an image rather
#: than in it (a local ``--image`` run, a Kubernetes ConfigMap), read-only.
PACKAGES_MOUNT = "/tfjob/packages"


def _did_you_mean(value: str) -> str:
    import difflib

    close = difflib.get_close_matches(value, STRATEGIES, n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def resolve_strategy(strategy: str | None, *, ps: int, workers: int) -> Resolved:
    """``module`` or ``parameter-server``: what the bootstrap does for a job of this shape.

    Raises:
        UsageError: an unknown strategy, or ``parameter-server`` without workers and ps.
    """
    strategy = strategy or DEFAULT_STRATEGY
    if strategy not in STRATEGIES:
        from ..errors import UsageError  # here: a task's bootstrap comes through and raises nothing

        raise UsageError(
            field="strategy", value=strategy, problem=f"is not known{_did_you_mean(strategy)}", fix=f"choose one of {', '.join(STRATEGIES)}"
        )
    if strategy == "auto":
        return "parameter-server" if ps else "module"
    if strategy == "multi-worker":
        return "module"
    if strategy == "parameter-server" and not (ps and workers):
        from ..errors import UsageError, Word

        raise UsageError(
            field="strategy",
            value=Word("parameter-server"),
            problem="(the bootstrap serves ps and worker tasks) needs {workers} ≥ 1 and {ps} ≥ 1",
            fix="add them, or use {strategy=module}",
        )
    return "parameter-server" if strategy == "parameter-server" else "module"


def job_strategy(spec: Any, strategy: str | None) -> Resolved:
    """:func:`resolve_strategy` for a job (a :class:`~tfjob.description.spec.JobSpec`): its ps and workers."""
    return resolve_strategy(strategy, ps=spec.count("ps"), workers=spec.count("worker"))


def bootstrap_args(
    module: str | None,
    trainer_args: Sequence[str],
    *,
    strategy: str,
    dialect: str,
    tf_config: str = "platform",
    job_dir: str | None = None,
    script: str | None = None,
) -> list[str]:
    """The bootstrap's arguments for one task: ``--module M [...] -- TRAINER_ARGS``.

    Args:
        module: the trainer module (``python -m``), or None with ``script``.
        trainer_args: the user's arguments for the trainer.
        strategy: as resolved by :func:`resolve_strategy`.
        dialect: the platform the job runs on (or imitates locally): ``--job-dir`` is
            passed on to the trainer only where that platform passes it.
        tf_config: ``platform`` (default) or ``tf2`` (see the bootstrap's ``--tf-config``).
        job_dir: the job directory (already per trial for a tuning trial).
        script: the trainer's file (``python PATH``), instead of ``module``.
    """
    args = ["--script", script] if script is not None else ["--module", str(module)]
    if strategy != DEFAULT_STRATEGY:
        args += ["--strategy", strategy]
    if tf_config != "platform":
        args += ["--tf-config", tf_config]
    if job_dir and dialect in JOB_DIR_ARG_DIALECTS:
        args += ["--job-dir", job_dir]
    return [*args, "--", *trainer_args]


def trainer_args(spec: Any, role: str | None = None) -> list[str]:
    """What a task's trainer gets: the user's arguments (its pool's own, if it has them).
    Vertex AI passes no ``--job-dir``: it sets ``AIP_MODEL_DIR`` (and the other
    ``AIP_*_DIR``) from ``baseOutputDirectory``."""
    return list(spec.args_for(role) if role is not None else spec.args)


def package_args(spec: Any, role: str, options: DispatchOptions) -> list[str]:
    """A package replica's args: the bootstrap's (``--module M [...] --``) then the trainer's.

    The platform runs ``python -m tfjob.container.bootstrap ARGS``, which is what a local
    task runs, so role dispatch, ``--strategy`` and ``--tf-config`` act the same there.
    The bootstrap is never given ``--job-dir`` here: Vertex AI passes none (it sets
    ``AIP_MODEL_DIR``) and AI Platform appends its ``jobDir`` to the args itself.
    """
    strategy = job_strategy(spec, options.strategy)
    tf_config = options.tf_config or "platform"
    return bootstrap_args(spec.module, trainer_args(spec, role), strategy=strategy, dialect="vertex", tf_config=tf_config)


def bootstrap_command(spec: Any, options: DispatchOptions, packages: Sequence[str] = ()) -> list[str]:
    """``tfjob-bootstrap [--package URI…] --module M [...] --``: a container's command (the args follow).

    ``packages``: archives the bootstrap pip-installs first (``--packages`` with ``--image``).
    """
    strategy = job_strategy(spec, options.strategy)
    tf_config = options.tf_config or "platform"
    installs = [arg for uri in packages for arg in ("--package", uri)]
    return [
        BOOTSTRAP,
        *installs,
        *bootstrap_args(spec.module, [], strategy=strategy, dialect="vertex", tf_config=tf_config, script=spec.script),
    ]
