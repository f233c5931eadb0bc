"""``--backend vertex``: Vertex AI custom jobs (and hyperparameter tuning jobs).

Every module here is imported only on the Vertex code path, and each imports the
Google client libraries it needs inside its functions, so a render or a dry run
builds the request without credentials, network or Google imports.

- :mod:`.backend` — the backend object (its backend class, made by the registry on demand);
- :mod:`.render` — JobSpec → ``CustomJob`` body (pure);
- :mod:`.submission` — settings, packages and the request body of one submission;
- :mod:`.auth` — credentials (application default, or anonymous for a test endpoint);
- :mod:`.retry` — bounded exponential backoff with jitter;
- :mod:`.errors` — google.api_core / google.auth exceptions → tfjob's errors;
- :mod:`.client` — the ``JobServiceClient`` over REST: create (idempotent), get, list, cancel;
- :mod:`.staging` — content-addressed upload of packages to Cloud Storage;
- :mod:`.follow` — state mapping, the failing replica of a failed job;
- :mod:`.logs` — a job's Cloud Logging entries as ``[worker-1] …`` lines;
- :mod:`.service` — the calls above put together: submit, follow, status, logs, cancel, list;
- :mod:`.render_tuning` — the ``HyperparameterTuningJob`` body (pure);
- :mod:`.tuning` — ``--backend vertex-tuning``: submitting and following a study.
"""

from ...lazy import lazy_names

#: What ``from tfjob.backends.vertex import …`` gives, imported on first use (the modules
#: behind them import their client libraries only when a call needs them).
_EXPORTS = {
    "VertexBackend": ".backend",
    "VertexOptions": ".options",
    "VertexTuningBackend": ".tuning",
}
__getattr__, __all__ = lazy_names(__name__, _EXPORTS)
