"""Hyperparameter tuning: ``tfjob tune`` locally (Optuna) and on Vertex AI.

- :mod:`.hparams` — ``--hparams`` documents → :class:`~tfjob.study.StudySpec` (pure);
- :mod:`.search` — the study as an Optuna search (random, grid, TPE);
- :mod:`.metrics` — a trial's metric, read back from its cloudml-hypertune file;
- :mod:`.table` — the trials table (live on stderr, in ``tfjob status``);
- :mod:`.local` — a study of local trials, each a full local job;
- :mod:`.render` — the Vertex AI ``HyperparameterTuningJob`` body (pure);
- :mod:`.vertex` — submitting and following it through the real client.

Optuna and the Google libraries are imported only on the paths that need them.
"""
