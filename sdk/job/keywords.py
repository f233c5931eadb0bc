"""The keywords a job is made from, and where each lands in the typed model.

:class:`Job`'s own parameters and a platform's settings object, and the flat keywords of
``job_from_keywords`` (the CLI's flags, config files, ``Tuning``'s hparams file), are sorted
by the knobs' declarations (:attr:`tfjob.description.knobs.Knob.lands`) into a
:class:`~tfjob.description.request.Given`: the typed :class:`~tfjob.description.request.JobRequest`,
the backend's options and the settings. Here too: which keywords a backend takes, their kinds
checked, a job's default name.
"""

from __future__ import annotations

import dataclasses
import functools
import re
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping

from ..backends import keyword_backends, knobs, option_annotations, options_type
from ..model import STRATEGIES, TF_CONFIG_MODES, SubmitOptions, check_choice
from ..errors import (
    SpecError,
)
from ..runtime.settings import SETTING_NAMES, Settings
from ..description.fallbacks import split_fallbacks
from ..description.replicas import ROLES
from ..description.request import Given, JobRequest, keyword_lands, place, sort_keywords, with_role
from ..description.shape import RoleRequest, Shape, as_accelerator
from ..description.spec import JobSpec


if TYPE_CHECKING:
    from ..backends import Backend
    from ..platforms import Platform, Replicas


def _replica_fields() -> list[str]:
    """A Replicas value's fields beside its count (tfjob.platforms is imported: one was given)."""
    from ..platforms import Replicas

    return [f.name for f in dataclasses.fields(Replicas) if f.name != "count"]


class _Never:
    """A class nothing is an instance of: the settings classes before tfjob.platforms is imported."""


_COMMON_OPTIONS = [f.name for f in dataclasses.fields(SubmitOptions)]
_SETTING_FIELDS = list(SETTING_NAMES)


def job_keywords(backend: str | None = None) -> list[str]:
    """Every keyword :class:`Job` accepts; with ``backend``, those that backend takes."""
    only = keyword_backends()
    common = {*lands(), *_COMMON_OPTIONS, *_SETTING_FIELDS} - set(only)
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
    annotations of the typed model (a job's request, its roles' and its shape's), JobSpec and
    every backend's options."""
    annotations: dict[str, str] = {f.name: str(f.type) for f in dataclasses.fields(JobRequest) if f.name != "shape"}
    annotations.update({f"{r}_{f.name}": str(f.type) for r in ROLES for f in dataclasses.fields(RoleRequest) if f.name != "count"})
    for f in (*dataclasses.fields(Shape), *dataclasses.fields(JobSpec)):
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


def backend_options(backend: str, given: Given, settings: Settings) -> SubmitOptions:
    """Backend ``backend``'s options from what was given (a config file's options another
    backend takes are left out), filled from the settings."""
    options_cls = options_type(backend)
    option_fields = [f.name for f in dataclasses.fields(options_cls)]
    option_values = {k: v for k, v in given.options.items() if k in option_fields}
    if option_values.get("strategy") is not None:
        check_choice("strategy", option_values["strategy"], STRATEGIES)
    if option_values.get("tf_config") is not None:
        check_choice("tf_config", option_values["tf_config"], TF_CONFIG_MODES)
    if given.fallbacks:
        if "fallbacks" not in option_fields:
            knob = given.fallbacks[0].split("=", 1)[0]
            raise SpecError(
                field=knob,
                problem=f"lists choices to fall back to, which {backend} does not try (only {{backend=vertex}} does: "
                "a Kubernetes scheduler picks the node itself, and a pod no node fits waits rather than fails)",
                fix="give one choice",
            )
        option_values["fallbacks"] = (*tuple(option_values.get("fallbacks") or ()), *given.fallbacks)
    for name in ("project", "region", "api_endpoint", "namespace"):
        if name in option_fields:
            option_values.setdefault(name, getattr(settings, name))
    if "staging_bucket" in option_fields:
        # The bucket order is --staging-bucket, then the --job-dir bucket, then env/config:
        # only an explicit bucket goes in staging_bucket, the configured one is the fallback.
        option_values["staging_bucket"] = given.settings.get("staging_bucket")
        option_values["default_staging_bucket"] = settings.staging_bucket
    options: SubmitOptions = options_cls(**option_values)
    return options


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


@functools.lru_cache(maxsize=1)
def lands() -> dict[str, str]:
    """Where each keyword :class:`Job` and the flat form take lands in the typed model: every
    knob's declaration (:attr:`tfjob.description.knobs.Knob.lands`, each backend's too) and the
    keywords with no flag (:data:`tfjob.description.request.UNFLAGGED`)."""
    table = {k.name: k.lands for k in knobs().values()}
    table.update(keyword_lands())
    return table


def sort_given(values: Mapping[str, Any]) -> Given:
    """Flat keywords (the CLI's flags, a config file's keys, :func:`job_from_keywords`'s) where
    each lands; a list of machines or accelerators (``NVIDIA_L4:1,NVIDIA_TESLA_T4:1``) keeps
    its first choice and the rest become the job's fallbacks."""
    flat = dict(values)
    fallbacks = split_fallbacks(flat)
    return sort_keywords(flat, lands(), fallbacks)


def typed_given(
    values: Mapping[str, Any],
    chief: Replicas | bool,
    workers: int | Replicas | None,
    ps: int | Replicas | None,
    evaluators: int | Replicas | None,
) -> Given:
    """What :class:`Job` was given: its keywords (``values``, the platform's settings among them)
    where each lands, and each role's :class:`~tfjob.platforms.Replicas` as that role's request."""
    given = sort_given(values)
    request, options, fallbacks, named = given.request, dict(given.options), list(given.fallbacks), set(given.named)
    platforms = sys.modules.get("tfjob.platforms")
    Replicas = platforms.Replicas if platforms is not None else _Never  # noqa: N806
    for role, param, value in (
        ("chief", "chief", chief),
        ("worker", "workers", workers),
        ("ps", "ps", ps),
        ("evaluator", "evaluators", evaluators),
    ):
        if isinstance(value, Replicas):
            asked, vertex = _role_request(role, value, fallbacks)
            request = with_role(request, role, **{f.name: getattr(asked, f.name) for f in dataclasses.fields(asked)})
            options.update(vertex)
            named |= {param, *vertex}
        elif role == "chief":
            if value is not True:
                request = place(request, "shape.chief", value, "chief")
                named.add("chief")
        elif value is not None:
            request = with_role(request, role, count=value)
            named.add(param)
    return dataclasses.replace(given, request=request, options=options, fallbacks=tuple(fallbacks), named=frozenset(named))


def _role_request(role: str, replicas: Replicas, fallbacks: list[str]) -> tuple[RoleRequest, dict[str, Any]]:
    """``replicas`` as ``role``'s request, and the Vertex AI options it carries (its deprecated
    boot disk); its machine and accelerator lists' alternatives go to ``fallbacks``."""
    if role == "chief" and replicas.count != 1:
        raise SpecError(f"chief=Replicas({replicas.count!r}, …): the chief runs exactly 1 replica; add the others as workers")
    choices: dict[str, Any] = {f"{role}_machine_type": replicas.machine_type, f"{role}_accelerator": replicas.accelerator}
    _check_kinds({**choices, f"{role}_image": replicas.image})
    fallbacks += split_fallbacks(choices)
    asked = RoleRequest(
        count=None if role == "chief" else replicas.count,
        machine_type=choices[f"{role}_machine_type"],
        accelerator=as_accelerator(choices[f"{role}_accelerator"], f"{role}_accelerator"),
        image=replicas.image,
        args=replicas.args,
        env=replicas.env,
        resources=replicas.resources,
    )
    disks = {f"{role}_boot_disk_type": replicas.boot_disk_type, f"{role}_boot_disk_size": replicas.boot_disk_size}
    return asked, {k: v for k, v in disks.items() if v is not None}


def platform_values(backend: str | Platform | Backend | None) -> tuple[dict[str, Any], dict[str, Any]]:
    """The keywords a platform's settings object (``Vertex(...)``) gives the job, its backend's
    name among them; and its clients (credentials, a Kubernetes ApiClient), for a backend object
    of its own."""
    platforms = sys.modules.get("tfjob.platforms")
    Platform = platforms.Platform if platforms is not None else _Never  # noqa: N806
    if isinstance(backend, Platform):
        client = {k: getattr(backend, k) for k in ("credentials", "api_client") if getattr(backend, k, None) is not None}
        return {"backend": backend.BACKEND, **backend.keywords()}, client
    if isinstance(backend, type) and issubclass(backend, Platform):
        raise SpecError(f"backend={backend.__name__} is the class; give its settings: backend={backend.__name__}(...)")
    return ({"backend": backend} if backend is not None else {}), {}


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
