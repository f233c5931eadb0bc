"""Hyperparameter tuning, the parts every backend shares (the front is :mod:`tfjob.tune`).

- :mod:`.hparams` — ``--hparams`` documents → :class:`~tfjob.tuning.study.StudySpec` (pure);
- :mod:`.search` — the study as an Optuna search (random, grid, TPE);
- :mod:`.metrics` — a trial's metric, read back from its cloudml-hypertune file;
- :mod:`.trials` — trials, the best one, the trials table (live on stderr, in ``tfjob status``),
  and :class:`~.trials.StudyResult`, how a study ended on any backend;
- :mod:`.render` — the study as the platforms write it (Vertex AI's ``StudySpec``, trial arguments);
- :mod:`.view` — the live trials view.

A study runs on a backend that offers tuning (:class:`tfjob.backends.base.Tuner`):
:mod:`tfjob.backends.local.tuning` (local trials, each a full local job) and
:mod:`tfjob.backends.vertex.tuning` (a Vertex AI ``HyperparameterTuningJob``).
Optuna and the Google libraries are imported only on the paths that need them.
"""
