"""Train the census income classifier with MultiWorkerMirroredStrategy (``python -m trainer.task``).

Every task of the cluster (the chief and each worker) runs this same program: each
holds a full copy of the model, trains on its own shard of the rows, and the
gradients are all-reduced at every step. Each task reads its role from ``TF_CONFIG``:

- ``chief`` (or ``worker`` 0 when there is no chief): trains, and keeps the
  checkpoints, the metrics and the SavedModel in ``--job-dir``;
- the other ``worker`` tasks: train alongside; they must save too (saving takes
  part in the collectives) but write to a scratch directory they delete;
- ``evaluator``: evaluates each new checkpoint as the chief writes it;
- no ``TF_CONFIG``: one local process trains alone, with the same outputs.
"""

from __future__ import annotations

import logging
import os
import sys
from typing import Any, Sequence

# The same Keras as the parameter-server template (tf-keras); must precede `import tensorflow`.
os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")

from . import experiment  # noqa: E402

log = logging.getLogger("trainer")


def cluster_problem(cluster: dict[str, Any]) -> str | None:
    """Why this trainer cannot run on ``cluster`` (a ``ClusterSpec.as_dict()``), or None."""
    if not cluster.get("ps"):
        return None
    return (
        "this trainer uses MultiWorkerMirroredStrategy, which has no parameter servers, but the cluster has "
        f"{len(cluster['ps'])} ps task(s): submit without --ps (tfjob submit ... --workers 1), "
        "or start from the census-ps template"
    )


def is_chief(task_type: str | None, task_id: int | None, cluster: dict[str, Any]) -> bool:
    """The task that keeps the job's files: the chief, else worker 0, else a lone process."""
    if not task_type:
        return True
    return task_type == "chief" or (task_type == "worker" and task_id == 0 and "chief" not in cluster)


def scratch_dir(job_dir: str, task_type: str, task_id: int) -> str:
    """Where a non-chief worker saves the files it must write and then deletes."""
    return os.path.join(job_dir, f"tmp-{task_type}-{task_id}")


def main(argv: Sequence[str] | None = None) -> int:
    """Dispatch this task by its role; return the exit code."""
    experiment.setup_logging()
    args = experiment.parse_args(argv)
    experiment.require_tf_keras()
    import tensorflow as tf

    resolver = experiment.cluster_resolver()
    role, index = resolver.task_type, resolver.task_id
    if role == "evaluator":  # not part of the cluster: it only reads checkpoints
        experiment.evaluate_continuously(args)
        return 0
    cluster = resolver.cluster_spec().as_dict()
    problem = cluster_problem(cluster)
    if problem:
        log.error("%s", problem)
        return 2
    # The strategy must exist before any other TensorFlow operation runs.
    strategy = tf.distribute.MultiWorkerMirroredStrategy(cluster_resolver=resolver) if cluster else tf.distribute.get_strategy()
    scratch = None if is_chief(role, index, cluster) else scratch_dir(args.job_dir, role, index)
    experiment.train_and_evaluate(args, strategy, scratch)
    if scratch and tf.io.gfile.exists(scratch):
        tf.io.gfile.rmtree(scratch)
    return 0


if __name__ == "__main__":
    sys.exit(main())
