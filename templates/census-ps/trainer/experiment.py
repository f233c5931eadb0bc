"""What every role and strategy shares: arguments, job-dir layout, input, training, evaluation.

Layout of ``--job-dir`` (a local directory or a ``gs://`` prefix)::

    checkpoints/ckpt-<step>.*   tf.train.Checkpoint(model, optimizer); a restarted chief resumes here
    eval/metrics.json           the final evaluation: loss, accuracy, auc, global_step, …
    model/                      the SavedModel (signatures serving_default and predict_csv)
    data/                       the generated CSV files, when no --train-files are given
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import os
import time
from typing import Any, Sequence

from . import data
from . import model as census_model
from .checkpoints import checkpoint_callback, export_model, restore_latest

log = logging.getLogger("trainer")


def _default_job_dir() -> str:
    # Vertex AI sets AIP_MODEL_DIR to <baseOutputDirectory>/model; the job dir is its parent.
    model_dir = os.environ.get("AIP_MODEL_DIR", "").rstrip("/")
    if model_dir.endswith("/model"):
        return model_dir[: -len("/model")]
    return "census-output"


def cluster_resolver() -> Any:
    """This task's cluster resolver, from the platform's ``TF_CONFIG`` as written.

    TensorFlow 2 strategies want the primary replica named ``chief`` and no evaluator
    in the cluster, while AI Platform names it ``master`` and Kubeflow lists
    evaluators. The platform's variable is read as it is and the resolver handed to
    the strategy gets TensorFlow's names (``rpc_layer`` kept); code that dispatches on
    ``master`` still sees ``master`` in ``TF_CONFIG``.
    """
    import tensorflow as tf

    config = json.loads(os.environ.get("TF_CONFIG") or "{}")
    cluster = config.get("cluster") or {}
    task = config.get("task") or {}
    rename = {"master": "chief"}
    jobs = {rename.get(job, job): tasks for job, tasks in cluster.items() if job != "evaluator" and tasks}
    task_type = rename.get(task.get("type"), task.get("type"))
    task_id = int(task["index"]) if task.get("index") is not None else None
    if not jobs:  # no cluster: a single local process, whatever the task says
        task_type = task_id = None
    return tf.distribute.cluster_resolver.SimpleClusterResolver(
        tf.train.ClusterSpec(jobs), task_type=task_type, task_id=task_id, rpc_layer=config.get("rpc_layer") or "grpc"
    )


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text} is not a positive integer")
    return value


def _positive_float(text: str) -> float:
    value = float(text)
    if not value > 0:
        raise argparse.ArgumentTypeError(f"{text} is not a positive number")
    return value


def _units(text: str) -> tuple[int, ...]:
    try:
        units = tuple(int(u) for u in text.split(",") if u.strip())
    except ValueError:
        units = ()
    if not units or min(units) < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a comma-separated list of layer sizes, e.g. 64,32")
    return units


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """The trainer's command line (every task of a job gets the same arguments).

    Each option is also accepted with underscores (``--learning_rate=0.1``), as
    hyperparameter tuning services pass ``--<parameter name>=<value>``.
    """
    p = argparse.ArgumentParser(prog="trainer.task", description="Train the census income classifier.")
    p.add_argument(
        "--job-dir", "--job_dir", default=_default_job_dir(), help="Where checkpoints, metrics and the model go (local or gs://)."
    )
    p.add_argument(
        "--train-files", "--train_files", nargs="+", help="Training CSV files or globs (UCI Adult layout). Default: generated data."
    )
    p.add_argument("--eval-files", "--eval_files", nargs="+", help="Evaluation CSV files or globs. Default: generated data.")
    p.add_argument(
        "--train-steps", "--train_steps", type=_positive_int, default=1000, help="Total training steps (batches), across restarts."
    )
    p.add_argument("--eval-steps", "--eval_steps", type=_positive_int, default=20, help="Batches in each evaluation.")
    p.add_argument("--batch-size", "--batch_size", type=_positive_int, default=64, help="Rows per training step.")
    p.add_argument("--learning-rate", "--learning_rate", type=_positive_float, default=0.01, help="Adam's learning rate.")
    p.add_argument("--hidden-units", "--hidden_units", type=_units, default=(64, 32), help="Hidden layer sizes, e.g. 64,32.")
    p.add_argument(
        "--steps-per-checkpoint",
        "--steps_per_checkpoint",
        type=_positive_int,
        help="Steps between checkpoints (default: a quarter of --train-steps).",
    )
    p.add_argument("--seed", type=int, default=42, help="Seed of the generated data.")
    args = p.parse_args(argv)
    if args.steps_per_checkpoint is None:
        args.steps_per_checkpoint = max(1, math.ceil(args.train_steps / 4))
    return args


class JobDir:
    """The paths under ``--job-dir``."""

    def __init__(self, root: str) -> None:
        self.root = root
        self.checkpoints = os.path.join(root, "checkpoints")
        self.eval = os.path.join(root, "eval")
        self.metrics = os.path.join(root, "eval", "metrics.json")
        self.model = os.path.join(root, "model")
        self.data = os.path.join(root, "data")
        # TensorBoard's logs: where Vertex AI asks for them (streamed to --tensorboard), else JOB_DIR/logs.
        self.logs = os.environ.get("AIP_TENSORBOARD_LOG_DIR") or os.path.join(root, "logs")


def input_files(args: argparse.Namespace, job_dir: JobDir) -> tuple[list[str], list[str]]:
    """The training and evaluation files: the given ones, or generated data in the job dir.

    Generated data goes to the job dir (not a local temp dir) because under the
    parameter-server strategy the workers read it, and they may be other machines.
    """
    if args.train_files and args.eval_files:
        return list(args.train_files), list(args.eval_files)
    train, evaluation = data.ensure_generated_data(job_dir.data, seed=args.seed)
    return list(args.train_files or [train]), list(args.eval_files or [evaluation])


def fit_steps(model: Any, train_input: Any, start_step: int, args: argparse.Namespace, callbacks: list[Any]) -> int:
    """Train from ``start_step`` to ``args.train_steps`` with Keras ``fit``; return the final step.

    One epoch is one checkpoint interval; a last, shorter epoch covers the steps
    that do not fill an interval, so the step count is exact across restarts.
    """
    remaining = args.train_steps - start_step
    interval = args.steps_per_checkpoint
    if remaining >= interval:
        first = start_step // interval
        model.fit(
            train_input,
            initial_epoch=first,
            epochs=first + remaining // interval,
            steps_per_epoch=interval,
            callbacks=callbacks,
            verbose=2,
        )
    if remaining % interval:
        model.fit(train_input, epochs=1, steps_per_epoch=remaining % interval, callbacks=callbacks, verbose=2)
    return int(model.optimizer.iterations.numpy())


def render_metrics(
    results: dict[str, Any], *, global_step: int, args: argparse.Namespace, resumed_from_step: int | None = None
) -> dict[str, Any]:
    """The evaluation record written to ``eval/metrics.json``.

    ``resumed_from_step`` is the step training restarted from (0 for a fresh run).
    """
    record: dict[str, Any] = {name: float(value) for name, value in results.items()}
    if resumed_from_step is not None:
        record["resumed_from_step"] = resumed_from_step
    record.update(
        global_step=global_step,
        train_steps=args.train_steps,
        eval_steps=args.eval_steps,
        batch_size=args.batch_size,
        learning_rate=args.learning_rate,
        finished_at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    )
    return record


def write_json(path: str, record: dict[str, Any]) -> None:
    """Write ``record`` as JSON to a local or ``gs://`` path."""
    import tensorflow as tf

    tf.io.gfile.makedirs(os.path.dirname(path))
    with tf.io.gfile.GFile(path, "w") as f:
        f.write(json.dumps(record, indent=2, sort_keys=True) + "\n")


def tensorboard_callback(log_dir: str) -> Any:
    """A Keras callback writing the training metrics as TensorBoard scalars under
    ``log_dir/train`` at the global step, once per epoch (one checkpoint interval), so that
    they share their axis with the evaluation's (``tfjob metrics`` and ``tfjob tensorboard``
    read them; Vertex AI streams them to --tensorboard)."""
    import tensorflow as tf

    class _Scalars(tf.keras.callbacks.Callback):
        def on_epoch_end(self, epoch: int, logs: dict[str, Any] | None = None) -> None:
            write_scalars(os.path.join(log_dir, "train"), dict(logs or {}), int(self.model.optimizer.iterations.numpy()))

    return _Scalars()


def write_scalars(log_dir: str, results: dict[str, Any], step: int) -> None:
    """Each of ``results`` as a TensorBoard scalar at ``step``, appended to ``log_dir``'s run."""
    import tensorflow as tf

    writer = tf.summary.create_file_writer(log_dir)
    with writer.as_default():
        for name, value in results.items():
            tf.summary.scalar(name, float(value), step=step)
    writer.close()


def report_metrics(results: dict[str, Any], step: int) -> None:
    """Report each metric for hyperparameter tuning (cloudml-hypertune's file format).

    Uses ``tfjob.hypertune`` when tfjob is installed (local runs, tfjob images),
    else the ``cloudml-hypertune`` package when present (Vertex AI prebuilt images:
    add it to the dependencies in pyproject.toml to tune there).
    """
    try:
        from tfjob.hypertune import report_metric
    except ImportError:
        try:
            import hypertune  # type: ignore[import-not-found]
        except ImportError:
            log.info("neither tfjob nor cloudml-hypertune is installed: metrics are not reported for tuning")
            return
        reporter = hypertune.HyperTune()

        def report_metric(tag: str, value: float, step: int | None = None) -> None:
            reporter.report_hyperparameter_tuning_metric(hyperparameter_metric_tag=tag, metric_value=value, global_step=step)

    for name, value in results.items():
        report_metric(name, float(value), step)


def require_tf_keras() -> None:
    """Stop with a clear message when tf-keras (Keras 2) is missing.

    ``tf.keras`` is Keras 3 since TensorFlow 2.16, and Keras 3 cannot train with
    ParameterServerStrategy; ``TF_USE_LEGACY_KERAS=1`` switches to tf-keras, which
    some images (and a bare ``pip install tensorflow``) do not include.
    """
    import importlib.util

    if importlib.util.find_spec("tf_keras") is None:
        raise SystemExit(
            "error: this trainer needs tf-keras (Keras 2) next to TensorFlow: pip install tf-keras "
            "with the same major.minor version as TensorFlow (e.g. tf-keras~=2.17.0 for TensorFlow 2.17), "
            "or add it to dependencies in pyproject.toml"
        )


def setup_logging() -> None:
    """The trainer's own INFO lines, with a timestamp, on stderr (the task's log).

    Other libraries (tensorflow, absl) log at INFO about every closure and shard;
    only their warnings and errors are kept.
    """
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger("trainer").setLevel(logging.INFO)


def make_input(files: list[str], batch_size: int, *, training: bool) -> Any:
    """Keras ``fit``/``evaluate`` input under any strategy: each worker builds its own pipeline.

    A ``DatasetCreator`` is what ParameterServerStrategy requires; it also lets
    MultiWorkerMirroredStrategy give each worker its own shard of the rows.
    Training rows are shuffled without a seed, so that parameter-server workers
    do not all feed the same batches.
    """
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


def train_and_evaluate(args: argparse.Namespace, strategy: Any, scratch: str | None = None) -> dict[str, Any]:
    """Train (resuming from the job dir's checkpoint), evaluate, export; return the metrics record.

    Args:
        args: the parsed command line.
        strategy: the distribution strategy (the default one for a single process).
        scratch: on a non-chief MultiWorkerMirroredStrategy worker, the directory it
            saves to and deletes (it must save, but only the chief's files are kept);
            None on the chief, which writes checkpoints, metrics and the model.
    """
    job_dir = JobDir(args.job_dir)
    train_files, eval_files = input_files(args, job_dir)
    with strategy.scope():
        model = census_model.build_model(args.learning_rate, args.hidden_units)
        start_step = restore_latest(model, job_dir.checkpoints)
    import tensorflow as tf

    # Checkpoint on SIGTERM (a preemption) where one task can save alone: not under
    # MultiWorkerMirroredStrategy, whose saves are collective.
    alone = not isinstance(strategy, tf.distribute.MultiWorkerMirroredStrategy)
    callbacks = [checkpoint_callback(model, job_dir.checkpoints, scratch, on_sigterm=alone)]
    if scratch is None:  # the chief logs the training curves (logs/train), one point per epoch
        callbacks.append(tensorboard_callback(job_dir.logs))
    step = fit_steps(model, make_input(train_files, args.batch_size, training=True), start_step, args, callbacks)
    results = model.evaluate(make_input(eval_files, args.batch_size, training=False), steps=args.eval_steps, return_dict=True, verbose=2)
    record = render_metrics(results, global_step=step, resumed_from_step=start_step, args=args)
    if scratch is None:
        write_scalars(os.path.join(job_dir.logs, "eval"), results, step)
        write_json(job_dir.metrics, record)
        report_metrics(results, step)
        log.info("evaluation at step %d: %s", step, {k: round(float(v), 4) for k, v in results.items()})
    export_model(model, job_dir.model, scratch)
    return record


def evaluate_continuously(args: argparse.Namespace) -> None:
    """The evaluator task: evaluate each checkpoint the chief writes, up to the final one.

    Results go to ``eval/evaluator.json``. Only the chief reports to hyperparameter
    tuning, so that a trial has one final value.
    """
    import tensorflow as tf

    job_dir = JobDir(args.job_dir)
    _, eval_files = input_files(args, job_dir)
    model = census_model.build_model(args.learning_rate, args.hidden_units)
    eval_data = data.make_dataset(eval_files, args.batch_size, shuffle=False, repeat=True).map(
        lambda features, label: (census_model.to_model_inputs(features), label)
    )

    class _Record(tf.keras.callbacks.Callback):
        def on_test_end(self, logs: dict[str, Any] | None = None) -> None:
            step = int(model.optimizer.iterations.numpy())
            results = dict(logs or {})
            write_json(os.path.join(job_dir.eval, "evaluator.json"), render_metrics(results, global_step=step, args=args))

    tf.keras.utils.SidecarEvaluator(
        model,
        data=eval_data,
        checkpoint_dir=job_dir.checkpoints,
        steps=args.eval_steps,
        # Checkpoints are named ckpt-<step>: stop after evaluating the final one.
        max_evaluations=args.train_steps,
        callbacks=[_Record()],
    ).start()
