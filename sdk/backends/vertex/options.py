"""What ``--backend vertex`` takes beyond the job description (typed, with defaults)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from ..base import GoogleCloudOptions

_BOOT_DISKS = tuple(f"{role}_boot_disk_{what}" for role in ("chief", "worker", "ps", "evaluator") for what in ("type", "size"))


@dataclass
class VertexOptions(GoogleCloudOptions):
    """Options of a Vertex AI custom job (and of a hyperparameter tuning job's trials)."""

    #: A regional or test endpoint (``https://us-central1-aiplatform.googleapis.com``).
    api_endpoint: str | None = None
    #: The image a trainer package runs on, instead of the prebuilt TensorFlow image.
    executor_image: str | None = None
    #: Print the job's log lines inline while waiting.
    stream_logs: bool = False
    #: ``Never`` (``disableRetries``); without it Vertex AI restarts a replica whose VM was
    #: preempted or failed. It cannot say OnFailure, ExitCode, Always or a policy per role.
    restart_policy: Any = None
    #: Submit the same ``CustomJob`` again (``NAME-attempt2``…), up to this many times, when it
    #: ended preempted or with a retryable platform error (:func:`.follow.retryable_failure`).
    max_restarts: int | None = None

    #: The Vertex AI knobs of ``CustomJobSpec``, ``Scheduling`` and ``DiskSpec``.
    SPEC_KEYWORDS: ClassVar[frozenset[str]] = GoogleCloudOptions.SPEC_KEYWORDS | {
        "tensorboard", "experiment", "experiment_run", "restart_job_on_worker_restart", "spot", "flex_start", "scheduling_strategy", "max_wait",
        "disable_retries", "reservation", "persistent_resource_id", "kms_key", "reserved_ip_ranges",
        "network_attachment", "enable_dashboard_access", "boot_disk_type", "boot_disk_size", *_BOOT_DISKS,
    }  # fmt: skip
