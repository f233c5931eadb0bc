"""What goes into a trainer's image, decided without building: the base image's facts (pulled when
missing), the Dockerfile and context files (generated on the sdist, or the directory's own), the
content key that tags it, and the context written to disk for the engine."""

from __future__ import annotations

import contextlib
import hashlib
import json
import re
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

from ..runtime.engine import Engine, run_engine
from ..errors import UsageError
from . import recipe as recipes
from ..shown import inert
from .stream import Progress, build_timeout, short


#: The largest Dockerfile read (bytes): read before the context's own bounds apply.
MAX_DOCKERFILE_BYTES = 1 << 20


def default_base() -> str:
    """tfjob's base image as its ``container/Dockerfile`` tags it (``tfjob:VERSION``)."""
    from .._version import __version__

    return f"tfjob:{__version__}"


@dataclass(frozen=True)
class BaseImage:
    ref: str
    id: str
    user: str
    has_bootstrap: bool


def inspect_image(engine: Engine, ref: str) -> dict[str, Any] | None:
    """The engine's ``image inspect`` of ``ref``; None when its store lacks it.

    Raises:
        BackendError: the engine's daemon is not reachable, or the engine hung or answered
            more than an inspection holds (:func:`tfjob.runtime.engine.run_engine`).
    """
    done = engine._run("image", "inspect", ref)
    if done.returncode != 0:
        error = engine.unreachable(done.stderr)
        if error is not None:
            raise error
        return None
    try:
        data = json.loads(done.stdout)
    except ValueError:
        return None
    return data[0] if isinstance(data, list) and data and isinstance(data[0], dict) else None


def resolve_base(engine: Engine, ref: str, progress: Progress) -> BaseImage:
    """The base image's id and user, pulled first when the store lacks it.

    Raises:
        UsageError: it is neither in the store nor pullable (naming it and the fix).
    """
    found = inspect_image(engine, ref)
    if found is None:
        progress.say(f"pulling the base image {ref}")
        pull = [*(["--tls-verify=false"] if engine.name == "podman" and _loopback_ref(ref) else [])]
        done = run_engine(engine.command("pull", "-q", *pull, ref), engine.name, timeout=build_timeout())
        error = engine.unreachable(done.stderr) if done.returncode != 0 else None
        if error is not None:
            raise error
        found = inspect_image(engine, ref) if done.returncode == 0 else None
        unreachable = engine.unreachable(done.stderr) if found is None else None
        if unreachable is not None:
            raise unreachable  # the engine's daemon, not the image: said as such
        if found is None:
            why = inert((done.stderr.strip().splitlines() or ["not found"])[-1])
            hint = (" — build tfjob's base image first (container/README.md: "
                    f"`{engine.name} build -f container/Dockerfile -t {ref} .`), or give --base IMAGE") if ref == default_base() else ""  # fmt: skip
            raise UsageError(f"base image {ref} is not in {engine.name}'s store and cannot be pulled ({short(why, 200)}){hint}")
    config: dict[str, Any] = found["Config"] if isinstance(found.get("Config"), dict) else {}
    entrypoint = config.get("Entrypoint") or []
    return BaseImage(
        ref=ref,
        id=str(found.get("Id", "")),
        user=str(config.get("User") or ""),
        has_bootstrap=any("tfjob-bootstrap" in str(e) for e in (entrypoint if isinstance(entrypoint, list) else [entrypoint])),
    )


def _loopback_ref(ref: str) -> bool:
    from .registry import is_loopback

    first = ref.split("/", 1)[0]
    return "/" in ref and is_loopback(first)


def _file_digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@dataclass
class BuildPlan:
    dockerfile: str
    kind: str  # "generated" or the Dockerfile's name
    key: str
    files: dict[str, bytes]  # context path → bytes
    build_args: dict[str, str]
    package_sha256: str | None
    warnings: tuple[str, ...]
    steps: dict[str, str]  # a step's text fragment → what it does, for error messages


def plan_build(source: Path, *, module: str | None, base: BaseImage | None, base_ref: str, include_secrets: bool = False,
               requirements: str | None = None) -> BuildPlan:  # fmt: skip
    """What to build and its key, from the trainer directory (no engine call)."""
    own = source / "Dockerfile"
    if own.is_file():
        return _plan_own(source, base, base_ref, include_secrets)
    from ..packaging import build_sdist
    from ..description.requirements import trainer_requirements

    package = build_sdist(source, module=module, include_secrets=include_secrets, requirements=requirements)
    declared = trainer_requirements(
        str(source), requirements, project=(source / "pyproject.toml").is_file() or (source / "setup.py").is_file()
    )
    req_text = "".join(f"{r}\n" for r in declared)
    assert base is not None
    wheel_name = None
    files: dict[str, bytes] = {}
    if not base.has_bootstrap:
        from ..container.wheel import build_bytes

        wheel_name, wheel = build_bytes()
    recipe = recipes.Recipe(
        base=base_ref, base_id=base.id, package_file=package.filename, package_sha256=package.sha256,
        requirements=req_text, bootstrap_wheel=wheel_name, base_user=base.user, module=module,
    )  # fmt: skip
    paths = recipes.context_paths(recipe)
    files[paths["package"]] = package.path.read_bytes()
    if "requirements" in paths:
        files[paths["requirements"]] = req_text.encode()
    if wheel_name:
        files[paths["bootstrap"]] = wheel
    dockerfile = recipes.render_dockerfile(recipe)
    key = recipes.content_key(base_id=base.id, dockerfile=dockerfile, requirements=req_text, package_sha256=package.sha256)
    steps = {paths["package"].split("/", 1)[1].rsplit("/", 1)[0]: "installing the trainer package"}
    if "requirements" in paths:
        steps[paths["requirements"].split("/", 1)[1].rsplit("/", 1)[0]] = "installing requirements.txt"
    elif wheel_name:
        steps[wheel_name] = "installing tfjob-bootstrap"
    return BuildPlan(dockerfile, "generated", key, files, {}, package.sha256, package.warnings, steps)


def _plan_own(source: Path, base: BaseImage | None, base_ref: str, include_secrets: bool) -> BuildPlan:
    from ..packaging import collect_files, read_member

    found = collect_files(source, include_secrets=include_secrets)
    files = {rel: read_member(found.sources[rel]) for rel in found.files}
    dockerfile = files.get("Dockerfile", b"").decode("utf-8", "replace")
    if "Dockerfile" not in files:
        raise UsageError(f"{source / 'Dockerfile'} is left out of the build context by an ignore rule; the build needs it")
    build_args = {"BASE_IMAGE": base_ref} if base is not None else {}
    key = recipes.content_key(
        base_id=base.id if base is not None else "", dockerfile=dockerfile,
        context_files={rel: _file_digest(data) for rel, data in files.items()}, build_args=build_args,
    )  # fmt: skip
    return BuildPlan(dockerfile, "Dockerfile", key, files, build_args, None, tuple(found.warnings()), {})


def read_dockerfile(source: Path) -> str:
    """The trainer directory's own Dockerfile, read boundedly (:data:`MAX_DOCKERFILE_BYTES`).

    Raises:
        UsageError: it is a link out of the directory (never put in a build context).
        ConfigFileError: it is larger than a Dockerfile is, or cannot be read.
    """
    from ..description.limits import read_bounded_text

    path = source / "Dockerfile"
    if path.is_symlink():
        target = path.resolve()
        if target != source and source not in target.parents:
            raise UsageError(
                f"{path} is a link to {inert(str(target))}, outside the trainer directory, and no link out of the directory "
                "goes into a build context: copy the Dockerfile into the directory"
            )
    return read_bounded_text(path, "the Dockerfile", MAX_DOCKERFILE_BYTES, "a Dockerfile", errors="replace")


def uses_base_arg(dockerfile_text: str) -> bool:
    """True when a Dockerfile takes its base as ``ARG BASE_IMAGE`` (tfjob's templates do)."""
    return re.search(r"^\s*ARG\s+BASE_IMAGE\b", dockerfile_text, re.M | re.I) is not None


@contextlib.contextmanager
def build_context(plan: BuildPlan) -> Iterator[Path]:
    """The build context on disk (private, removed afterwards)."""
    root = Path(tempfile.mkdtemp(prefix="tfjob-build-"))
    try:
        for rel, data in plan.files.items():
            path = root / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
        if plan.kind == "generated":
            (root / "Dockerfile").write_text(plan.dockerfile)
        yield root
    finally:
        shutil.rmtree(root, ignore_errors=True)
