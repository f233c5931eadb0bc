"""The legacy AI Platform Training ``Job`` (``gcloud ai-platform jobs submit training --config``).

A ``Job`` resource: ``trainingInput`` (scaleTier, masterType/workerType/…, the counts,
``*Config`` with ``imageUri``, ``acceleratorConfig`` and ``containerCommand``, args,
region, jobDir, …) plus ``jobId`` and ``labels``. Output-only fields of a described
job are ignored. See :mod:`tfjob.config.job`.
"""

from __future__ import annotations

from typing import Any, Mapping

from ..cluster.dispatch import BOOTSTRAP_MODULE
from .document import ConfigDoc, bootstrap_module_values, bootstrap_values, package_values, require_same
from ..description.machines import did_you_mean
from ..description.spec import ROLES, ScaleTier

#: The name of each role in legacy field names (``masterType``, ``parameterServerCount``).
LEGACY_ROLE_PREFIX: dict[str, str] = {"chief": "master", "worker": "worker", "ps": "parameterServer", "evaluator": "evaluator"}

LEGACY_JOB_KEYS = ("jobId", "labels", "trainingInput")
#: Fields of a described legacy job that the service writes; ignored on import.
LEGACY_OUTPUT_ONLY = ("createTime", "startTime", "endTime", "state", "errorMessage", "etag", "trainingOutput", "jobPosition")
TRAINING_INPUT_KEYS = (
    "scaleTier",
    *(f"{p}{s}" for p in LEGACY_ROLE_PREFIX.values() for s in ("Type", "Config", "Count") if f"{p}{s}" != "masterCount"),
    "packageUris",
    "pythonModule",
    "args",
    "hyperparameters",
    "region",
    "jobDir",
    "runtimeVersion",
    "pythonVersion",
    "scheduling",
    "network",
    "serviceAccount",
    "useChiefInTfConfig",
    "enableWebAccess",
)
REPLICA_CONFIG_KEYS = ("acceleratorConfig", "imageUri", "containerCommand")
ACCELERATOR_CONFIG_KEYS = ("count", "type")
LEGACY_SCHEDULING_KEYS = ("maxRunningTime",)


def _scale_tier(doc: ConfigDoc, value: Any, path: str) -> ScaleTier:
    text = doc.text(value, path) or ""
    try:
        return ScaleTier(text.strip().upper().replace("-", "_"))
    except ValueError:
        names = [t.value for t in ScaleTier]
        suggestion = did_you_mean(text.upper(), names)
        raise doc.error(path, f"{value!r} is not a scale tier{suggestion}; choose one of {', '.join(names)}") from None


def parse_training_input(
    data: Mapping[str, Any], doc: ConfigDoc, path: str = "trainingInput"
) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """A legacy ``trainingInput`` → (Job keyword arguments, its ``hyperparameters`` or None)."""
    doc.check_keys(data, path, TRAINING_INPUT_KEYS)
    values: dict[str, Any] = {}
    shared: dict[str, tuple[str, Any]] = {}
    _check_scale_tier(data, doc, path, values)
    for role in ROLES:
        _role_values(data, doc, path, role, values, shared)
    values.update(package_values(doc.strings(data.get("packageUris"), f"{path}.packageUris")))
    trainer_args = _module_values(data, doc, path, shared)
    for key, (_, value) in shared.items():
        values[key] = value
    simple = {
        "region": "region",
        "jobDir": "job_dir",
        "runtimeVersion": "runtime_version",
        "pythonVersion": "python_version",
        "network": "network",
        "serviceAccount": "service_account",
    }
    for key, name in simple.items():
        value = doc.text(data.get(key), f"{path}.{key}")
        if value is not None:
            values[name] = value
    if trainer_args:
        values["args"] = trainer_args
    elif trainer_args is None and data.get("args") is not None:
        values["args"] = doc.strings(data["args"], f"{path}.args")
    for key, name in (("useChiefInTfConfig", "use_chief"), ("enableWebAccess", "enable_web_access")):
        flag = doc.flag(data.get(key), f"{path}.{key}")
        if flag is not None:
            values[name] = flag
    sched_path = f"{path}.scheduling"
    scheduling = doc.mapping(data.get("scheduling"), sched_path)
    doc.check_keys(scheduling, sched_path, LEGACY_SCHEDULING_KEYS)
    if scheduling.get("maxRunningTime") is not None:
        values["timeout"] = doc.duration(scheduling["maxRunningTime"], f"{sched_path}.maxRunningTime")
    tuning = data.get("hyperparameters")
    return values, (doc.mapping(tuning, f"{path}.hyperparameters") if tuning is not None else None)


def _check_scale_tier(data: Mapping[str, Any], doc: ConfigDoc, path: str, values: dict[str, Any]) -> None:
    """The ``scaleTier`` into ``values``; a machine type or count that a fixed tier overrides is refused."""
    tier = _scale_tier(doc, data["scaleTier"], f"{path}.scaleTier") if data.get("scaleTier") is not None else None
    typed = [role for role in ROLES if data.get(f"{LEGACY_ROLE_PREFIX[role]}Type") is not None]
    if tier is None and typed:
        # AI Platform defaulted to BASIC and then refused machine types; the intent is CUSTOM.
        tier = ScaleTier.CUSTOM
    if tier is not None:
        values["scale_tier"] = tier.value
    if tier not in (None, ScaleTier.CUSTOM):
        fixed = [f"{LEGACY_ROLE_PREFIX[r]}{s}" for r in ROLES for s in ("Type", "Count")]
        configs = [f"{LEGACY_ROLE_PREFIX[r]}Config" for r in ROLES]
        fixed += [key for key in configs if isinstance(data.get(key), Mapping) and "acceleratorConfig" in data[key]]
        given = [key for key in fixed if data.get(key) is not None]
        if given:
            raise doc.error(
                f"{path}.{given[0]}",
                f"is set, but scaleTier {tier.value} fixes the machines and counts; set scaleTier: CUSTOM to choose them",
            )


def _role_values(
    data: Mapping[str, Any], doc: ConfigDoc, path: str, role: str, values: dict[str, Any], shared: dict[str, tuple[str, Any]]
) -> None:
    """One role's ``<prefix>Type``, ``<prefix>Count`` and ``<prefix>Config`` into ``values`` (what
    its container command says into ``shared``, which every role must agree on)."""
    prefix = LEGACY_ROLE_PREFIX[role]
    cfg_path = f"{path}.{prefix}Config"
    cfg = doc.mapping(data.get(f"{prefix}Config"), cfg_path)
    doc.check_keys(cfg, cfg_path, REPLICA_CONFIG_KEYS)
    acc_path = f"{cfg_path}.acceleratorConfig"
    acc_cfg = doc.mapping(cfg.get("acceleratorConfig"), acc_path)
    doc.check_keys(acc_cfg, acc_path, ACCELERATOR_CONFIG_KEYS)
    accelerator = doc.accelerator(acc_cfg.get("type"), acc_cfg.get("count"), f"{acc_path}.type", f"{acc_path}.count")
    if accelerator is not None:
        values[f"{role}_accelerator"] = accelerator
    if data.get(f"{prefix}Type") is not None:
        values[f"{role}_machine_type"] = doc.machine(data[f"{prefix}Type"], f"{path}.{prefix}Type", accelerator)
    if cfg.get("containerCommand") is not None:
        for key, value in bootstrap_values(doc, cfg["containerCommand"], f"{cfg_path}.containerCommand").items():
            require_same(doc, shared, key, f"{cfg_path}.containerCommand", value)
    image = doc.text(cfg.get("imageUri"), f"{cfg_path}.imageUri")
    if image and role == "chief":
        values["image"] = image
    elif image and image != values.get("image"):
        # The master's image is every task's unless a role names its own, as on AI Platform.
        values[f"{role}_image"] = image
    if role != "chief" and data.get(f"{prefix}Count") is not None:
        n = doc.count(data[f"{prefix}Count"], f"{path}.{prefix}Count")
        if n:  # 0 is the API's default: no such tasks
            values[{"worker": "workers", "ps": "ps", "evaluator": "evaluators"}[role]] = n


def _module_values(data: Mapping[str, Any], doc: ConfigDoc, path: str, shared: dict[str, tuple[str, Any]]) -> list[str] | None:
    """The ``pythonModule`` into ``shared``; the trainer's own args when the module is tfjob's
    bootstrap (which names the trainer module in its args), else None."""
    module = doc.text(data.get("pythonModule"), f"{path}.pythonModule")
    trainer_args: list[str] | None = None
    if module == BOOTSTRAP_MODULE:
        # tfjob's own rendering: the bootstrap runs the trainer module named in the args.
        said, trainer_args = bootstrap_module_values(doc, data.get("args"), f"{path}.args")
        for key, value in said.items():
            require_same(doc, shared, key, f"{path}.args", value)
    elif module is not None:
        require_same(doc, shared, "module", f"{path}.pythonModule", module)
    return trainer_args


def parse_legacy_job(data: Mapping[str, Any], doc: ConfigDoc) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """A legacy ``Job`` → (Job keyword arguments, its ``trainingInput.hyperparameters`` or None)."""
    doc.check_keys(data, "", LEGACY_JOB_KEYS, ignored=LEGACY_OUTPUT_ONLY)
    training_input = doc.mapping(data.get("trainingInput"), "trainingInput")
    values, tuning = parse_training_input(training_input, doc)
    job_id = doc.text(data.get("jobId"), "jobId")
    if job_id:
        values["name"] = job_id
    if data.get("labels") is not None:
        values["labels"] = doc.labels(data["labels"], "labels")
    return values, tuning
