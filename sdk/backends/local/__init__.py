"""``--backend local``: the job as a real multi-process (or multi-container) cluster on this machine.

- :mod:`.backend`: the backend object (its backend class, made by the registry on demand): submit in the
  foreground or under a detached supervisor, status, logs, cancel, list.
- :mod:`.plan`: what each task runs (command, environment, address) — pure.
- :mod:`.ports`: free ports on 127.0.0.1.
- :mod:`.launcher`: starts the tasks, follows them, tears the cluster down.
- :mod:`.contain`: everything a task starts stays in the job: a cgroup per job, else a subreaper and a scan.
- :mod:`.logs`: prefixed live logs, per-task files, the summary table, reading logs back.
- :mod:`.install`: ``--install``: the trainer's sdist in a throw-away venv.
- :mod:`.runner`: checks, the job's record, and one run from start to end.
- :mod:`.supervisor`: ``python -m tfjob.backends.local.supervisor [--store PATH] JOB_ID``, the detached runner.
- :mod:`.reap`: a job whose supervisor died is recorded LOST and what is left of it stopped.
- :mod:`.tuning`: ``tfjob tune --backend local``: a study of local trials, each a full local job.
"""

from ...lazy import lazy_names

#: What ``from tfjob.backends.local import …`` gives, imported on first use (the modules
#: behind them import their client libraries only when a call needs them).
_EXPORTS = {
    "LocalBackend": ".backend",
    "LocalOptions": ".options",
}
__getattr__, __all__ = lazy_names(__name__, _EXPORTS)
