"""``--backend ai-platform``: legacy AI Platform Training, rendered but never submitted.

- :mod:`.backend` — the backend object (its backend class, made by the registry on demand): render, and a clear
  refusal with the way to Vertex AI for every call that would reach the shut-down service;
- :mod:`.render` — JobSpec → the legacy ``Job`` body (``trainingInput``), pure.
"""

from ...lazy import lazy_names

#: What ``from tfjob.backends.aiplatform import …`` gives, imported on first use (the modules
#: behind them import their client libraries only when a call needs them).
_EXPORTS = {
    "AIPlatformBackend": ".backend",
}
__getattr__, __all__ = lazy_names(__name__, _EXPORTS)
