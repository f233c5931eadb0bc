"""JobSpec → Vertex AI ``CustomJob`` request body (REST, camelCase): pure, no Google imports.

The body is what ``projects.locations.customJobs.create`` takes, written the way the
API's own JSON mapping writes it, so that ``json_format.ParseDict`` into
``aiplatform_v1.types.CustomJob`` accepts it strictly and ``MessageToDict`` gives the
same dict back: int64 fields (``replicaCount``) are strings, defaults (``false``,
``""``, ``0``) are left out, durations are ``"7200s"``.

Worker pools sit at fixed positions: 0 chief (one replica), 1 workers, 2 parameter
servers, 3 evaluators; an unused pool before a used one is ``{}``, trailing ones are
left out. A pool runs either the trainer package on a prebuilt TensorFlow image
(``pythonPackageSpec``) or a container (``containerSpec``). Either way a replica given
a module starts through the tfjob bootstrap, as a local task does: a package pool's
``pythonModule`` is ``tfjob.container.bootstrap`` (the ``tfjob-bootstrap`` wheel is
staged after the trainer's packages) with ``--module M … --`` ahead of the trainer's
args; a container runs ``tfjob-bootstrap``, which the tfjob base image has.
"""

from __future__ import annotations

import functools

import re
from typing import Any, Sequence

from ...model import SubmitOptions, options_as
from .options import VertexOptions
from ...errors import SpecError, Word
from ...description.spec import ROLES, JobSpec, Pool, check_cloud_labels
from ...cluster.dispatch import BOOTSTRAP_MODULE, bootstrap_command, package_args, trainer_args
from ...config.vertex import RESERVATION_KEY
from ...lazy import LazyPattern

#: The label every job tfjob submits carries (value: tfjob's version), for `tfjob list`.
TFJOB_LABEL = "tfjob"
#: The label that makes a submission findable again (a create whose answer was lost).
SUBMISSION_LABEL = "tfjob-submission-id"

#: TensorFlow versions with a Vertex AI prebuilt training image (Python 3.10), oldest first.
PREBUILT_TF_VERSIONS: tuple[tuple[int, int], ...] = ((2, 11), (2, 12), (2, 13), (2, 14), (2, 15), (2, 16), (2, 17))
#: Used when the TensorFlow version is not known.
DEFAULT_TF_VERSION = PREBUILT_TF_VERSIONS[-1]
_REGISTRY = "{area}-docker.pkg.dev/vertex-ai/training/tf-{kind}.{major}-{minor}.py310:latest"

#: Where packages go in the staging bucket: ``<prefix>/<sha256>/<file>``.
PACKAGE_PREFIX = "tfjob/packages"

_GCS_RE = LazyPattern(r"^gs://[a-z0-9][a-z0-9._-]{0,221}(/.*)?\Z")
_TENSORBOARD_RE = LazyPattern(r"^projects/[^/]+/locations/[^/]+/tensorboards/[^/]+\Z")
#: An experiment's (or a run's) context, as CustomJobSpec.experiment / experiment_run name it.
_CONTEXT_RE = LazyPattern(r"^projects/[^/]+/locations/[^/]+/metadataStores/[^/]+/contexts/[a-z0-9][a-z0-9-]{0,127}\Z")
#: What Vertex AI Experiments takes as an experiment or run name.
_EXPERIMENT_NAME_RE = LazyPattern(r"^[a-z0-9][a-z0-9-]{0,127}\Z")


def experiment_contexts(options: VertexOptions) -> tuple[str | None, str | None]:
    """``(experiment, experiment_run)`` as the resource names CustomJobSpec takes: a bare name
    is the context in the project's and region's default metadata store (a run's context is
    named EXPERIMENT-RUN, as the Vertex AI SDK names it).

    Raises:
        SpecError: a name Vertex AI would refuse, a run without an experiment, or a bare
            name without a project and region to place it in.
    """
    project, region = options.project, options.region
    given, given_run = options.experiment, options.experiment_run
    if given_run and not given:
        raise SpecError(field="experiment_run", problem="needs {experiment}: a run belongs to an experiment")

    def context(field: str, value: str, name: str) -> str:
        if "/" in value:
            if not _CONTEXT_RE.match(value):
                raise SpecError(
                    field=field,
                    value=value,
                    problem="is not an experiment context",
                    fix="write a name (lower-case letters, digits, '-') or projects/PROJECT/locations/REGION/metadataStores/default/contexts/NAME",
                )
            return value
        if not _EXPERIMENT_NAME_RE.match(value):
            raise SpecError(
                field=field,
                value=value,
                problem=": Vertex AI Experiments take lower-case letters, digits and '-' (at most 128), starting with a letter or digit",
            )
        if not project or not region:
            raise SpecError(
                field=field, value=value, problem="needs {project} and {region} to name its context (or give the full resource name)"
            )
        return f"projects/{project}/locations/{region}/metadataStores/default/contexts/{name}"

    experiment = context("experiment", given, given) if given else None
    run = None
    if given_run:
        base = experiment.rsplit("/", 1)[1] if experiment else ""
        run = context("experiment_run", given_run, f"{base}-{given_run}")
        if "/" not in given_run and len(run.rsplit("/", 1)[1]) > 128:
            raise SpecError(
                field="experiment",
                value=given,
                problem=f"with {{experiment_run}} {given_run!r} names a run context longer than 128 characters",
            )
    return experiment, run


def registry_area(region: str | None) -> str:
    """``us`` / ``europe`` / ``asia``: the Artifact Registry multi-region closest to ``region``."""
    region = (region or "").lower()
    if region.startswith("europe") or region.startswith("me-") or region.startswith("africa"):
        return "europe"
    if region.startswith("asia") or region.startswith("australia"):
        return "asia"
    return "us"


def parse_tf_version(text: str | None) -> tuple[int, int] | None:
    """``"2.15.1"`` → ``(2, 15)``; None when it is not a version."""
    m = re.match(r"^\s*(\d+)\.(\d+)", text or "")
    return (int(m.group(1)), int(m.group(2))) if m else None


def prebuilt_tf_version(version: tuple[int, int] | None) -> tuple[int, int]:
    """The prebuilt image version for a TensorFlow version: the same, else the closest one.

    A version newer than every prebuilt image gets the newest; an older one the oldest.
    """
    if version is None:
        return DEFAULT_TF_VERSION
    if version in PREBUILT_TF_VERSIONS:
        return version
    older = [v for v in PREBUILT_TF_VERSIONS if v <= version]
    return older[-1] if older else PREBUILT_TF_VERSIONS[0]


def prebuilt_image(version: tuple[int, int] | None, gpu: bool, region: str | None = None) -> str:
    """The Vertex AI prebuilt TensorFlow training image for ``version``.

    Args:
        version: the trainer's TensorFlow (major, minor); None for the newest image.
        gpu: a GPU image (CUDA) rather than a CPU one.
        region: picks the us / europe / asia copy of the image.
    """
    major, minor = prebuilt_tf_version(version)
    return _REGISTRY.format(area=registry_area(region), kind="gpu" if gpu else "cpu", major=major, minor=minor)


def render_duration(seconds: float) -> str:
    """Seconds → the JSON form of ``google.protobuf.Duration`` (``"90s"``, ``"1.500s"``)."""
    whole = int(seconds)
    nanos = round((seconds - whole) * 1e9)
    if nanos >= 1_000_000_000:
        whole, nanos = whole + 1, nanos - 1_000_000_000
    if nanos == 0:
        return f"{whole}s"
    if nanos % 1_000_000 == 0:
        return f"{whole}.{nanos // 1_000_000:03d}s"
    if nanos % 1000 == 0:
        return f"{whole}.{nanos // 1000:06d}s"
    return f"{whole}.{nanos:09d}s"


def _env(env: dict[str, str]) -> list[dict[str, str]]:
    # An empty value is the proto default: left out, as the API's JSON mapping does.
    return [{"name": k, "value": v} if v else {"name": k} for k, v in sorted(env.items())]


def _machine(pool: Pool, reservation: str | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"machineType": pool.machine.type}
    acc = pool.machine.accelerator
    if acc is not None:
        spec["acceleratorType"] = acc.type
        spec["acceleratorCount"] = acc.count
    if pool.machine.topology is not None:
        spec["tpuTopology"] = pool.machine.topology
    if reservation == "any":
        spec["reservationAffinity"] = {"reservationAffinityType": "ANY_RESERVATION"}
    elif reservation == "none":
        spec["reservationAffinity"] = {"reservationAffinityType": "NO_RESERVATION"}
    elif reservation is not None:
        spec["reservationAffinity"] = {
            "reservationAffinityType": "SPECIFIC_RESERVATION", "key": RESERVATION_KEY, "values": [reservation],
        }  # fmt: skip
    return spec


def _disk(pool: Pool, options: VertexOptions) -> dict[str, Any] | None:
    disk: dict[str, Any] = {}
    disk_type, size_gb = options.boot_disk(pool.role)
    if disk_type is not None:
        disk["bootDiskType"] = disk_type
    if size_gb is not None:
        disk["bootDiskSizeGb"] = size_gb
    return disk or None


def _has_gpu(pool: Pool) -> bool:
    acc = pool.machine.accelerator
    return acc is not None and acc.type.startswith("NVIDIA_")


def default_bootstrap_uri(package_uris: Sequence[str]) -> str:
    """The ``tfjob-bootstrap`` wheel's staged place: ``gs://BUCKET/tfjob/packages/<sha256>/<wheel>``.

    The bucket is the first package's; the digest names these exact bytes, so an
    unchanged tfjob is staged once.
    """
    name, digest = _bootstrap_wheel()
    bucket = package_uris[0][5:].split("/", 1)[0] if package_uris and package_uris[0].startswith("gs://") else "BUCKET"
    return f"gs://{bucket}/{PACKAGE_PREFIX}/{digest}/{name}"


@functools.lru_cache(maxsize=1)
def _bootstrap_wheel() -> tuple[str, str]:
    """The bootstrap wheel's name and sha256, built once per process (10 ms: not per render)."""
    import hashlib

    from ...container.wheel import build_bytes

    name, data = build_bytes()
    return name, hashlib.sha256(data).hexdigest()


def _pool_body(
    spec: JobSpec,
    pool: Pool,
    package_uris: Sequence[str],
    executor_image: str | None,
    tf_version: tuple[int, int] | None,
    region: str | None,
    options: VertexOptions,
    bootstrap_uri: str | None = None,
) -> dict[str, Any]:
    body: dict[str, Any] = {"machineSpec": _machine(pool, options.reservation), "replicaCount": str(pool.replicas)}
    disk = _disk(pool, options)
    if disk is not None:
        body["diskSpec"] = disk
    args = trainer_args(spec, pool.role)
    env = spec.env_for(pool.role)
    image = spec.image_for(pool.role)
    if image:
        container: dict[str, Any] = {"imageUri": image}
        if spec.module or spec.script:
            container["command"] = bootstrap_command(spec, options, package_uris)
        elif spec.command:
            container["command"] = list(spec.command)
        elif package_uris:
            raise SpecError(
                field="packages",
                problem="with an {image} that keeps its own entrypoint cannot be installed by tfjob",
                fix="give {module} (tfjob-bootstrap installs them first), or build them into the image",
            )
        if args:
            container["args"] = args
        if env:
            container["env"] = _env(env)
        body["containerSpec"] = container
    else:
        if not package_uris:
            raise SpecError(
                problem=f"the {pool.role} pool runs the trainer package, but no package URI was given",
                fix="pass the trainer directory (PACKAGE_PATH) or {image}",
            )
        if spec.script is not None:
            raise SpecError(
                field="script",
                value=Word(spec.script),
                problem=": a Vertex AI package job runs a Python module of the package (pythonModule)",
                fix="give {module}, or run the script in an {image}",
            )
        package: dict[str, Any] = {
            "executorImageUri": executor_image or prebuilt_image(tf_version, _has_gpu(pool), region),
            "packageUris": [*package_uris, bootstrap_uri or default_bootstrap_uri(package_uris)],
            "pythonModule": BOOTSTRAP_MODULE,
        }
        args = package_args(spec, pool.role, options)
        package["args"] = args
        if env:
            package["env"] = _env(env)
        body["pythonPackageSpec"] = package
    return body


def render_labels(spec: JobSpec, submission_id: str | None, version: str) -> dict[str, str]:
    """The job's labels plus tfjob's own (``tfjob``, ``tfjob-submission-id``).

    Raises:
        SpecError: a prefixed Kubernetes label key, which Vertex AI does not take.
    """
    check_cloud_labels(spec, "Vertex AI")
    labels = dict(spec.labels)
    labels[TFJOB_LABEL] = re.sub(r"[^a-z0-9_-]", "-", version.lower())
    if submission_id:
        labels[SUBMISSION_LABEL] = submission_id
    return dict(sorted(labels.items()))


def check_vertex_spec(spec: JobSpec, options: VertexOptions | None = None) -> None:
    """Raise SpecError for what Vertex AI would refuse about this job."""
    options = options_as(VertexOptions, options)
    if spec.job_dir and not _GCS_RE.match(spec.job_dir):
        raise SpecError(
            field="job_dir", value=spec.job_dir, problem=": Vertex AI writes its output to Cloud Storage", fix="give gs://BUCKET/PATH"
        )
    if options.tensorboard:
        if not _TENSORBOARD_RE.match(options.tensorboard):
            raise SpecError(
                field="tensorboard",
                value=options.tensorboard,
                problem="is not a TensorBoard resource name",
                fix="write projects/PROJECT/locations/REGION/tensorboards/ID",
            )
        if not spec.job_dir or not spec.service_account:
            raise SpecError(
                field="tensorboard", problem="needs {job_dir=gs://…} and {service_account}: Vertex AI streams the logs it writes there"
            )
    for role in options.own_disk_roles():
        if spec.pool(role) is None:
            raise SpecError(what=f"{role}_boot_disk_*", problem=f"is set but the job has no {role} pool")
    if spec.count("chief") != 1:
        raise SpecError(
            problem="Vertex AI always runs a chief in worker pool 0, so a job without one ({chief=False}) cannot run there",
            fix="drop {chief=False}, or use {backend=kubeflow}",
        )


def check_regional(options: VertexOptions) -> None:
    """A customer-managed key and a network attachment must be in the job's region."""
    region = options.region
    for field, name in (("kms_key", options.kms_key), ("network_attachment", options.network_attachment)):
        where = name.split("/")[3] if name else None
        if where and region and where != region:
            raise SpecError(field=field, problem=f"is in {where}, but the job runs in {region}: Vertex AI needs it in the job's region")


def vertex_restart_policy(value: Any, options: VertexOptions | None = None) -> str | None:
    """``--restart-policy`` as Vertex AI can say it: None (its own: a replica whose VM was
    preempted or failed is restarted), or ``Never`` (``scheduling.disableRetries``).

    Raises:
        SpecError: a policy Vertex AI cannot express, in one line.
    """
    if value is None or value == () or value == []:
        return None  # none asked for (the restarts module is read only when one is)
    from ...description.restarts import parse_policies

    policies = parse_policies(value)
    if not policies:
        return None
    if set(policies) != {"default"}:
        raise SpecError(
            field="restart_policy",
            value=Word("ROLE=POLICY"),
            problem=": Vertex AI has one retry setting for the whole job",
            fix="give {restart_policy=Never}, or none (a preempted replica is restarted)",
        )
    policy = policies["default"]
    if policy != "Never":
        raise SpecError(
            field="restart_policy",
            value=Word(policy),
            problem=": Vertex AI cannot restart a replica by its exit code; it restarts a replica whose VM was preempted or failed "
            "(the default, no {restart_policy}) or nothing ({restart_policy=Never})",
            fix="{restart_job_on_worker_restart=True} restarts the whole job with it",
        )
    if options is not None and options.restart_job_on_worker_restart:
        raise SpecError(
            field="restart_policy",
            value=Word("Never"),
            problem="turns Vertex AI's retries off (disableRetries), which {restart_job_on_worker_restart=True} needs",
            fix="give one",
        )
    return policy


def render_custom_job(
    spec: JobSpec,
    options: SubmitOptions | None = None,
    package_uris: Sequence[str] = (),
    *,
    submission_id: str | None = None,
    tf_version: tuple[int, int] | None = None,
    version: str | None = None,
    bootstrap_uri: str | None = None,
) -> dict[str, Any]:
    """The Vertex AI ``CustomJob`` body for ``spec``.

    Args:
        spec: the job.
        options: ``executor_image`` overrides the prebuilt image; ``region`` picks
            the image's registry copy.
        package_uris: ``gs://`` URIs of the trainer sdist then any extra packages.
        submission_id: the value of the ``tfjob-submission-id`` label.
        tf_version: the trainer's TensorFlow (major, minor), to choose the image.
        version: tfjob's version for the ``tfjob`` label (default: this one).
        bootstrap_uri: where the ``tfjob-bootstrap`` wheel is staged, which package
            pools install after the trainer's packages (default: its content-addressed
            place in the first package's bucket, :func:`default_bootstrap_uri`).

    Raises:
        SpecError: the job cannot run on Vertex AI as described.
    """
    from ..._version import __version__
    from ...description.resources import on_compute_engine

    spec = on_compute_engine(spec)[0]  # a pool asking for resources runs on the machine that fits
    options = options_as(VertexOptions, options)
    check_vertex_spec(spec, options)
    check_regional(options)
    pools: list[dict[str, Any]] = []
    used = [ROLES.index(p.role) for p in spec.pools]
    for position in range(max(used) + 1):
        pool = spec.pool(ROLES[position])
        if pool is None:
            pools.append({})  # the pool's position carries its role: keep the gap
            continue
        pools.append(_pool_body(spec, pool, package_uris, options.executor_image, tf_version, options.region, options, bootstrap_uri))

    job_spec: dict[str, Any] = {"workerPoolSpecs": pools}
    scheduling = _scheduling(spec, options)
    if scheduling:
        job_spec["scheduling"] = scheduling
    job_spec.update(_job_settings(spec, options))
    body: dict[str, Any] = {
        "displayName": spec.name,
        "jobSpec": job_spec,
        "labels": render_labels(spec, submission_id, version or __version__),
    }
    if options.kms_key:
        body["encryptionSpec"] = {"kmsKeyName": options.kms_key}
    return body


def _scheduling(spec: JobSpec, options: VertexOptions) -> dict[str, Any]:
    """The ``CustomJobSpec``'s ``scheduling`` (empty when nothing is asked)."""
    scheduling: dict[str, Any] = {}
    if spec.timeout:
        scheduling["timeout"] = render_duration(spec.timeout)
    if options.restart_job_on_worker_restart:
        scheduling["restartJobOnWorkerRestart"] = True
    if options.scheduling_strategy is not None:
        scheduling["strategy"] = options.scheduling_strategy
    if options.max_wait is not None:
        scheduling["maxWaitDuration"] = render_duration(options.max_wait)
    if options.disable_retries or vertex_restart_policy(options.restart_policy, options) == "Never":
        scheduling["disableRetries"] = True
    return scheduling


def _job_settings(spec: JobSpec, options: VertexOptions) -> dict[str, Any]:
    """The ``CustomJobSpec``'s other fields: where it runs, its network, outputs, experiment and access."""
    job_spec: dict[str, Any] = {}
    if options.persistent_resource_id:
        job_spec["persistentResourceId"] = options.persistent_resource_id
    if spec.service_account:
        job_spec["serviceAccount"] = spec.service_account
    if options.network:
        job_spec["network"] = options.network
    if options.reserved_ip_ranges:
        job_spec["reservedIpRanges"] = list(options.reserved_ip_ranges)
    if options.network_attachment:
        job_spec["pscInterfaceConfig"] = {"networkAttachment": options.network_attachment}
    if spec.job_dir:
        job_spec["baseOutputDirectory"] = {"outputUriPrefix": spec.job_dir}
    if options.tensorboard:
        job_spec["tensorboard"] = options.tensorboard
    experiment, experiment_run = experiment_contexts(options)
    if experiment:
        job_spec["experiment"] = experiment
    if experiment_run:
        job_spec["experimentRun"] = experiment_run
    if options.enable_web_access:
        job_spec["enableWebAccess"] = True
    if options.enable_dashboard_access:
        job_spec["enableDashboardAccess"] = True
    if options.protected_artifact_location_id:
        job_spec["protectedArtifactLocationId"] = options.protected_artifact_location_id
    return job_spec
