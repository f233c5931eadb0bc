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
import selectors
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterator

from ..runtime.engine import Engine, find_engine, run_engine, stop_group, stopped_by_signals
from ..errors import BackendError, ImageBuildError, UsageError
from . import recipe as recipes
from .registry import Repository, RegistryError, google_access_token, manifest_digest, parse_repository, stored_credentials
from ..shown import inert

if TYPE_CHECKING:
    from .cloudbuild import CloudBuildTarget

#: Extra flags for every ``build`` (shell words): e.g. ``--network host`` behind a proxy.
BUILD_FLAGS_VARIABLE = "TFJOB_BUILD_FLAGS"
#: The lines of the engine's output kept for an error message.
TAIL_LINES = 40
#: How long one build, push or pull may take (seconds), unless ``$TFJOB_BUILD_TIMEOUT`` says.
BUILD_TIMEOUT = 3600.0
BUILD_TIMEOUT_VARIABLE = "TFJOB_BUILD_TIMEOUT"
#: The largest Dockerfile read (bytes): read before the context's own bounds apply.
MAX_DOCKERFILE_BYTES = 1 << 20
#: The longest line of the engine's output kept or shown (bytes); the rest of it is dropped.
LINE_LIMIT = 4096


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


def build_timeout() -> float:
    """How long one build, push or pull may take: ``$TFJOB_BUILD_TIMEOUT`` seconds, else
    :data:`BUILD_TIMEOUT`.

    Raises:
        UsageError: the variable is not a whole number of seconds from 1 to a week.
    """
    text = os.environ.get(BUILD_TIMEOUT_VARIABLE, "").strip()
    if not text:
        return BUILD_TIMEOUT
    if not (text.isascii() and text.isdigit() and len(text) <= 7 and 1 <= int(text) <= 7 * 86400):
        raise UsageError(f"${BUILD_TIMEOUT_VARIABLE}={_short(inert(text), 40)!r} must be a whole number of seconds from 1 to 604800")
    return float(text)


def _run_streamed(argv: list[str], progress: Progress, env: dict[str, str] | None = None, *, what: str) -> tuple[int, list[str]]:
    """Run the engine, its output (stdout and stderr) line by line to ``progress``; return
    its exit status and the last :data:`TAIL_LINES` lines.

    Bounded: the engine runs in its own session (a terminal's Ctrl-C reaches tfjob, which
    ends it, rather than the engine, which would die first and look like a failed build),
    and is ended with everything it started when it runs past :func:`build_timeout` (output
    or not), when tfjob is interrupted (Ctrl-C, SIGTERM) and on any error; a line is kept
    and shown up to :data:`LINE_LIMIT` bytes, the rest of it read and dropped; what is
    shown is made inert (:func:`tfjob.shown.inert`).

    Raises:
        ImageBuildError: ``what`` (the build, the push…) did not end in time.
    """
    timeout = build_timeout()
    tail: collections.deque[str] = collections.deque(maxlen=TAIL_LINES)
    with stopped_by_signals(sigint=True):
        try:
            proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env,
                                    start_new_session=True)  # fmt: skip
        except OSError as e:
            raise ImageBuildError(f"cannot run {argv[0]}: {e.strerror or e}") from None
        assert proc.stdout is not None
        fd = proc.stdout.fileno()
        os.set_blocking(fd, False)
        deadline = time.monotonic() + timeout
        line = bytearray()
        cut = False

        def emit(raw: bytes | bytearray) -> None:
            text = inert(bytes(raw).decode("utf-8", "replace").rstrip("\r\n"))
            if not text:
                return
            tail.append(text)
            progress.engine_line(text)

        try:
            with selectors.DefaultSelector() as sel:
                sel.register(fd, selectors.EVENT_READ)
                while True:
                    left = deadline - time.monotonic()
                    if left <= 0:
                        raise _Overdue
                    if not sel.select(timeout=min(left, 1.0)):
                        continue
                    try:
                        chunk = os.read(fd, 1 << 16)
                    except BlockingIOError:
                        continue
                    if not chunk:
                        break
                    for piece in chunk.splitlines(keepends=True):
                        if not cut:
                            line += piece[: max(0, LINE_LIMIT - len(line))]
                        ended = piece.endswith((b"\n", b"\r"))
                        if len(line) >= LINE_LIMIT and not ended:
                            cut = True
                        if ended:
                            emit(line + (b" \xe2\x80\xa6" if cut else b""))
                            line, cut = bytearray(), False
            if line:
                emit(line)
            try:
                code = proc.wait(timeout=max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                raise _Overdue from None
        except _Overdue:
            stop_group(proc, grace=30)
            raise ImageBuildError(
                f"{what} did not end within {timeout:g} s, so {argv[0].rsplit('/', 1)[-1]} was stopped "
                f"(its last line: {_short(next((t for t in reversed(tail) if t.strip()), 'none'), 200)}); "
                f"set ${BUILD_TIMEOUT_VARIABLE} (seconds) for a longer one"
            ) from None
        except BaseException:
            # Ctrl-C or SIGTERM (tfjob's alone: the engine is in its own session), an error: it ends with us.
            stop_group(proc, grace=30)
            raise
        finally:
            proc.stdout.close()
    return code, list(tail) or ["(the engine said nothing)"]


class _Overdue(Exception):
    """A build, push or pull ran past its time (internal to :func:`_run_streamed`)."""


@dataclass(frozen=True)
class _Base:
    ref: str
    id: str
    user: str
    has_bootstrap: bool


def _inspect(engine: Engine, ref: str) -> dict[str, Any] | None:
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


def resolve_base(engine: Engine, ref: str, progress: Progress) -> _Base:
    """The base image's id and user, pulled first when the store lacks it.

    Raises:
        UsageError: it is neither in the store nor pullable (naming it and the fix).
    """
    found = _inspect(engine, ref)
    if found is None:
        progress.say(f"pulling the base image {ref}")
        pull = [*(["--tls-verify=false"] if engine.name == "podman" and _loopback_ref(ref) else [])]
        done = run_engine(engine.command("pull", "-q", *pull, ref), engine.name, timeout=build_timeout())
        error = engine.unreachable(done.stderr) if done.returncode != 0 else None
        if error is not None:
            raise error
        found = _inspect(engine, ref) if done.returncode == 0 else None
        unreachable = engine.unreachable(done.stderr) if found is None else None
        if unreachable is not None:
            raise unreachable  # the engine's daemon, not the image: said as such
        if found is None:
            why = inert((done.stderr.strip().splitlines() or ["not found"])[-1])
            hint = (" — build tfjob's base image first (container/README.md: "
                    f"`{engine.name} build -f container/Dockerfile -t {ref} .`), or give --base IMAGE") if ref == default_base() else ""  # fmt: skip
            raise UsageError(f"base image {ref} is not in {engine.name}'s store and cannot be pulled ({_short(why, 200)}){hint}")
    config: dict[str, Any] = found["Config"] if isinstance(found.get("Config"), dict) else {}
    entrypoint = config.get("Entrypoint") or []
    return _Base(
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


def _read_dockerfile(source: Path) -> str:
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


def build_failure(tail: list[str], plan: _Plan, source: Path, code: int | None = None) -> str:
    """One line naming the step that failed and why, from the engine's last lines and its
    exit status ``code`` (pure)."""
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
        if code == 0:
            return f"the image build of {source} ended with exit status 0 but the engine wrote no image id (its last line: {_short(last, 200)})"
        progressed = _step_line(last)
        if progressed is not None or said is None and last.startswith(("COMMIT", "-->", "Successfully")):
            # A progress line is where the build was, not why it failed.
            status = f"exit status {code}" if code is not None else "an error"
            return f"the image build of {source} failed with {status} after {progressed or _short(last, 120)}, the engine saying no reason"
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
        push: False builds (or finds) and tags, and neither pushes nor asks the registry
            anything (``--dry-run``: no credentials needed); the reference is then
            ``REPO:<content tag>``, what a push would send.
        include_secrets: let credential-looking files into the package / context.
        requirements: a requirements file for a bare trainer (default its requirements.txt).
        progress: where progress lines go (default: by terminal).
        credentials: Google credentials for ``*.pkg.dev`` / ``gcr.io`` (default application-default).
        pull: make sure the engine's store holds ``REPO@sha256:…`` (a local run of a pushed image).
        cloud: build with Cloud Build there instead of an engine here (``--cloud-build``);
            with ``push=False`` nothing is staged or created, and :attr:`BuiltImage.build_request`
            holds the request.

    On the main thread, SIGTERM while it runs (when nothing else handles SIGTERM) raises
    KeyboardInterrupt as Ctrl-C does, and Ctrl-C does so even when SIGINT was inherited
    ignored: the engine is stopped with what it started and the build context removed.

    Raises:
        UsageError: no engine, a bad directory, a base that cannot be had.
        ImageBuildError: the build failed (names the step), the push did, or either ran
            past ``$TFJOB_BUILD_TIMEOUT``.
        RegistryError: the registry refused the login or cannot be reached (names it).
    """
    with stopped_by_signals(sigint=True):
        return _build_image(source, module=module, base=base, image_repo=image_repo, engine=engine, push=push,
                            include_secrets=include_secrets, requirements=requirements, progress=progress, credentials=credentials,
                            pull=pull, cloud=cloud)  # fmt: skip


def _build_image(source: str | os.PathLike[str], *, module: str | None, base: str | None, image_repo: str | None,
                 engine: str | Engine | None, push: bool, include_secrets: bool, requirements: str | None, progress: Progress | None,
                 credentials: object, pull: bool, cloud: "CloudBuildTarget | None") -> BuiltImage:  # fmt: skip
    """:func:`build_image`, with SIGTERM and Ctrl-C raising KeyboardInterrupt (so the context and the engine go)."""
    progress = progress or Progress.auto()
    src = Path(source).expanduser()
    if not src.is_dir():
        raise UsageError(
            f"trainer directory {str(source)!r} is not a directory; pass the directory holding the trainer (and its Dockerfile, if any)"
        )
    src = src.resolve()
    repo = parse_repository(image_repo) if image_repo else None
    if base is not None:
        from ..description.spec import check_image

        check_image(base, "base_image")  # a tag in ASCII, a whole digest: the API as the CLI
    base_ref = base or default_base()
    own = (src / "Dockerfile").is_file()
    needs_base = not own or uses_base_arg(_read_dockerfile(src))
    if cloud is not None:
        return _cloud_build(src, cloud, repo, base_ref, needs_base, module=module, push=push, include_secrets=include_secrets,
                            requirements=requirements, progress=progress, base_given=base is not None)  # fmt: skip
    eng = engine if isinstance(engine, Engine) else find_engine(engine)
    resolved = resolve_base(eng, base_ref, progress) if needs_base else None
    plan = plan_build(src, module=module, base=resolved, base_ref=base_ref, include_secrets=include_secrets, requirements=requirements)
    for warning in plan.warnings:
        progress.say(warning)
    repository = repo.name if repo else recipes.default_repository(src.name)
    tag = f"{repository}:{recipes.image_tag(plan.key)}"
    credentials_pair = None
    if repo is not None:
        digest, credentials_pair = _look_up(repo, recipes.image_tag(plan.key), eng, credentials, push, progress)
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
                 push: bool, include_secrets: bool, requirements: str | None, progress: Progress, base_given: bool = True) -> BuiltImage:  # fmt: skip
    """:func:`build_image` through Cloud Build (no engine here)."""
    from .cloudbuild import remote_base, render_build_request, run_build, stage_context

    if repo is None:
        raise UsageError(
            field="cloud_build",
            problem="pushes the image from Cloud Build: give {image_repo=REGISTRY/PATH} (e.g. REGION-docker.pkg.dev/PROJECT/REPO/NAME)",
        )
    resolved = None
    if needs_base:
        try:
            ref, base_digest = remote_base(base_ref, cloud.credentials)
        except (BackendError, UsageError) as e:
            # A dry run needs no credentials, nor tfjob's base pushed yet (a base given that no
            # registry can hold is still a mistake): the base is taken by its name, said once.
            if push or (isinstance(e, UsageError) and base_given):
                raise
            why = (
                "a local name: Cloud Build pulls it from a registry (--base REGISTRY/PATH:TAG)"
                if isinstance(e, UsageError)
                else _first_line(e)
            )
            progress.say(f"dry run: the base image {base_ref} was not looked up ({why}); a real build keys the tag on its digest")
            ref, base_digest = base_ref, base_ref
        # A base seen only on its registry: the bootstrap wheel goes in (a no-op on tfjob's base), tasks run as its default user.
        resolved = _Base(ref=ref, id=base_digest, user="", has_bootstrap=False)
    plan = plan_build(src, module=module, base=resolved, base_ref=base_ref, include_secrets=include_secrets, requirements=requirements)
    for warning in plan.warnings:
        progress.say(warning)
    tag = f"{repo.name}:{recipes.image_tag(plan.key)}"
    digest, _ = _look_up(repo, recipes.image_tag(plan.key), None, cloud.credentials, push, progress)
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


def _first_line(error: BaseException) -> str:
    return _short(next((line for line in str(error).splitlines() if line.strip()), type(error).__name__), 200)


def _look_up(
    repo: Repository, tag: str, engine: Engine | None, credentials: object, push: bool, progress: Progress
) -> tuple[str | None, tuple[str, str] | None]:
    """(the digest of ``repo:tag`` on its registry or None, the login for it). A dry run
    (``push`` False) that cannot log in or reach the registry — no Google credentials, no
    ``[vertex]`` extra, no network — goes on without asking it, and says so."""
    try:
        pair = _registry_login(repo, engine, credentials)
        return manifest_digest(repo, tag, credentials=pair), pair
    except BackendError as e:
        if push:
            raise
        progress.say(
            f"dry run: {repo.host} was not asked whether it has {repo.name}:{tag} ({_first_line(e)}); a real build or submit logs in and pushes it there"
        )
        return None, None


def _find_built(engine: Engine, key: str, tag: str) -> str | None:
    """The id of an image of ``key`` in the engine's store (under ``tag``, or under another
    name: the label says what it was built from), tagged ``tag``; None when there is none."""
    local = _inspect(engine, tag)
    if local is not None and (local.get("Config") or {}).get("Labels", {}).get(recipes.LABEL_KEY) == key:
        return str(local.get("Id", ""))
    done = engine._run("images", "-q", "--no-trunc", "--filter", f"label={recipes.LABEL_KEY}={key}")
    ids = list(dict.fromkeys(done.stdout.split())) if done.returncode == 0 else []
    if not ids:
        return None
    if engine._run("tag", ids[0], tag).returncode != 0:
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
    code, tail = _run_streamed(engine.command("pull", *flags, reference), progress, what=f"pulling {reference}")
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
            code, tail = _run_streamed(argv, progress, env, what=f"the image build of {source}")
            image_id = iidfile.read_text().strip() if code == 0 and iidfile.is_file() else ""
        finally:
            iidfile.unlink(missing_ok=True)
    if code != 0 or not image_id:
        raise ImageBuildError(build_failure(tail, plan, source, code))
    # Only a finished build gets its name.
    done = engine._run("tag", image_id, tag)
    if done.returncode != 0:
        raise ImageBuildError(f"{engine.name} tag {tag} failed: {_short(inert(done.stderr), 300)}")
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
        code, tail = _run_streamed(argv, progress, env, what=f"pushing {tag} to {repo.host}")
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
