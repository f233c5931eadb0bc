"""``--backend ai-platform``: legacy AI Platform Training, rendered but never submitted.

- :mod:`.backend` — the backend object (:data:`~.backend.BACKEND`): render, and a clear
  refusal with the way to Vertex AI for every call that would reach the shut-down service;
- :mod:`.render` — JobSpec → the legacy ``Job`` body (``trainingInput``), pure.
"""
