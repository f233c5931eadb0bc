"""``--backend ai-platform``: legacy AI Platform Training, rendered but never submitted.

- :mod:`.backend` — the backend object (:data:`~.backend.BACKEND`): render, and a clear
  refusal with the way to Vertex AI for every call that would reach the shut-down service;
- :mod:`.render` — JobSpec → the legacy ``Job`` body (``trainingInput``), pure.
"""

from __future__ import annotations

import importlib
from typing import Any

#: What ``from tfjob.backends.aiplatform import …`` gives, imported on first use (the modules
#: behind them import their client libraries only when a call needs them).
_EXPORTS = {
    "AIPlatformBackend": ".backend",
}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(_EXPORTS[name], __name__), name)
