"""What a job's or a handle's backend is bound to: the job store it records in and the
settings it fills options from, both resolved at the edge (given, the backend object's own, or
the user's, read once) and handed to the backend, which reads neither itself.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..runtime.settings import load_settings

if TYPE_CHECKING:
    from ..backends import Backend
    from ..runtime.settings import Settings
    from ..runtime.store import JobStore


def _the_store(store: JobStore | None, backend: Any = None) -> JobStore:
    """The store given, else the backend object's own, else the user's (``$TFJOB_HOME/jobs.db``,
    read now, once; opened on first use)."""
    if store is not None:
        return store
    if getattr(backend, "has_store", False):
        return backend.store  # type: ignore[no-any-return]
    from ..runtime.store import JobStore

    return JobStore()


def _the_settings(settings: Settings | None, backend: Any = None) -> Settings:
    """The settings given, else the backend object's own, else resolved now, once (the
    environment, then ``$TFJOB_HOME/config.yaml``); none for the local backend, which reads
    none (so a damaged ``config.yaml`` stops no local ``status``)."""
    if settings is not None:
        return settings
    if getattr(backend, "has_settings", False):
        return backend.settings  # type: ignore[no-any-return]
    if (backend if isinstance(backend, str) else getattr(backend, "name", None)) == "local":
        from ..runtime.settings import Settings

        return Settings()
    return load_settings()


def bind_store(backend: Any, store: JobStore, settings: Settings | None = None) -> Any:
    """``backend`` recording in ``store``, unless it was given a store of its own (or takes none),
    and filling options from ``settings`` (:func:`bind_settings`)."""
    with_store = getattr(backend, "with_store", None)
    if with_store is not None and not getattr(backend, "has_store", True):
        backend = with_store(store)
    return bind_settings(backend, settings)


def bind_settings(backend: Any, settings: Settings | None) -> Any:
    """``backend`` filling options from ``settings``, unless it was made with settings of its own
    (or takes none): a user's ``VertexBackend(credentials=…)`` gets the job's, as it gets its store."""
    with_settings = getattr(backend, "with_settings", None)
    if settings is None or with_settings is None or getattr(backend, "has_settings", True):
        return backend
    return with_settings(settings)


def bound_backend(base: Backend | None, name: str, store: JobStore | None, settings: Settings) -> Backend:
    """The backend a job or a handle uses: ``base`` (a backend object given) bound to ``store``
    and ``settings`` (:func:`bind_store`), else the registry's backend called ``name`` made with
    them; without a store (a render), bound to the settings alone."""
    from ..backends import get_backend

    if base is None:
        return get_backend(name, store, settings)
    bound: Backend = bind_store(base, store, settings) if store is not None else bind_settings(base, settings)
    return bound
