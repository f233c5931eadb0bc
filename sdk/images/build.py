"""Trainer directory → image, built with podman or docker, tagged by content, pushed once.

:func:`build_image` is what ``tfjob build DIR`` and ``tfjob submit DIR --build`` do:

1. the trainer's sdist (:func:`tfjob.packaging.build_sdist`, the package a Python-package
   job ships) on the base image, with its ``requirements.txt`` in a layer below it
   (:mod:`tfjob.images.recipe`) — or, when the directory has a ``Dockerfile``, that file
   on a copy of the directory filtered exactly as the sdist is (:func:`tfjob.packaging.collect_files`:
   no credential, no link out of the tree ever reaches a build context);
2. its tag is the digest of what goes in (base image id, package, Dockerfile,
   requirements): an image of that tag in the engine's store, or on the registry, is
   reused and nothing is built;
3. the engine builds it untagged (``--iidfile``) and only a finished build is tagged, so
   Ctrl-C leaves no half-tagged image;
4. with an image repository, the registry is asked for the manifest first
   (:func:`tfjob.images.registry.manifest_digest`) and the engine pushes only when it lacks
   it; the job then runs ``REPO@sha256:…``.
"""

from __future__ import annotations

import collections
import contextlib
import hashlib
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterator

from ..runtime.engine import Engine, find_engine
from ..errors import ImageBuildError, UsageError
from . import recipe as recipes
from .registry import Repository, RegistryError, google_access_token, manifest_digest, parse_repository, stored_credentials

if TYPE_CHECKING:
    from .cloudbuild import CloudBuildTarget

#: Extra flags for every ``build`` (shell words): e.g. ``--network host`` behind a proxy.
BUILD_FLAGS_VARIABLE = "TFJOB_BUILD_FLAGS"
#: The lines of the engine's output kept for an error message.
TAIL_LINES = 40
#: How long one build or push may take.
BUILD_TIMEOUT = 3600.0


def default_base() -> str:
    """tfjob's base image as its ``container/Dockerfile`` tags it (``tfjob:VERSION``)."""
    from .._version import __version__

    return f"tfjob:{__version__}"


@dataclass(frozen=True)
class BuiltImage:
    """An image built (or found) for a trainer directory.

    Attributes:
        reference: what jobs run: ``REPO@sha256:…`` once on a registry, else the local tag.
        tag: ``REPO:KEY``, the content-addressed tag.
        key: the digest of the image's inputs.
        digest: the registry's manifest digest (None when not pushed).
        image_id: the engine's image id (None when the image is only on the registry).
        built: False when an image of that key existed (in the store or the registry).
        pushed: True when this call pushed it.
        dockerfile: ``generated`` or the directory's own Dockerfile.
        package_sha256: the sdist's digest (a generated Dockerfile).
        warnings: files left out of the context (as the sdist's warnings say them).
    """

    reference: str
    tag: str
    key: str
    digest: str | None
    image_id: str | None
    built: bool
    pushed: bool
    dockerfile: str
    package_sha256: str | None = None
    warnings: tuple[str, ...] = ()
    #: The Cloud Build request (``--cloud-build``), as the REST API's JSON.
    build_request: dict[str, object] | None = None

    def to_dict(self) -> dict[str, object]:
        return {k: (list(v) if isinstance(v, tuple) else v) for k, v in self.__dict__.items() if k != "build_request" or v is not None}


@dataclass
class Progress:
    """Where build and push progress goes: ``tty`` (the engine's own output, as on a
    terminal), ``steps`` (one line per step or layer), or ``none`` (``--output json``)."""

    mode: str = "steps"
    write: Callable[[str], None] = field(default=lambda line: print(line, file=sys.stderr, flush=True))

    @classmethod
    def auto(cls, quiet: bool = False) -> "Progress":
        if quiet:
            return cls("none")
        return cls("tty" if sys.stderr.isatty() else "steps")

    def say(self, line: str) -> None:
        if self.mode != "none":
            self.write(f"tfjob: {line}")

    def engine_line(self, line: str) -> None:
        if self.mode == "tty":
            self.write(line)
        elif self.mode == "steps":
            step = _step_line(line)
            if step:
                self.write(f"tfjob: {step}")


_PODMAN_STEP = re.compile(r"^STEP (\d+/\d+): (.*)")
_DOCKER_STEP = re.compile(r"^#\d+ \[(?:[\w-]+ )?(\d+/\d+)\] (.*)")
_MOUNT_FLAG = re.compile(r"--mount=\S+\s*")
_PUSH_BLOB = re.compile(
    r"^(Copying blob \S+(?: skipped: already exists| done)?|Copying config \S+(?: done)?|Writing manifest.*|Storing signatures|[0-9a-f]{12}: (?:Pushed|Layer already exists|Mounted from \S+|Pull complete|Already exists))"
)


def _step_line(line: str) -> str | None:
    for pattern in (_PODMAN_STEP, _DOCKER_STEP):
        m = pattern.match(line)
        if m:
            # A RUN's bind mounts say where files are seen, not what the step does.
            text = _MOUNT_FLAG.sub("", m.group(2))
            return f"build step {m.group(1)}: {_short(text)}"
    m = _PUSH_BLOB.match(line)
    if m:
        return f"layers: {m.group(1)}"
    return None


def _short(text: str, width: int = 140) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


def _run_streamed(
    argv: list[str], progress: Progress, env: dict[str, str] | None = None, *, terminal: bool = False
) -> tuple[int, list[str]]:
    """Run the engine, its output (stdout and stderr) line by line to ``progress``; return
    its exit status and the last :data:`TAIL_LINES` lines. Ctrl-C stops the engine first.

    ``terminal`` (a push or pull, with progress on a terminal): the engine writes to the
    terminal itself, so its own progress bars (layers, bytes) show; no lines are kept."""
    tail: collections.deque[str] = collections.deque(maxlen=TAIL_LINES)
    if terminal and progress.mode == "tty":
        proc = subprocess.Popen(argv, stdout=sys.stderr, stderr=sys.stderr, stdin=subprocess.DEVNULL, env=env)
    else:
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env)
    try:
        for raw in proc.stdout or ():
            line = raw[:4096].decode("utf-8", "replace").rstrip("\r\n")
            tail.append(line)
            progress.engine_line(line)
        return proc.wait(timeout=BUILD_TIMEOUT), list(tail) or ["(the engine's output is above)"]
    except BaseException:
        # Ctrl-C (the engine got its own SIGINT from the terminal), or a timeout: it ends with us.
        with contextlib.suppress(ProcessLookupError):
            proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        raise


@dataclass(frozen=True)
class _Base:
    ref: str
    id: str
    user: str
    has_bootstrap: bool


def _inspect(engine: Engine, ref: str) -> dict[str, object] | None:
    done = subprocess.run(engine.command("image", "inspect", ref), capture_output=True, text=True, timeout=120)
    if done.returncode != 0:
        return None
    try:
        data = json.loads(done.stdout)
    except ValueError:
        return None
    return data[0] if isinstance(data, list) and data and isinstance(data[0], dict) else None


def resolve_base(engine: Engine, ref: str, progress: Progress) -> _Base:
    """The base image's id and user, pulled first when the store lacks it.

    Raises:
        UsageError: it is neither in the store nor pullable (naming it and the fix).
    """
    found = _inspect(engine, ref)
    if found is None:
        progress.say(f"pulling the base image {ref}")
        pull = [*(["--tls-verify=false"] if engine.name == "podman" and _loopback_ref(ref) else [])]
        done = subprocess.run(engine.command("pull", "-q", *pull, ref), capture_output=True, text=True, timeout=BUILD_TIMEOUT)
        found = _inspect(engine, ref) if done.returncode == 0 else None
        if found is None:
            why = (done.stderr.strip().splitlines() or ["not found"])[-1]
            hint = (" — build tfjob's base image first (container/README.md: "
                    f"`{engine.name} build -f container/Dockerfile -t {ref} .`), or give --base IMAGE") if ref == default_base() else ""  # fmt: skip
            raise UsageError(f"base image {ref} is not in {engine.name}'s store and cannot be pulled ({_short(why, 200)}){hint}")
    config = found.get("Config") if isinstance(found.get("Config"), dict) else {}
    entrypoint = config.get("Entrypoint") or []  # type: ignore[union-attr]
    return _Base(
        ref=ref,
        id=str(found.get("Id", "")),
        user=str(config.get("User") or ""),  # type: ignore[union-attr]
        has_bootstrap=any("tfjob-bootstrap" in str(e) for e in (entrypoint if isinstance(entrypoint, list) else [entrypoint])),
    )


def _loopback_ref(ref: str) -> bool:
    from .registry import is_loopback

    first = ref.split("/", 1)[0]
    return "/" in ref and is_loopback(first)


def _file_digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@dataclass
class _Plan:
    dockerfile: str
    kind: str  # "generated" or the Dockerfile's name
    key: str
    files: dict[str, bytes]  # context path → bytes
    build_args: dict[str, str]
    package_sha256: str | None
    warnings: tuple[str, ...]
    steps: dict[str, str]  # a step's text fragment → what it does, for error messages


def plan_build(source: Path, *, module: str | None, base: _Base | None, base_ref: str, include_secrets: bool = False,
               requirements: str | None = None) -> _Plan:  # fmt: skip
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
    return _Plan(dockerfile, "generated", key, files, {}, package.sha256, package.warnings, steps)


def _plan_own(source: Path, base: _Base | None, base_ref: str, include_secrets: bool) -> _Plan:
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
    return _Plan(dockerfile, "Dockerfile", key, files, build_args, None, tuple(found.warnings()), {})


def uses_base_arg(dockerfile_text: str) -> bool:
    """True when a Dockerfile takes its base as ``ARG BASE_IMAGE`` (tfjob's templates do)."""
    return re.search(r"^\s*ARG\s+BASE_IMAGE\b", dockerfile_text, re.M | re.I) is not None


@contextlib.contextmanager
def _context(plan: _Plan) -> Iterator[Path]:
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


def _extra_flags() -> list[str]:
    try:
        return shlex.split(os.environ.get(BUILD_FLAGS_VARIABLE, ""))
    except ValueError as e:
        raise UsageError(f"${BUILD_FLAGS_VARIABLE} is not shell words ({e})") from None


_FAILED_STEP = re.compile(r'building at STEP "(.*)": (.*)')
_DOCKER_FAILED = re.compile(r'ERROR: (?:failed to solve: |failed to build: )?process "(.*)" did not complete successfully: (.*)')


def build_failure(tail: list[str], plan: _Plan, source: Path) -> str:
    """One line naming the step that failed and why, from the engine's last lines (pure)."""
    step, why = None, None
    for line in reversed(tail):
        m = _FAILED_STEP.search(line) or _DOCKER_FAILED.search(line)
        if m:
            step, why = m.group(1), m.group(2)
            break
    # What the step's own program said last (pip's "ERROR: No matching distribution…").
    said = next((line.strip() for line in reversed(tail)
                 if line.strip().startswith(("ERROR:", "error:", "E:", "/bin/sh:")) and not _FAILED_STEP.search(line)
                 and not _DOCKER_FAILED.search(line) and "building at STEP" not in line), None)  # fmt: skip
    if step is None:
        last = next((line for line in reversed(tail) if line.strip()), "no output")
        return f"the image build of {source} failed: {_short(last, 300)}"
    what = next((desc for fragment, desc in plan.steps.items() if fragment in step), None)
    named = f"{what} ({_short(step, 120)})" if what else _short(step, 160)
    return f"the image build of {source} failed at step {named}: {_short(why or '', 80)}" + (f"; {_short(said, 200)}" if said else "")


def build_image(
    source: str | os.PathLike[str],
    *,
    module: str | None = None,
    base: str | None = None,
    image_repo: str | None = None,
    engine: str | Engine | None = None,
    push: bool = True,
    include_secrets: bool = False,
    requirements: str | None = None,
    progress: Progress | None = None,
    credentials: object = None,
    pull: bool = False,
    cloud: "CloudBuildTarget | None" = None,
) -> BuiltImage:
    """Build (or find) the image of a trainer directory, and push it to ``image_repo``.

    Args:
        source: the trainer directory.
        module: the trainer module (checked in the package; the image's default command).
        base: the base image (default tfjob's, ``tfjob:VERSION``).
        image_repo: ``REGISTRY/PATH`` to push to; None keeps the image in the engine's store.
        engine: ``podman`` / ``docker`` / a path / an :class:`~tfjob.runtime.engine.Engine`.
        push: False builds and tags but pushes nothing (``--dry-run``).
        include_secrets: let credential-looking files into the package / context.
        requirements: a requirements file for a bare trainer (default its requirements.txt).
        progress: where progress lines go (default: by terminal).
        credentials: Google credentials for ``*.pkg.dev`` / ``gcr.io`` (default application-default).
        pull: make sure the engine's store holds ``REPO@sha256:…`` (a local run of a pushed image).
        cloud: build with Cloud Build there instead of an engine here (``--cloud-build``);
            with ``push=False`` nothing is staged or created, and :attr:`BuiltImage.build_request`
            holds the request.

    Raises:
        UsageError: no engine, a bad directory, a base that cannot be had.
        ImageBuildError: the build failed (names the step) or the push did.
        RegistryError: the registry refused the login or cannot be reached (names it).
    """
    progress = progress or Progress.auto()
    src = Path(source).expanduser()
    if not src.is_dir():
        raise UsageError(
            f"trainer directory {str(source)!r} is not a directory; pass the directory holding the trainer (and its Dockerfile, if any)"
        )
    src = src.resolve()
    repo = parse_repository(image_repo) if image_repo else None
    base_ref = base or default_base()
    own = (src / "Dockerfile").is_file()
    needs_base = not own or uses_base_arg((src / "Dockerfile").read_text(errors="replace"))
    if cloud is not None:
        return _cloud_build(src, cloud, repo, base_ref, needs_base, module=module, push=push, include_secrets=include_secrets,
                            requirements=requirements, progress=progress)  # fmt: skip
    eng = engine if isinstance(engine, Engine) else find_engine(engine)
    resolved = resolve_base(eng, base_ref, progress) if needs_base else None
    plan = plan_build(src, module=module, base=resolved, base_ref=base_ref, include_secrets=include_secrets, requirements=requirements)
    for warning in plan.warnings:
        progress.say(warning)
    repository = repo.name if repo else recipes.default_repository(src.name)
    tag = f"{repository}:{recipes.image_tag(plan.key)}"
    credentials_pair = _registry_login(repo, eng, credentials) if repo else None

    if repo is not None:
        digest = manifest_digest(repo, recipes.image_tag(plan.key), credentials=credentials_pair)
        if digest:
            progress.say(f"image {tag} is on {repo.host} already: nothing to build or push")
            reference = f"{repo.name}@{digest}"
            local = _pulled(eng, repo, reference, progress) if pull else _inspect(eng, tag)
            return BuiltImage(reference, tag, plan.key, digest, str(local.get("Id")) if local else None,
                              False, False, plan.kind, plan.package_sha256, plan.warnings)  # fmt: skip
    image_id = _find_built(eng, plan.key, tag)
    built = image_id is None
    if image_id is None:
        image_id = _build(eng, plan, src, tag, progress)
    else:
        progress.say(f"image {tag} is built already (unchanged inputs): nothing to build")
    if repo is None or not push:
        return BuiltImage(tag, tag, plan.key, None, image_id, built, False, plan.kind, plan.package_sha256, plan.warnings)
    digest = _push(eng, repo, tag, credentials_pair, progress)
    if pull:
        _pulled(eng, repo, f"{repo.name}@{digest}", progress)
    return BuiltImage(f"{repo.name}@{digest}", tag, plan.key, digest, image_id, built, True, plan.kind, plan.package_sha256, plan.warnings)


def _cloud_build(src: Path, cloud: "CloudBuildTarget", repo: Repository | None, base_ref: str, needs_base: bool, *, module: str | None,
                 push: bool, include_secrets: bool, requirements: str | None, progress: Progress) -> BuiltImage:  # fmt: skip
    """:func:`build_image` through Cloud Build (no engine here)."""
    from .cloudbuild import remote_base, render_build_request, run_build, stage_context

    if repo is None:
        raise UsageError(
            field="cloud_build",
            problem="pushes the image from Cloud Build: give {image_repo=REGISTRY/PATH} (e.g. REGION-docker.pkg.dev/PROJECT/REPO/NAME)",
        )
    resolved = None
    if needs_base:
        ref, digest = remote_base(base_ref, cloud.credentials)
        # A base seen only on its registry: the bootstrap wheel goes in (a no-op on tfjob's base), tasks run as its default user.
        resolved = _Base(ref=ref, id=digest, user="", has_bootstrap=False)
    plan = plan_build(src, module=module, base=resolved, base_ref=base_ref, include_secrets=include_secrets, requirements=requirements)
    for warning in plan.warnings:
        progress.say(warning)
    tag = f"{repo.name}:{recipes.image_tag(plan.key)}"
    pair = _registry_login(repo, None, cloud.credentials)
    digest = manifest_digest(repo, recipes.image_tag(plan.key), credentials=pair)
    dockerfile = plan.dockerfile if plan.kind == "generated" else None
    sha, name = stage_context(plan.files, dockerfile, cloud, upload=push and not digest, say=progress.say)
    request = render_build_request(bucket=cloud.staging_bucket, source_object=name, tag=tag, key=plan.key, build_args=plan.build_args)
    if digest:
        progress.say(f"image {tag} is on {repo.host} already: nothing to build or push")
        return BuiltImage(f"{repo.name}@{digest}", tag, plan.key, digest, None, False, False, plan.kind, plan.package_sha256,
                          plan.warnings, request)  # fmt: skip
    if not push:
        return BuiltImage(tag, tag, plan.key, None, None, False, False, plan.kind, plan.package_sha256, plan.warnings, request)
    digest = run_build(request, cloud, repo, tag, progress.say)
    progress.say(f"pushed {repo.name}@{digest} (Cloud Build)")
    return BuiltImage(
        f"{repo.name}@{digest}", tag, plan.key, digest, None, True, True, plan.kind, plan.package_sha256, plan.warnings, request
    )


def _find_built(engine: Engine, key: str, tag: str) -> str | None:
    """The id of an image of ``key`` in the engine's store (under ``tag``, or under another
    name: the label says what it was built from), tagged ``tag``; None when there is none."""
    local = _inspect(engine, tag)
    if local is not None and (local.get("Config") or {}).get("Labels", {}).get(recipes.LABEL_KEY) == key:  # type: ignore[union-attr]
        return str(local.get("Id", ""))
    done = subprocess.run(engine.command("images", "-q", "--no-trunc", "--filter", f"label={recipes.LABEL_KEY}={key}"),
                          capture_output=True, text=True, timeout=120)  # fmt: skip
    ids = list(dict.fromkeys(done.stdout.split())) if done.returncode == 0 else []
    if not ids:
        return None
    if subprocess.run(engine.command("tag", ids[0], tag), capture_output=True, timeout=120).returncode != 0:
        return None
    return ids[0] if ids[0].startswith("sha256:") else f"sha256:{ids[0]}"


def _pulled(engine: Engine, repo: Repository, reference: str, progress: Progress) -> dict[str, object]:
    """The engine's view of ``reference`` (``REPO@sha256:…``), pulled first when its store
    does not know the image by that digest (layers it has are not fetched again)."""
    found = _inspect(engine, reference)
    if found is not None:
        return found
    progress.say(f"pulling {reference}")
    flags = ["--tls-verify=false"] if engine.name == "podman" and repo.loopback else []
    code, tail = _run_streamed(engine.command("pull", *flags, reference), progress, terminal=True)
    found = _inspect(engine, reference) if code == 0 else None
    if found is None:
        said = next((line for line in reversed(tail) if line.strip()), "no output")
        raise ImageBuildError(f"pulling {reference} from {repo.host} failed: {_short(said, 240)}")
    return found


def _registry_login(repo: Repository, engine: Engine | None, credentials: object) -> tuple[str, str] | None:
    if repo.google:
        return "oauth2accesstoken", google_access_token(credentials)
    return stored_credentials(repo.host, engine.name if engine is not None else "podman")


def _build(engine: Engine, plan: _Plan, source: Path, tag: str, progress: Progress) -> str:
    progress.say(
        f"building {tag} from {source} ({'its own Dockerfile' if plan.kind != 'generated' else 'the trainer sdist on ' + (plan.build_args.get('BASE_IMAGE') or 'the base')})"
    )
    with _context(plan) as ctx:
        iidfile = ctx.parent / f"{ctx.name}.iid"
        argv = engine.command("build", "--iidfile", str(iidfile), "-f", str(ctx / "Dockerfile"),
                              "--label", f"{recipes.LABEL_KEY}={plan.key}", *_extra_flags())  # fmt: skip
        if engine.name == "docker":
            argv += ["--progress", "plain"] if progress.mode != "tty" else []
        for name, value in plan.build_args.items():
            argv += ["--build-arg", f"{name}={value}"]
        argv.append(str(ctx))
        env = {**os.environ, "DOCKER_BUILDKIT": "1"} if engine.name == "docker" else None
        try:
            code, tail = _run_streamed(argv, progress, env)
            image_id = iidfile.read_text().strip() if code == 0 and iidfile.is_file() else ""
        finally:
            iidfile.unlink(missing_ok=True)
    if code != 0 or not image_id:
        raise ImageBuildError(build_failure(tail, plan, source))
    # Only a finished build gets its name.
    done = subprocess.run(engine.command("tag", image_id, tag), capture_output=True, text=True, timeout=120)
    if done.returncode != 0:
        raise ImageBuildError(f"{engine.name} tag {tag} failed: {_short(done.stderr, 300)}")
    progress.say(f"built {tag} ({image_id[:19]})")
    return image_id


@contextlib.contextmanager
def _auth_file(engine: Engine, repo: Repository, pair: tuple[str, str] | None) -> Iterator[tuple[list[str], dict[str, str] | None]]:
    """Flags and environment that give the engine ``pair`` for the push, in a private
    file removed afterwards (never on a command line); none when the engine's own store serves."""
    if pair is None or not repo.google:
        yield [], None
        return
    import base64

    folder = Path(tempfile.mkdtemp(prefix="tfjob-auth-"))
    try:
        os.chmod(folder, 0o700)
        auth = {"auths": {repo.host: {"auth": base64.b64encode(":".join(pair).encode()).decode()}}}
        path = folder / "config.json"
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as f:
            json.dump(auth, f)
        if engine.name == "docker":
            yield [], {**os.environ, "DOCKER_CONFIG": str(folder)}
        else:
            yield ["--authfile", str(path)], None
    finally:
        shutil.rmtree(folder, ignore_errors=True)


_REFUSED = re.compile(r"unauthorized|authentication required|denied|401|403", re.I)


def _push(engine: Engine, repo: Repository, tag: str, pair: tuple[str, str] | None, progress: Progress) -> str:
    progress.say(f"pushing {tag}")
    with tempfile.TemporaryDirectory(prefix="tfjob-push-") as tmp, _auth_file(engine, repo, pair) as (flags, env):
        digestfile = Path(tmp) / "digest"
        if engine.name == "podman":
            argv = engine.command("push", *flags, "--digestfile", str(digestfile),
                                  *(["--tls-verify=false"] if repo.loopback else []), tag)  # fmt: skip
        else:
            argv = engine.command("push", tag)
        code, tail = _run_streamed(argv, progress, env, terminal=engine.name == "podman")
        digest = digestfile.read_text().strip() if digestfile.is_file() else ""
    if code != 0:
        said = next((line for line in reversed(tail) if line.strip()), "no output")
        if _REFUSED.search(said):
            raise RegistryError(f"registry {repo.host} refused the push of {tag}: {_short(said, 240)}")
        raise ImageBuildError(f"pushing {tag} to {repo.host} failed: {_short(said, 240)}")
    if not digest:
        m = next((re.search(r"digest: (sha256:[0-9a-f]{64})", line) for line in reversed(tail) if "digest: sha256:" in line), None)
        digest = m.group(1) if m else ""
    if not re.fullmatch(r"sha256:[0-9a-f]{64}", digest):
        found = manifest_digest(repo, tag.rsplit(":", 1)[1], credentials=pair)
        if not found:
            raise ImageBuildError(f"{engine.name} pushed {tag} but {repo.host} names no digest for it")
        digest = found
    progress.say(f"pushed {repo.name}@{digest}")
    return digest
