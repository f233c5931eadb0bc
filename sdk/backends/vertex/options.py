"""What ``--backend vertex`` takes beyond the job description: its knobs, typed, with defaults,
each declared once (:func:`tfjob.description.knobs.knob`) and checked here as Vertex AI would check it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence, TypedDict

from ...errors import SpecError
from ...description.knobs import knob
from ...lazy import LazyPattern
from ..base import GoogleCloudOptions


class _Tune(TypedDict):
    tune: bool


_NOT_TUNED: _Tune = {"tune": False}


@dataclass(kw_only=True, init=False, repr=False, eq=False)  # declarations only: what derives from it is made
class VertexKnobs:
    """Every knob only Vertex AI takes, declared once: the fields of both the :class:`VertexOptions`
    the backend reads and the :class:`tfjob.Vertex` settings users write (which adds the
    project, region, bucket and network both Google services take). A knob added here is a
    ``Vertex(...)`` field, a flag, a keyword, and a key of a ``--config`` CustomJobSpec (its
    ``config`` spelling) at once; the render reads it from the options."""

    #: A regional or test endpoint (``https://us-central1-aiplatform.googleapis.com``).
    api_endpoint: str | None = knob("Vertex AI endpoint (default {region}-aiplatform.googleapis.com).", lands="settings.api_endpoint")
    #: The image a trainer package runs on, instead of the prebuilt TensorFlow image.
    executor_image: str | None = knob("Vertex prebuilt training image for a Python package.", config="pythonPackageSpec.executorImageUri")
    #: Print the job's log lines inline while waiting.
    stream_logs: bool = knob(
        "Print the job's log lines while waiting, as `tfjob logs --follow` does (local tasks always stream).", default=False, **_NOT_TUNED
    )
    #: ``Never`` (``disableRetries``); without it Vertex AI restarts a replica whose VM was
    #: preempted or failed. It cannot say OnFailure, ExitCode, Always or a policy per role.
    restart_policy: str | Sequence[str] | None = knob(
        "Never (scheduling.disableRetries); without it a replica whose VM was preempted or failed is restarted.", kind="list", **_NOT_TUNED
    )
    #: Submit the same ``CustomJob`` again (``NAME-attempt2``…), up to this many times, when it
    #: ended preempted or with a retryable platform error (:func:`.follow.retryable_failure`).
    max_restarts: int | None = knob(
        "Submit the job again (NAME-attempt2…), up to N times, when it ended preempted or with a retryable platform error; "
        "the trainer's own failure is not retried.", **_NOT_TUNED,
    )  # fmt: skip
    #: Restart every replica when one worker restarts (``scheduling.restartJobOnWorkerRestart``).
    restart_job_on_worker_restart: bool = knob(
        "Restart all tasks when a worker restarts.", default=False, kind="switch",
        flags=("--restart-job-on-worker-restart/--no-restart-job-on-worker-restart",), config="scheduling.restartJobOnWorkerRestart",
    )  # fmt: skip
    #: A Vertex AI TensorBoard (``projects/P/locations/R/tensorboards/ID``) the job streams its logs to.
    tensorboard: str | None = knob(
        "Vertex TensorBoard resource to stream to (projects/P/locations/R/tensorboards/ID).", config="tensorboard"
    )
    #: The Vertex AI Experiment the job is logged to (a name, or the context's resource name).
    experiment: str | None = knob("Vertex AI Experiment to log the job to (a name, or its context resource name).", config="experiment")
    #: The run of that experiment (a name, or the run context's resource name).
    experiment_run: str | None = knob("Run of --experiment the job is (a name, or its context resource name).", config="experimentRun")
    #: After the job SUCCEEDED, its SavedModel is uploaded to the Vertex AI Model Registry as a
    #: new version of the model of this name (:mod:`.models`).
    register_model: str | None = knob(
        "After the job SUCCEEDED, upload its SavedModel to the Vertex AI Model Registry as a new version of NAME "
        "(a new model when none has that name).", **_NOT_TUNED,
    )  # fmt: skip
    #: Spot VMs: ``scheduling.strategy`` SPOT.
    spot: bool = knob("Run on Spot VMs (scheduling strategy SPOT): cheaper, may be preempted.", default=False, config="scheduling.strategy")
    #: Flex-start: ``scheduling.strategy`` FLEX_START.
    flex_start: bool = knob(
        "Flex-start (Dynamic Workload Scheduler): wait for scarce GPUs/TPUs to be provisioned together.", default=False,
        config="scheduling.strategy",
    )  # fmt: skip
    #: ``STANDARD``, ``SPOT`` or ``FLEX_START`` (what ``spot`` / ``flex_start`` set).
    scheduling_strategy: str | None = knob("STANDARD, SPOT or FLEX_START, named directly.", config="scheduling.strategy", cli=False)
    #: Seconds a FLEX_START job may wait for its machines.
    max_wait: float | None = knob(
        "How long a --flex-start job waits for its machines (2h, 30m, seconds).", kind="duration", config="scheduling.maxWaitDuration"
    )
    #: Fail the job at its first error instead of retrying.
    disable_retries: bool = knob(
        "Fail at the first error instead of retrying the job on platform errors.", default=False, config="scheduling.disableRetries"
    )
    #: ``any``, ``none`` or a reservation's full name (every pool's ``reservationAffinity``).
    reservation: str | None = knob(
        "Run on reserved machines: any, none, or projects/P/zones/Z/reservations/NAME.", config="machineSpec.reservationAffinity"
    )
    #: The persistent resource the job runs on.
    persistent_resource_id: str | None = knob(
        "Run on this persistent resource's machines (its id).",
        flags=("--persistent-resource", "--persistent-resource-id"),
        config="persistentResourceId",
    )
    #: The Cloud KMS key the job's resources are encrypted with.
    kms_key: str | None = knob(
        "Encrypt the job with this Cloud KMS key (projects/P/locations/REGION/keyRings/R/cryptoKeys/K).", config="encryptionSpec.kmsKeyName"
    )
    #: Reserved IP ranges of the peered ``network`` the job may use.
    reserved_ip_ranges: Sequence[str] = knob(
        "A reserved IP range of the --network to place the job in (repeat).",
        default=(),
        flags=("--reserved-ip-range",),
        config="reservedIpRanges",
    )
    #: A Private Service Connect interface: the network attachment's full name.
    network_attachment: str | None = knob(
        "Private Service Connect interface: projects/P/regions/R/networkAttachments/NAME.", config="pscInterfaceConfig.networkAttachment"
    )
    #: Let the training dashboard reach the tasks.
    enable_dashboard_access: bool = knob("Let the training dashboard reach the tasks.", default=False, config="enableDashboardAccess")
    #: Every pool's boot disk (``diskSpec``); ``<role>_boot_disk_type`` sets one pool's.
    boot_disk_type: str | None = knob("Every pool's boot disk: pd-ssd, pd-standard or hyperdisk-balanced.", config="diskSpec.bootDiskType")
    boot_disk_size: int | None = knob("Every pool's boot disk size in GB (100-64000; default 100).", config="diskSpec.bootDiskSizeGb")
    #: Refuse a submission whose estimate for its timeout is over this amount (the price table's currency).
    max_cost: float | None = knob(
        "Refuse the job if its price estimate for its --timeout (else 7 days) is over this amount (USD).", **_NOT_TUNED
    )
    #: Choices to fall back to, tried in turn after a quota refusal or a stockout: what
    #: ``--accelerator NVIDIA_L4:1,NVIDIA_TESLA_T4:1`` / ``--worker-machine-type A,B`` list after their first
    #: (``worker_accelerator=NVIDIA_TESLA_T4:1``, … :mod:`tfjob.description.fallbacks`).
    fallbacks: Sequence[str] = knob(
        "Machine/accelerator choices to fall back to (KNOB=CHOICE), from the lists --accelerator A,B and --*-machine-type A,B give.",
        default=(), kind="list", cli=False, **_NOT_TUNED,
    )  # fmt: skip
    #: A price table of one's own (the format of tfjob/pricing/vertex_prices.json), over the shipped one.
    price_table: str | None = knob(
        "A price table JSON file of one's own (default $TFJOB_PRICE_TABLE, else tfjob's), or `catalog`: read the Cloud Billing Catalog API now.",
        **_NOT_TUNED,
    )
    #: One pool's boot disk, over ``boot_disk_type`` / ``boot_disk_size`` (``Vertex(worker_boot_disk_…)``,
    #: a config file's ``workerPoolSpecs[N].diskSpec``).
    chief_boot_disk_type: str | None = knob("The chief's boot disk type.", config="workerPoolSpecs[0].diskSpec.bootDiskType", cli=False)
    chief_boot_disk_size: int | None = knob(
        "The chief's boot disk size in GB.", config="workerPoolSpecs[0].diskSpec.bootDiskSizeGb", cli=False
    )
    worker_boot_disk_type: str | None = knob("The workers' boot disk type.", config="workerPoolSpecs[1].diskSpec.bootDiskType", cli=False)
    worker_boot_disk_size: int | None = knob(
        "The workers' boot disk size in GB.", config="workerPoolSpecs[1].diskSpec.bootDiskSizeGb", cli=False
    )
    ps_boot_disk_type: str | None = knob(
        "The parameter servers' boot disk type.", config="workerPoolSpecs[2].diskSpec.bootDiskType", cli=False
    )
    ps_boot_disk_size: int | None = knob(
        "The parameter servers' boot disk size in GB.", config="workerPoolSpecs[2].diskSpec.bootDiskSizeGb", cli=False
    )
    evaluator_boot_disk_type: str | None = knob(
        "The evaluators' boot disk type.", config="workerPoolSpecs[3].diskSpec.bootDiskType", cli=False
    )
    evaluator_boot_disk_size: int | None = knob(
        "The evaluators' boot disk size in GB.", config="workerPoolSpecs[3].diskSpec.bootDiskSizeGb", cli=False
    )
    #: Where Vertex AI keeps the job's protected artifacts, when not in the job's region (data residency).
    protected_artifact_location_id: str | None = knob(
        "Keep the job's protected artifacts in this location (e.g. europe-west4) when it is not the job's region.",
        config="protectedArtifactLocationId",
    )


@dataclass
class VertexOptions(GoogleCloudOptions, VertexKnobs):
    """Options of a Vertex AI custom job (and of a hyperparameter tuning job's trials): where it
    goes (:class:`GoogleCloudOptions`) and every Vertex AI knob (:class:`VertexKnobs`).

    Checked when made (:func:`check_vertex_options`): a value Vertex AI would refuse is one
    :class:`~tfjob.errors.SpecError` naming the flag, the value and the fix.
    """

    def own_disks(self) -> dict[str, tuple[str | None, int | None]]:
        """Each role's own boot disk type and size, as given (None: not given)."""
        return {
            "chief": (self.chief_boot_disk_type, self.chief_boot_disk_size),
            "worker": (self.worker_boot_disk_type, self.worker_boot_disk_size),
            "ps": (self.ps_boot_disk_type, self.ps_boot_disk_size),
            "evaluator": (self.evaluator_boot_disk_type, self.evaluator_boot_disk_size),
        }

    def own_disk_roles(self) -> list[str]:
        """The roles given a boot disk of their own (``<role>_boot_disk_type`` / ``_size``)."""
        return [role for role, disk in self.own_disks().items() if disk != (None, None)]

    def boot_disk(self, role: str) -> tuple[str | None, int | None]:
        """The boot disk type and size of ``role``'s pool: its own, else every pool's (None: the platform's)."""
        own_type, own_size = self.own_disks()[role]
        return (own_type if own_type is not None else self.boot_disk_type, own_size if own_size is not None else self.boot_disk_size)

    def __post_init__(self) -> None:
        check_vertex_options(self)


_KMS_KEY_RE = LazyPattern(r"^projects/[^/\s]+/locations/[^/\s]+/keyRings/[^/\s]+/cryptoKeys/[^/\s]+\Z")
_RESERVATION_RE = LazyPattern(r"^projects/[^/\s]+/zones/[^/\s]+/reservations/[a-z]([-a-z0-9]{0,61}[a-z0-9])?\Z")
_RESOURCE_ID_RE = LazyPattern(r"^[a-z]([-a-z0-9]{0,61}[a-z0-9])?\Z")
_ATTACHMENT_RE = LazyPattern(r"^projects/[^/\s]+/regions/[^/\s]+/networkAttachments/[^/\s]+\Z")
_IP_RANGE_RE = LazyPattern(r"^[a-z]([-a-z0-9]{0,61}[a-z0-9])?\Z")
_LOCATION_RE = LazyPattern(r"^[a-z]+(-[a-z]+)*[0-9]+\Z")


def _text(name: str, value: object) -> None:
    if value is not None and not isinstance(value, str):
        raise SpecError(field=name, value=value, problem=f"must be str, not {type(value).__name__}")


def check_vertex_options(options: VertexOptions) -> None:
    """Scheduling, reservations, encryption and networking, checked as Vertex AI would; ``spot``
    and ``flex_start`` become ``scheduling_strategy``.

    Raises:
        SpecError: naming the flag, the value and the fix.
    """
    # Here, not at the top: the CLI reads these declarations to make its flags, without the checks' cost.
    from ...description.spec import check_boot_disk

    _text("network", options.network)
    _text("tensorboard", options.tensorboard)
    _text("experiment", options.experiment)
    _text("experiment_run", options.experiment_run)
    if options.register_model is not None:
        check_model_name(options.register_model)
    check_boot_disk(options.boot_disk_type, options.boot_disk_size)
    for disk_type, disk_size in options.own_disks().values():
        check_boot_disk(disk_type, disk_size)
    if isinstance(options.reserved_ip_ranges, str):
        raise SpecError(
            field="reserved_ip_ranges", value=options.reserved_ip_ranges, problem="must be a list of range names", fix="e.g. ['range-a']"
        )
    options.reserved_ip_ranges = tuple(options.reserved_ip_ranges or ())
    if isinstance(options.fallbacks, str):
        raise SpecError(
            field="fallbacks",
            value=options.fallbacks,
            problem="must be a list of KNOB=CHOICE",
            fix="e.g. ['worker_accelerator=NVIDIA_TESLA_T4:1']",
        )
    options.fallbacks = tuple(options.fallbacks or ())
    _check_scheduling(options)
    _check_resources(options)


def _check_scheduling(options: VertexOptions) -> None:
    """``spot``/``flex_start`` as ``scheduling_strategy``, ``max_wait`` and ``reservation``, checked together."""
    from ...config.vertex import SCHEDULING_STRATEGIES
    from ...description.machines import did_you_mean

    if options.spot or options.flex_start:
        if options.spot and options.flex_start:
            raise SpecError(field="spot", value=True, problem="and {flex_start=True} are two scheduling strategies", fix="choose one")
        chosen = "SPOT" if options.spot else "FLEX_START"
        if options.scheduling_strategy not in (None, chosen):
            raise SpecError(
                field="scheduling_strategy",
                value=options.scheduling_strategy,
                problem=f"and {{{'spot' if options.spot else 'flex_start'}=True}} disagree",
                fix="give one",
            )
        options.scheduling_strategy = chosen
    strategy = options.scheduling_strategy
    if strategy is not None and strategy not in SCHEDULING_STRATEGIES:
        raise SpecError(
            field="scheduling_strategy",
            value=strategy,
            problem=f"is not one of {', '.join(SCHEDULING_STRATEGIES)}{did_you_mean(str(strategy), SCHEDULING_STRATEGIES)} ({{spot}}, {{flex_start}})",
        )
    if options.max_wait is not None:
        wait = options.max_wait
        if isinstance(wait, bool) or not isinstance(wait, (int, float)) or not 0 < wait < float("inf"):
            raise SpecError(field="max_wait", value=wait, problem="must be a positive duration (seconds, or 2h, 30m)")
        if strategy != "FLEX_START":
            raise SpecError(
                field="max_wait", problem="is how long a Flex-start job waits for its machines; add {flex_start=True} (or drop {max_wait})"
            )
    reservation = options.reservation
    if reservation is not None and reservation not in ("any", "none") and not _RESERVATION_RE.match(str(reservation)):
        raise SpecError(
            field="reservation",
            value=reservation,
            problem="must be any, none, or a reservation's full name (projects/PROJECT/zones/ZONE/reservations/NAME)",
        )
    if reservation not in (None, "none") and strategy in ("SPOT", "FLEX_START"):
        raise SpecError(
            field="reservation", problem=f"cannot be combined with {{{strategy.lower()}=True}}: reserved machines are on-demand"
        )


def _check_resources(options: VertexOptions) -> None:
    """The persistent resource, the encryption key and the network (peering or Private Service Connect)."""
    if options.persistent_resource_id is not None and not _RESOURCE_ID_RE.match(str(options.persistent_resource_id)):
        raise SpecError(
            field="persistent_resource_id",
            value=options.persistent_resource_id,
            problem="must be a persistent resource's id (lower-case letters, digits and -, 1-63 characters)",
        )
    if options.kms_key is not None and not _KMS_KEY_RE.match(str(options.kms_key)):
        raise SpecError(
            field="kms_key",
            value=options.kms_key,
            problem="must be a Cloud KMS key's full name",
            fix="write projects/PROJECT/locations/REGION/keyRings/RING/cryptoKeys/KEY",
        )
    for name in options.reserved_ip_ranges:
        if not isinstance(name, str) or not _IP_RANGE_RE.match(name):
            raise SpecError(field="reserved_ip_ranges", value=name, problem="must be the name of a reserved range in the peered network")
    if options.reserved_ip_ranges and not options.network:
        raise SpecError(field="reserved_ip_ranges", problem="names ranges of the peered VPC network: add {network}")
    if options.network_attachment is not None:
        if not _ATTACHMENT_RE.match(str(options.network_attachment)):
            raise SpecError(
                field="network_attachment",
                value=options.network_attachment,
                problem="must be a network attachment's full name (projects/PROJECT/regions/REGION/networkAttachments/NAME)",
            )
        if options.network:
            raise SpecError(
                field="network_attachment", problem="(Private Service Connect) and {network} (VPC peering) are alternatives", fix="give one"
            )
    location = options.protected_artifact_location_id
    if location is not None and (not isinstance(location, str) or not _LOCATION_RE.match(location)):
        raise SpecError(
            field="protected_artifact_location_id",
            value=location,
            problem="is not a Google Cloud region",
            fix="give one such as europe-west4",
        )


#: The longest model display name the Model Registry takes.
MAX_DISPLAY_NAME = 128


def check_model_name(name: Any, field: str = "register_model") -> str:
    """A model's display name as the registry takes it: 1-128 characters."""
    if (
        not isinstance(name, str)
        or not name.strip()
        or len(name) > MAX_DISPLAY_NAME
        or any(c in '"\\' or not c.isprintable() for c in name)  # also the registry's filter: display_name="NAME"
    ):
        raise SpecError(
            field=field,
            value=name,
            problem="is not a model name",
            fix=f"give 1-{MAX_DISPLAY_NAME} printable characters without quotes or backslashes, e.g. census",
        )
    return name
