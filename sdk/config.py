"""Job configuration files: legacy AI Platform ``trainingInput`` and Vertex ``CustomJobSpec``.

``tfjob submit --config FILE`` (and ``Job(config=FILE)``) reads either dialect, YAML
or JSON, and turns it into keyword arguments of :class:`tfjob.Job`; flags and
keywords given next to the file override what it says, as with gcloud.

- **Legacy** (``gcloud ai-platform jobs submit training --config``): a ``Job``
  resource: ``trainingInput:`` (scaleTier, masterType/workerType/…, the counts,
  ``*Config`` with ``imageUri`` and ``acceleratorConfig``, args, region, jobDir, …),
  and optionally ``jobId`` and ``labels``.
- **Vertex** (``gcloud ai custom-jobs create --config``): a ``CustomJobSpec``
  (``workerPoolSpecs``, scheduling, serviceAccount, …) at the top level, or a
  ``CustomJob`` holding it under ``jobSpec:`` (with ``displayName`` and ``labels``).
- **Tuning**: a legacy ``trainingInput.hyperparameters`` or a Vertex
  ``HyperparameterTuningJob`` (``studySpec`` + ``trialJobSpec``). :func:`parse_job_config`
  keeps that section aside in :attr:`JobConfig.tuning` for ``tfjob tune``;
  :func:`load_job_config` refuses it, since ``submit`` runs a single job.

Every key is checked: an unknown key names itself and the file and suggests the
closest valid one; a key the platform has but tfjob cannot honour says so, rather
than being dropped silently. Output-only fields (a described job's ``state``,
``createTime``, …) are ignored, so the output of ``describe`` can be resubmitted.
"""

from __future__ import annotations

import json
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping

from .errors import ConfigFileError, SpecError
from .machines import did_you_mean
from .spec import ROLES, Accelerator, Machine, ScaleTier, parse_duration

# -- legacy AI Platform Training (ml.googleapis.com v1) --------------------------------

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

# -- Vertex AI (aiplatform.googleapis.com v1) -------------------------------------------

CUSTOM_JOB_KEYS = ("displayName", "labels", "jobSpec")
CUSTOM_JOB_OUTPUT_ONLY = (
    "name", "state", "createTime", "startTime", "endTime", "updateTime", "error", "webAccessUris", "satisfiesPzs", "satisfiesPzi",
)
CUSTOM_JOB_SPEC_KEYS = (
    "workerPoolSpecs", "scheduling", "serviceAccount", "network", "baseOutputDirectory", "tensorboard", "enableWebAccess",
)
WORKER_POOL_KEYS = ("machineSpec", "replicaCount", "containerSpec", "pythonPackageSpec")
MACHINE_SPEC_KEYS = ("machineType", "acceleratorType", "acceleratorCount")
CONTAINER_SPEC_KEYS = ("imageUri", "command", "args", "env")
#: The console script of every tfjob image; ``[BOOTSTRAP, "--module", M, "--"]`` runs module M.
BOOTSTRAP = "tfjob-bootstrap"
PYTHON_PACKAGE_KEYS = ("executorImageUri", "packageUris", "pythonModule", "args", "env")
VERTEX_SCHEDULING_KEYS = ("timeout", "restartJobOnWorkerRestart")
#: A Vertex ``HyperparameterTuningJob``: the trial's job is ``trialJobSpec``, the rest is tuning.
TUNING_JOB_KEYS = ("displayName", "labels", "trialJobSpec", "studySpec", "maxTrialCount", "parallelTrialCount", "maxFailedTrialCount")
TUNING_JOB_OUTPUT_ONLY = (*CUSTOM_JOB_OUTPUT_ONLY, "trials")

_NO_DISK = "tfjob uses the platform's default boot disk (100 GB pd-ssd); remove it"
#: Platform fields tfjob cannot honour, with what to do instead. Keyed by the field's
#: name where it appears (the same reason applies at every level it can appear).
UNSUPPORTED: dict[str, str] = {
    "predictionInput": "this is a batch prediction job; tfjob runs training jobs",
    "encryptionConfig": "customer-managed encryption keys are not supported by tfjob; remove it",
    "encryptionSpec": "customer-managed encryption keys are not supported by tfjob; remove it",
    "diskConfig": _NO_DISK,
    "diskSpec": _NO_DISK,
    "containerArgs": "use trainingInput.args: tfjob gives every task the same arguments",
    "tpuTfVersion": "tfjob runs TPU jobs on Vertex AI, which takes the TensorFlow version from the image; remove it",
    "maxWaitTime": "tfjob does not limit queueing time; remove it",
    "maxWaitDuration": "tfjob does not limit queueing time; remove it",
    "priority": "tfjob does not set job priorities; remove it",
    "strategy": "tfjob uses on-demand VMs (no Spot or Flex-start scheduling); remove it",
    "disableRetries": "tfjob keeps the platform's retry behaviour; remove it",
    "nfsMounts": "tfjob does not mount NFS shares; read the data from Cloud Storage instead",
    "lustreMounts": "tfjob does not mount Lustre file systems; read the data from Cloud Storage instead",
    "gpuPartitionSize": "tfjob does not partition GPUs; remove it",
    "tpuTopology": "tfjob runs single-host TPU slices only (machine type cloud-tpu); remove it",
    "reservationAffinity": "tfjob does not target reservations; remove it",
    "persistentResourceId": "tfjob starts fresh VMs for every job; remove it",
    "reservedIpRanges": "tfjob does not reserve IP ranges; remove it (network peering via network still works)",
    "pscInterfaceConfig": "tfjob does not configure Private Service Connect; remove it",
    "protectedArtifactLocationId": "tfjob does not set artifact locations; remove it",
    "enableDashboardAccess": "tfjob does not enable dashboard access; remove it (enableWebAccess works)",
    "experiment": "tfjob does not log to Vertex AI Experiments; remove it",
    "experimentRun": "tfjob does not log to Vertex AI Experiments; remove it",
    "models": "tfjob does not attach models to a job; remove it",
}


@dataclass(frozen=True)
class JobConfig:
    """A parsed configuration file.

    Attributes:
        source: the file (used in every message).
        dialect: ``ai-platform`` (a legacy ``trainingInput``) or ``vertex`` (a ``CustomJobSpec``).
        values: keyword arguments of :class:`tfjob.Job` / :func:`tfjob.spec.build_spec`.
        tuning: the hyperparameter-tuning section as written (legacy
            ``hyperparameters``; Vertex ``studySpec``, ``maxTrialCount``, …), or None.
        tuning_key: where the tuning section was (``trainingInput.hyperparameters``
            or ``studySpec``), or None.
    """

    source: str
    dialect: str
    values: dict[str, Any]
    tuning: dict[str, Any] | None = None
    tuning_key: str | None = None


class _Reader:
    """Typed access to a config document; every error names the file and the key."""

    def __init__(self, source: str) -> None:
        self.source = source

    def error(self, path: str, message: str) -> ConfigFileError:
        return ConfigFileError(f"{self.source}: {path} {message}")

    @contextmanager
    def at(self, path: str) -> Iterator[None]:
        """Turn a SpecError raised while checking ``path`` into one that names the file and key."""
        try:
            yield
        except ConfigFileError:
            raise
        except SpecError as e:
            raise ConfigFileError(f"{self.source}: {path}: {e}") from None

    def check_keys(
        self,
        data: Mapping[str, Any],
        path: str,
        known: Iterable[str],
        ignored: Iterable[str] = (),
        hint: Mapping[str, str] | None = None,
    ) -> None:
        """Raise for the first key that is neither known nor ignored."""
        known = list(known)
        ignored = set(ignored)
        for key in data:
            if key in known or key in ignored:
                continue
            where = f"{path}.{key}" if path else str(key)
            if key in UNSUPPORTED:
                raise self.error(where, f"is not supported: {UNSUPPORTED[key]}")
            extra = f" ({hint[key]})" if hint and key in hint else ""
            level = f"under {path}" if path else "at the top level"
            raise ConfigFileError(
                f"{self.source}: unknown key {where!r}{did_you_mean(str(key), known)}{extra}; "
                f"valid keys {level} are {', '.join(known)}"
            )

    def mapping(self, value: Any, path: str) -> dict[str, Any]:
        if value is None:
            return {}
        if not isinstance(value, Mapping):
            raise self.error(path, f"must be a mapping of keys to values, not {type(value).__name__} {value!r}")
        return dict(value)

    def text(self, value: Any, path: str) -> str | None:
        if value is None:
            return None
        if not isinstance(value, str):
            # YAML reads `runtimeVersion: 2.10` as the number 2.1: only quotes keep what was written.
            raise self.error(path, f"{value!r} must be text; put the value in quotes in the file")
        return value

    def count(self, value: Any, path: str) -> int:
        # int64 fields are strings in the JSON the API writes ("9"), numbers in hand-written YAML.
        if isinstance(value, str) and value.strip().isdigit():
            return int(value)
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.error(path, f"{value!r} must be a whole number ≥ 0")
        if value < 0:
            raise self.error(path, f"{value} must be a whole number ≥ 0")
        return value

    def flag(self, value: Any, path: str) -> bool | None:
        if value is None:
            return None
        if not isinstance(value, bool):
            raise self.error(path, f"{value!r} must be true or false")
        return value

    def strings(self, value: Any, path: str) -> list[str]:
        if value is None:
            return []
        if isinstance(value, str) or not isinstance(value, (list, tuple)):
            raise self.error(path, f"must be a list (one item per line, each starting with '- '), not {value!r}")
        out = []
        for i, item in enumerate(value):
            # YAML turns `- 10` into an int; the API takes strings, so numbers are fine.
            if isinstance(item, bool) or not isinstance(item, (str, int, float)):
                raise self.error(f"{path}[{i}]", f"{item!r} must be text; put it in quotes")
            out.append(str(item))
        return out

    def labels(self, value: Any, path: str) -> dict[str, str]:
        out = {}
        for key, item in self.mapping(value, path).items():
            if isinstance(item, bool) or not isinstance(item, (str, int)):
                raise self.error(f"{path}.{key}", f"{item!r} must be text")
            out[str(key)] = str(item)
        return out

    def duration(self, value: Any, path: str) -> float:
        if isinstance(value, bool) or not isinstance(value, (str, int, float)):
            raise self.error(path, f"{value!r} must be a duration such as '7200s'")
        try:
            return parse_duration(value, flag=f"{self.source}: {path}")
        except SpecError as e:  # its message already names the file and the key
            raise ConfigFileError(str(e)) from None

    def machine(self, value: Any, path: str, accelerator: Accelerator | None) -> str:
        name = self.text(value, path)
        if not name:
            raise self.error(path, "is empty; name a machine type such as n1-standard-4")
        with self.at(path):
            Machine.resolve(name, accelerator)  # validates the pair; build_spec resolves it again
        return name

    def accelerator(self, type_: Any, count: Any, path: str, count_path: str) -> Accelerator | None:
        name = self.text(type_, path)
        if name is None or name == "ACCELERATOR_TYPE_UNSPECIFIED":
            if count not in (None, 0, "0"):
                raise self.error(count_path, f"{count!r} is set but {path} is not; name the accelerator type")
            return None
        n = 1 if count is None else self.count(count, count_path)
        with self.at(path):
            return Accelerator(name, n)


def _bootstrap_module(reader: _Reader, value: Any, path: str) -> str:
    """The module of a container command ``[tfjob-bootstrap, --module, M, --]``, as tfjob renders it."""
    command = reader.strings(value, path)
    if len(command) in (3, 4) and command[:2] == [BOOTSTRAP, "--module"] and command[3:] in ([], ["--"]):
        return command[2]
    raise reader.error(
        path,
        f"{command!r} is not supported: tfjob starts containers through their entrypoint, or as "
        f"[{BOOTSTRAP}, --module, MODULE, --]; put trainer arguments in args",
    )


def _scale_tier(reader: _Reader, value: Any, path: str) -> ScaleTier:
    text = reader.text(value, path) or ""
    try:
        return ScaleTier(text.strip().upper().replace("-", "_"))
    except ValueError:
        names = [t.value for t in ScaleTier]
        raise reader.error(path, f"{value!r} is not a scale tier{did_you_mean(text.upper(), names)}; choose one of {', '.join(names)}") from None


def _package_values(uris: list[str]) -> dict[str, Any]:
    # The first URI is the trainer; the rest are its extra dependencies (built tarballs).
    return {"package": uris[0], "packages": uris[1:]} if uris else {}


# -- legacy ------------------------------------------------------------------------------


def parse_training_input(data: Mapping[str, Any], reader: _Reader, path: str = "trainingInput") -> tuple[dict[str, Any], dict[str, Any] | None]:
    """A legacy ``trainingInput`` → (Job keyword arguments, its ``hyperparameters`` or None)."""
    reader.check_keys(data, path, TRAINING_INPUT_KEYS)
    values: dict[str, Any] = {}
    shared: dict[str, tuple[str, Any]] = {}
    tier = _scale_tier(reader, data["scaleTier"], f"{path}.scaleTier") if data.get("scaleTier") is not None else None
    typed = [role for role in ROLES if data.get(f"{LEGACY_ROLE_PREFIX[role]}Type") is not None]
    if tier is None and typed:
        # AI Platform defaulted to BASIC and then refused machine types; the intent is CUSTOM.
        tier = ScaleTier.CUSTOM
    if tier is not None:
        values["scale_tier"] = tier.value
    if tier not in (None, ScaleTier.CUSTOM):
        fixed = [f"{LEGACY_ROLE_PREFIX[r]}{s}" for r in ROLES for s in ("Type", "Count")]
        fixed += [f"{LEGACY_ROLE_PREFIX[r]}Config" for r in ROLES if "acceleratorConfig" in (data.get(f"{LEGACY_ROLE_PREFIX[r]}Config") or {})]
        given = [key for key in fixed if data.get(key) is not None]
        if given:
            raise reader.error(
                f"{path}.{given[0]}",
                f"is set, but scaleTier {tier.value} fixes the machines and counts; set scaleTier: CUSTOM to choose them",
            )
    for role in ROLES:
        prefix = LEGACY_ROLE_PREFIX[role]
        cfg_path = f"{path}.{prefix}Config"
        cfg = reader.mapping(data.get(f"{prefix}Config"), cfg_path)
        reader.check_keys(cfg, cfg_path, REPLICA_CONFIG_KEYS)
        acc_path = f"{cfg_path}.acceleratorConfig"
        acc_cfg = reader.mapping(cfg.get("acceleratorConfig"), acc_path)
        reader.check_keys(acc_cfg, acc_path, ACCELERATOR_CONFIG_KEYS)
        accelerator = reader.accelerator(acc_cfg.get("type"), acc_cfg.get("count"), f"{acc_path}.type", f"{acc_path}.count")
        if accelerator is not None:
            values[f"{role}_accelerator"] = accelerator
        if data.get(f"{prefix}Type") is not None:
            values[f"{role}_machine_type"] = reader.machine(data[f"{prefix}Type"], f"{path}.{prefix}Type", accelerator)
        if cfg.get("containerCommand") is not None:
            module = _bootstrap_module(reader, cfg["containerCommand"], f"{cfg_path}.containerCommand")
            _same(reader, shared, "module", f"{cfg_path}.containerCommand", module)
        image = reader.text(cfg.get("imageUri"), f"{cfg_path}.imageUri")
        if image and role == "chief":
            values["image"] = image
        elif image and image != values.get("image"):
            # The master's image is every task's unless a role names its own, as on AI Platform.
            values[f"{role}_image"] = image
        if role != "chief" and data.get(f"{prefix}Count") is not None:
            n = reader.count(data[f"{prefix}Count"], f"{path}.{prefix}Count")
            if n:  # 0 is the API's default: no such tasks
                values[{"worker": "workers", "ps": "ps", "evaluator": "evaluators"}[role]] = n
    values.update(_package_values(reader.strings(data.get("packageUris"), f"{path}.packageUris")))
    module = reader.text(data.get("pythonModule"), f"{path}.pythonModule")
    if module is not None:
        _same(reader, shared, "module", f"{path}.pythonModule", module)
    if "module" in shared:
        values["module"] = shared["module"][1]
    simple = {
        "region": "region",
        "jobDir": "job_dir",
        "runtimeVersion": "runtime_version",
        "pythonVersion": "python_version",
        "network": "network",
        "serviceAccount": "service_account",
    }
    for key, name in simple.items():
        value = reader.text(data.get(key), f"{path}.{key}")
        if value is not None:
            values[name] = value
    if data.get("args") is not None:
        values["args"] = reader.strings(data["args"], f"{path}.args")
    for key, name in (("useChiefInTfConfig", "use_chief"), ("enableWebAccess", "enable_web_access")):
        flag = reader.flag(data.get(key), f"{path}.{key}")
        if flag is not None:
            values[name] = flag
    sched_path = f"{path}.scheduling"
    scheduling = reader.mapping(data.get("scheduling"), sched_path)
    reader.check_keys(scheduling, sched_path, LEGACY_SCHEDULING_KEYS)
    if scheduling.get("maxRunningTime") is not None:
        values["timeout"] = reader.duration(scheduling["maxRunningTime"], f"{sched_path}.maxRunningTime")
    tuning = data.get("hyperparameters")
    return values, (reader.mapping(tuning, f"{path}.hyperparameters") if tuning is not None else None)


def _parse_legacy_job(data: Mapping[str, Any], reader: _Reader) -> JobConfig:
    reader.check_keys(data, "", LEGACY_JOB_KEYS, ignored=LEGACY_OUTPUT_ONLY)
    training_input = reader.mapping(data.get("trainingInput"), "trainingInput")
    values, tuning = parse_training_input(training_input, reader)
    job_id = reader.text(data.get("jobId"), "jobId")
    if job_id:
        values["name"] = job_id
    if data.get("labels") is not None:
        values["labels"] = reader.labels(data["labels"], "labels")
    key = "trainingInput.hyperparameters" if tuning is not None else None
    return JobConfig(reader.source, "ai-platform", values, tuning, key)


# -- Vertex ------------------------------------------------------------------------------


def _same(reader: _Reader, found: dict[str, tuple[str, Any]], what: str, path: str, value: Any) -> None:
    """Record a value every pool must share (tfjob gives all tasks one module, one args list…)."""
    if what not in found:
        found[what] = (path, value)
    elif found[what][1] != value:
        first_path, first = found[what]
        raise reader.error(
            path,
            f"{value!r} differs from {first_path} {first!r}; tfjob runs every task with the same {what}, so make them equal",
        )


def _env(reader: _Reader, value: Any, path: str) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, list):
        raise reader.error(path, f"must be a list of {{name: ..., value: ...}}, not {value!r}")
    out = {}
    for i, item in enumerate(value):
        item_path = f"{path}[{i}]"
        item = reader.mapping(item, item_path)
        reader.check_keys(item, item_path, ("name", "value"))
        name = reader.text(item.get("name"), f"{item_path}.name")
        if not name:
            raise reader.error(item_path, "has no name")
        value_ = item.get("value", "")
        out[name] = value_ if isinstance(value_, str) else reader.text(value_, f"{item_path}.value") or ""
    return out


def _parse_pool(reader: _Reader, pool: dict[str, Any], role: str, path: str, values: dict[str, Any], shared: dict[str, tuple[str, Any]]) -> str | None:
    """One worker pool into ``values``; returns the pool's container image, if any."""
    reader.check_keys(pool, path, WORKER_POOL_KEYS)
    ms_path = f"{path}.machineSpec"
    machine_spec = reader.mapping(pool.get("machineSpec"), ms_path)
    reader.check_keys(machine_spec, ms_path, MACHINE_SPEC_KEYS)
    accelerator = reader.accelerator(
        machine_spec.get("acceleratorType"), machine_spec.get("acceleratorCount"), f"{ms_path}.acceleratorType", f"{ms_path}.acceleratorCount"
    )
    if machine_spec.get("machineType") is None:
        raise reader.error(ms_path, "has no machineType; name one such as n1-standard-4 (see `tfjob machines`)")
    values[f"{role}_machine_type"] = reader.machine(machine_spec["machineType"], f"{ms_path}.machineType", accelerator)
    if accelerator is not None:
        values[f"{role}_accelerator"] = accelerator
    replicas = 1 if pool.get("replicaCount") is None else reader.count(pool["replicaCount"], f"{path}.replicaCount")
    if role == "chief" and replicas != 1:
        raise reader.error(
            f"{path}.replicaCount",
            f"{replicas}: pool 0 is the chief and runs exactly 1 replica; put the other replicas in workerPoolSpecs[1]",
        )
    if replicas < 1:
        raise reader.error(f"{path}.replicaCount", "0: write the pool as {} to leave it unused")
    if role != "chief":
        values[{"worker": "workers", "ps": "ps", "evaluator": "evaluators"}[role]] = replicas
    if "containerSpec" in pool and "pythonPackageSpec" in pool:
        raise reader.error(path, "has both containerSpec and pythonPackageSpec; give one")
    if "containerSpec" not in pool and "pythonPackageSpec" not in pool:
        raise reader.error(path, "has neither containerSpec nor pythonPackageSpec; say what the tasks run")
    image = None
    if "containerSpec" in pool:
        spec_path = f"{path}.containerSpec"
        spec = reader.mapping(pool["containerSpec"], spec_path)
        reader.check_keys(spec, spec_path, CONTAINER_SPEC_KEYS)
        image = reader.text(spec.get("imageUri"), f"{spec_path}.imageUri")
        if not image:
            raise reader.error(spec_path, "has no imageUri; name the container image")
        if spec.get("command") is not None:
            module = _bootstrap_module(reader, spec["command"], f"{spec_path}.command")
            _same(reader, shared, "pythonModule", f"{spec_path}.command", module)
    else:
        spec_path = f"{path}.pythonPackageSpec"
        spec = reader.mapping(pool["pythonPackageSpec"], spec_path)
        reader.check_keys(spec, spec_path, PYTHON_PACKAGE_KEYS)
        module = reader.text(spec.get("pythonModule"), f"{spec_path}.pythonModule")
        if module is not None:
            _same(reader, shared, "pythonModule", f"{spec_path}.pythonModule", module)
        uris = reader.strings(spec.get("packageUris"), f"{spec_path}.packageUris")
        if uris:
            _same(reader, shared, "packageUris", f"{spec_path}.packageUris", uris)
        executor = reader.text(spec.get("executorImageUri"), f"{spec_path}.executorImageUri")
        if executor is not None:
            _same(reader, shared, "executorImageUri", f"{spec_path}.executorImageUri", executor)
    if spec.get("args") is not None:
        _same(reader, shared, "args", f"{spec_path}.args", reader.strings(spec["args"], f"{spec_path}.args"))
    if spec.get("env") is not None:
        _same(reader, shared, "env", f"{spec_path}.env", _env(reader, spec["env"], f"{spec_path}.env"))
    return image


def parse_custom_job_spec(data: Mapping[str, Any], reader: _Reader, path: str = "") -> dict[str, Any]:
    """A Vertex ``CustomJobSpec`` → Job keyword arguments."""
    reader.check_keys(data, path, CUSTOM_JOB_SPEC_KEYS)
    at = f"{path}." if path else ""
    pools_path = f"{at}workerPoolSpecs"
    pools = data.get("workerPoolSpecs")
    if not isinstance(pools, list) or not pools:
        raise reader.error(pools_path, "must be a list of 1 to 4 worker pools (chief, workers, parameter servers, evaluators)")
    if len(pools) > len(ROLES):
        raise reader.error(
            pools_path, f"has {len(pools)} pools; tfjob takes at most 4: [0] chief, [1] workers, [2] parameter servers, [3] evaluators"
        )
    values: dict[str, Any] = {}
    shared: dict[str, tuple[str, Any]] = {}
    images: dict[str, str | None] = {}
    for index, pool in enumerate(pools):
        role, pool_path = ROLES[index], f"{pools_path}[{index}]"
        pool = reader.mapping(pool, pool_path)
        if not pool:
            if index == 0:
                raise reader.error(pool_path, "is empty; pool 0 is the chief, which every job has")
            continue  # `{}` keeps the positions of the pools after an unused one
        images[role] = _parse_pool(reader, pool, role, pool_path, values, shared)
    used = [img for img in images.values() if img]
    if used and len(used) == len(images) and len(set(used)) == 1:
        values["image"] = used[0]
    else:
        values.update({f"{role}_image": img for role, img in images.items() if img})
    names = {"pythonModule": "module", "executorImageUri": "executor_image", "args": "args", "env": "env"}
    for key, (_, value) in shared.items():
        if key == "packageUris":
            values.update(_package_values(value))
        else:
            values[names[key]] = value
    for key, name in (("serviceAccount", "service_account"), ("network", "network"), ("tensorboard", "tensorboard")):
        value = reader.text(data.get(key), f"{at}{key}")
        if value is not None:
            values[name] = value
    web = reader.flag(data.get("enableWebAccess"), f"{at}enableWebAccess")
    if web is not None:
        values["enable_web_access"] = web
    out_path = f"{at}baseOutputDirectory"
    output = reader.mapping(data.get("baseOutputDirectory"), out_path)
    reader.check_keys(output, out_path, ("outputUriPrefix",))
    job_dir = reader.text(output.get("outputUriPrefix"), f"{out_path}.outputUriPrefix")
    if job_dir:
        values["job_dir"] = job_dir
        if values.get("args", [])[-2:] == ["--job-dir", job_dir]:
            # tfjob's Vertex rendering passes the job dir on, as AI Platform did; it will again.
            values["args"] = values["args"][:-2]
    sched_path = f"{at}scheduling"
    scheduling = reader.mapping(data.get("scheduling"), sched_path)
    reader.check_keys(scheduling, sched_path, VERTEX_SCHEDULING_KEYS)
    if scheduling.get("timeout") is not None:
        values["timeout"] = reader.duration(scheduling["timeout"], f"{sched_path}.timeout")
    restart = reader.flag(scheduling.get("restartJobOnWorkerRestart"), f"{sched_path}.restartJobOnWorkerRestart")
    if restart is not None:
        values["restart_job_on_worker_restart"] = restart
    return values


def _parse_vertex_job(data: Mapping[str, Any], reader: _Reader, spec_key: str, known: Iterable[str], ignored: Iterable[str]) -> dict[str, Any]:
    """A ``CustomJob`` (spec under ``jobSpec``) or tuning job (under ``trialJobSpec``)."""
    reader.check_keys(data, "", known, ignored=ignored)
    if spec_key not in data:
        raise reader.error(spec_key, "is missing; it holds the job's workerPoolSpecs")
    values = parse_custom_job_spec(reader.mapping(data[spec_key], spec_key), reader, spec_key)
    name = reader.text(data.get("displayName"), "displayName")
    if name:
        values["name"] = name
    if data.get("labels") is not None:
        values["labels"] = reader.labels(data["labels"], "labels")
    return values


#: Top-level keys that belong one level down, with where to put them.
_MISPLACED = {
    **{key: "it belongs under trainingInput:" for key in TRAINING_INPUT_KEYS},
    "machineSpec": "it belongs inside an item of workerPoolSpecs:",
    "replicaCount": "it belongs inside an item of workerPoolSpecs:",
}


def parse_job_config(data: Any, source: str = "config") -> JobConfig:
    """Parse a configuration document (already read from YAML/JSON). Pure.

    Args:
        data: the document: a legacy ``Job`` (``trainingInput``), a Vertex
            ``CustomJobSpec`` (``workerPoolSpecs``) or ``CustomJob`` (``jobSpec``), or a
            Vertex ``HyperparameterTuningJob`` (``studySpec`` + ``trialJobSpec``).
        source: the file name, used in every message.

    Raises:
        ConfigFileError: a key tfjob does not know or cannot honour, or a bad value.
    """
    reader = _Reader(source)
    if data is None:
        raise ConfigFileError(f"{source}: the file is empty; write a trainingInput: or workerPoolSpecs: section")
    if not isinstance(data, Mapping):
        raise ConfigFileError(f"{source}: expected a mapping (trainingInput: or workerPoolSpecs:), not {type(data).__name__}")
    if "trainingInput" in data:
        return _parse_legacy_job(data, reader)
    if "workerPoolSpecs" in data:
        return JobConfig(source, "vertex", parse_custom_job_spec(data, reader))
    if "jobSpec" in data:
        return JobConfig(source, "vertex", _parse_vertex_job(data, reader, "jobSpec", CUSTOM_JOB_KEYS, CUSTOM_JOB_OUTPUT_ONLY))
    if "studySpec" in data or "trialJobSpec" in data:
        values = _parse_vertex_job(data, reader, "trialJobSpec", TUNING_JOB_KEYS, TUNING_JOB_OUTPUT_ONLY)
        tuning = {k: v for k, v in data.items() if k in TUNING_JOB_KEYS and k not in ("displayName", "labels", "trialJobSpec")}
        return JobConfig(source, "vertex", values, tuning, "studySpec")
    reader.check_keys(data, "", ("trainingInput", "workerPoolSpecs", "jobSpec"), hint=_MISPLACED)
    raise ConfigFileError(f"{source}: has no trainingInput: (AI Platform) or workerPoolSpecs: (Vertex AI) section; nothing to run")


#: Keys that describe the cluster's shape; a predefined --scale-tier flag replaces them all.
_SHAPE_KEYS = (
    "workers", "ps", "evaluators",
    *(f"{role}_{what}" for role in ROLES for what in ("machine_type", "accelerator")),
)


def merge_config_values(file_values: Mapping[str, Any], explicit: Mapping[str, Any]) -> dict[str, Any]:
    """The file's values overridden by explicit ones (flags, keywords), as gcloud merges them. Pure.

    Beyond key-by-key replacement, a flag that stands for several keys replaces them
    all: a predefined ``scale_tier`` drops the file's counts, machine types and
    accelerators; ``accelerator`` drops the file's per-role accelerators (not the
    parameter servers', which it does not cover); ``image`` drops per-role images.
    """
    merged = dict(file_values)
    tier = explicit.get("scale_tier")
    if tier is not None and ScaleTier.parse(tier) is not ScaleTier.CUSTOM:
        for key in _SHAPE_KEYS:
            merged.pop(key, None)
    if explicit.get("accelerator") is not None:
        for role in ("chief", "worker", "evaluator"):
            merged.pop(f"{role}_accelerator", None)
    if explicit.get("image") is not None:
        for role in ROLES:
            merged.pop(f"{role}_image", None)
    merged.update({k: v for k, v in explicit.items() if v is not None})
    return merged


def read_config_file(path: str | Path) -> Any:
    """The document in a YAML or JSON file (``.json`` is read as JSON, anything else as YAML)."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigFileError(f"--config {str(path)!r}: no such file") from None
    except (OSError, UnicodeDecodeError) as e:
        raise ConfigFileError(f"--config {str(path)!r}: cannot read it: {e}") from None
    if path.suffix.lower() == ".json":
        try:
            return json.loads(text)
        except json.JSONDecodeError as e:
            raise ConfigFileError(f"{path}: not valid JSON: {e}") from None
    import yaml  # only when a config file is used

    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as e:
        where = getattr(e, "problem_mark", None)
        line = f" (line {where.line + 1})" if where is not None else ""
        problem = getattr(e, "problem", None) or str(e).splitlines()[0]
        raise ConfigFileError(f"{path}: not valid YAML{line}: {problem}") from None


def load_job_config(path: str | Path) -> dict[str, Any]:
    """Read a ``--config`` file: keyword arguments of :class:`tfjob.Job`.

    Args:
        path: a legacy ``trainingInput`` or Vertex ``CustomJobSpec`` file, YAML or JSON.

    Raises:
        ConfigFileError: the file cannot be read, has an unknown key or a bad value,
            or describes a hyperparameter-tuning job (use ``tfjob tune --hparams``).
    """
    config = parse_job_config(read_config_file(path), str(path))
    if config.tuning is not None:
        raise ConfigFileError(
            f"{path}: {config.tuning_key} describes hyperparameter tuning, which `tfjob submit` does not run; "
            f"use `tfjob tune --hparams {path}`"
        )
    return config.values
