"""A Kubeflow TFJob v1 manifest as the ``tfjob submit`` command that runs the same job (pure).

Kubeflow Trainer v2 ships no TensorFlow runtime and the training operator's TFJob v1 is
going away; ``tfjob import tfjob.yaml --backend trainjob`` (or ``jobset``, ``kubeflow``)
prints the command that renders and submits the same replicas, image, program, arguments,
environment, resources and run policy through tfjob. What has no flag (volumes, node
selectors, tolerations…) is named in a note: it belongs in a ``--pod-template`` file.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from typing import Any

from ..errors import SpecError

#: TFJob replica type → tfjob role (``Master`` is the older name of the chief).
ROLES = {"chief": "chief", "master": "chief", "worker": "worker", "ps": "ps", "evaluator": "evaluator"}
#: The run-policy flags only the TFJob resource has (JobSet and TrainJob refuse them).
TFJOB_ONLY = ("--restart-policy", "--clean-pod-policy", "--min-available")
#: Pod fields tfjob writes itself (or maps to flags); anything else in the pod goes in a --pod-template.
_POD_HANDLED = {"containers", "restartPolicy"}
_CONTAINER_HANDLED = {"name", "image", "command", "args", "env", "resources", "ports", "imagePullPolicy"}
_PYTHONS = ("python", "python3", "/usr/bin/python", "/usr/bin/python3", "/usr/local/bin/python", "/usr/local/bin/python3")
_BACKENDS = ("trainjob", "jobset", "kubeflow")


@dataclass
class Imported:
    """What ``tfjob import`` found: the ``tfjob submit`` arguments and what it could not carry."""

    argv: list[str]
    notes: list[str] = field(default_factory=list)

    def command(self) -> str:
        return "tfjob submit " + " ".join(shlex.quote(a) for a in self.argv)


def _where(path: str, value: Any, kind: type, what: str) -> Any:
    if not isinstance(value, kind):
        raise SpecError(f"{path} must be {what}, not {type(value).__name__}")
    return value


def _program(path: str, container: dict[str, Any]) -> tuple[list[str], list[str]]:
    """(the tfjob flags naming the program, the program's own arguments) of a container."""
    command = [str(c) for c in _where(f"{path}.command", container.get("command") or [], list, "a list")]
    args = [str(a) for a in _where(f"{path}.args", container.get("args") or [], list, "a list")]
    words = command + args
    if not words:
        raise SpecError(
            f"{path} has no command or args: tfjob starts every task through its bootstrap, which needs the "
            "Python module (-m) or script the image's entry point runs; add it to the manifest"
        )
    if words[0] not in _PYTHONS and not words[0].split("/")[-1].startswith("python"):
        raise SpecError(
            f"{path}.command {words[0]!r} is not Python: tfjob starts every task through its bootstrap, which runs "
            "a Python module (python -m M) or script (python FILE); write the command so"
        )
    rest = words[1:]
    while rest and rest[0] in ("-u", "-B", "-O"):
        rest = rest[1:]
    if len(rest) >= 2 and rest[0] == "-m":
        return ["--module-name", rest[1]], rest[2:]
    if rest and not rest[0].startswith("-"):
        return ["--script", rest[0]], rest[1:]
    raise SpecError(f"{path}: {' '.join(words)!r} names no module (-m M) or script to run")


def _quantities(path: str, resources: Any) -> dict[str, str]:
    """``cpu``, ``memory`` and ``gpu`` of a container's limits (else requests)."""
    resources = _where(path, resources or {}, dict, "a mapping")
    chosen = resources.get("limits") or resources.get("requests") or {}
    chosen = _where(path, chosen, dict, "a mapping")
    out = {}
    for key, name in (("cpu", "cpu"), ("memory", "memory"), ("nvidia.com/gpu", "gpu")):
        if key in chosen:
            out[name] = str(chosen[key])
    return out


def import_tfjob(document: Any, *, backend: str = "trainjob", source: str = "the manifest", extra: list[str] | None = None) -> Imported:
    """The ``tfjob submit`` arguments that run the TFJob v1 ``document`` on ``backend``
    (``extra``: more ``tfjob submit`` flags, put ahead of the trainer's arguments).

    Raises:
        SpecError: not a TFJob v1, or a job tfjob cannot run as written (one line naming the field).
    """
    if backend not in _BACKENDS:
        raise SpecError(field="backend", value=backend, problem=f": a TFJob imports to one of {', '.join(_BACKENDS)}")
    doc = _where(source, document, dict, "a TFJob manifest (a mapping)")
    if doc.get("kind") != "TFJob" or not str(doc.get("apiVersion", "")).startswith("kubeflow.org/"):
        raise SpecError(f"{source} is a {doc.get('apiVersion')}/{doc.get('kind')}, not a Kubeflow TFJob (kubeflow.org/v1, kind: TFJob)")
    meta = _where("metadata", doc.get("metadata") or {}, dict, "a mapping")
    spec = _where("spec", doc.get("spec") or {}, dict, "a mapping")
    replicas = _where("spec.tfReplicaSpecs", spec.get("tfReplicaSpecs"), dict, "a mapping of replica types")
    found = _Replicas()
    for kind, replica in replicas.items():
        _read_replica(found, kind, replica)
    if not found.counts.get("worker") and "chief" not in found.counts:
        raise SpecError("spec.tfReplicaSpecs has no Chief, Master or Worker: no task would train")
    first = _one_program(found.programs)
    common_env = [e for e in next(iter(found.envs.values())) if all(e in v for v in found.envs.values())]
    if any(set(v) != set(common_env) for v in found.envs.values()):
        found.notes.append(
            "the replicas' environments differ: only the variables they share are imported (Job(chief_env=…, worker_env=…) sets the rest)"
        )

    argv: list[str] = [*first[0], "--backend", backend]
    name, namespace = meta.get("name"), meta.get("namespace")
    if name:
        argv += ["--display-name", str(name)]
    if namespace:
        argv += ["--namespace", str(namespace)]
    argv += _shape_flags(found, common_env)
    argv += _run_policy_flags(spec, backend, found)
    if spec.get("enableDynamicWorker") or spec.get("successPolicy"):
        found.notes.append(
            "spec.enableDynamicWorker / successPolicy: tfjob's job succeeds when its chief (or worker 0) ends well; not imported"
        )
    if extra:
        if "--" in extra:
            raise SpecError("tfjob import: the trainer's arguments come from the manifest; give only tfjob submit flags after the file")
        argv += extra
    trainer_args = first[1]
    if trainer_args:
        argv += ["--", *trainer_args]
    return Imported(argv, found.notes)


@dataclass
class _Replicas:
    """What the replica specs say, by role (``chief``, ``worker``…), and what was not imported."""

    counts: dict[str, int] = field(default_factory=dict)
    programs: dict[str, tuple[list[str], list[str]]] = field(default_factory=dict)
    images: dict[str, str] = field(default_factory=dict)
    envs: dict[str, list[str]] = field(default_factory=dict)
    resources: dict[str, dict[str, str]] = field(default_factory=dict)
    restart: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


def _read_replica(found: _Replicas, kind: Any, replica: Any) -> None:
    """One ``tfReplicaSpecs`` entry into ``found``."""
    role = ROLES.get(str(kind).lower())
    path = f"spec.tfReplicaSpecs.{kind}"
    if role is None:
        raise SpecError(f"{path}: {kind!r} is not a TFJob replica type (Chief, Master, Worker, PS, Evaluator)")
    if role in found.counts:
        raise SpecError(f"{path}: a second chief (Chief and Master both given); a TFJob has one")
    replica = _where(path, replica, dict, "a mapping")
    count = replica.get("replicas", 1)
    if isinstance(count, bool) or not isinstance(count, int) or count < 0:
        raise SpecError(f"{path}.replicas must be a whole number ≥ 0, not {count!r}")
    if role == "chief" and count != 1:
        raise SpecError(f"{path}.replicas is {count}: a job has exactly one chief")
    found.counts[role] = count
    pod = _where(f"{path}.template.spec", (replica.get("template") or {}).get("spec"), dict, "a pod spec")
    containers = _where(f"{path}.template.spec.containers", pod.get("containers"), list, "a list")
    mine = [c for c in containers if isinstance(c, dict) and c.get("name") == "tensorflow"] or containers[:1]
    if not mine or not isinstance(mine[0], dict):
        raise SpecError(f"{path}.template.spec.containers holds no container")
    container = mine[0]
    cpath = f"{path}.template.spec.containers[{container.get('name', 0)}]"
    found.images[role] = str(_where(f"{cpath}.image", container.get("image"), str, "an image reference"))
    found.programs[role] = _program(cpath, container)
    found.envs[role] = _env(cpath, container, found.notes)
    found.resources[role] = _quantities(f"{cpath}.resources", container.get("resources"))
    if replica.get("restartPolicy"):
        found.restart[role] = str(replica["restartPolicy"])
    leftover = sorted(set(pod) - _POD_HANDLED) + [
        f"containers[{container.get('name', 0)}].{k}" for k in sorted(set(container) - _CONTAINER_HANDLED)
    ]
    if len(containers) > 1:
        leftover.append("a sidecar container")
    if leftover:
        found.notes.append(
            f"{path}: {', '.join(leftover)} not imported; put them in a --pod-template file (tfjob merges it into every pod)"
        )


def _env(cpath: str, container: dict[str, Any], notes: list[str]) -> list[str]:
    """A container's ``env`` as ``NAME=VALUE`` (what has no flag: a note in ``notes``)."""
    env = []
    for item in _where(f"{cpath}.env", container.get("env") or [], list, "a list"):
        item = _where(f"{cpath}.env[]", item, dict, "a mapping")
        if "valueFrom" in item:
            notes.append(f"{cpath}.env {item.get('name')}: valueFrom (a secret or field) has no flag; put it in a --pod-template")
            continue
        name, value = item.get("name"), item.get("value", "")
        if not isinstance(name, str) or not name:
            notes.append(f"{cpath}.env: an entry with no name (value {str(value)[:40]!r}) is not a variable; left out")
            continue
        env.append(f"{name}={'' if value is None else value}")
    return env


def _one_program(programs: dict[str, tuple[list[str], list[str]]]) -> tuple[list[str], list[str]]:
    """The one program every replica runs (tfjob runs one on every task)."""
    first = next(iter(programs.values()))
    for role, program in programs.items():
        if program != first:
            raise SpecError(
                f"the replicas run different programs ({' '.join(first[0] + first[1])!r} and {' '.join(program[0] + program[1])!r} "
                f"for {role}): tfjob runs one program on every task; make it one that reads its role from TF_CONFIG"
            )
    return first


def _shape_flags(found: _Replicas, common_env: list[str]) -> list[str]:
    """The images, counts, shared environment and resources as ``tfjob submit`` flags."""
    argv: list[str] = []
    distinct = set(found.images.values())
    if len(distinct) == 1:
        argv += ["--image", distinct.pop()]
    else:
        for role, image in found.images.items():
            argv += [f"--{role}-image", image]
    if "chief" not in found.counts:
        argv.append("--no-chief")
    for role, flag in (("worker", "--workers"), ("ps", "--ps"), ("evaluator", "--evaluators")):
        if found.counts.get(role):
            argv += [flag, str(found.counts[role])]
    for item in common_env:
        argv += ["--env", item]
    for quantity in ("cpu", "memory", "gpu"):
        values = {role: r[quantity] for role, r in found.resources.items() if quantity in r}
        if len(set(values.values())) == 1 and len(values) == len(found.resources):
            argv += [f"--{quantity}", next(iter(values.values()))]
        else:
            for role, value in values.items():
                argv += [f"--{quantity}", f"{role}={value}"]
    return argv


def _run_policy_flags(spec: dict[str, Any], backend: str, found: _Replicas) -> list[str]:
    """``spec.runPolicy`` and the replicas' restart policies as the flags ``backend`` takes
    (the TFJob-only ones that it has no field for: a note)."""
    argv: list[str] = []
    run = _where("spec.runPolicy", spec.get("runPolicy") or {}, dict, "a mapping")
    scheduling = _where("spec.runPolicy.schedulingPolicy", run.get("schedulingPolicy") or {}, dict, "a mapping")
    policy: list[str] = []
    for role, value in found.restart.items():
        if backend in ("jobset", "trainjob") and value.lower() != "always":
            # A JobSet's Jobs take Never, OnFailure and ExitCode (as a podFailurePolicy).
            argv += ["--restart-policy", f"{role}={value}"]
        else:
            policy += ["--restart-policy", f"{role}={value}"]
    if run.get("cleanPodPolicy"):
        policy += ["--clean-pod-policy", str(run["cleanPodPolicy"])]
    if scheduling.get("minAvailable") is not None:
        policy += ["--min-available", str(scheduling["minAvailable"])]
    if backend == "kubeflow":
        argv += policy
    elif policy:
        dropped = sorted({p for p in policy if p.startswith("--")})
        found.notes.append(f"{', '.join(dropped)}: TFJob-only run policy, which --backend {backend} has no field for; left out")
    if run.get("backoffLimit") is not None:
        argv += ["--backoff-limit", str(run["backoffLimit"])]
    if run.get("ttlSecondsAfterFinished") is not None:
        argv += ["--ttl", str(run["ttlSecondsAfterFinished"])]
    if run.get("suspend"):
        argv.append("--suspend")
    if scheduling.get("queue"):
        argv += ["--queue", str(scheduling["queue"])]
    if scheduling.get("priorityClass"):
        argv += ["--priority-class", str(scheduling["priorityClass"])]
    return argv
