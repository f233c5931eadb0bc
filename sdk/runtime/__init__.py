"""The machinery every backend runs on: where tfjob keeps its state and how a job is followed.

- :mod:`.settings` — ``$TFJOB_HOME`` and the cloud settings that belong to no one job.
- :mod:`.store` — the job store (one SQLite file) every backend records in; :mod:`.connection`
  opens that file and runs its reads and transactions.
- :mod:`.lifecycle` — one lifecycle for every backend: waiting, following, Ctrl-C, cancelling.
- :mod:`.engine` — the container engine (podman or docker) local runs and image builds use.
"""
