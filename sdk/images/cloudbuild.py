"""The image built by Cloud Build, for a machine without podman or docker (``--cloud-build``).

The build context is the one a local build would get (:func:`tfjob.images.plan.plan_build`:
the generated Dockerfile with the trainer's sdist, or the directory's own Dockerfile on a copy
filtered as the sdist is), written as a canonical ``.tar.gz`` (the same bytes for the same
inputs) and staged to ``gs://BUCKET/tfjob/build/<sha256>/context.tar.gz`` — once: an object
there already holds those bytes. The build request (:func:`render_build_request`, pure) runs
``docker build`` in Cloud Build's docker builder and pushes ``REPO:KEY``; Cloud Build answers
with the pushed digest. The tag is content-addressed as a local build's is, so an image
already on the registry is neither rebuilt nor pushed.

The client library (``google-cloud-build``, the ``cloudbuild`` extra) is imported only here,
on this path. Its endpoint is Google's unless ``--api-endpoint`` names a non-Google host
(tests' stand-in), which then serves Cloud Build as it serves Vertex AI.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import BackendUnavailableError, UsageError, Word
from .registry import Repository

#: Cloud Build's docker builder image.
DOCKER_BUILDER = "gcr.io/cloud-builders/docker"
#: How long a build may take (Cloud Build's own limit is 24 h; its default 10 min).
BUILD_TIMEOUT_S = 3600


@dataclass(frozen=True)
class CloudBuildTarget:
    """Where a remote build runs: the project, the bucket its source is staged to, the endpoint."""

    project: str
    staging_bucket: str
    api_endpoint: str | None = None
    credentials: Any = None


#: What a dry run's request shows for a project or bucket not given (as Vertex AI's dry run does).
PROJECT_PLACEHOLDER = "YOUR_PROJECT"
BUCKET_PLACEHOLDER = "gs://YOUR_STAGING_BUCKET"


def check_target(
    project: str | None, staging_bucket: str | None, api_endpoint: str | None, credentials: Any = None, *, dry_run: bool = False,
    note: Any = None,
) -> CloudBuildTarget:  # fmt: skip
    """The target of a remote build, or one line saying what is missing.

    With ``dry_run`` nothing is missing: a project or bucket not given is shown as
    :data:`PROJECT_PLACEHOLDER` / :data:`BUCKET_PLACEHOLDER` (``note`` says so, once each).

    Raises:
        UsageError: no project, or no ``gs://`` staging bucket (not in a dry run).
    """
    if dry_run:
        if not project:
            project = PROJECT_PLACEHOLDER
            if note is not None:
                note(f"no project set: the build request is for {PROJECT_PLACEHOLDER} (give --project, or set GOOGLE_CLOUD_PROJECT)")
        if not staging_bucket:
            staging_bucket = BUCKET_PLACEHOLDER
            if note is not None:
                note(f"no staging bucket set: the build context shows as {BUCKET_PLACEHOLDER} (give --staging-bucket)")
    if not project:
        raise UsageError(field="cloud_build", problem="runs in a Google Cloud project: give {project} (or set GOOGLE_CLOUD_PROJECT)")
    if not staging_bucket:
        raise UsageError(field="cloud_build", problem="stages the build context in Cloud Storage: give {staging_bucket=gs://BUCKET}")
    bucket = staging_bucket[len("gs://") :] if staging_bucket.startswith("gs://") else None
    if not bucket or "/" in bucket.strip("/"):
        raise UsageError(field="staging_bucket", value=staging_bucket, problem="must be gs://BUCKET")
    return CloudBuildTarget(project, bucket.strip("/"), api_endpoint, credentials)


def remote_base(ref: str, credentials: Any = None) -> tuple[str, str]:
    """(the base as given, its manifest digest on its registry): what the content key takes
    where no engine has the image.

    Raises:
        UsageError: the base names no registry (tfjob's default ``tfjob:VERSION`` is a local name),
            or its registry lacks it.
    """
    from .registry import google_access_token, manifest_digest, parse_repository, stored_credentials

    name, _, digest = ref.partition("@")
    last = name.rsplit("/", 1)[-1]
    repo_part, tag = name.rsplit(":", 1) if ":" in last else (name, "latest")
    try:
        repo = parse_repository(repo_part, "base_image")
    except Exception:
        raise UsageError(
            field="cloud_build",
            problem=f"pulls the base image from a registry: give {{base_image=REGISTRY/PATH:TAG}} (not {ref!r})",
            fix="e.g. the tfjob base image pushed to Artifact Registry",
        ) from None
    if digest:
        return ref, digest
    pair = ("oauth2accesstoken", google_access_token(credentials)) if repo.google else stored_credentials(repo.host, "podman")
    found = manifest_digest(repo, tag, credentials=pair)
    if not found:
        raise UsageError(field="base_image", value=Word(ref), problem=f": {repo.host} has no such image")
    return ref, found


def context_object(sha256: str) -> str:
    return f"tfjob/build/{sha256}/context.tar.gz"


def render_build_request(
    *, bucket: str, source_object: str, tag: str, key: str, build_args: dict[str, str], labels: dict[str, str] | None = None
) -> dict[str, Any]:
    """The Cloud Build ``Build`` (as the REST API's JSON) that builds ``tag`` from the staged context and pushes it (pure)."""
    args = ["build", "--label", f"dev.tfjob.build.key={key}"]
    for name, value in sorted(build_args.items()):
        args += ["--build-arg", f"{name}={value}"]
    args += ["-t", tag, "."]
    return {
        "source": {"storageSource": {"bucket": bucket, "object": source_object}},
        "steps": [{"id": "build", "name": DOCKER_BUILDER, "args": args, "env": ["DOCKER_BUILDKIT=1"]}],
        "images": [tag],
        "tags": ["tfjob"],
        "timeout": f"{BUILD_TIMEOUT_S}s",
    } | ({"labels": labels} if labels else {})


def stage_context(files: dict[str, bytes], dockerfile: str | None, target: CloudBuildTarget, *, upload: bool, say: Any) -> tuple[str, str]:
    """Write the context as a canonical tarball and stage it (unless there already, or not ``upload``).
    Returns (its sha256, its object name)."""
    from ..packaging import write_canonical_tar

    entries = [(rel, data, False) for rel, data in files.items()]
    if dockerfile is not None:
        entries.append(("Dockerfile", dockerfile.encode(), False))
    with tempfile.TemporaryDirectory(prefix="tfjob-cloudbuild-") as tmp:
        path = Path(tmp) / "context.tar.gz"
        sha = write_canonical_tar(entries, path)
        name = context_object(sha)
        if upload:
            _upload(path, name, target, say)
    return sha, name


def _upload(path: Path, name: str, target: CloudBuildTarget, say: Any) -> None:
    from google.api_core import exceptions as core

    from ..backends.vertex.errors import translate
    from ..backends.vertex.staging import storage_client

    client = storage_client(target.project, target.credentials)
    blob = client.bucket(target.staging_bucket).blob(name)
    try:
        if blob.exists():
            say(f"the build context is staged already (gs://{target.staging_bucket}/{name})")
            return
        blob.upload_from_filename(str(path), if_generation_match=0, content_type="application/gzip")
        say(f"staged the build context ({path.stat().st_size} bytes) at gs://{target.staging_bucket}/{name}")
    except core.PreconditionFailed:
        return  # written meanwhile: the same bytes
    except core.NotFound as e:
        raise UsageError(
            problem=f"staging bucket gs://{target.staging_bucket} does not exist", fix="create it or pass another {staging_bucket}"
        ) from e
    except Exception as e:
        raise translate(e, action="stage", project=target.project, endpoint=f"gs://{target.staging_bucket}") from e


def _client(target: CloudBuildTarget) -> Any:
    try:
        from google.api_core.client_options import ClientOptions
        from google.cloud.devtools import cloudbuild_v1
    except ImportError as e:
        raise BackendUnavailableError("--cloud-build needs google-cloud-build: pip install 'tfjob[cloudbuild]'") from e
    from ..backends.vertex.auth import is_google_endpoint, ready_credentials

    options = None
    if target.api_endpoint and not is_google_endpoint(target.api_endpoint):
        options = ClientOptions(api_endpoint=target.api_endpoint)
    return cloudbuild_v1.CloudBuildClient(credentials=ready_credentials(target.credentials), transport="rest", client_options=options)


def run_build(request: dict[str, Any], target: CloudBuildTarget, repo: Repository, tag: str, say: Any) -> str:
    """Create the build, wait for it, return the digest Cloud Build pushed.

    Raises:
        ImageBuildError: the build failed (naming its failed step and Cloud Build's detail).
        AuthError, BackendError: the service refused or failed.
    """
    from google.cloud.devtools import cloudbuild_v1
    from google.protobuf import json_format

    from ..backends.vertex.errors import translate
    from ..errors import ImageBuildError

    build = cloudbuild_v1.types.Build()
    json_format.ParseDict(request, build._pb)
    client = _client(target)
    try:
        operation = client.create_build(project_id=target.project, build=build)
    except Exception as e:
        raise translate(e, action="create", project=target.project, endpoint=target.api_endpoint) from e
    build_id = getattr(getattr(operation.metadata, "build", None), "id", "") or "?"
    say(f"Cloud Build {build_id} is building {tag}")
    try:
        done = operation.result(timeout=BUILD_TIMEOUT_S + 600)
    except Exception as e:  # the operation ended in error: the build, as the metadata last saw it, says where
        finished = getattr(operation.metadata, "build", None)
        raise ImageBuildError(_failure(finished, build_id, str(e))) from None
    status = cloudbuild_v1.types.Build.Status
    if done.status != status.SUCCESS:
        raise ImageBuildError(_failure(done, build_id, done.status_detail or done.status.name))
    for image in done.results.images:
        if image.name in (tag, repo.name) and image.digest.startswith("sha256:"):
            pushed: str = image.digest
            return pushed
    raise ImageBuildError(f"Cloud Build {build_id} succeeded but named no digest for {tag}")


def _failure(build: Any, build_id: str, why: str) -> str:
    step = None
    if build is not None:
        from google.cloud.devtools import cloudbuild_v1

        failed = [s for s in build.steps if s.status == cloudbuild_v1.types.Build.Status.FAILURE]
        step = failed[0] if failed else None
        detail = getattr(getattr(build, "failure_info", None), "detail", "") or getattr(build, "status_detail", "")
        why = detail or why
    where = f" at step {step.id or step.name} ({' '.join(step.args)[:120]})" if step is not None else ""
    return f"Cloud Build {build_id} failed{where}: {' '.join(why.split())[:300]}"
