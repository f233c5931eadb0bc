"""Kubernetes pods as the user wants them (issue 16.7): explicit resources per role and a
partial pod template merged into every replica (per role if given).

Pure functions, no I/O beyond reading the template file through the bounded config reader.

``--cpu``, ``--memory`` and ``--gpu`` take ``VALUE`` (every role) or ``ROLE=VALUE`` (one
role, repeatable; a role's own value wins). Given for a role, they replace what its
machine type implies (requests equal limits, as for a machine type); a role without them
keeps the machine type's amounts.

``--pod-template FILE`` is YAML: a pod template (``metadata`` and/or ``spec``) for every
replica, or a mapping of roles (``chief``, ``worker``, ``ps``, ``evaluator``, and
``default`` for every role) to pod templates; a role's template is merged after ``default``. It is merged into what tfjob renders:
mappings merge key by key (the template wins on a scalar), the ``tensorflow`` container
merges with tfjob's (its ``env`` by name, other lists appended), other containers
(sidecars), volumes, tolerations, imagePullSecrets and the like are appended. tfjob's
own ``command``/``args``/``image``/``ports`` of the ``tensorflow`` container, and the
operator's labels, cannot be replaced: the template that tries is refused by key.
"""

from __future__ import annotations

import copy
import re
from typing import Any, Iterable, Mapping

from ...errors import SpecError, UsageError, Word
from ...description.spec import ROLES

#: Keys of a replica's pod template tfjob accepts at the top.
TEMPLATE_KEYS = ("metadata", "spec")
#: Keys of the ``tensorflow`` container that tfjob owns (the bootstrap, the image, the port).
OWNED_CONTAINER_KEYS = ("name", "image", "command", "args", "ports")
#: Kubernetes resource quantities (``500m``, ``2``, ``16Gi``, ``1e3``).
_QUANTITY_RE = re.compile(r"^[+]?(\d+(\.\d*)?|\.\d+)([eE][-+]?\d+|[KMGTPE]i?|[munkMGTPE])?\Z")
_PREFIXED_KEY_RE = re.compile(
    r"^(([a-z0-9]([-a-z0-9]*[a-z0-9])?\.)*[a-z0-9]([-a-z0-9]*[a-z0-9])?/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?\Z"
)
_LABEL_VALUE_RE = re.compile(r"^([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?\Z")


def parse_role_values(values: Any, field: str) -> dict[str, str]:
    """``["4", "worker=8"]`` (or ``"4"``, or ``{"worker": "8"}``) → ``{"default": "4", "worker": "8"}``, for knob ``field``.

    Raises:
        SpecError: an unknown role, or a role given twice.
    """
    if values is None:
        return {}
    if isinstance(values, Mapping):
        items = [(str(k), v) for k, v in values.items()]
    else:
        if isinstance(values, (str, int, float)):
            values = [values]
        items = []
        for value in values:
            text = str(value)
            role, sep, rest = text.partition("=")
            items.append((role.strip(), rest.strip()) if sep else ("default", text.strip()))
    out: dict[str, str] = {}
    for role, value in items:
        if role not in (*ROLES, "default"):
            raise SpecError(
                field=field,
                value=Word(f"{role}={value}"),
                problem=f": {role!r} is not a role",
                fix=f"use VALUE for every role or ROLE=VALUE ({', '.join(ROLES)})",
            )
        if role in out:
            raise SpecError(field=field, problem=f"is given twice for {'every role' if role == 'default' else role}")
        out[role] = str(value)
    return out


#: The pod volume tfjob ships the trainer's packages in (a ConfigMap, :mod:`.shipment`).
VOLUME = "tfjob-packages"


def kubelet_literal(arg: Any) -> str:
    """``arg`` as a container's ``command``/``args`` entry that reaches the process as typed.

    The kubelet expands ``$(VAR)`` in a container's command and args (and reads ``$$`` as
    one ``$``); every ``$`` doubled, nothing is expanded and the trainer gets exactly what
    it gets on every other backend (``--lr=$(LR)`` stays ``--lr=$(LR)``).
    """
    return str(arg).replace("$", "$$")


def check_quantity(value: str, field: str) -> str:
    if isinstance(value, bool) or not _QUANTITY_RE.match(str(value)) or len(str(value)) > 32:
        raise SpecError(field=field, value=value, problem="is not a Kubernetes quantity (e.g. 500m or 2 CPUs, 16Gi of memory)")
    return str(value)


def role_resources(role: str, cpu: Mapping[str, str], memory: Mapping[str, str], gpu: Mapping[str, str]) -> dict[str, Any]:
    """The explicit amounts for ``role`` (empty: none given)."""
    out: dict[str, Any] = {}
    for key, given in (("cpu", cpu), ("memory", memory)):
        value = given.get(role, given.get("default"))
        if value is not None:
            out[key] = check_quantity(value, key)
    count = gpu.get(role, gpu.get("default"))
    if count is not None:
        if not (str(count).isascii() and str(count).isdigit()) or len(str(count)) > 4:
            raise SpecError(field="gpu", value=count, problem="must be a whole number of GPUs")
        out["nvidia.com/gpu"] = int(count)
    return out


class PodTemplates(dict):  # type: ignore[type-arg]
    """``{role or "default": pod template}``, and the file they came from (``source``)."""

    source: str = ""


def load_pod_template(path: str) -> dict[str, dict[str, Any]]:
    """The template file as ``{role or "default": pod template}``, checked.

    Raises:
        UsageError: the file cannot be read or is not a pod template (naming the key).
    """
    from ...config.files import read_config_file

    data = read_config_file(path, "pod_template")
    if not isinstance(data, Mapping) or not data:
        raise UsageError(
            field="pod_template", value=str(path), problem="must be a pod template (metadata, spec) or a mapping of roles to pod templates"
        )
    if set(data) <= set(TEMPLATE_KEYS):
        templates = {"default": dict(data)}
    elif set(data) <= {*ROLES, "default"}:
        templates = {str(k): v for k, v in data.items()}
    else:
        unknown = sorted(set(map(str, data)) - {*TEMPLATE_KEYS, *ROLES, "default"})
        if not unknown:  # both kinds of key: `default:` beside `spec:`
            template_keys = sorted(set(map(str, data)) & set(TEMPLATE_KEYS))
            roles = sorted(set(map(str, data)) - set(TEMPLATE_KEYS))
            raise UsageError(
                field="pod_template",
                value=str(path),
                problem=f"mixes pod template keys ({', '.join(template_keys)}) with roles ({', '.join(roles)})",
                fix="give one pod template, or put it under a role (default: for every role)",
            )
        raise UsageError(
            field="pod_template",
            value=str(path),
            problem=f": {unknown[0]!r} is neither a pod template key (metadata, spec) nor a role ({', '.join(ROLES)}, default)",
        )
    for role, template in templates.items():
        where = str(path) + ("" if role == "default" and set(data) <= set(TEMPLATE_KEYS) else f": {role}")
        if not isinstance(template, Mapping) or not set(template) <= set(TEMPLATE_KEYS):
            raise UsageError(f"{where} must be a pod template: metadata and/or spec")
        _check_template(template, where)
    loaded = PodTemplates(templates)
    loaded.source = str(path)
    return loaded


def _check_template(template: Mapping[str, Any], where: str) -> None:
    metadata = template.get("metadata") or {}
    if not isinstance(metadata, Mapping):
        raise UsageError(f"{where}: metadata must be a mapping")
    for kind in ("labels", "annotations"):
        entries = metadata.get(kind) or {}
        if not isinstance(entries, Mapping):
            raise UsageError(f"{where}: metadata.{kind} must be a mapping")
        for key, value in entries.items():
            if not isinstance(key, str) or len(key) > 316 or not _PREFIXED_KEY_RE.match(key):
                raise UsageError(f"{where}: metadata.{kind} key {key!r} is not a Kubernetes key (prefix/name)")
            if reserved_label(key):
                raise UsageError(f"{where}: metadata.{kind} {key} is the operator's; leave it out")
            if kind == "labels" and (not isinstance(value, str) or not _LABEL_VALUE_RE.match(value)):
                raise UsageError(f"{where}: metadata.labels {key}={value!r} is not a Kubernetes label value")
            if kind == "annotations" and not isinstance(value, str):
                raise UsageError(f"{where}: metadata.annotations {key} must be text")
    spec = template.get("spec") or {}
    if not isinstance(spec, Mapping):
        raise UsageError(f"{where}: spec must be a mapping (a PodSpec)")
    containers = spec.get("containers") or []
    if not isinstance(containers, list) or not all(isinstance(c, Mapping) for c in containers):
        raise UsageError(f"{where}: spec.containers must be a list of containers")
    for container in containers:
        if container.get("name") == "tensorflow":
            owned = sorted(set(container) & set(OWNED_CONTAINER_KEYS) - {"name"})
            if owned:
                raise UsageError(
                    problem=f"{where}: spec.containers[tensorflow].{owned[0]} is tfjob's (the bootstrap, {{image}} and the cluster port)",
                    fix="set it with tfjob's own settings instead",
                )
            _check_own_env(container.get("env"), where)
        elif not container.get("name") or not container.get("image"):
            raise UsageError(f"{where}: a sidecar in spec.containers needs a name and an image")
    _check_own_volumes(spec, where)
    # The types of everything else: against the Kubernetes schema, once merged (render_pod_template).


#: Label (and annotation) key prefixes the operators and the Job controller set on a job's
#: objects and pods (a user's would be overwritten, or make them lose track of their pods).
RESERVED_LABEL_PREFIXES = (
    "training.kubeflow.org/",
    "kubeflow.org/",
    "jobset.sigs.k8s.io/",
    "trainer.kubeflow.org/",
    "batch.kubernetes.io/",
)
#: Single keys of the same kind: the Job controller's own (on a JobSet's pods).
RESERVED_LABEL_KEYS = ("job-name", "controller-uid")


def reserved_label(key: str) -> bool:
    """A label key the operator or the Job controller sets."""
    return key in RESERVED_LABEL_KEYS or key.startswith(RESERVED_LABEL_PREFIXES)


def reserved_env(name: str) -> bool:
    """A variable tfjob or the platform sets in the ``tensorflow`` container: what ``--env``
    refuses, and the JobSet variables the bootstrap derives the cluster from."""
    from ...cluster.jobset import COMPLETION_INDEX_VAR, JOB_INDEX_VAR, JOBSET_NAME_VAR, REPLICATED_JOB_VAR
    from ...description.spec import RESERVED_ENV, RESERVED_ENV_PREFIXES

    jobset = (JOBSET_NAME_VAR, REPLICATED_JOB_VAR, JOB_INDEX_VAR, COMPLETION_INDEX_VAR)
    return name in RESERVED_ENV or name in jobset or name.startswith(RESERVED_ENV_PREFIXES)


def _check_own_env(env: Any, where: str) -> None:
    if not isinstance(env, list):
        return  # a wrong type is said by the schema check
    for item in env:
        name = item.get("name") if isinstance(item, Mapping) else None
        if isinstance(name, str) and reserved_env(name):
            raise UsageError(
                problem=f"{where}: spec.containers[tensorflow].env {name} is set by tfjob and the platform in every task ({{env}} refuses it too)",
                fix="choose another name",
            )


def _check_own_volumes(spec: Mapping[str, Any], where: str) -> None:
    """The volume tfjob ships the trainer's packages in, and its mount, are not the template's."""
    from ...cluster.dispatch import PACKAGES_MOUNT

    for volume in spec.get("volumes") or [] if isinstance(spec.get("volumes"), list) else []:
        if isinstance(volume, Mapping) and volume.get("name") == VOLUME:
            raise UsageError(f"{where}: spec.volumes {VOLUME} is tfjob's (it ships the trainer's packages); name the volume otherwise")
    for kind in ("containers", "initContainers"):
        for container in spec.get(kind) or [] if isinstance(spec.get(kind), list) else []:
            mounts = container.get("volumeMounts") if isinstance(container, Mapping) else None
            for mount in mounts if isinstance(mounts, list) else []:
                if not isinstance(mount, Mapping):
                    continue
                target = str(mount.get("mountPath") or "").rstrip("/")
                if mount.get("name") == VOLUME or target == PACKAGES_MOUNT or target.startswith(PACKAGES_MOUNT + "/"):
                    raise UsageError(
                        f"{where}: spec.{kind}[{container.get('name')}].volumeMounts {mount.get('name')} at "
                        f"{mount.get('mountPath')} is tfjob's ({VOLUME} at {PACKAGES_MOUNT}); mount elsewhere"
                    )


def _merge_named(ours: list[Any], theirs: list[Any]) -> list[Any]:
    by_name = {item.get("name"): i for i, item in enumerate(ours) if isinstance(item, Mapping)}
    out = list(ours)
    for item in theirs:
        name = item.get("name") if isinstance(item, Mapping) else None
        if name is not None and name in by_name:
            out[by_name[name]] = merge(out[by_name[name]], item)
        else:
            out.append(copy.deepcopy(item))
    return out


#: Lists merged by ``name`` (a template entry of the same name merges into tfjob's).
_NAMED_LISTS = ("containers", "env", "volumeMounts", "volumes", "initContainers")


def merge(ours: Any, theirs: Any, key: str | None = None) -> Any:
    """``theirs`` merged into ``ours`` (see the module's rules); neither is changed."""
    if isinstance(ours, Mapping) and isinstance(theirs, Mapping):
        out = dict(copy.deepcopy(ours))
        for k, v in theirs.items():
            out[k] = merge(out[k], v, k) if k in out else copy.deepcopy(v)
        return out
    if isinstance(ours, list) and isinstance(theirs, list):
        if key in _NAMED_LISTS:
            return _merge_named(ours, theirs)
        return [*copy.deepcopy(ours), *copy.deepcopy(theirs)]
    return copy.deepcopy(theirs)


def apply_template(template: dict[str, Any], templates: Mapping[str, Mapping[str, Any]], role: str) -> dict[str, Any]:
    """A replica's rendered pod template with the user's merged in: ``default`` first, then its role's."""
    for key in ("default", role):
        if templates.get(key):
            template = merge(template, templates[key])
    return template


def gke_accelerator_label(accelerator: str) -> str:
    """GKE's node label value for an accelerator (``NVIDIA_TESLA_T4`` → ``nvidia-tesla-t4``)."""
    return accelerator.lower().replace("_", "-")


def known_roles(values: Iterable[Mapping[str, Any]], pools: Iterable[str], knobs: str) -> None:
    """Refuse a per-role value for a role the job does not have (``knobs`` names the knobs that take one, as ``{cpu} or {gpu}``)."""
    present = set(pools)
    for given in values:
        for role in given:
            if role != "default" and role not in present:
                raise SpecError(problem=f"{knobs} names {role}, but the job has no {role} pool")
