"""One Vertex AI submission, worked out before anything is sent: no network, no credentials.

:func:`plan_submission` resolves the project, region and staging bucket, builds the
trainer sdist (to know its sha256 and so its content-addressed URI), picks the
prebuilt TensorFlow image and renders the ``CustomJob`` body. A dry run stops here
and prints the body; a real submission stages :attr:`Submission.uploads` and sends
:attr:`Submission.body` to :attr:`Submission.parent`.
"""

from __future__ import annotations

import dataclasses
from hashlib import sha256
import uuid

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...description.limits import read_bounded_text
from ...model import SubmitOptions, options_as
from .options import VertexOptions
from ...errors import PackagingError, SpecError, Word, subject_of
from .render import PACKAGE_PREFIX, PREBUILT_TF_VERSIONS, parse_tf_version, prebuilt_tf_version, render_custom_job
from ...description.spec import JobSpec, check_image
from ...lazy import LazyPattern

#: The region used when none is given (as the Vertex AI SDK does).
DEFAULT_REGION = "us-central1"
#: Shown instead of a staging bucket in a dry run that has none (never sent).
PLACEHOLDER_BUCKET = "YOUR_STAGING_BUCKET"


_REGION_RE = LazyPattern(r"^[a-z]+(-[a-z]+)+\d+\Z")
_BUCKET_RE = LazyPattern(r"^[a-z0-9][a-z0-9._-]{0,221}\Z")
_TF_DISTS = ("tensorflow", "tensorflow-cpu", "tensorflow-gpu", "tf-nightly")
_TF_REQ_RE = LazyPattern(r"""["'\s,\[]?(?:tensorflow|tensorflow-cpu|tensorflow-gpu)\s*(?:==|~=|>=|===)\s*(\d+\.\d+)""")


@dataclass(frozen=True)
class LocalPackage:
    """A local file to stage.

    Attributes:
        path: the file.
        sha256: digest of its bytes.
        uri: where it goes (``gs://BUCKET/tfjob/packages/<sha256>/<file>``).
        size: bytes.
    """

    path: Path
    sha256: str
    uri: str
    size: int


@dataclass
class Submission:
    """Everything one submission sends, worked out locally.

    Attributes:
        project: the project (None in a dry run without one).
        region: the region.
        parent: ``projects/P/locations/R`` (a placeholder project in a dry run).
        bucket: the staging bucket's name (None when nothing is staged).
        bucket_source: which setting gave the bucket (for messages).
        body: the ``CustomJob`` request body.
        uploads: the local packages to stage, trainer first.
        submission_id: the value of the ``tfjob-submission-id`` label.
        notes: things to tell the user on stderr (placeholders, excluded secrets, image choice).
        regions: the regions to try in turn (``--region A,B``: ``region`` first; on a quota
            refusal or a stockout the next is another attempt of the job).
        estimate: the job's price per hour (:class:`tfjob.pricing.Estimate`) in ``region``.
        candidates: what to try in turn, ``{"region", "label", "machine_specs"}`` each: every
            region with the job's own machines, then with each fallback's (:mod:`tfjob.description.fallbacks`).
    """

    project: str | None
    region: str
    parent: str
    bucket: str | None
    bucket_source: str | None
    body: dict[str, Any]
    uploads: list[LocalPackage] = field(default_factory=list)
    submission_id: str = ""
    notes: list[str] = field(default_factory=list)
    regions: tuple[str, ...] = ()
    estimate: Any = None
    candidates: list[dict[str, Any]] = field(default_factory=list)


def parse_gcs_uri(uri: str, field: str) -> tuple[str, str]:
    """``gs://bucket/some/path`` (or a bare bucket name) → ``("bucket", "some/path")``."""
    text = uri.strip()
    rest = text[5:] if text.startswith("gs://") else text
    bucket, _, path = rest.partition("/")
    if not _BUCKET_RE.match(bucket) or ".." in bucket:
        raise SpecError(
            **subject_of(field), value=uri, problem="is not a Cloud Storage location", fix="write gs://BUCKET or gs://BUCKET/PATH"
        )
    return bucket, path.strip("/")


def resolve_bucket(spec: JobSpec, options: VertexOptions) -> tuple[str, str, str] | None:
    """The staging bucket, path prefix and where they came from.

    ``--staging-bucket`` first, then the bucket of a ``gs://`` ``--job-dir``, then the
    configured one (``TFJOB_STAGING_BUCKET`` or ``staging_bucket`` in config.yaml), then
    the bucket of a trainer package given as ``gs://`` (where the bootstrap wheel goes).
    """
    if options.staging_bucket:
        bucket, prefix = parse_gcs_uri(options.staging_bucket, "staging_bucket")
        return bucket, prefix, "--staging-bucket"
    if spec.job_dir and spec.job_dir.startswith("gs://"):
        bucket, _ = parse_gcs_uri(spec.job_dir, "job_dir")
        return bucket, "", "--job-dir"
    if options.default_staging_bucket:
        bucket, prefix = parse_gcs_uri(options.default_staging_bucket, "staging_bucket (config)")
        return bucket, prefix, "config"
    if spec.package and spec.package.startswith("gs://"):
        # A trainer staged already: tfjob's bootstrap wheel goes to the same bucket.
        bucket, _ = parse_gcs_uri(spec.package, "PACKAGE_PATH")
        return bucket, "", "the trainer package's bucket"
    return None


def check_region(region: str) -> str:
    """The region if it looks like one (``us-central1``); else a SpecError."""
    if not _REGION_RE.match(region):
        raise SpecError(
            field="region", value=region, problem="is not a Google Cloud region", fix="write it like us-central1 or europe-west4"
        )
    return region


#: The largest project file (pyproject.toml, setup.py, setup.cfg, requirements.txt) read for its TensorFlow pin.
MAX_PROJECT_FILE_BYTES = 1024 * 1024


def declared_tf_version(source: Path) -> tuple[int, int] | None:
    """The TensorFlow version a trainer project pins or requires at least, if it says."""
    for name in ("pyproject.toml", "setup.py", "setup.cfg", "requirements.txt"):
        path = source / name
        if path.is_file():
            text = read_bounded_text(path, "the trainer's", MAX_PROJECT_FILE_BYTES, "a project file", errors="replace")
            m = _TF_REQ_RE.search(text)
            if m:
                return parse_tf_version(m.group(1))
    return None


def installed_tf_version() -> tuple[int, int] | None:
    """The installed TensorFlow's version, from its metadata (TensorFlow is not imported)."""
    import importlib.util

    from ...description.requirements import installed_version

    if importlib.util.find_spec("tensorflow") is None:
        return None
    for fallback in (False, True):  # the dist-info beside the module first, importlib.metadata only then
        for dist in _TF_DISTS:
            found = installed_version(dist, "tensorflow", fallback=fallback)
            if found is not None:
                return parse_tf_version(found)
    return None


def detect_tf_version(source: Path | None) -> tuple[tuple[int, int] | None, str]:
    """The trainer's TensorFlow version and where it was read (``declared`` / ``installed``)."""
    if source is not None and source.is_dir():
        declared = declared_tf_version(source)
        if declared is not None:
            return declared, "declared by the trainer"
    installed = installed_tf_version()
    return (installed, "installed here") if installed else (None, "not known")


def file_package(path: Path, base_uri: str) -> LocalPackage:
    """A built tarball or wheel to stage as it is."""
    from ...packaging import check_built_package

    path = check_built_package(str(path))
    data = path.read_bytes()
    sha = sha256(data).hexdigest()
    return LocalPackage(path, sha, f"{base_uri}/{sha}/{path.name}", len(data))


def bootstrap_package(base_uri: str, build_dir: Path | None = None) -> LocalPackage:
    """The ``tfjob-bootstrap`` wheel to stage (written to ``build_dir``, default ``$TFJOB_HOME/build``)."""
    from ...container.wheel import build

    if build_dir is None:
        from ...runtime.settings import tfjob_home

        build_dir = tfjob_home() / "build"
    try:
        path = Path(build(str(build_dir / "bootstrap")))
    except OSError as e:
        raise PackagingError(f"cannot write the tfjob-bootstrap wheel under {build_dir}: {e.strerror or e}") from None
    data = path.read_bytes()
    sha = sha256(data).hexdigest()
    return LocalPackage(path, sha, f"{base_uri}/{sha}/{path.name}", len(data))


def _needs_package(spec: JobSpec) -> bool:
    return any(not spec.image_for(p.role) for p in spec.pools)


def package_on_image(spec: JobSpec, options: VertexOptions) -> tuple[JobSpec, VertexOptions]:
    """PACKAGE_PATH with ``--image``: the package runs on that image, as on every backend.

    Kubernetes ships the package into the pods of the image and the local backend mounts
    it into its containers; on Vertex AI the same is a Python package job whose executor
    image is the user's (``pythonPackageSpec.executorImageUri``): Vertex AI pip-installs
    the packages into it and runs the bootstrap. Without a package, or with a pool that
    runs the package on a prebuilt image, nothing changes.

    Raises:
        SpecError: pools with different images (an executor image is one per package
            job here), or both --image and --executor-image.
    """
    if not spec.package or _needs_package(spec):
        return spec, options
    images = sorted({spec.image_for(p.role) or "" for p in spec.pools if p.replicas})
    if len(images) > 1:
        raise SpecError(
            problem=f"PACKAGE_PATH with different images per pool ({', '.join(images)}): on Vertex AI the package runs on one executor image",
            fix="give one {image}, or build the trainer into each image and leave out PACKAGE_PATH",
        )
    if options.executor_image and options.executor_image != images[0]:
        raise SpecError(
            field="image", problem="with PACKAGE_PATH is the executor image the package runs on", fix="leave out {executor_image}"
        )
    pools = tuple(dataclasses.replace(p, image=None) for p in spec.pools)
    return spec.replace(image=None, pools=pools), dataclasses.replace(options, executor_image=images[0])


def plan_submission(
    spec: JobSpec,
    options: SubmitOptions,
    *,
    dry_run: bool,
    submission_id: str | None = None,
    build_dir: Path | None = None,
) -> Submission:
    """Work out a submission: settings, packages (built here), image and request body.

    Args:
        spec: the job.
        options: project, region, staging bucket, executor image…
        dry_run: allow a missing project and bucket (placeholders, with a note).
        submission_id: the label value (default: a fresh random id).
        build_dir: where sdists are built (default ``$TFJOB_HOME/build``).

    Raises:
        UsageError: no project or staging bucket for a real submission.
        SpecError, PackagingError: the job or the trainer cannot be sent.
    """
    options = options_as(VertexOptions, options)
    spec, options, notes = _vertex_job(spec, options)
    regions, project = _location(spec, options, dry_run, notes)
    region = regions[0]
    parent = f"projects/{project or 'YOUR_PROJECT'}/locations/{region}"
    submission_id = submission_id or uuid.uuid4().hex
    staged = _Staged()
    if _needs_package(spec) or spec.packages:
        staged = _stage(spec, options, dry_run=dry_run, build_dir=build_dir, notes=notes)

    body = render_custom_job(
        spec, options, staged.uris, submission_id=submission_id, tf_version=staged.tf_version, bootstrap_uri=staged.bootstrap_uri
    )
    from ...pricing import check_max_cost, estimate, load_table

    price = estimate(body, region=region, table=load_table(options.price_table, regions=regions))
    check_max_cost(price, options.max_cost, spec.timeout)
    return Submission(
        project=project,
        region=region,
        parent=parent,
        bucket=None if staged.bucket == PLACEHOLDER_BUCKET else staged.bucket,
        bucket_source=staged.bucket_source,
        body=body,
        uploads=staged.uploads,
        submission_id=submission_id,
        notes=notes,
        regions=regions,
        estimate=price,
        candidates=_candidates(body, options, regions, notes),
    )


def _vertex_job(spec: JobSpec, options: VertexOptions) -> tuple[JobSpec, VertexOptions, list[str]]:
    """The job as Vertex AI runs it (Compute Engine machines, a package on an image), checked; the notes so far."""
    check_image(options.executor_image, "executor_image")
    from ...description.resources import on_compute_engine

    spec, notes = on_compute_engine(spec)
    spec, options = package_on_image(spec, options)
    if spec.script is not None and any(p.replicas and not spec.image_for(p.role) for p in spec.pools):
        raise SpecError(
            field="script",
            value=Word(spec.script),
            problem=": a Vertex AI package job runs a Python module of the package (pythonModule)",
            fix="give {module}, or run the script in an {image}",
        )
    return spec, options, notes


def _location(spec: JobSpec, options: VertexOptions, dry_run: bool, notes: list[str]) -> tuple[tuple[str, ...], str | None]:
    """The regions to try (the first one first) and the project (None: a dry run's placeholder)."""
    regions = candidate_regions(options.region or spec.region or DEFAULT_REGION)
    if not (options.region or spec.region):
        notes.append(f"region {DEFAULT_REGION} (the default; --region or GOOGLE_CLOUD_REGION to change it)")
    project = options.project
    if not project:
        if not dry_run:
            raise SpecError(
                field="project",
                problem="is needed for {backend=vertex}",
                fix="pass {project}, set GOOGLE_CLOUD_PROJECT, or put `project: ID` in $TFJOB_HOME/config.yaml",
            )
        notes.append("no project set: the request would go to projects/YOUR_PROJECT (--project to set it)")
    return regions, project


@dataclass
class _Staged:
    """What a submission uploads, and what its request names of it."""

    uploads: list[LocalPackage] = field(default_factory=list)
    uris: list[str] = field(default_factory=list)
    bootstrap_uri: str | None = None
    bucket: str | None = None
    bucket_source: str | None = None
    tf_version: tuple[int, int] | None = None


def _stage(spec: JobSpec, options: VertexOptions, *, dry_run: bool, build_dir: Path | None, notes: list[str]) -> _Staged:
    """The packages to upload (the trainer's, built here; the extra ones; the bootstrap's) to the staging bucket."""
    staged = _Staged()
    found = resolve_bucket(spec, options)
    if found is None and not dry_run:
        raise SpecError(
            problem="a staging bucket is needed to upload the trainer package",
            fix="pass {staging_bucket=gs://BUCKET}, a {job_dir=gs://BUCKET/…}, or put `staging_bucket: gs://BUCKET` in $TFJOB_HOME/config.yaml",
        )
    if found is None:
        staged.bucket, prefix, staged.bucket_source = PLACEHOLDER_BUCKET, "", None
        notes.append(f"no staging bucket set: package URIs show gs://{PLACEHOLDER_BUCKET} (--staging-bucket gs://BUCKET)")
    else:
        staged.bucket, prefix, staged.bucket_source = found
    base_uri = f"gs://{staged.bucket}/" + (f"{prefix}/" if prefix else "") + PACKAGE_PREFIX
    if _needs_package(spec):
        main, source_dir = _trainer_package(spec, base_uri, build_dir, notes, options.include_secrets)
        if main is not None:
            staged.uploads.append(main)
            staged.uris.append(main.uri)
        else:
            staged.uris.append(spec.package or "")
        staged.tf_version = _tf_version(spec, options, source_dir, notes)
    for extra in spec.packages:
        if extra.startswith("gs://"):
            staged.uris.append(extra)
        else:
            pkg = file_package(Path(extra).expanduser(), base_uri)
            staged.uploads.append(pkg)
            staged.uris.append(pkg.uri)
    if _needs_package(spec):
        # Package replicas start through the bootstrap, as local tasks do: stage its wheel too.
        bootstrap = bootstrap_package(base_uri, build_dir)
        staged.uploads.append(bootstrap)
        staged.bootstrap_uri = bootstrap.uri
    return staged


def _tf_version(spec: JobSpec, options: VertexOptions, source_dir: Path | None, notes: list[str]) -> tuple[int, int] | None:
    """The TensorFlow the trainer's prebuilt image runs: the trainer's, or ``runtime_version``'s."""
    tf_version, origin = detect_tf_version(source_dir)
    if spec.runtime_version:
        # gcloud's --runtime-version picks the TensorFlow of the prebuilt image.
        tf_version, origin = parse_tf_version(spec.runtime_version), f"--runtime-version {spec.runtime_version}"
        if tf_version is None:
            raise SpecError(field="runtime_version", value=spec.runtime_version, problem="is not a TensorFlow version like 2.15")
    if spec.python_version and spec.python_version not in ("3.10", "3"):
        raise SpecError(
            field="python_version",
            value=Word(spec.python_version),
            problem=": Vertex AI's prebuilt TensorFlow training images run Python 3.10",
            fix="give {executor_image} for another",
        )
    if not options.executor_image:
        chosen = prebuilt_tf_version(tf_version)
        if tf_version is not None and chosen != tf_version:
            notes.append(
                f"TensorFlow {tf_version[0]}.{tf_version[1]} ({origin}) has no Vertex AI prebuilt image; "
                f"using {chosen[0]}.{chosen[1]} (prebuilt: {', '.join(f'{a}.{b}' for a, b in PREBUILT_TF_VERSIONS)}); "
                "--executor-image chooses another"
            )
    return tf_version


def _candidates(body: dict[str, Any], options: VertexOptions, regions: tuple[str, ...], notes: list[str]) -> list[dict[str, Any]]:
    """Where (region) and on what (fallback machines) the job is tried in turn, on a quota refusal or a stockout."""
    from ...description.fallbacks import machine_specs, variants

    choices = [("", machine_specs(body) if options.fallbacks else {}), *variants(body, options.fallbacks)]
    candidates: list[dict[str, Any]] = [{"region": r, "label": label, "machine_specs": specs} for r in regions for label, specs in choices]
    if len(candidates) > 1:
        notes.append(
            "on a quota refusal or a stockout, tries in turn: "
            + "; ".join(f"{c['region']}{' with ' + c['label'] if c['label'] else ''}" for c in candidates)
        )
    return candidates


#: At most this many regions to fail over to (``--region A,B,…``).
MAX_REGIONS = 8


def candidate_regions(text: str) -> tuple[str, ...]:
    """``us-central1,us-east4`` → the regions to try in turn, each checked, none twice."""
    parts = [p.strip() for p in str(text).split(",")]
    if len(parts) > MAX_REGIONS:
        raise SpecError(field="region", value=text, problem=f"names {len(parts)} regions, more than {MAX_REGIONS}", fix="name fewer")
    if any(not p for p in parts):
        raise SpecError(field="region", value=text, problem="has an empty region", fix="write regions like us-central1,us-east4")
    if len(set(parts)) != len(parts):
        raise SpecError(field="region", value=text, problem="names a region twice", fix="name each once")
    return tuple(check_region(p) for p in parts)


def _trainer_package(
    spec: JobSpec, base_uri: str, build_dir: Path | None, notes: list[str], include_secrets: bool = False
) -> tuple[LocalPackage | None, Path | None]:
    """The trainer package to stage (None for a ``gs://`` one) and its source directory."""
    from ...packaging import build_sdist

    package = spec.package
    if not package:
        raise SpecError(problem="the trainer package is missing", fix="pass its directory as PACKAGE_PATH (or {image} for a container)")
    if package.startswith("gs://"):
        return None, None
    path = Path(package).expanduser()
    if path.is_file():
        return file_package(path, base_uri), None
    built = build_sdist(path, build_dir, module=spec.module, include_secrets=include_secrets, requirements=spec.requirements)
    notes.extend(built.warnings)
    if built.cached:
        notes.append(f"the trainer is unchanged since its last build: reused {built.filename} from the build cache")
    return LocalPackage(built.path, built.sha256, f"{base_uri}/{built.sha256}/{built.filename}", built.size), path.resolve()
