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

import os
import re
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ..runtime.engine import Engine, find_engine, stopped_by_signals
from ..errors import BackendError, ImageBuildError, UsageError
from . import recipe as recipes
from .registry import Repository, parse_repository
from ..shown import inert
from .plan import (
    MAX_DOCKERFILE_BYTES,
    BaseImage,
    BuildPlan,
    build_context,
    default_base,
    inspect_image,
    plan_build,
    read_dockerfile,
    resolve_base,
    uses_base_arg,
)
from .publish import find_built, look_up, pulled, push_image
from .stream import (
    BUILD_TIMEOUT,
    BUILD_TIMEOUT_VARIABLE,
    LINE_LIMIT,
    TAIL_LINES,
    Progress,
    build_timeout,
    first_line,
    run_streamed,
    short,
    step_line,
)

if TYPE_CHECKING:
    from .cloudbuild import CloudBuildTarget

#: What was importable from here before the build was split (stream · plan · publish).
__all__ = [
    "BUILD_FLAGS_VARIABLE",
    "BUILD_TIMEOUT",
    "BUILD_TIMEOUT_VARIABLE",
    "LINE_LIMIT",
    "MAX_DOCKERFILE_BYTES",
    "TAIL_LINES",
    "BuiltImage",
    "Progress",
    "build_failure",
    "build_image",
    "build_timeout",
    "default_base",
    "plan_build",
    "resolve_base",
    "uses_base_arg",
]


#: Extra flags for every ``build`` (shell words): e.g. ``--network host`` behind a proxy.
BUILD_FLAGS_VARIABLE = "TFJOB_BUILD_FLAGS"


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


def _extra_flags() -> list[str]:
    try:
        return shlex.split(os.environ.get(BUILD_FLAGS_VARIABLE, ""))
    except ValueError as e:
        raise UsageError(f"${BUILD_FLAGS_VARIABLE} is not shell words ({e})") from None


_FAILED_STEP = re.compile(r'building at STEP "(.*)": (.*)')
_DOCKER_FAILED = re.compile(r'ERROR: (?:failed to solve: |failed to build: )?process "(.*)" did not complete successfully: (.*)')


def build_failure(tail: list[str], plan: BuildPlan, source: Path, code: int | None = None) -> str:
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
            return (
                f"the image build of {source} ended with exit status 0 but the engine wrote no image id (its last line: {short(last, 200)})"
            )
        progressed = step_line(last)
        if progressed is not None or said is None and last.startswith(("COMMIT", "-->", "Successfully")):
            # A progress line is where the build was, not why it failed.
            status = f"exit status {code}" if code is not None else "an error"
            return f"the image build of {source} failed with {status} after {progressed or short(last, 120)}, the engine saying no reason"
        return f"the image build of {source} failed: {short(last, 300)}"
    what = next((desc for fragment, desc in plan.steps.items() if fragment in step), None)
    named = f"{what} ({short(step, 120)})" if what else short(step, 160)
    return f"the image build of {source} failed at step {named}: {short(why or '', 80)}" + (f"; {short(said, 200)}" if said else "")


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
    needs_base = not own or uses_base_arg(read_dockerfile(src))
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
        digest, credentials_pair = look_up(repo, recipes.image_tag(plan.key), eng, credentials, push, progress)
        if digest:
            progress.say(f"image {tag} is on {repo.host} already: nothing to build or push")
            reference = f"{repo.name}@{digest}"
            local = pulled(eng, repo, reference, progress) if pull else inspect_image(eng, tag)
            return BuiltImage(reference, tag, plan.key, digest, str(local.get("Id")) if local else None,
                              False, False, plan.kind, plan.package_sha256, plan.warnings)  # fmt: skip
    image_id = find_built(eng, plan.key, tag)
    built = image_id is None
    if image_id is None:
        image_id = _build(eng, plan, src, tag, progress)
    else:
        progress.say(f"image {tag} is built already (unchanged inputs): nothing to build")
    if repo is None or not push:
        return BuiltImage(tag, tag, plan.key, None, image_id, built, False, plan.kind, plan.package_sha256, plan.warnings)
    digest = push_image(eng, repo, tag, credentials_pair, progress)
    if pull:
        pulled(eng, repo, f"{repo.name}@{digest}", progress)
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
                else first_line(e)
            )
            progress.say(f"dry run: the base image {base_ref} was not looked up ({why}); a real build keys the tag on its digest")
            ref, base_digest = base_ref, base_ref
        # A base seen only on its registry: the bootstrap wheel goes in (a no-op on tfjob's base), tasks run as its default user.
        resolved = BaseImage(ref=ref, id=base_digest, user="", has_bootstrap=False)
    plan = plan_build(src, module=module, base=resolved, base_ref=base_ref, include_secrets=include_secrets, requirements=requirements)
    for warning in plan.warnings:
        progress.say(warning)
    tag = f"{repo.name}:{recipes.image_tag(plan.key)}"
    digest, _ = look_up(repo, recipes.image_tag(plan.key), None, cloud.credentials, push, progress)
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


def _build(engine: Engine, plan: BuildPlan, source: Path, tag: str, progress: Progress) -> str:
    progress.say(
        f"building {tag} from {source} ({'its own Dockerfile' if plan.kind != 'generated' else 'the trainer sdist on ' + (plan.build_args.get('BASE_IMAGE') or 'the base')})"
    )
    with build_context(plan) as ctx:
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
            code, tail = run_streamed(argv, progress, env, what=f"the image build of {source}")
            image_id = iidfile.read_text().strip() if code == 0 and iidfile.is_file() else ""
        finally:
            iidfile.unlink(missing_ok=True)
    if code != 0 or not image_id:
        raise ImageBuildError(build_failure(tail, plan, source, code))
    # Only a finished build gets its name.
    done = engine._run("tag", image_id, tag)
    if done.returncode != 0:
        raise ImageBuildError(f"{engine.name} tag {tag} failed: {short(inert(done.stderr), 300)}")
    progress.say(f"built {tag} ({image_id[:19]})")
    return image_id
