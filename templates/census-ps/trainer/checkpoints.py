"""Checkpoints that let a restarted chief resume, and the SavedModel export.

Under MultiWorkerMirroredStrategy every worker must save (saving takes part in the
strategy's collectives), but only the chief's files are kept: the others save to
a scratch directory that is deleted straight after. ``scratch`` arguments below
are that directory on a non-chief worker, and None on the chief.
"""

from __future__ import annotations

import logging
import os
from typing import Any

log = logging.getLogger("trainer")


def new_checkpoint(model: Any) -> Any:
    """The checkpoint of a training run: the model and its optimizer (whose ``iterations`` is the step).

    The same structure is what ``tf.keras.utils.SidecarEvaluator`` restores.
    """
    import tensorflow as tf

    return tf.train.Checkpoint(model=model, optimizer=model.optimizer)


def restore_latest(model: Any, checkpoint_dir: str) -> int:
    """Restore the newest checkpoint in ``checkpoint_dir``, if any; return the step reached.

    Every task restores from the chief's directory. The optimizer's variables are
    built first so that every saved value has a variable to land in now, not at
    some later first step.
    """
    import tensorflow as tf

    model.optimizer.build(model.trainable_variables)
    latest = tf.train.latest_checkpoint(checkpoint_dir)
    if latest is None:
        return 0
    new_checkpoint(model).restore(latest).assert_existing_objects_matched()
    step = int(model.optimizer.iterations.numpy())
    log.info("resuming from %s at step %d", latest, step)
    return step


def _remove(directory: str) -> None:
    import tensorflow as tf

    if tf.io.gfile.exists(directory):
        tf.io.gfile.rmtree(directory)


#: The exit code of a task that checkpointed on SIGTERM: 128 + 15, as if the signal had
#: ended it, so that restart policies read it as a preemption (ExitCode retries 128–255).
SIGTERM_EXIT = 143


def checkpoint_callback(model: Any, directory: str, scratch: str | None = None, on_sigterm: bool = False) -> Any:
    """A Keras callback saving ``ckpt-<step>`` at the end of every epoch.

    Epochs are ``--steps-per-checkpoint`` steps long, so this is the checkpoint
    interval.

    Args:
        model: the model being trained.
        directory: the job's checkpoint directory (the chief writes there).
        scratch: on a non-chief worker, where it saves instead (then deletes).
        on_sigterm: when SIGTERM comes (a preemption: the grace period before SIGKILL
            is 30 s on Compute Engine and Kubernetes), save at the next epoch end and exit
            143, so that the restarted job resumes from the step reached. Not under
            MultiWorkerMirroredStrategy, where saving is collective and the other
            workers are not saving: there the last epoch's checkpoint is the one resumed.
    """
    import signal
    import threading

    import tensorflow as tf

    target = os.path.join(scratch, "checkpoints") if scratch else directory
    manager = tf.train.CheckpointManager(new_checkpoint(model), target, max_to_keep=3)
    asked = threading.Event()
    catch = on_sigterm and scratch is None and threading.current_thread() is threading.main_thread()
    before: list[Any] = []

    class _SaveEveryEpoch(tf.keras.callbacks.Callback):
        # Epoch-level only: ParameterServerStrategy refuses batch-level callbacks. A SIGTERM
        # is acted on at the next epoch end (at most --steps-per-checkpoint steps later).
        def on_train_begin(self, logs: dict[str, Any] | None = None) -> None:
            if catch:  # only while training: a SIGTERM during evaluation or export ends the task at once
                before.append(signal.signal(signal.SIGTERM, lambda signum, frame: asked.set()))

        def on_train_end(self, logs: dict[str, Any] | None = None) -> None:
            if before:
                signal.signal(signal.SIGTERM, before.pop())
            if asked.is_set():
                self._save_and_exit(manager.save(checkpoint_number=int(model.optimizer.iterations.numpy())))

        def on_epoch_end(self, epoch: int, logs: dict[str, Any] | None = None) -> None:
            step = int(model.optimizer.iterations.numpy())
            path = manager.save(checkpoint_number=step)
            if scratch:
                _remove(target)
            else:
                log.info("step %d: checkpoint %s", step, path)
            if asked.is_set():
                self._save_and_exit(path)

        def _save_and_exit(self, path: str) -> None:
            step = int(model.optimizer.iterations.numpy())
            log.info("SIGTERM (preempted): step %d: checkpoint %s; exiting %d", step, path, SIGTERM_EXIT)
            for handler in logging.getLogger().handlers + log.handlers:
                handler.flush()
            os._exit(SIGTERM_EXIT)  # at once: a coordinator's threads would hold an orderly exit past the grace

    return _SaveEveryEpoch()


def export_model(model: Any, export_dir: str, scratch: str | None = None) -> None:
    """Save ``model`` as a SavedModel with the serving signatures of :mod:`trainer.model`.

    Args:
        model: the trained model.
        export_dir: where the chief exports it (``JOB_DIR/model``).
        scratch: on a non-chief worker, where it saves instead (then deletes).
    """
    from .model import serving_signatures

    target = os.path.join(scratch, "model") if scratch else export_dir
    model.save(target, save_format="tf", include_optimizer=False, signatures=serving_signatures(model))
    if scratch:
        _remove(target)
    else:
        log.info("exported the model to %s", export_dir)
