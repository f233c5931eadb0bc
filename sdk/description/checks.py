"""The checks every part of a job description is held to, with the platforms' reasons: names,
labels, environment variables, counts, images, durations, ``KEY=VALUE`` lists (pure).
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any, Iterable, Mapping

from ..errors import PackagingError, SpecError, Word
from ..lazy import LazyPattern
from .limits import check_platform_count


# \Z, not $: "$" would also match before a trailing newline, which the platforms refuse.
# What `python -m` takes: dot-separated names of files and directories (`multi_worker-with-keras`
# too: the import system does not require identifiers), never a path or an empty part.
_TOPOLOGY_RE = LazyPattern(r"^[1-9][0-9]{0,3}(x[1-9][0-9]{0,3}){1,2}\Z")
_MODULE_RE = LazyPattern(r"^[^\s./\\:][^\s./\\:]{0,127}(\.[^\s./\\:]{1,128}){0,31}\Z")
_LABEL_KEY_RE = LazyPattern(r"^[a-z][a-z0-9_-]{0,62}\Z")
_LABEL_VALUE_RE = LazyPattern(r"^[a-z0-9_-]{0,63}\Z")
_ENV_RE = LazyPattern(r"^[A-Za-z_][A-Za-z0-9_]*\Z")
MAX_NAME_LENGTH = 128

#: Built distributions pip installs as they are: what ``--packages`` takes, and a package
#: path that is an archive rather than a trainer directory.
BUILT_PACKAGE_SUFFIXES = (".tar.gz", ".tgz", ".zip", ".whl")


#: Environment variables the platforms and tfjob set in every task; a user's would be
#: dropped on one backend and win on another, so they are refused everywhere.
RESERVED_ENV = ("TF_CONFIG", "CLUSTER_SPEC", "CLOUD_ML_TRIAL_ID", "CLOUD_ML_JOB_ID")
RESERVED_ENV_PREFIXES = ("AIP_", "TFJOB_")
#: Labels tfjob puts on every cloud job (the version, and the submission id it is found by).
RESERVED_LABELS = ("tfjob", "tfjob-submission-id", "app.kubernetes.io/managed-by")


def check_env(env: Mapping[str, Any], field: str = "env") -> None:
    """Names a shell takes, not reserved for the platform or tfjob, and text values (knob ``field``)."""
    for key in env:
        if not isinstance(key, str) or not _ENV_RE.match(key):
            raise SpecError(field=field, value=key, problem="is not a valid environment variable name")
        if key in RESERVED_ENV or key.startswith(RESERVED_ENV_PREFIXES):
            raise SpecError(
                field=field,
                value=Word(key),
                problem=f"is set by the platform and by tfjob in every task (reserved: "
                f"{', '.join(RESERVED_ENV)}, {', '.join(p + '*' for p in RESERVED_ENV_PREFIXES)})",
                fix="choose another name, or pick the dialect with {dialect}",
            )
        if not isinstance(env[key], str):
            raise SpecError(field=field, value=Word(key), problem=f": the value {env[key]!r} must be text")


#: A Kubernetes label key with a prefix (``app.kubernetes.io/part-of``, ``kueue.x-k8s.io/queue-name``)
#: and a Kubernetes label value: taken for the Kubernetes backends, refused by Vertex AI's renderer.
_K8S_PREFIXED_KEY_RE = LazyPattern(
    r"^(?=.{1,253}/)[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?\Z"
)
_K8S_LABEL_VALUE_RE = LazyPattern(r"^([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?\Z")


def is_kubernetes_label_key(key: str) -> bool:
    """True for a prefixed Kubernetes label key (``app.kubernetes.io/part-of``)."""
    return isinstance(key, str) and bool(_K8S_PREFIXED_KEY_RE.match(key))


def _check_labels(labels: Mapping[str, str]) -> None:
    if len(labels) > 64:
        raise SpecError(field="labels", problem=f"has {len(labels)} labels; Vertex AI and Kubernetes allow at most 64")
    for key, value in labels.items():
        if is_kubernetes_label_key(key):
            if not isinstance(value, str) or not _K8S_LABEL_VALUE_RE.match(value):
                raise SpecError(
                    what="label", problem=f"{key}={value!r}: a Kubernetes label value is up to 63 letters, digits, '-', '_' or '.'"
                )
            continue
        if not isinstance(key, str) or not _LABEL_KEY_RE.match(key):
            raise SpecError(
                what="label key",
                value=key,
                problem="is not valid",
                fix="start with a lower-case letter, then up to 62 lower-case letters, digits, '_' or '-' "
                "(or, for Kubernetes, a prefixed key such as app.kubernetes.io/part-of)",
            )
        if not isinstance(value, str) or not _LABEL_VALUE_RE.match(value):
            raise SpecError(what="label", problem=f"{key}={value!r}: values are up to 63 lower-case letters, digits, '_' or '-'")


def check_job_name(name: str) -> None:
    """Raise SpecError unless Vertex AI would take ``name`` as a display name."""
    if not isinstance(name, str) or not name.strip():
        raise SpecError(field="name", value=name, problem="is empty", fix="give the job a name ({name=NAME})")
    if len(name) > MAX_NAME_LENGTH:
        raise SpecError(field="name", value=name, problem=f"has {len(name)} characters; Vertex AI allows at most {MAX_NAME_LENGTH}")
    bad = [c for c in name if ord(c) < 32 or ord(c) == 127]
    if bad:
        raise SpecError(field="name", value=name, problem="contains control characters", fix="use letters, digits, '-' and '_'")


def check_count(field: str, n: Any) -> None:
    """A replica count given as knob ``field``: a whole number ≥ 1 a platform can carry."""
    if isinstance(n, bool) or not isinstance(n, int):
        raise SpecError(field=field, value=n, problem="must be a whole number")
    if n < 1:
        raise SpecError(field=field, value=n, problem="must be ≥ 1", fix=f"leave {{{field}}} out for a job without that role")
    check_platform_count(field, n)


def parse_key_values(items: Iterable[str] | str | None, field: str) -> dict[str, str]:
    """``["a=1,b=2", "c=3"]`` → ``{"a": "1", "b": "2", "c": "3"}`` for knob ``field`` (labels, env)."""
    if items is None:
        return {}
    if isinstance(items, str):
        items = [items]
    out: dict[str, str] = {}
    for item in items:
        for part in item.split(",") if field == "labels" else [item]:
            key, sep, value = part.partition("=")
            if not sep or not key.strip():
                raise SpecError(field=field, value=part, problem="must be KEY=VALUE")
            out[key.strip()] = value
    return out


# A container image reference as registries, podman, docker and Kubernetes read it:
# [host[:port]/]path[:tag][@digest], path components in lower case.
_IMAGE_HOST = r"(?:[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?(?:\.[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?)*|\[[0-9a-fA-F:]+\])(?::[0-9]+)?"
_IMAGE_PATH = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
_IMAGE_RE = LazyPattern(
    rf"^(?:{_IMAGE_HOST}/)?{_IMAGE_PATH}(?:/{_IMAGE_PATH})*"
    r"(?::[\w][\w.-]{0,127})?"
    r"(?:@[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,})?\Z",
    re.ASCII,  # a tag's \w is [A-Za-z0-9_]: no registry takes python:é
)
#: The registered digest algorithms and the length of their lower-case hex (OCI image spec).
_DIGEST_HEX = {"sha256": 64, "sha512": 128}
#: The longest image reference taken (a registry's name limit is 255; a tag and digest follow).
MAX_IMAGE_LENGTH = 512


def check_image(image: str | None, field: str = "image") -> None:
    """Refuse what no registry or container engine takes as an image reference: an empty
    name, spaces or control characters, upper case in the path, or a leading ``-`` (which
    a container engine would read as an option of its own).

    Raises:
        SpecError: naming the knob ``field`` and the form expected.
    """
    if image is None:
        return
    if not isinstance(image, str) or not image.strip():
        raise SpecError(field=field, problem="is empty", fix="give an image such as us-docker.pkg.dev/my-project/trainers/census:1")
    if len(image) > MAX_IMAGE_LENGTH or not _IMAGE_RE.fullmatch(image):
        raise SpecError(
            field=field,
            value=image,
            problem="is not an image reference",
            fix="write [REGISTRY/]NAME[:TAG][@sha256:DIGEST], the name in lower case (e.g. us-docker.pkg.dev/my-project/trainers/census:1)",
        )
    algorithm, at, digest = image.rpartition("@")[2].partition(":") if "@" in image else ("", "", "")
    if at and (len(digest) != _DIGEST_HEX.get(algorithm, len(digest)) or (algorithm in _DIGEST_HEX and digest != digest.lower())):
        raise SpecError(
            field=field,
            value=image,
            problem=f"names a {algorithm} digest of {len(digest)} hex digits",
            fix=f"a {algorithm} digest is {_DIGEST_HEX[algorithm]} lower-case hex digits: copy it whole (`podman images --digests` shows it)",
        )


# ASCII digits only: `\d` would take '٥' (Arabic-Indic five) as a 5.
_DURATION_RE = LazyPattern(r"([0-9]+(?:\.[0-9]+)?)\s*([dhms]?)", re.IGNORECASE)
_DURATION_UNITS = {"d": 86400.0, "h": 3600.0, "m": 60.0, "s": 1.0, "": 1.0}


def parse_duration(text: str | float | int, field: str = "timeout") -> float:
    """``"7200"``, ``"7200s"`` (Google's Duration), ``"2h"``, ``"1h30m"`` → seconds, for knob ``field``."""
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        try:
            value = float(text)
        except OverflowError:  # an int beyond any float
            value = math.inf
    else:
        s = str(text).strip().replace(" ", "")
        pos, value = 0, 0.0
        while pos < len(s):
            m = _DURATION_RE.match(s, pos)
            if not m or m.end() == pos:
                raise SpecError(field=field, value=text, problem="is not a duration", fix="write seconds (3600) or 1h30m, 45m, 90s")
            value += float(m.group(1)) * _DURATION_UNITS[m.group(2).lower()]
            pos = m.end()
        if not s:
            raise SpecError(field=field, problem="is empty", fix="write seconds (3600) or 1h30m, 45m, 90s")
    if not value > 0:  # NaN too
        raise SpecError(field=field, value=text, problem="must be longer than 0 seconds")
    from .limits import check_seconds

    return check_seconds(value, field, given=text)


def module_exists(base: Path, module: str) -> bool:
    """Whether ``python -m module`` finds a file or package of it under ``base``."""
    rel = Path(*module.split("."))
    return (base / rel.with_suffix(".py")).is_file() or (base / rel / "__init__.py").is_file()


def check_trainer(source: Path, module: str | None) -> tuple[str, Path, str]:
    """What kind of trainer directory ``source`` (resolved) is, with ``module`` checked in it.

    The one rule for every backend: what the platforms make of the trainer's sdist. They
    pip-install it and run ``python -m module``. A bare trainer's generated setup.py installs
    its packages (directories with ``__init__.py``) and, for a trainer that is a top-level
    module (``train.py``, TensorFlow's ``multi_worker_with_keras.py``), its top-level modules.
    So a directory is a trainer when it is a project, a package, holds the module's
    top-level package, or holds the module itself; a namespace directory (``trainer/`` with
    no ``__init__.py``) is not — an installed sdist would not carry it — and the local
    backend, which runs the trainer in place, refuses it as a cloud's render does, with
    the same message.

    Returns:
        (``"project"``, ``"bare"`` or ``"modules"`` — a bare trainer of top-level modules —,
        the package root, the distribution name).

    Raises:
        PackagingError: the module is not in it, or it holds no Python package.
    """
    top = module.split(".")[0] if module else None

    if (source / "pyproject.toml").is_file() or (source / "setup.py").is_file():
        if module and not any(module_exists(base, module) for base in (source, source / "src")):
            raise PackagingError(
                field="module",
                value=Word(module),
                problem=f": no {module.replace('.', '/')}.py in project {source}",
                fix="give the module's dotted path from the project root (or its src/ directory)",
            )
        return "project", source, source.name

    if (source / "__init__.py").is_file():
        name = source.name
        if top is not None and top != name:
            raise PackagingError(
                field="module",
                value=Word(str(module)),
                problem=f": the package directory {source} is the package {name!r}, so the module must start with {name}. (e.g. {name}.task)",
            )
        if module and not module_exists(source.parent, module):
            raise PackagingError(
                field="module",
                value=Word(module),
                problem=f": no {module.replace('.', '/')}.py in {source.parent}",
                fix="check the module name or add the file",
            )
        return "bare", source, name

    if top is not None and (source / top / "__init__.py").is_file():
        if not module_exists(source, module or ""):
            raise PackagingError(
                field="module",
                value=Word(str(module)),
                problem=f": no {(module or '').replace('.', '/')}.py in {source}",
                fix="check the module name or add the file",
            )
        return "bare", source / top, top

    if module is not None and "." not in module and (source / f"{module}.py").is_file():
        return "modules", source, source.name

    hint = f" and no {top}/__init__.py" if top else ""
    raise PackagingError(
        f"{source} has no __init__.py{hint}: it is not a Python package; add an empty __init__.py "
        "(or a setup.py / pyproject.toml) to the trainer directory"
    )
