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

from ..errors import UsageError

# Not `from typing import TYPE_CHECKING`: importing typing costs the bootstrap ~3 ms.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Sequence

STRATEGIES: tuple[str, ...] = ("module", "parameter-server", "auto", "multi-worker")
DEFAULT_STRATEGY = "module"
#: The platforms that pass ``--job-dir`` to the trainer (legacy AI Platform and its
#: ``gcloud ai-platform local train``); Vertex AI sets ``AIP_MODEL_DIR`` instead and
#: the Kubeflow operator passes nothing.
JOB_DIR_ARG_DIALECTS: tuple[str, ...] = ("ai-platform", "gcloud-local")


def _did_you_mean(value: str) -> str:
    import difflib

    close = difflib.get_close_matches(value, STRATEGIES, n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def resolve_strategy(strategy: str | None, *, ps: int, workers: int) -> str:
    """``module`` or ``parameter-server``: what the bootstrap does for a job of this shape.

    Raises:
        UsageError: an unknown strategy, or ``parameter-server`` without workers and ps.
    """
    strategy = strategy or DEFAULT_STRATEGY
    if strategy not in STRATEGIES:
        raise UsageError(f"--strategy {strategy!r} is not known{_did_you_mean(strategy)}; choose one of {', '.join(STRATEGIES)}")
    if strategy == "auto":
        return "parameter-server" if ps else "module"
    if strategy == "multi-worker":
        return "module"
    if strategy == "parameter-server" and not (ps and workers):
        raise UsageError(
            "--strategy parameter-server (the bootstrap serves ps and worker tasks) needs --workers ≥ 1 and --ps ≥ 1; "
            "add them, or use --strategy module"
        )
    return strategy


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
