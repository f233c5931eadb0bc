"""A tfjob job as a Vertex AI Pipelines step with heterogeneous pools.

Google's ``CustomTrainingJobOp`` (google-cloud-pipeline-components, ``v1.custom_job``)
takes raw ``worker_pool_specs``, and ``create_custom_training_job_from_component`` makes
every pool the same: neither writes a chief, workers and parameter servers on different
machines. :func:`custom_training_job_args` gives that op the arguments of the very
``CustomJob`` ``tfjob submit --backend vertex`` creates — every pool's machine, replica
count and accelerator, the tfjob bootstrap as every pool's ``pythonModule`` (or an image's
entry point), the trainer's sdist and the bootstrap wheel staged in Cloud Storage, the
base output directory — so a Vertex AI pipeline runs the same job the CLI runs::

    from google_cloud_pipeline_components.v1.custom_job import CustomTrainingJobOp
    CustomTrainingJobOp(**custom_training_job_args(job))

google-cloud-pipeline-components 2.x requires google-cloud-aiplatform<2, which cannot be
installed beside tfjob's aiplatform 2.x: :mod:`tfjob.pipelines.components` has
``custom_training_job_op(job)``, a container component that launches the same payload with
the same launcher image as that op does, for environments without it.
"""

from __future__ import annotations

import json
from typing import Any

from ..errors import SpecError

#: The CustomJob fields CustomTrainingJobOp has no argument for: a job that needs one
#: cannot go through the op (and is refused, not silently changed).
_NOT_IN_THE_OP = {
    "enableDashboardAccess": "enable_dashboard_access",
    "scheduling.disableRetries": "disable_retries",
}


def custom_training_job_args(job: Any, *, stage: bool = True, credentials: Any = None) -> dict[str, Any]:
    """The keyword arguments of ``CustomTrainingJobOp`` that run ``job`` on Vertex AI.

    Args:
        job: a :class:`tfjob.Job` for ``backend="vertex"`` (project, region and staging
            bucket as for ``tfjob submit``).
        stage: upload the trainer's sdist and the bootstrap wheel to the staging bucket now
            (content-addressed: unchanged code uploads nothing). False: only name their
            URIs, as ``--dry-run`` does.
        credentials: Google credentials for the upload (default: those of the job's
            ``VertexBackend(credentials=…)``, else application-default credentials).

    Returns:
        ``display_name``, ``project``, ``location``, ``worker_pool_specs`` (one dict per pool,
        in Vertex AI's order: chief, workers, parameter servers, evaluators; ``{}`` for an
        unused pool), ``labels``, and where the job has them ``base_output_directory``,
        ``timeout``, ``restart_job_on_worker_restart``, ``strategy``, ``max_wait_duration``,
        ``service_account``, ``tensorboard``, ``enable_web_access``, ``network``,
        ``reserved_ip_ranges``, ``encryption_spec_key_name``, ``persistent_resource_id``,
        ``psc_interface_config``.

    Raises:
        SpecError: the job is not for Vertex AI, or needs a field the op cannot carry.
        UsageError: no project or staging bucket (with ``stage``).
    """
    from ..backends.vertex.submission import plan_submission

    if job.backend_name != "vertex":
        raise SpecError(
            f"custom_training_job_args needs a job for backend='vertex', not {job.backend_name!r}: "
            "Vertex AI Pipelines runs it as a Vertex AI CustomJob"
        )
    plan = plan_submission(job.spec, job.options, dry_run=not stage)
    if stage and plan.uploads:
        from ..backends.vertex.staging import stage_packages, storage_client

        creds = credentials if credentials is not None else getattr(job.backend, "credentials", None)
        stage_packages(plan.uploads, region=plan.region, client=storage_client(plan.project, creds))
    return op_arguments(plan.body, project=plan.project, location=plan.region)


def op_arguments(body: dict[str, Any], *, project: str | None, location: str) -> dict[str, Any]:
    """``CustomTrainingJobOp``'s arguments for a rendered ``CustomJob`` body (pure)."""
    spec = body["jobSpec"]
    scheduling = spec.get("scheduling", {})
    for path, keyword in _NOT_IN_THE_OP.items():
        head, _, tail = path.partition(".")
        if scheduling.get(tail) if tail else spec.get(head):
            raise SpecError(
                f"{keyword}=True has no CustomTrainingJobOp argument: leave it out for a pipeline step, "
                "or submit the job with tfjob submit --backend vertex"
            )
    args: dict[str, Any] = {
        "display_name": body["displayName"],
        "location": location,
        "worker_pool_specs": [dict(pool) for pool in spec["workerPoolSpecs"]],
        "labels": dict(body.get("labels", {})),
    }
    if project:
        args["project"] = project
    optional = {
        "base_output_directory": spec.get("baseOutputDirectory", {}).get("outputUriPrefix"),
        "timeout": scheduling.get("timeout"),
        "restart_job_on_worker_restart": scheduling.get("restartJobOnWorkerRestart"),
        "strategy": scheduling.get("strategy"),
        "max_wait_duration": scheduling.get("maxWaitDuration"),
        "service_account": spec.get("serviceAccount"),
        "tensorboard": spec.get("tensorboard"),
        "enable_web_access": spec.get("enableWebAccess"),
        "network": spec.get("network"),
        "reserved_ip_ranges": spec.get("reservedIpRanges"),
        "encryption_spec_key_name": body.get("encryptionSpec", {}).get("kmsKeyName"),
        "persistent_resource_id": spec.get("persistentResourceId"),
        "psc_interface_config": spec.get("pscInterfaceConfig"),
    }
    args.update({k: v for k, v in optional.items() if v not in (None, "", [], {})})
    return args


def custom_job_payload(args: dict[str, Any]) -> dict[str, Any]:
    """The ``CustomJob`` the op's launcher creates from its arguments (its ``--payload``),
    laid out as google-cloud-pipeline-components lays it out, defaults included: checked by
    hand against ``CustomTrainingJobOp(**args)`` of google-cloud-pipeline-components 2.22.0
    (compiled with KFP 2.17.3, its placeholders filled with the arguments: the same payload)."""
    return {
        "display_name": args["display_name"],
        "job_spec": {
            "worker_pool_specs": args["worker_pool_specs"],
            "scheduling": {
                "timeout": args.get("timeout", "604800s"),
                "restart_job_on_worker_restart": args.get("restart_job_on_worker_restart", False),
                "strategy": args.get("strategy", "STANDARD"),
                "max_wait_duration": args.get("max_wait_duration", "86400s"),
            },
            "service_account": args.get("service_account", ""),
            "tensorboard": args.get("tensorboard", ""),
            "enable_web_access": args.get("enable_web_access", False),
            "network": args.get("network", ""),
            "reserved_ip_ranges": args.get("reserved_ip_ranges", []),
            "base_output_directory": {"output_uri_prefix": args.get("base_output_directory", "")},
            # As the op: the pipeline's persistent resource, if it runs on one ('' otherwise).
            "persistent_resource_id": args.get("persistent_resource_id", "{{$.pipeline_persistent_resource_id}}"),
            "psc_interface_config": args.get("psc_interface_config", {}),
        },
        "labels": args.get("labels", {}),
        "encryption_spec": {"kms_key_name": args.get("encryption_spec_key_name", "")},
    }


def dumps(payload: dict[str, Any]) -> str:
    """The payload as the launcher's ``--payload`` argument."""
    return json.dumps(payload, sort_keys=True, separators=(",", ":"))
