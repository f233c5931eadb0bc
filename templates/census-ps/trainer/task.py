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

from . import data, experiment, model as census_model  # noqa: E402

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


def make_strategy(resolver: Any) -> Any:
    """ParameterServerStrategy for a cluster with ps tasks; the default strategy for one process.

    Raises:
        ValueError: a cluster without ps tasks (this trainer needs them).
    """
    import tensorflow as tf

    cluster = resolver.cluster_spec().as_dict()
    if not cluster:
        return tf.distribute.get_strategy()
    if not cluster.get("ps") or not cluster.get("worker"):
        raise ValueError(
            f"this trainer uses ParameterServerStrategy, but the cluster has jobs {sorted(cluster)}: "
            "it needs at least one worker and one ps (tfjob submit ... --workers 2 --ps 1), "
            "or start from the census-multiworker template for a cluster without ps"
        )
    return tf.distribute.ParameterServerStrategy(resolver)


def _input(files: list[str], batch_size: int, *, training: bool) -> Any:
    """A DatasetCreator: each worker builds its own pipeline (shuffled differently, as the strategy advises)."""
    import tensorflow as tf

    def dataset_fn(context: tf.distribute.InputContext) -> tf.data.Dataset:
        ds = data.make_dataset(
            files,
            context.get_per_replica_batch_size(batch_size),
            shuffle=training,
            repeat=True,
            num_shards=context.num_input_pipelines,
            shard_index=context.input_pipeline_id,
            seed=None if training else 0,
        )
        return ds.map(lambda features, label: (census_model.to_model_inputs(features), label))

    return tf.keras.utils.experimental.DatasetCreator(dataset_fn)


def train_and_evaluate(args: Any, strategy: Any) -> dict[str, Any]:
    """Train (resuming from the job dir's checkpoint), evaluate, export; return the metrics record."""
    job_dir = experiment.JobDir(args.job_dir)
    train_files, eval_files = experiment.input_files(args, job_dir)
    with strategy.scope():
        model = census_model.build_model(args.learning_rate, args.hidden_units)
        start_step = experiment.restore_latest(model, job_dir.checkpoints)
    callbacks = [experiment.checkpoint_callback(model, job_dir.checkpoints)]
    step = experiment.fit_steps(model, _input(train_files, args.batch_size, training=True), start_step, args, callbacks)
    results = model.evaluate(_input(eval_files, args.batch_size, training=False), steps=args.eval_steps, return_dict=True, verbose=2)
    record = experiment.render_metrics(results, global_step=step, resumed_from_step=start_step, args=args)
    experiment.write_json(job_dir.metrics, record)
    experiment.report_metrics(results, step)
    log.info("evaluation at step %d: %s", step, {k: round(float(v), 4) for k, v in results.items()})
    experiment.export_model(model, job_dir.model)
    return record


def evaluate_continuously(args: Any) -> None:
    """Evaluator task: evaluate every checkpoint the chief writes, up to the last one."""
    import tensorflow as tf

    job_dir = experiment.JobDir(args.job_dir)
    _, eval_files = experiment.input_files(args, job_dir)
    model = census_model.build_model(args.learning_rate, args.hidden_units)
    eval_data = data.make_dataset(eval_files, args.batch_size, shuffle=False, repeat=True).map(
        lambda features, label: (census_model.to_model_inputs(features), label)
    )

    class _Record(tf.keras.callbacks.Callback):
        def on_test_end(self, logs: dict[str, Any] | None = None) -> None:
            step = int(model.optimizer.iterations.numpy())
            results = dict(logs or {})
            record = experiment.render_metrics(results, global_step=step, args=args)
            experiment.write_json(os.path.join(job_dir.eval, "evaluator.json"), record)
            experiment.report_metrics(results, step)

    tf.keras.utils.SidecarEvaluator(
        model,
        data=eval_data,
        checkpoint_dir=job_dir.checkpoints,
        steps=args.eval_steps,
        # Checkpoints are named ckpt-<step>: stop after evaluating the final one.
        max_evaluations=args.train_steps,
        callbacks=[_Record()],
    ).start()


def main(argv: Sequence[str] | None = None) -> int:
    """Dispatch this task by its role; return the exit code."""
    experiment.setup_logging()
    args = experiment.parse_args(argv)
    import tensorflow as tf

    resolver = tf.distribute.cluster_resolver.TFConfigClusterResolver()
    role = resolver.task_type
    if role in ("ps", "worker"):
        serve(resolver)
        return 0
    if role == "evaluator":
        evaluate_continuously(args)
        return 0
    try:
        strategy = make_strategy(resolver)
    except ValueError as e:
        log.error("%s", e)
        return 2
    train_and_evaluate(args, strategy)
    return 0


if __name__ == "__main__":
    sys.exit(main())
