"""Train the census income classifier with ParameterServerStrategy (``python -m trainer.task``).

Each task reads its role from ``TF_CONFIG``:

- ``chief`` (the coordinator): builds the model, schedules training steps on the
  workers with Keras ``fit``, checkpoints, evaluates, exports the SavedModel;
- ``worker`` and ``ps``: serve the cluster (``tf.distribute.Server(...).join()``) and
  never return; the job ends when the chief ends. (Under ``tfjob`` the bootstrap
  does this itself and starts the trainer on the chief and evaluators only.)
- ``evaluator``: evaluates each new checkpoint as the chief writes it;
- no ``TF_CONFIG``: one local process trains alone, with the same outputs.

Run ``TF_USE_LEGACY_KERAS=1`` (set below if unset): ParameterServerStrategy needs tf-keras.
"""

from __future__ import annotations

import logging
import os
import sys
from typing import Any, Sequence

# Keras 3 does not support ParameterServerStrategy; tf-keras does. Must precede `import tensorflow`.
os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")

from . import experiment  # noqa: E402

log = logging.getLogger("trainer")


def serve(resolver: Any) -> None:
    """Run this ps or worker task's server until the job is torn down."""
    import tensorflow as tf

    # A worker that loses a ps fails the step at once instead of retrying forever.
    os.environ.setdefault("GRPC_FAIL_FAST", "use_caller")
    server = tf.distribute.Server(
        resolver.cluster_spec(),
        job_name=resolver.task_type,
        task_index=resolver.task_id,
        protocol=resolver.rpc_layer or "grpc",
        start=True,
    )
    log.info("%s %d serving at %s", resolver.task_type, resolver.task_id, server.target)
    server.join()


def cluster_problem(cluster: dict[str, Any]) -> str | None:
    """Why this trainer cannot run on ``cluster`` (a ``ClusterSpec.as_dict()``), or None."""
    tasks = sum(len(addresses) for addresses in cluster.values())
    if tasks <= 1 or (cluster.get("ps") and cluster.get("worker")):
        return None
    return (
        f"this trainer uses ParameterServerStrategy, but the cluster has only {', '.join(sorted(cluster))} tasks: "
        "it needs at least one worker and one ps (tfjob submit ... --workers 2 --ps 1), "
        "or start from the census-multiworker template for a cluster without ps"
    )


def make_strategy(resolver: Any) -> Any:
    """ParameterServerStrategy for a cluster; the default strategy for a single process."""
    import tensorflow as tf

    if sum(len(addresses) for addresses in resolver.cluster_spec().as_dict().values()) <= 1:
        return tf.distribute.get_strategy()
    return tf.distribute.ParameterServerStrategy(resolver)


def main(argv: Sequence[str] | None = None) -> int:
    """Dispatch this task by its role; return the exit code."""
    experiment.setup_logging()
    args = experiment.parse_args(argv)
    experiment.require_tf_keras()
    resolver = experiment.cluster_resolver()
    role = resolver.task_type
    if role == "evaluator":  # not part of the cluster: it only reads checkpoints
        experiment.evaluate_continuously(args)
        return 0
    problem = cluster_problem(resolver.cluster_spec().as_dict())
    if problem:
        log.error("%s", problem)
        return 2
    if role in ("ps", "worker"):
        serve(resolver)
        return 0
    # The chief (the coordinator) alone runs the training loop; workers only execute its steps.
    experiment.train_and_evaluate(args, make_strategy(resolver))
    return 0


if __name__ == "__main__":
    sys.exit(main())
