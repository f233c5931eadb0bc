"""The Vertex AI ``CustomJobSpec`` (``gcloud ai custom-jobs create --config``).

A ``CustomJobSpec`` (``workerPoolSpecs`` at positions 0 chief, 1 workers, 2 parameter
servers, 3 evaluators; ``{}`` for an unused pool), at the top level or inside a
``CustomJob`` (``jobSpec``) or a ``HyperparameterTuningJob`` (``trialJobSpec``).
What tfjob gives every task alike (module, packages, args, env) must agree across
pools. See :mod:`tfjob.config.job`.
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping, Sequence

from ..cluster.dispatch import BOOTSTRAP, BOOTSTRAP_MODULE
from .document import ConfigDoc, bootstrap_module_values, bootstrap_values, package_values, require_same
from ..description.knobs import Knob
from ..description.machines import did_you_mean
from ..description.spec import ROLES, check_boot_disk

#: Vertex AI ``scheduling.strategy`` values tfjob renders (STANDARD is on-demand VMs).
SCHEDULING_STRATEGIES: tuple[str, ...] = ("STANDARD", "SPOT", "FLEX_START")

CUSTOM_JOB_KEYS = ("displayName", "labels", "jobSpec", "encryptionSpec")
CUSTOM_JOB_OUTPUT_ONLY = (
    "name",
    "state",
    "createTime",
    "startTime",
    "endTime",
    "updateTime",
    "error",
    "webAccessUris",
    "satisfiesPzs",
    "satisfiesPzi",
)
CUSTOM_JOB_SPEC_KEYS = (
    "workerPoolSpecs",
    "scheduling",
    "serviceAccount",
    "network",
    "baseOutputDirectory",
    "tensorboard",
    "experiment",
    "experimentRun",
    "enableWebAccess",
    "persistentResourceId",
    "reservedIpRanges",
    "pscInterfaceConfig",
    "enableDashboardAccess",
)
WORKER_POOL_KEYS = ("machineSpec", "replicaCount", "diskSpec", "containerSpec", "pythonPackageSpec")
MACHINE_SPEC_KEYS = ("machineType", "acceleratorType", "acceleratorCount", "tpuTopology", "reservationAffinity")
DISK_SPEC_KEYS = ("bootDiskType", "bootDiskSizeGb")
RESERVATION_KEYS = ("reservationAffinityType", "key", "values")
#: ``machineSpec.reservationAffinity`` key that names specific reservations.
RESERVATION_KEY = "compute.googleapis.com/reservation-name"
CONTAINER_SPEC_KEYS = ("imageUri", "command", "args", "env")
PYTHON_PACKAGE_KEYS = ("executorImageUri", "packageUris", "pythonModule", "args", "env")
VERTEX_SCHEDULING_KEYS = ("timeout", "restartJobOnWorkerRestart", "strategy", "maxWaitDuration", "disableRetries")
#: A Vertex ``HyperparameterTuningJob``: the trial's job is ``trialJobSpec``, the rest is tuning.
TUNING_JOB_KEYS = (
    "displayName", "labels", "trialJobSpec", "studySpec", "maxTrialCount", "parallelTrialCount", "maxFailedTrialCount", "encryptionSpec",
)  # fmt: skip
TUNING_JOB_OUTPUT_ONLY = (*CUSTOM_JOB_OUTPUT_ONLY, "trials")


def _reservation(doc: ConfigDoc, value: Any, path: str) -> str:
    """``any``, ``none`` or a reservation's name, from a ``reservationAffinity``."""
    affinity = doc.mapping(value, path)
    doc.check_keys(affinity, path, RESERVATION_KEYS)
    kind = doc.text(affinity.get("reservationAffinityType"), f"{path}.reservationAffinityType")
    names = doc.strings(affinity.get("values"), f"{path}.values")
    if kind == "ANY_RESERVATION" and not names:
        return "any"
    if kind == "NO_RESERVATION" and not names:
        return "none"
    if kind == "SPECIFIC_RESERVATION" and affinity.get("key") == RESERVATION_KEY and len(names) == 1:
        return names[0]
    raise doc.error(
        path,
        f"{dict(affinity)!r} is not supported: tfjob takes ANY_RESERVATION, NO_RESERVATION, or SPECIFIC_RESERVATION "
        f"with key {RESERVATION_KEY} and one reservation in values",
    )


def _env(doc: ConfigDoc, value: Any, path: str) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, list):
        raise doc.error(path, f"must be a list of {{name: ..., value: ...}}, not {value!r}")
    out = {}
    for i, item in enumerate(value):
        item_path = f"{path}[{i}]"
        item = doc.mapping(item, item_path)
        doc.check_keys(item, item_path, ("name", "value"))
        name = doc.text(item.get("name"), f"{item_path}.name")
        if not name:
            raise doc.error(item_path, "has no name")
        value_ = item.get("value", "")
        out[name] = value_ if isinstance(value_, str) else doc.text(value_, f"{item_path}.value") or ""
    return out


def _parse_pool(
    doc: ConfigDoc,
    pool: dict[str, Any],
    role: str,
    path: str,
    values: dict[str, Any],
    shared: dict[str, tuple[str, Any]],
    own: dict[str, dict[str, Any]],
) -> str | None:
    """One worker pool into ``values``; returns the pool's container image, if any."""
    doc.check_keys(pool, path, WORKER_POOL_KEYS)
    _machine_spec(doc, pool, role, path, values, shared)
    _disk_spec(doc, pool, role, path, values)
    replicas = 1 if pool.get("replicaCount") is None else doc.count(pool["replicaCount"], f"{path}.replicaCount")
    if role == "chief" and replicas != 1:
        raise doc.error(
            f"{path}.replicaCount",
            f"{replicas}: pool 0 is the chief and runs exactly 1 replica; put the other replicas in workerPoolSpecs[1]",
        )
    if replicas < 1:
        raise doc.error(f"{path}.replicaCount", "0: write the pool as {} to leave it unused")
    if role != "chief":
        values[{"worker": "workers", "ps": "ps", "evaluator": "evaluators"}[role]] = replicas
    if "containerSpec" in pool and "pythonPackageSpec" in pool:
        raise doc.error(path, "has both containerSpec and pythonPackageSpec; give one")
    if "containerSpec" not in pool and "pythonPackageSpec" not in pool:
        raise doc.error(path, "has neither containerSpec nor pythonPackageSpec; say what the tasks run")
    image = None
    if "containerSpec" in pool:
        spec_path = f"{path}.containerSpec"
        spec = doc.mapping(pool["containerSpec"], spec_path)
        image = _container_spec(doc, spec, spec_path, shared)
    else:
        spec_path = f"{path}.pythonPackageSpec"
        spec = _python_package_spec(doc, doc.mapping(pool["pythonPackageSpec"], spec_path), spec_path, shared)
    # Each pool's own arguments and variables; equal in every pool, they are the job's.
    own["args"][role] = doc.strings(spec["args"], f"{spec_path}.args") if spec.get("args") is not None else []
    own["env"][role] = _env(doc, spec["env"], f"{spec_path}.env") if spec.get("env") is not None else {}
    return image


def _machine_spec(
    doc: ConfigDoc, pool: dict[str, Any], role: str, path: str, values: dict[str, Any], shared: dict[str, tuple[str, Any]]
) -> None:
    """A pool's ``machineSpec`` into ``values`` (its TPU topology and reservation, the job's: into ``shared``)."""
    ms_path = f"{path}.machineSpec"
    machine_spec = doc.mapping(pool.get("machineSpec"), ms_path)
    doc.check_keys(machine_spec, ms_path, MACHINE_SPEC_KEYS)
    accelerator = doc.accelerator(
        machine_spec.get("acceleratorType"),
        machine_spec.get("acceleratorCount"),
        f"{ms_path}.acceleratorType",
        f"{ms_path}.acceleratorCount",
    )
    if machine_spec.get("machineType") is None:
        raise doc.error(ms_path, "has no machineType; name one such as n1-standard-4 (see `tfjob machines`)")
    values[f"{role}_machine_type"] = doc.machine(machine_spec["machineType"], f"{ms_path}.machineType", accelerator)
    if accelerator is not None:
        values[f"{role}_accelerator"] = accelerator
    topology = doc.text(machine_spec.get("tpuTopology"), f"{ms_path}.tpuTopology")
    if topology is not None:
        require_same(doc, shared, "tpu_topology", f"{ms_path}.tpuTopology", topology)
    if machine_spec.get("reservationAffinity") is not None:
        reservation = _reservation(doc, machine_spec["reservationAffinity"], f"{ms_path}.reservationAffinity")
        require_same(doc, shared, "reservation", f"{ms_path}.reservationAffinity", reservation)


def _disk_spec(doc: ConfigDoc, pool: dict[str, Any], role: str, path: str, values: dict[str, Any]) -> None:
    """A pool's ``diskSpec`` into ``values``, checked as the platform checks it."""
    disk_path = f"{path}.diskSpec"
    disk = doc.mapping(pool.get("diskSpec"), disk_path)
    doc.check_keys(disk, disk_path, DISK_SPEC_KEYS)
    if disk.get("bootDiskType") is not None:
        values[f"{role}_boot_disk_type"] = doc.text(disk["bootDiskType"], f"{disk_path}.bootDiskType")
        with doc.at(f"{disk_path}.bootDiskType"):
            check_boot_disk(values[f"{role}_boot_disk_type"], None)
    if disk.get("bootDiskSizeGb") is not None:
        values[f"{role}_boot_disk_size"] = doc.count(disk["bootDiskSizeGb"], f"{disk_path}.bootDiskSizeGb")
        with doc.at(f"{disk_path}.bootDiskSizeGb"):
            check_boot_disk(None, values[f"{role}_boot_disk_size"])


def _container_spec(doc: ConfigDoc, spec: dict[str, Any], spec_path: str, shared: dict[str, tuple[str, Any]]) -> str:
    """A pool's ``containerSpec``: its image (returned) and command (into ``shared``)."""
    doc.check_keys(spec, spec_path, CONTAINER_SPEC_KEYS)
    image = doc.text(spec.get("imageUri"), f"{spec_path}.imageUri")
    if not image:
        raise doc.error(spec_path, "has no imageUri; name the container image")
    command = spec.get("command")
    if command is not None and doc.strings(command, f"{spec_path}.command")[:1] == [BOOTSTRAP]:
        for key, value in bootstrap_values(doc, command, f"{spec_path}.command").items():
            require_same(doc, shared, "pythonModule" if key == "module" else key, f"{spec_path}.command", value)
    elif command is not None:
        # The image's own entrypoint, replaced (tfjob runs one command in every pool).
        require_same(doc, shared, "command", f"{spec_path}.command", doc.strings(command, f"{spec_path}.command"))
    return image


def _python_package_spec(doc: ConfigDoc, spec: dict[str, Any], spec_path: str, shared: dict[str, tuple[str, Any]]) -> dict[str, Any]:
    """A pool's ``pythonPackageSpec``: its module, packages and executor (into ``shared``); returns
    the spec, its ``args`` the trainer's own when the module is tfjob's bootstrap."""
    doc.check_keys(spec, spec_path, PYTHON_PACKAGE_KEYS)
    module = doc.text(spec.get("pythonModule"), f"{spec_path}.pythonModule")
    if module == BOOTSTRAP_MODULE:
        # tfjob's own rendering: the bootstrap runs the trainer module named in the args.
        said, trainer = bootstrap_module_values(doc, spec.get("args"), f"{spec_path}.args")
        for key, value in said.items():
            require_same(doc, shared, "pythonModule" if key == "module" else key, f"{spec_path}.args", value)
        spec = {**spec, "args": trainer}
    elif module is not None:
        require_same(doc, shared, "pythonModule", f"{spec_path}.pythonModule", module)
    uris = doc.strings(spec.get("packageUris"), f"{spec_path}.packageUris")
    if uris:
        require_same(doc, shared, "packageUris", f"{spec_path}.packageUris", uris)
    executor = doc.text(spec.get("executorImageUri"), f"{spec_path}.executorImageUri")
    if executor is not None:
        require_same(doc, shared, "executorImageUri", f"{spec_path}.executorImageUri", executor)
    return spec


#: What tfjob reads by hand in a Vertex document (the keys, and the mappings holding them).
_READ_BY_HAND = frozenset({
    *CUSTOM_JOB_SPEC_KEYS, *CUSTOM_JOB_KEYS, *WORKER_POOL_KEYS, *MACHINE_SPEC_KEYS, *DISK_SPEC_KEYS, *CONTAINER_SPEC_KEYS,
    *PYTHON_PACKAGE_KEYS, *VERTEX_SCHEDULING_KEYS, "trainingInput",
})  # fmt: skip


def declared_keys(knobs: Sequence[Knob]) -> dict[str, Knob]:
    """The ``CustomJobSpec`` keys read from the declarations of ``knobs`` (a backend's, e.g. the
    Vertex options' fields): each knob whose ``config`` spelling is a plain key tfjob does not
    read by hand above. Adding such a knob in the backend's folder is all a config file needs."""
    return {k.config: k for k in knobs if k.config and k.config.isidentifier() and k.config not in _READ_BY_HAND}


def read_declared(doc: ConfigDoc, knob: Knob, value: Any, path: str) -> Any:
    """``value`` at ``path`` as the kind ``knob`` declares (its own checks run where the options are made)."""
    if knob.kind in ("flag", "switch"):
        return doc.flag(value, path)
    if knob.kind == "int":
        return doc.count(value, path)
    if knob.kind == "duration":
        return doc.duration(value, path)
    if knob.kind == "list":
        return doc.strings(value, path)
    if knob.kind == "float":
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise doc.error(path, f"{value!r} must be a number")
        return float(value)
    return doc.text(value, path)


def parse_custom_job_spec(data: Mapping[str, Any], doc: ConfigDoc, path: str = "", knobs: Sequence[Knob] = ()) -> dict[str, Any]:
    """A Vertex ``CustomJobSpec`` → Job keyword arguments.

    ``knobs``: declared knobs whose plain ``CustomJobSpec`` keys are read from their
    declaration (:func:`declared_keys`; ``Job`` passes the Vertex options' knobs).
    """
    declared = declared_keys(knobs)
    doc.check_keys(data, path, (*CUSTOM_JOB_SPEC_KEYS, *declared))
    at = f"{path}." if path else ""
    values: dict[str, Any] = {}
    _worker_pools(data, doc, at, values)
    _job_settings(data, doc, at, values)
    _scheduling(data, doc, at, values)
    for key, knob in declared.items():
        if data.get(key) is not None:
            value = read_declared(doc, knob, data[key], f"{at}{key}")
            if value is not None and value != []:
                values[knob.name] = value
    return values


def _worker_pools(data: Mapping[str, Any], doc: ConfigDoc, at: str, values: dict[str, Any]) -> None:
    """The ``workerPoolSpecs`` into ``values``: each pool's own, and what every pool says alike as the job's."""
    pools_path = f"{at}workerPoolSpecs"
    pools = data.get("workerPoolSpecs")
    if not isinstance(pools, list) or not pools:
        raise doc.error(pools_path, "must be a list of 1 to 4 worker pools (chief, workers, parameter servers, evaluators)")
    if len(pools) > len(ROLES):
        raise doc.error(
            pools_path, f"has {len(pools)} pools; tfjob takes at most 4: [0] chief, [1] workers, [2] parameter servers, [3] evaluators"
        )
    shared: dict[str, tuple[str, Any]] = {}
    own: dict[str, dict[str, Any]] = {"args": {}, "env": {}}
    images: dict[str, str | None] = {}
    for index, pool in enumerate(pools):
        role, pool_path = ROLES[index], f"{pools_path}[{index}]"
        pool = doc.mapping(pool, pool_path)
        if not pool:
            if index == 0:
                raise doc.error(pool_path, "is empty; pool 0 is the chief, which every job has")
            continue  # `{}` keeps the positions of the pools after an unused one
        images[role] = _parse_pool(doc, pool, role, pool_path, values, shared, own)
    used = [img for img in images.values() if img]
    if used and len(used) == len(images) and len(set(used)) == 1:
        values["image"] = used[0]
    else:
        values.update({f"{role}_image": img for role, img in images.items() if img})
    for key in ("args", "env"):
        by_role = own[key]
        distinct = {repr(v) for v in by_role.values()}
        if len(distinct) == 1:
            value = next(iter(by_role.values()))
            if value:
                values[key] = value
        elif by_role:
            values.update({f"{role}_{key}": value for role, value in by_role.items()})
    names = {"pythonModule": "module", "executorImageUri": "executor_image", "args": "args", "env": "env", "command": "command"}
    names.update({key: key for key in ("packages", "script", "strategy", "tf_config")})  # a bootstrap command's flags
    names.update({"tpu_topology": "tpu_topology", "reservation": "reservation"})
    for key, (_, value) in shared.items():
        if key == "packageUris":
            values.update(package_values(value))
        else:
            values[names[key]] = value


def _job_settings(data: Mapping[str, Any], doc: ConfigDoc, at: str, values: dict[str, Any]) -> None:
    """The spec's job-wide keys (service account, network, output directory…) into ``values``."""
    for key, name in (
        ("serviceAccount", "service_account"),
        ("network", "network"),
        ("tensorboard", "tensorboard"),
        ("experiment", "experiment"),
        ("experimentRun", "experiment_run"),
    ):
        value = doc.text(data.get(key), f"{at}{key}")
        if value is not None:
            values[name] = value
    for key, name in (("enableWebAccess", "enable_web_access"), ("enableDashboardAccess", "enable_dashboard_access")):
        flag = doc.flag(data.get(key), f"{at}{key}")
        if flag is not None:
            values[name] = flag
    resource = doc.text(data.get("persistentResourceId"), f"{at}persistentResourceId")
    if resource:
        values["persistent_resource_id"] = resource
    ranges = doc.strings(data.get("reservedIpRanges"), f"{at}reservedIpRanges")
    if ranges:
        values["reserved_ip_ranges"] = ranges
    psc_path = f"{at}pscInterfaceConfig"
    psc = doc.mapping(data.get("pscInterfaceConfig"), psc_path)
    doc.check_keys(psc, psc_path, ("networkAttachment",))
    attachment = doc.text(psc.get("networkAttachment"), f"{psc_path}.networkAttachment")
    if attachment:
        values["network_attachment"] = attachment
    out_path = f"{at}baseOutputDirectory"
    output = doc.mapping(data.get("baseOutputDirectory"), out_path)
    doc.check_keys(output, out_path, ("outputUriPrefix",))
    job_dir = doc.text(output.get("outputUriPrefix"), f"{out_path}.outputUriPrefix")
    if job_dir:
        values["job_dir"] = job_dir
        if values.get("args", [])[-2:] == ["--job-dir", job_dir]:
            # tfjob's Vertex rendering passes the job dir on, as AI Platform did; it will again.
            values["args"] = values["args"][:-2]


def _scheduling(data: Mapping[str, Any], doc: ConfigDoc, at: str, values: dict[str, Any]) -> None:
    """The spec's ``scheduling`` into ``values``."""
    sched_path = f"{at}scheduling"
    scheduling = doc.mapping(data.get("scheduling"), sched_path)
    doc.check_keys(scheduling, sched_path, VERTEX_SCHEDULING_KEYS)
    if scheduling.get("timeout") is not None:
        values["timeout"] = doc.duration(scheduling["timeout"], f"{sched_path}.timeout")
    restart = doc.flag(scheduling.get("restartJobOnWorkerRestart"), f"{sched_path}.restartJobOnWorkerRestart")
    if restart is not None:
        values["restart_job_on_worker_restart"] = restart
    strategy = doc.text(scheduling.get("strategy"), f"{sched_path}.strategy")
    if strategy is not None and strategy not in ("STRATEGY_UNSPECIFIED", "ON_DEMAND"):
        values["scheduling_strategy"] = "SPOT" if strategy == "LOW_COST" else strategy  # LOW_COST: SPOT's deprecated name
        if values["scheduling_strategy"] not in SCHEDULING_STRATEGIES:
            raise doc.error(
                f"{sched_path}.strategy",
                f"{strategy!r} is not one of {', '.join(SCHEDULING_STRATEGIES)}{did_you_mean(strategy, SCHEDULING_STRATEGIES)}",
            )
    if scheduling.get("maxWaitDuration") is not None:
        values["max_wait"] = doc.duration(scheduling["maxWaitDuration"], f"{sched_path}.maxWaitDuration")
    retries = doc.flag(scheduling.get("disableRetries"), f"{sched_path}.disableRetries")
    if retries is not None:
        values["disable_retries"] = retries


def parse_vertex_job(
    data: Mapping[str, Any], doc: ConfigDoc, spec_key: str, known: Iterable[str], ignored: Iterable[str], knobs: Sequence[Knob] = ()
) -> dict[str, Any]:
    """A ``CustomJob`` (spec under ``jobSpec``) or tuning job (under ``trialJobSpec``)."""
    doc.check_keys(data, "", known, ignored=ignored)
    if spec_key not in data:
        raise doc.error(spec_key, "is missing; it holds the job's workerPoolSpecs")
    values = parse_custom_job_spec(doc.mapping(data[spec_key], spec_key), doc, spec_key, knobs)
    name = doc.text(data.get("displayName"), "displayName")
    if name:
        values["name"] = name
    if data.get("labels") is not None:
        values["labels"] = doc.labels(data["labels"], "labels")
    encryption = doc.mapping(data.get("encryptionSpec"), "encryptionSpec")
    doc.check_keys(encryption, "encryptionSpec", ("kmsKeyName",))
    key = doc.text(encryption.get("kmsKeyName"), "encryptionSpec.kmsKeyName")
    if key:
        values["kms_key"] = key
    return values
