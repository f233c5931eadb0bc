"""Google Cloud plumbing of the Vertex AI backend.

Every module here is imported only on the Vertex code path, and each imports the
Google client libraries it needs inside its functions, so ``import tfjob.gcp.x``
stays cheap where it can (``submission`` needs none of them: a dry run builds the
request without credentials or network).

- :mod:`.submission` — settings, packages and the request body of one submission;
- :mod:`.auth` — credentials (application default, or anonymous for a test endpoint);
- :mod:`.retry` — bounded exponential backoff with jitter;
- :mod:`.errors` — google.api_core / google.auth exceptions → tfjob's errors;
- :mod:`.client` — the ``JobServiceClient`` over REST: create (idempotent), get, list, cancel;
- :mod:`.staging` — content-addressed upload of packages to Cloud Storage;
- :mod:`.follow` — state mapping and waiting for a job;
- :mod:`.logs` — a job's Cloud Logging entries as ``[worker-1] …`` lines.
"""
