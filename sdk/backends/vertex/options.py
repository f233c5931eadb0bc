"""What ``--backend vertex`` takes beyond the job description: its knobs, typed, with defaults."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from ...knobs import Knob, knob
from ..base import GoogleCloudOptions

_ROLES = {"chief": "the chief's", "worker": "the workers'", "ps": "the parameter servers'", "evaluator": "the evaluators'"}
_BOOT_DISKS = tuple(
    Knob(f"{role}_boot_disk_{what}", f"{whose} boot disk {'type' if what == 'type' else 'size in GB'}.", "text" if what == "type" else "int",
         config=f"workerPoolSpecs[{i}].diskSpec.bootDisk{'Type' if what == 'type' else 'SizeGb'}", cli=False)
    for i, (role, whose) in enumerate(_ROLES.items()) for what in ("type", "size")
)  # fmt: skip


@dataclass
class VertexOptions(GoogleCloudOptions):
    """Options of a Vertex AI custom job (and of a hyperparameter tuning job's trials)."""

    #: A regional or test endpoint (``https://us-central1-aiplatform.googleapis.com``).
    api_endpoint: str | None = knob("Vertex AI endpoint (default {region}-aiplatform.googleapis.com).")
    #: The image a trainer package runs on, instead of the prebuilt TensorFlow image.
    executor_image: str | None = knob("Vertex prebuilt training image for a Python package.", config="pythonPackageSpec.executorImageUri")
    #: Print the job's log lines inline while waiting.
    stream_logs: bool = knob(
        "Print the job's log lines while waiting, as `tfjob logs --follow` does (local tasks always stream).", default=False, tune=False
    )
    #: ``Never`` (``disableRetries``); without it Vertex AI restarts a replica whose VM was
    #: preempted or failed. It cannot say OnFailure, ExitCode, Always or a policy per role.
    restart_policy: Any = knob(
        "Never (scheduling.disableRetries); without it a replica whose VM was preempted or failed is restarted.", kind="list", tune=False
    )
    #: Submit the same ``CustomJob`` again (``NAME-attempt2``…), up to this many times, when it
    #: ended preempted or with a retryable platform error (:func:`.follow.retryable_failure`).
    max_restarts: int | None = knob("Submit the job again when it ended preempted or with a retryable platform error.", tune=False)

    #: The Vertex AI knobs of ``CustomJobSpec``, ``Scheduling`` and ``DiskSpec``.
    SPEC_KNOBS: ClassVar[tuple[Knob, ...]] = (
        *GoogleCloudOptions.SPEC_KNOBS,
        Knob("restart_job_on_worker_restart", "Restart all tasks when a worker restarts.", "switch",
             ("--restart-job-on-worker-restart/--no-restart-job-on-worker-restart",), "scheduling.restartJobOnWorkerRestart"),
        Knob("tensorboard", "Vertex TensorBoard resource to stream to.", config="tensorboard"),
        Knob("experiment", "Vertex AI Experiment to log the job to (a name, or its context resource name).", config="experiment"),
        Knob("experiment_run", "Run of --experiment the job is (a name, or its context resource name).", config="experimentRun"),
        Knob("spot", "Run on Spot VMs (scheduling strategy SPOT): cheaper, may be preempted.", "flag", config="scheduling.strategy"),
        Knob("flex_start", "Flex-start (Dynamic Workload Scheduler): wait for scarce GPUs/TPUs to be provisioned together.", "flag",
             config="scheduling.strategy"),
        Knob("scheduling_strategy", "STANDARD, SPOT or FLEX_START, named directly.", config="scheduling.strategy", cli=False),
        Knob("max_wait", "How long a --flex-start job waits for its machines (2h, 30m, seconds).", "duration", config="scheduling.maxWaitDuration"),
        Knob("disable_retries", "Fail at the first error instead of retrying the job on platform errors.", "flag", config="scheduling.disableRetries"),
        Knob("reservation", "Run on reserved machines: any, none, or projects/P/zones/Z/reservations/NAME.", config="machineSpec.reservationAffinity"),
        Knob("persistent_resource_id", "Run on this persistent resource's machines (its id).", flags=("--persistent-resource", "--persistent-resource-id"),
             config="persistentResourceId"),
        Knob("kms_key", "Encrypt the job with this Cloud KMS key (projects/P/locations/REGION/keyRings/R/cryptoKeys/K).", config="encryptionSpec.kmsKeyName"),
        Knob("reserved_ip_ranges", "A reserved IP range of the --network to place the job in (repeat).", "list", ("--reserved-ip-range",), "reservedIpRanges"),
        Knob("network_attachment", "Private Service Connect interface: projects/P/regions/R/networkAttachments/NAME.",
             config="pscInterfaceConfig.networkAttachment"),
        Knob("enable_dashboard_access", "Let the training dashboard reach the tasks.", "flag", config="enableDashboardAccess"),
        Knob("boot_disk_type", "Every pool's boot disk: pd-ssd, pd-standard or hyperdisk-balanced.", config="diskSpec.bootDiskType"),
        Knob("boot_disk_size", "Every pool's boot disk size in GB (100-64000; default 100).", "int", config="diskSpec.bootDiskSizeGb"),
        *_BOOT_DISKS,
    )  # fmt: skip
    SPEC_KEYWORDS: ClassVar[frozenset[str]] = frozenset(k.name for k in SPEC_KNOBS)
