"""JobSpec → the legacy AI Platform Training ``Job`` body (ml.googleapis.com v1). Pure.

AI Platform Training shut down on 2025-01-31; this rendering exists for migration and
review: ``tfjob render --backend ai-platform`` shows what an old
``gcloud ai-platform jobs submit training`` call would have sent for the same job, and
its output is a ``--config`` file tfjob reads back (:mod:`tfjob.config.job`).

The body is camelCase JSON as the API wrote it: int64 counts are strings
(``"workerCount": "9"``), durations are ``"7200s"``.
"""

from __future__ import annotations

import re
from pathlib import PurePath
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...errors import SpecError, Word
from ...model import options_as
from ..base import GoogleCloudOptions
from ...description.spec import BUILT_PACKAGE_SUFFIXES, ROLES, JobSpec, ScaleTier, check_cloud_labels
from ...cluster.dispatch import BOOTSTRAP  # a container given a module starts it through the bootstrap

if TYPE_CHECKING:
    from ...model import SubmitOptions

#: The name of each role in legacy field names (``masterType``, ``parameterServerCount``).
ROLE_PREFIX: dict[str, str] = {"chief": "master", "worker": "worker", "ps": "parameterServer", "evaluator": "evaluator"}
#: Compute Engine names that AI Platform spelt differently.
LEGACY_MACHINE_NAMES: dict[str, str] = {"cloud-tpu": "cloud_tpu"}
MAX_JOB_ID_LENGTH = 128


def build_job_id(name: str) -> str:
    """A legacy job id from a job name: letters, digits and ``_``, starting with a letter.

    ``census-ps-20261122-153000`` → ``census_ps_20261122_153000``.
    """
    job_id = re.sub(r"[^A-Za-z0-9_]", "_", name.strip())
    if not job_id[:1].isalpha():
        job_id = "job_" + job_id
    return job_id[:MAX_JOB_ID_LENGTH]


def format_duration(seconds: float) -> str:
    """Seconds as a Google ``Duration`` string: ``7200`` → ``"7200s"``, ``1.5`` → ``"1.5s"``."""
    if float(seconds).is_integer():
        return f"{int(seconds)}s"
    return f"{seconds:.9f}".rstrip("0") + "s"


def _staged_uri(path: str, root: str | None, job_id: str) -> str:
    """Where a local package would be uploaded, as gcloud did: ``{root}/{job_id}/packages/{file}``.

    With no Cloud Storage location known (no ``--staging-bucket``, no ``gs://`` job
    dir) the local path stays as given: the service is gone, so the body is for
    review, and it still reads back as a tfjob ``--config`` file.
    """
    if path.startswith("gs://") or root is None:
        return path
    name = PurePath(path.rstrip("/\\")).name or "trainer"
    if not name.endswith(BUILT_PACKAGE_SUFFIXES):
        name += ".tar.gz"  # a source directory is uploaded as the sdist built from it
    return f"{root.rstrip('/')}/{job_id}/packages/{name}"


def _staging_root(spec: JobSpec, options: GoogleCloudOptions) -> str | None:
    bucket = options.staging_bucket
    if bucket:
        return bucket if bucket.startswith("gs://") else f"gs://{bucket}"
    if spec.job_dir and spec.job_dir.startswith("gs://"):
        return spec.job_dir  # gcloud stages under --job-dir when no bucket is given
    return None


def _bootstrap_command(spec: JobSpec, options: GoogleCloudOptions) -> list[str]:
    """The bootstrap as a container's command; AI Platform passes ``--job-dir`` itself (``jobDir``)."""
    from ...cluster.dispatch import bootstrap_args, job_strategy

    strategy = job_strategy(spec, options.strategy)
    tf_config = options.tf_config or "platform"
    return [BOOTSTRAP, *bootstrap_args(spec.module, [], strategy=strategy, dialect="ai-platform", tf_config=tf_config, script=spec.script)]


def _check_expressible(spec: JobSpec) -> None:
    """Refuse what the legacy API has no field for, rather than dropping it silently."""
    vertex_only = {
        "{env}": bool(spec.env),
        "per-pool args or env (<role>_args, <role>_env)": spec.per_pool,
        "{command}": bool(spec.command),
    }
    for knob, used in vertex_only.items():
        if used:
            raise SpecError(
                problem=f"{knob} has no equivalent in legacy AI Platform Training", fix="leave it out, or render with {backend=vertex}"
            )
    if not spec.has_chief:
        raise SpecError(
            problem="AI Platform Training always runs a master, so a job without a chief ({chief=False}) cannot run there",
            fix="drop {chief=False}, or use {backend=kubeflow}",
        )


def render_training_input(spec: JobSpec, options: "SubmitOptions") -> dict[str, Any]:
    """The ``trainingInput`` of the legacy ``Job`` for ``spec`` (camelCase; pure).

    A predefined tier renders as that ``scaleTier`` alone; otherwise ``scaleTier`` is
    ``CUSTOM`` with every pool's machine type and count. Per-role ``*Config`` carries
    the accelerator and the container image.

    Args:
        spec: the job.
        options: ``region`` and ``staging_bucket`` are read (the region falls back to
            the spec's, from a config file).

    Raises:
        SpecError: the job uses something legacy AI Platform cannot express (env
            variables, per-pool args, a replaced entrypoint; Vertex AI's own knobs are
            the Vertex options, which this backend does not take).
    """
    from ...description.resources import on_compute_engine

    spec = on_compute_engine(spec)[0]  # a pool asking for resources runs on the machine that fits
    options = options_as(GoogleCloudOptions, options)
    _check_expressible(spec)
    job_id = build_job_id(spec.name)
    tier = spec.scale_tier
    predefined = tier is not None and tier is not ScaleTier.CUSTOM
    body: dict[str, Any] = {"scaleTier": tier.value if tier is not None and predefined else ScaleTier.CUSTOM.value}
    body.update(_pool_fields(spec, options, predefined))
    if spec.script is not None and not spec.image:
        raise SpecError(
            field="script",
            value=Word(spec.script),
            problem=": an AI Platform package job runs a Python module of the package",
            fix="give {module}, or run the script in an {image}",
        )
    if spec.module is not None and not spec.image:
        body.update(_package_fields(spec, options, job_id))
    elif spec.args:
        body["args"] = list(spec.args)
    region = options.region or spec.region
    if region:
        body["region"] = region
    optional = {
        "jobDir": spec.job_dir,
        "runtimeVersion": spec.runtime_version,
        "pythonVersion": spec.python_version,
    }
    body.update({key: value for key, value in optional.items() if value})
    if spec.timeout is not None:
        body["scheduling"] = {"maxRunningTime": format_duration(spec.timeout)}
    if options.network:
        body["network"] = options.network
    if spec.service_account:
        body["serviceAccount"] = spec.service_account
    if spec.use_chief is not None:
        body["useChiefInTfConfig"] = spec.use_chief
    if options.enable_web_access:
        body["enableWebAccess"] = True
    return body


def _pool_fields(spec: JobSpec, options: GoogleCloudOptions, predefined: bool) -> dict[str, Any]:
    """Each role's machine type and count (unless a predefined tier says them) and its ``*Config``."""
    body: dict[str, Any] = {}
    for role in ROLES:
        pool = spec.pool(role)
        if pool is None:
            continue
        prefix = ROLE_PREFIX[role]
        if not predefined:
            body[f"{prefix}Type"] = LEGACY_MACHINE_NAMES.get(pool.machine.type, pool.machine.type)
            if role != "chief":
                body[f"{prefix}Count"] = str(pool.replicas)
        config: dict[str, Any] = {}
        acc = pool.machine.accelerator
        if acc is not None and not predefined:
            config["acceleratorConfig"] = {"count": str(acc.count), "type": acc.type}
        image = spec.image_for(role)
        if image:
            config["imageUri"] = image
            if spec.module or spec.script:
                config["containerCommand"] = _bootstrap_command(spec, options)
        if config:
            body[f"{prefix}Config"] = config
    return body


def _package_fields(spec: JobSpec, options: GoogleCloudOptions, job_id: str) -> dict[str, Any]:
    """A package job's ``packageUris`` (the trainer's, the extra ones, the bootstrap's), module and args."""
    body: dict[str, Any] = {}
    if spec.package and "://" not in spec.package and Path(spec.package).expanduser().is_dir():
        from ...packaging import check_trainer

        check_trainer(Path(spec.package).expanduser().resolve(), spec.module)  # as gcloud's packaging would
    from ...container.wheel import wheel_name
    from ...cluster.dispatch import BOOTSTRAP_MODULE, package_args

    root = _staging_root(spec, options)
    uris = [_staged_uri(spec.package, root, job_id)] if spec.package else []
    uris += [_staged_uri(p, root, job_id) for p in spec.packages]
    # Every replica starts through the bootstrap, as a local task does; AI Platform
    # appends --job-dir (jobDir) to the args itself, so the bootstrap is not given it.
    body["packageUris"] = [*uris, _staged_uri(wheel_name(), root, job_id)]
    body["pythonModule"] = BOOTSTRAP_MODULE
    body["args"] = package_args(spec, "chief", options)
    return body


def render_job(spec: JobSpec, options: "SubmitOptions") -> dict[str, Any]:
    """The whole legacy ``Job`` body: ``{"jobId", "trainingInput", "labels"}`` (pure).

    ``labels`` is left out when the job has none, as the API's JSON does.
    """
    options = options_as(GoogleCloudOptions, options)
    body: dict[str, Any] = {"jobId": build_job_id(spec.name), "trainingInput": render_training_input(spec, options)}
    if spec.labels:
        check_cloud_labels(spec, "AI Platform")
        body["labels"] = dict(spec.labels)
    return body
