"""Trainer packages shipped to Kubernetes pods without an image rebuild (pure).

``tfjob submit DIR -m M --image <the tfjob base image> --backend kubeflow|jobset|trainjob``
ships the trainer's sdist (and local ``--packages``) in a ``ConfigMap`` of the job
(``<job>-packages``, ``binaryData``), mounted read-only at :data:`MOUNT` in every pod,
and starts each task as ``tfjob-bootstrap --package /tfjob/packages/<file> … --module M``:
the bootstrap pip-installs them before it dispatches the role, as it does for
``--package`` on any backend. ``gs://`` packages are not copied: the bootstrap downloads
them in the pod (with the node's or workload identity's credentials).

A ConfigMap holds at most 1 MiB; a bigger trainer is refused before anything is sent,
with the two ways out (stage it as ``gs://`` and give its URI, or build it into the image).
The ConfigMap is owned by the job (``ownerReferences``), so deleting the job deletes it.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass, field
from typing import Any, Iterator, Mapping

from ...cluster.dispatch import PACKAGES_MOUNT as MOUNT  # where the job's packages are mounted in every pod
from ...errors import SpecError

#: The most bytes of packages one ConfigMap carries. Kubernetes refuses a ConfigMap whose
#: data passes 1 MiB; the rest of the limit is left to the object's own fields.
MAX_BYTES = 1_000_000


@dataclass(frozen=True)
class Shipment:
    """What a job ships to its pods.

    Attributes:
        name: the ConfigMap's name (``<job>-packages``); empty when nothing is copied.
        files: (file name, bytes) of each package copied, in install order.
        uris: ``gs://`` packages the bootstrap downloads itself, after ``files``.
    """

    name: str
    files: tuple[tuple[str, bytes], ...] = ()
    uris: tuple[str, ...] = field(default=())

    @property
    def size(self) -> int:
        return sum(len(data) for _, data in self.files)

    def package_args(self) -> list[str]:
        """The bootstrap's ``--package`` arguments, in install order."""
        paths = [f"{MOUNT}/{name}" for name, _ in self.files]
        return [arg for path in [*paths, *self.uris] for arg in ("--package", path)]


def configmap_name(job: str) -> str:
    """``<job>-packages`` (a job name leaves room for the suffix: it is at most 52 characters
    where the task services need more)."""
    return f"{job}-packages"


def check_size(shipment: Shipment) -> None:
    """A SpecError naming the size and the two ways out when the packages do not fit."""
    if shipment.size > MAX_BYTES:
        raise_too_big(shipment.files, shipment.size)


def raise_too_big(files: "list[tuple[str, bytes]] | tuple[tuple[str, bytes], ...]", size: int) -> None:
    names = ", ".join(name for name, _ in files)
    raise SpecError(
        f"the packages to ship ({names}) are {size / 1e6:.1f} MB, more than a Kubernetes ConfigMap "
        f"holds ({MAX_BYTES / 1e6:.1f} MB): stage the package in a bucket and give its gs:// URI as PACKAGE_PATH, "
        "or build the trainer into the image (FROM the tfjob base image)"
    )


def render_configmap(shipment: Shipment, labels: Mapping[str, str], namespace: str | None = None) -> dict[str, Any]:
    """The ConfigMap carrying the packages (``binaryData``, base64 as the API takes it)."""
    metadata: dict[str, Any] = {"name": shipment.name, "labels": dict(labels)}
    if namespace:
        metadata["namespace"] = namespace
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": metadata,
        "immutable": True,
        "binaryData": {name: base64.b64encode(data).decode("ascii") for name, data in shipment.files},
    }


def pod_specs(node: Any) -> Iterator[dict[str, Any]]:
    """Every pod spec in a manifest (a dict holding ``containers``), wherever the kind nests it."""
    if isinstance(node, dict):
        if isinstance(node.get("containers"), list):
            yield node
            return
        for value in node.values():
            yield from pod_specs(value)
    elif isinstance(node, list):
        for value in node:
            yield from pod_specs(value)


def ship_into(manifest: dict[str, Any], shipment: Shipment) -> int:
    """Make every bootstrap container of ``manifest`` install the shipment first (in place).

    Adds the ``--package`` arguments ahead of the bootstrap's own, and, when files are
    copied, the ConfigMap volume and its read-only mount. Returns the containers changed.
    """
    from .pod import VOLUME, kubelet_literal

    args = [kubelet_literal(arg) for arg in shipment.package_args()]
    changed = 0
    for pod in pod_specs(manifest):
        starts = [c for c in pod["containers"] if c.get("command") == ["tfjob-bootstrap"]]
        for container in starts:
            container["args"] = [*args, *container.get("args", [])]
            if shipment.files:
                container.setdefault("volumeMounts", []).append({"name": VOLUME, "mountPath": MOUNT, "readOnly": True})
        if shipment.files and starts:
            pod.setdefault("volumes", []).append({"name": VOLUME, "configMap": {"name": shipment.name}})
        changed += len(starts)
    return changed


def owner_reference(job: Mapping[str, Any]) -> dict[str, Any]:
    """An ``ownerReferences`` entry naming ``job`` as stored (its uid), for the garbage collector."""
    meta = job.get("metadata") or {}
    return {
        "apiVersion": job.get("apiVersion"),
        "kind": job.get("kind"),
        "name": meta.get("name"),
        "uid": meta.get("uid"),
        "blockOwnerDeletion": False,
    }
