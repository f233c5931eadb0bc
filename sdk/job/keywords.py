"""The flat keywords a job is made from (``job_from_keywords``: the CLI's flags, config files,
``Tuning``): which a backend takes, their kinds checked, the typed values they become, a job's
default name.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import re
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..backends import keyword_backends, option_annotations
from ..model import SubmitOptions
from ..errors import (
    SpecError,
)
from ..runtime.settings import SETTING_NAMES, Settings
from ..description.spec import JobSpec, build_spec


if TYPE_CHECKING:
    from ..backends import Backend
    from ..platforms import Platform, Replicas


def _replica_fields() -> list[str]:
    """A Replicas value's fields beside its count (tfjob.platforms is imported: one was given)."""
    from ..platforms import Replicas

    return [f.name for f in dataclasses.fields(Replicas) if f.name != "count"]


class _Never:
    """A class nothing is an instance of: the settings classes before tfjob.platforms is imported."""


_BUILD_PARAMS = [p for p in inspect.signature(build_spec).parameters if p != "settings"]
_SPEC_FIELDS = [f.name for f in dataclasses.fields(JobSpec) if f.name not in ("pools", "scale_tier")]
_COMMON_OPTIONS = [f.name for f in dataclasses.fields(SubmitOptions)]
_SETTING_FIELDS = list(SETTING_NAMES)
#: Flat keywords (the CLI's ``--worker-cpu``…) that become a role's :class:`tfjob.description.resources.Resources`.
_RESOURCE_KEYWORDS = [f"{role}_{what}" for role in ("chief", "worker", "ps", "evaluator") for what in ("cpu", "memory")]


def job_keywords(backend: str | None = None) -> list[str]:
    """Every keyword :class:`Job` accepts; with ``backend``, those that backend takes."""
    only = keyword_backends()
    common = {*_BUILD_PARAMS, *_SPEC_FIELDS, *_COMMON_OPTIONS, *_SETTING_FIELDS, *_RESOURCE_KEYWORDS, "config"} - set(only)
    mine = set(only) if backend is None else {k for k, names in only.items() if backend in names}
    return sorted(common | mine)


def check_backend_keywords(backend: str, given: Any) -> None:
    """Refuse a keyword (flag, ``--config`` key) the chosen backend does not take."""
    only = keyword_backends()
    for key in sorted(given):
        allowed = only.get(key)
        if allowed is None or backend in allowed:
            continue
        names = " and ".join([", ".join(allowed[:-1]), allowed[-1]] if len(allowed) > 1 else allowed)
        raise SpecError(
            field=key,
            problem=f"is for the {names} backend{'s' if len(allowed) > 1 else ''}, not {backend}",
            fix=f"leave it out, or choose {{backend={allowed[0]}}}",
        )


def _chosen_backend(settings: Settings) -> str:
    """``--backend``, else ``vertex`` once a cloud project is configured, else ``local``."""
    return settings.backend or ("vertex" if settings.project else "local")


def default_job_name(module: str | None, image: str | None, now: float | None = None) -> str:
    """``trainer-20261122-153000``: valid on Vertex AI and as a Kubernetes name."""
    stem = (module or "").split(".")[0] or (image or "job").rsplit("/", 1)[-1].split(":")[0].split("@")[0]
    stem = re.sub(r"[^a-z0-9-]+", "-", stem.lower()).strip("-")
    if not stem or not stem[0].isalpha():
        stem = "job-" + stem if stem else "job"
    return f"{stem[:40]}-{time.strftime('%Y%m%d-%H%M%S', time.localtime(now))}"


#: Keywords that name a file or directory: a path object is as good as its text.
_PATH_KEYWORDS = frozenset({"package", "job_dir", "requirements", "script", "config", "kubeconfig", "pod_template", "python"})


@functools.lru_cache(maxsize=1)
def _kinds() -> tuple[frozenset[str], frozenset[str]]:
    """(keywords whose value is text, keywords whose value is an accelerator), from the
    annotations of build_spec, JobSpec and every backend's options."""
    annotations: dict[str, str] = {n: str(p.annotation) for n, p in inspect.signature(build_spec).parameters.items()}
    for f in dataclasses.fields(JobSpec):
        annotations.setdefault(f.name, str(f.type))
    for name, annotation in option_annotations().items():
        annotations.setdefault(name, annotation)
    text_types = ("str", "Strategy", "TFConfigMode")  # the enumerations are text too
    text = {k for k, a in annotations.items() if a.replace(" ", "").removesuffix("|None") in text_types} | {"config"}
    accelerators = {k for k, a in annotations.items() if "Accelerator" in a}
    return frozenset(text), frozenset(accelerators)


def _check_kinds(values: dict[str, Any]) -> None:
    """A keyword of the wrong kind (``strategy=-1``, ``module=b"x"``) is one SpecError naming it,
    not a TypeError from deep inside."""
    from ..description.spec import Accelerator

    text, accelerators = _kinds()
    for key, value in values.items():
        if value is None:
            continue
        if key in text and not (isinstance(value, str) or (key in _PATH_KEYWORDS and isinstance(value, Path))):
            raise SpecError(field=key, value=value, problem="must be text")
        if key in accelerators and not isinstance(value, (str, Accelerator)):
            raise SpecError(field=key, value=value, problem="must be an accelerator, such as 'type=NVIDIA_TESLA_T4,count=1'")


def _refuse_nul(values: dict[str, Any]) -> None:
    """A NUL character fits no path, argument, environment value or label: refuse it by keyword
    (the OS would raise ValueError deep inside packaging or a task's start)."""
    for key, value in values.items():
        stack, seen = [value], set()
        while stack:
            item = stack.pop()
            if id(item) in seen:
                continue  # a structure that holds itself (a YAML alias can make one) is walked once
            seen.add(id(item))
            if isinstance(item, str):
                if "\0" in item:
                    raise SpecError(
                        field=key, problem="holds a NUL character (\\x00), which no path, argument, environment value or label can carry"
                    )
            elif isinstance(item, dict):
                stack.extend(item.keys())
                stack.extend(item.values())
            elif isinstance(item, (list, tuple, set, frozenset)):
                stack.extend(item)


def _flat_resources(values: dict[str, Any]) -> None:
    """``<role>_cpu`` / ``<role>_memory`` (the CLI's ``--worker-cpu``…) as that role's
    ``Resources``, with its ``<role>_accelerator`` and ``<role>_machine_type`` (in place)."""
    for role in ("chief", "worker", "ps", "evaluator"):
        cpu, memory = values.pop(f"{role}_cpu", None), values.pop(f"{role}_memory", None)
        if cpu is None and memory is None:
            continue
        if values.get(f"{role}_resources") is not None:
            raise SpecError(
                field=f"{role}_cpu" if cpu is not None else f"{role}_memory", problem=f"is given twice: {role} resources say it"
            )
        from ..description.resources import Resources

        given = {"cpu": cpu, "memory": memory, "accelerator": values.pop(f"{role}_accelerator", None)}
        given["machine_type"] = values.pop(f"{role}_machine_type", None)
        try:
            values[f"{role}_resources"] = Resources(**given)
        except SpecError as e:
            raise (SpecError(field=f"{role}_{e.field}", value=e.value, problem=e.problem, fix=e.fix) if e.field else e) from None


def _local_accelerators(values: dict[str, Any]) -> None:
    """On this machine an accelerator given without a machine type (``--worker-accelerator
    NVIDIA_L4:1``, ``accelerator=``) is what the role asks for, not a Compute Engine machine to
    check it against (the default n1 takes no L4): kept as the role's ``Resources``, which the
    local backend says it ignores (in place)."""
    if values.get("scale_tier") is not None:
        return
    shared = values.get("accelerator")
    if any(values.get(f"{r}_machine_type") is not None for r in ("chief", "worker", "evaluator")):
        shared = None  # a machine type names the machine the job-wide accelerator is checked against
    present = {
        "chief": values.get("chief", True) is not False,
        "worker": bool(values.get("workers")),
        "ps": bool(values.get("ps")),
        "evaluator": bool(values.get("evaluators")),
    }
    for role in ("chief", "worker", "ps", "evaluator"):
        own = values.get(f"{role}_accelerator")
        acc = own if own is not None else (shared if role != "ps" else None)
        if (
            acc is None
            or not present[role]
            or values.get(f"{role}_machine_type") is not None
            or values.get(f"{role}_resources") is not None
        ):
            continue
        from ..description.spec import Accelerator, Resources

        parsed = Accelerator.parse(acc, f"{role}_accelerator" if own is not None else "accelerator") if isinstance(acc, str) else acc
        values[f"{role}_resources"] = Resources(accelerator=parsed)
        values.pop(f"{role}_accelerator", None)
    if shared is not None:
        values.pop("accelerator", None)


def _check_build(spec: JobSpec, options: SubmitOptions, backend: str) -> None:
    """``build=True`` needs a trainer directory and no image; a cloud backend needs a registry to pull from."""
    if not options.build:
        given = {"image_repo": options.image_repo, "base_image": options.base_image, "cloud_build": options.cloud_build}
        for name, value in given.items():
            if value not in (None, False):
                raise SpecError(field=name, problem="is for an image tfjob builds", fix="add {build} (or drop it)")
        return
    if spec.image or any(p.image for p in spec.pools):
        raise SpecError(field="build", problem="makes the job's image from the trainer directory", fix="drop {image} (or drop {build})")
    package = spec.package
    if not package or package.startswith("gs://") or not Path(package).expanduser().is_dir():
        raise SpecError(
            field="build", problem=f"needs the trainer directory as the package (got {package!r}); an image is built from a directory"
        )
    if options.image_repo is not None:
        from ..images.registry import parse_repository

        parse_repository(options.image_repo)
    if options.base_image is not None:
        from ..description.spec import check_image

        check_image(options.base_image, "base_image")
    if options.cloud_build and not options.image_repo:
        raise SpecError(
            field="cloud_build",
            problem="pushes the image from Cloud Build: give {image_repo=REGISTRY/PATH} (e.g. us-central1-docker.pkg.dev/PROJECT/REPO/trainer)",
        )
    if backend not in ("local",) and not options.image_repo and not options.dry_run:
        raise SpecError(
            field="build",
            problem=f"on the {backend} backend needs {{image_repo=REGISTRY/PATH}} (e.g. us-central1-docker.pkg.dev/PROJECT/REPO/trainer): "
            "the platform pulls the image from a registry",
        )


def _typed_keywords(
    values: dict[str, Any],
    chief: Replicas | bool,
    workers: int | Replicas | None,
    ps: int | Replicas | None,
    evaluators: int | Replicas | None,
    backend: str | Platform | Backend | None,
) -> dict[str, Any]:
    """The typed roles and platform given to :class:`Job` as the job's keywords (in ``values``);
    return the platform's clients (credentials, a Kubernetes ApiClient) for a backend object of its own."""
    # The settings objects' classes, when they exist: a Replicas, a Vertex(...) can only be
    # given once tfjob.platforms was imported, so a job of plain values (the CLI's) never
    # pays for importing it (its dataclasses are a fifth of a re-submit's start).
    platforms = sys.modules.get("tfjob.platforms")
    Replicas = platforms.Replicas if platforms is not None else _Never  # noqa: N806
    Platform = platforms.Platform if platforms is not None else _Never  # noqa: N806
    for role, replicas in (("worker", workers), ("ps", ps), ("evaluator", evaluators)):
        count_key = {"worker": "workers", "ps": "ps", "evaluator": "evaluators"}[role]
        if isinstance(replicas, Replicas):
            values[count_key] = replicas.count
            values.update(replicas.keywords(role))
        elif replicas is not None:
            values[count_key] = replicas
    if isinstance(chief, Replicas):
        if chief.count != 1:
            raise SpecError(f"chief=Replicas({chief.count!r}, …): the chief runs exactly 1 replica; add the others as workers")
        values.update(chief.keywords("chief"))
    elif chief is not True:
        values["chief"] = chief
    client: dict[str, Any] = {}
    if isinstance(backend, Platform):
        values["backend"] = backend.BACKEND
        values.update(backend.keywords())
        client = {k: getattr(backend, k) for k in ("credentials", "api_client") if getattr(backend, k, None) is not None}
    elif isinstance(backend, type) and issubclass(backend, Platform):
        raise SpecError(f"backend={backend.__name__} is the class; give its settings: backend={backend.__name__}(...)")
    elif backend is not None:
        values["backend"] = backend
    return client


def _typed_names(
    chief: Replicas | bool, workers: int | Replicas | None, ps: int | Replicas | None, evaluators: int | Replicas | None
) -> dict[str, tuple[str, str]]:
    """A Replicas value's fields, by the flat keyword they become (worker_machine_type → workers, machine_type)."""
    platforms = sys.modules.get("tfjob.platforms")
    Replicas = platforms.Replicas if platforms is not None else _Never  # noqa: N806
    return {
        f"{role}_{name}": (param, name)
        for param, role, value in (
            ("chief", "chief", chief),
            ("workers", "worker", workers),
            ("ps", "ps", ps),
            ("evaluators", "evaluator", evaluators),
        )
        if isinstance(value, Replicas)
        for name in _replica_fields()
    }
