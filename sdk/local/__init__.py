"""The machinery of the local backend: a real multi-process cluster on 127.0.0.1.

- :mod:`.plan`: what each task runs (command, environment, address) — pure.
- :mod:`.ports`: free ports on 127.0.0.1.
- :mod:`.launcher`: starts the tasks, follows them, tears the cluster down.
- :mod:`.logs`: prefixed live logs, per-task files, the summary table, reading logs back.
- :mod:`.install`: ``--install``: the trainer's sdist in a throw-away venv.
- :mod:`.supervisor`: ``python -m tfjob.local.supervisor JOB_ID``, the detached runner.

:mod:`tfjob.backends.local` is the thin backend object over these.
"""
