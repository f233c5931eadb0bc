"""Backends, picked by name from a plain registry.

Each backend is a folder here — ``local/``, ``vertex/``, ``kubeflow/`` (TFJob, JobSet,
TrainJob), ``aiplatform/`` — holding its render, its client, its status parsing, its logs
and its tuning. Its backend class follows :class:`~tfjob.backends.base.Backend` and derives
from :class:`tfjob.runtime.lifecycle.Lifecycle`; the registry makes an object of it when asked
(:func:`get_backend`), never at import, and gives it its job store.
A backend imports the layers below it (the job model, the spec, ``tfjob.cluster``, the
store), never another backend's folder nor anything above it (``tfjob.job``, the CLI).
Modules are imported only when asked for, so ``tfjob --help`` never pays for a cloud
client library.
"""

from __future__ import annotations

import functools
import importlib
from typing import TYPE_CHECKING

import dataclasses
from typing import Any

from .. import errors
from ..errors import NOTHING, UsageError
from ..description.knobs import Knob
from ..model import SubmitOptions as _SubmitOptions  # the job model's home is tfjob.model (not named here)
from .base import Backend

if TYPE_CHECKING:
    from ..runtime.settings import Settings
    from ..runtime.store import JobStore

#: Backend name → the class that implements it (``module:Class``, a
#: :class:`~tfjob.runtime.lifecycle.Lifecycle`, made on demand by :func:`get_backend`) and the class of the
#: options it takes (``module:Class``, a :class:`SubmitOptions`; a light module).
BACKENDS: dict[str, tuple[str, str]] = {
    "local": ("tfjob.backends.local.backend:LocalBackend", "tfjob.backends.local.options:LocalOptions"),
    "vertex": ("tfjob.backends.vertex.backend:VertexBackend", "tfjob.backends.vertex.options:VertexOptions"),
    "kubeflow": ("tfjob.backends.kubeflow.backend:KubeflowBackend", "tfjob.backends.kubeflow.options:TFJobOptions"),
    # A JobSet (jobset.x-k8s.io), the engine under Kubeflow Trainer v2: no training operator needed.
    "jobset": ("tfjob.backends.kubeflow.jobset:JobSetBackend", "tfjob.backends.kubeflow.options:KubernetesOptions"),
    # A Kubeflow Trainer v2 TrainJob with the TensorFlow runtime tfjob renders for it: render only.
    "trainjob": ("tfjob.backends.kubeflow.trainjob:TrainJobBackend", "tfjob.backends.kubeflow.options:KubernetesOptions"),
    # Vertex AI hyperparameter tuning jobs, which `tfjob tune --backend vertex` creates (status, logs, cancel).
    "vertex-tuning": ("tfjob.backends.vertex.tuning:VertexTuningBackend", "tfjob.backends.vertex.options:VertexOptions"),
    # Legacy AI Platform Training (shut down 2025-01-31): render only, for migration and review.
    "ai-platform": ("tfjob.backends.aiplatform.backend:AIPlatformBackend", "tfjob.backends.base:GoogleCloudOptions"),
}


def _did_you_mean(name: str) -> str:
    from ..description.machines import did_you_mean  # (here: the CLI reads the registry without the machine catalog's cost)

    return did_you_mean(name, BACKENDS)


def _check_name(name: str) -> tuple[str, str]:
    entry = BACKENDS.get(name)
    if entry is None:
        raise UsageError(
            field="backend", value=name, problem=f"is not a backend{_did_you_mean(name)}", fix=f"choose one of {', '.join(BACKENDS)}"
        )
    return entry


def get_backend(name: str, store: JobStore | None = None, settings: Settings | None = None) -> Backend:
    """A new backend object called ``name`` (``local``, ``vertex``, ``kubeflow``…) with its
    defaults, recording its jobs in ``store``. Nothing is made before it is asked for; without
    a store it renders but keeps no jobs (the edges — the CLI, :class:`tfjob.Job`,
    :func:`tfjob.get_job` — give the user's store, ``$TFJOB_HOME/jobs.db``). ``settings``
    fill what a job's options leave out: the edge resolves them once
    (:func:`tfjob.runtime.settings.load_settings`) and gives them; a backend never reads the
    environment or ``config.yaml`` itself, so without them it has none set."""
    return backend_class(name)(store=store, settings=settings)  # type: ignore[no-any-return]


def backend_class(name: str) -> type[Any]:
    """The class of the backend called ``name`` (its module imported only now)."""
    module, cls = _check_name(name)[0].split(":")
    return getattr(importlib.import_module(module), cls)  # type: ignore[no-any-return]


def options_type(name: str) -> type[_SubmitOptions]:
    """The class of the options the backend called ``name`` takes (without importing the backend)."""
    module, cls = _check_name(name)[1].split(":")
    found: type[_SubmitOptions] = getattr(importlib.import_module(module), cls)
    return found


def backend_keywords(name: str) -> frozenset[str]:
    """The keywords only some backends take that the backend called ``name`` does: its
    options beyond :class:`SubmitOptions`, and the platform-specific parts of the job
    description it renders (``SPEC_KEYWORDS``)."""
    import dataclasses

    cls = options_type(name)
    common = {f.name for f in dataclasses.fields(_SubmitOptions)}
    return frozenset({f.name for f in dataclasses.fields(cls)} - common) | cls.SPEC_KEYWORDS


def _declared_knobs() -> dict[str, Knob]:
    """Every knob from the declarations themselves (every backend's options module imported)."""
    from ..description.knobs import JOB_KNOBS, declared

    found: dict[str, Knob] = {}
    for k in JOB_KNOBS:
        if "{backends}" in k.help:
            k = dataclasses.replace(k, help=k.help.replace("{backends}", ", ".join(n for n in BACKENDS if n != "vertex-tuning")))
        found[k.name] = k
    for name in BACKENDS:
        if name == "vertex-tuning":  # a study's trials take vertex's knobs; tfjob tune creates it
            continue
        for k in declared(options_type(name), name):
            found[k.name] = found[k.name].joined(k) if k.name in found else k
    return found


def knobs() -> dict[str, Knob]:
    """Every knob, by keyword: those every backend takes (:data:`tfjob.description.knobs.JOB_KNOBS`), then
    each backend's own, as its options declare them (:func:`tfjob.description.knobs.declared`), with
    the backends that take each. What ``tfjob submit``'s flags are made from."""
    return _known_knobs()


# Cached apart from knobs(): a type checker reads tfjob's `job_knobs = knobs` in an import
# cycle with this module, where a decorated function's type is not known yet.
_known_knobs = functools.lru_cache(maxsize=1)(_declared_knobs)


@functools.lru_cache(maxsize=1)
def option_annotations() -> dict[str, str]:
    """Every backend's options field → its annotation as written (``str | None``), the first
    backend's where two declare one."""
    fields: dict[str, str] = {}
    for name in BACKENDS:
        for f in dataclasses.fields(options_type(name)):
            fields.setdefault(f.name, str(f.type))
    return fields


@functools.lru_cache(maxsize=1)
def keyword_backends() -> dict[str, tuple[str, ...]]:
    """Keyword → the backends that take it, for the keywords only some backends take
    (:func:`backend_keywords` of each backend but ``vertex-tuning``, which `tfjob tune` creates)."""
    takers: dict[str, list[str]] = {}
    for name in BACKENDS:
        if name != "vertex-tuning":
            for key in sorted(backend_keywords(name)):
                takers.setdefault(key, []).append(name)
    return {key: tuple(names) for key, names in sorted(takers.items())}


def find_knob(name: str) -> Knob | None:
    """The knob called ``name`` (``kms_key``), to spell it as a flag (``.flag``: ``--kms-key``), a
    keyword (``.keyword``) or a config key (``.config``); None for a name no one declares."""
    return knobs().get(name)


def flag_of(name: str) -> str:
    """``name``'s command-line spelling (``ttl_seconds_after_finished`` → ``--ttl``)."""
    k = find_knob(name)
    return k.flag if k is not None else "--" + name.replace("_", "-")


def flag_words(name: str, value: Any = NOTHING) -> str:
    """Knob ``name`` given ``value`` in the command line's words, as declared (``--ttl 5``,
    ``--no-chief``): how the CLI words an error (``error.worded("cli", flag_words)``)."""
    k = find_knob(name)
    if k is not None and not k.cli:  # a keyword and config key only (worker_boot_disk_size): no flag to name
        return errors.keyword_words(name, value)
    return k.words(value) if k is not None else errors.flag_words(name, value)


__all__ = [
    "BACKENDS", "Backend", "backend_class", "backend_keywords", "find_knob", "flag_of",
    "flag_words",
    "get_backend", "keyword_backends", "knobs", "option_annotations", "options_type",
]  # fmt: skip
