"""``tfjob build``: a trainer directory → an image, tagged by its content, pushed once.

The image reference jobs run (``REPO@sha256:…`` once pushed, else the local tag) goes to
stdout alone; progress to stderr (the engine's own output on a terminal, one line per step
otherwise, nothing with ``--output json``, which prints the whole result instead).
"""

from __future__ import annotations

import json

import click

from tfjob import UsageError

from .app import CONTEXT_SETTINGS, app

_EXAMPLES = """\b
Examples:
  tfjob build census/ -m trainer.task
  tfjob build census/ -m trainer.task --image-repo us-central1-docker.pkg.dev/PROJECT/REPO/census
  tfjob build census/ --base us-docker.pkg.dev/vertex-ai/training/tf-cpu.2-17.py310:latest --image-repo 127.0.0.1:5000/census
"""


@app.command("build", epilog=_EXAMPLES, context_settings=CONTEXT_SETTINGS)
@click.argument("directory", metavar="DIR")
@click.option("--module-name", "-m", "module", help="The trainer module (checked in the package; the image's default command).")
@click.option(
    "--base",
    "base_image",
    help="The image to build on (default: tfjob's base image, tfjob:VERSION); a Dockerfile in DIR takes it as ARG BASE_IMAGE.",
)
@click.option(
    "--image-repo",
    "image_repo",
    help="REGISTRY/PATH to push the image to (Artifact Registry, gcr.io, or any registry); pushed only when the registry lacks it.",
)
@click.option("--container-engine", "container_engine", help="podman or docker (default: whichever is installed, podman first).")
@click.option("--requirements", "requirements", help="A bare trainer's dependencies (default: its requirements.txt).")
@click.option(
    "--include-secrets",
    "include_secrets",
    is_flag=True,
    default=False,
    help="Let files that look like credentials into the image too (each is still named).",
)
@click.option("--no-push", "no_push", is_flag=True, default=False, help="Build and tag, push nothing.")
@click.option(
    "--cloud-build",
    "cloud_build",
    is_flag=True,
    default=False,
    help="Build with Cloud Build (no engine needed here): the context is staged to --staging-bucket.",
)
@click.option("--project", "project", help="--cloud-build: the Google Cloud project (else GOOGLE_CLOUD_PROJECT / config).")
@click.option("--staging-bucket", "staging_bucket", help="--cloud-build: gs://BUCKET for the build context.")
@click.option("--api-endpoint", "api_endpoint", help="--cloud-build: a non-Google endpoint serving the Cloud Build API (a stand-in).")
@click.option("--dry-run", "dry_run", is_flag=True, default=False, help="--cloud-build: print the build request (JSON) and send nothing.")
@click.option("--output", "-o", "output", default="text", help="text (the image reference) or json (the whole result, no progress).")
def build(directory: str, module: str | None, base_image: str | None, image_repo: str | None, container_engine: str | None,
          requirements: str | None, include_secrets: bool, no_push: bool, cloud_build: bool, project: str | None,
          staging_bucket: str | None, api_endpoint: str | None, dry_run: bool, output: str) -> None:  # fmt: skip
    """Build the image of trainer DIR: its sdist and requirements.txt on the base image, or DIR's own Dockerfile."""
    from tfjob import build_image
    from tfjob._internal import BuildProgress

    if output not in ("text", "json"):
        raise UsageError(f"--output {output!r} must be text or json")
    if base_image is not None:
        from tfjob._internal import check_image

        check_image(base_image, "base_image")
    cloud = None
    if dry_run and not cloud_build:
        raise UsageError(
            "--dry-run prints the Cloud Build request: add --cloud-build (a local build has no request to show; --no-push builds without pushing)"
        )
    if cloud_build:
        from tfjob._internal import cloud_build_target, load_settings

        settings = load_settings(project=project, staging_bucket=staging_bucket, api_endpoint=api_endpoint)
        cloud = cloud_build_target(settings.project, settings.staging_bucket, settings.api_endpoint, dry_run=dry_run,
                                   note=lambda line: click.echo(f"tfjob: {line}", err=True))  # fmt: skip
    built = build_image(
        directory, module=module, base=base_image, image_repo=image_repo, engine=container_engine, push=not (no_push or dry_run),
        include_secrets=include_secrets, requirements=requirements, progress=BuildProgress.auto(quiet=output == "json"), cloud=cloud,
    )  # fmt: skip
    if dry_run:
        click.echo(json.dumps(built.build_request, indent=2))
        return
    click.echo(json.dumps(built.to_dict(), indent=2) if output == "json" else built.reference)
