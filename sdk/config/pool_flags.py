"""gcloud's ``--worker-pool-spec`` (``gcloud ai custom-jobs create``), as ``Job`` keywords.

Each ``--worker-pool-spec`` is one worker pool, in order: the first is the chief (pool 0),
then the workers, the parameter servers and the evaluators, as Vertex AI numbers them. An
empty spec (``--worker-pool-spec ''``) leaves a pool unused, so evaluators can follow
workers without parameter servers. A spec is ``key=value`` pairs separated by commas:

``machine-type`` (required), ``replica-count``, ``accelerator-type``, ``accelerator-count``,
``container-image-uri``, ``executor-image-uri``, ``python-module``, ``script``,
``local-package-path``, ``disk-type``, ``disk-size``.

gcloud's ``requirements``, ``extra-packages``, ``extra-dirs`` and ``output-image-uri``
build a Docker image on the user's machine; tfjob packages the trainer instead and refuses
them in one line with its own way to say the same.
"""

from __future__ import annotations

from typing import Any, Sequence

from ..errors import UsageError
from ..description.limits import check_platform_count
from ..description.machines import did_you_mean
from ..description.spec import ROLES, Accelerator

#: Bounds of outside input: one spec per Vertex pool, and a short text each.
MAX_SPEC_CHARS = 4096

KEYS = (
    "machine-type", "replica-count", "accelerator-type", "accelerator-count", "container-image-uri", "executor-image-uri",
    "python-module", "script", "local-package-path", "disk-type", "disk-size",
)  # fmt: skip
#: gcloud keys that build an image locally, with tfjob's way to the same end.
NOT_TAKEN = {
    "requirements": "tfjob declares a trainer's dependencies from its requirements.txt (or --requirements FILE)",
    "extra-packages": "give built packages with --packages",
    "extra-dirs": "put the directories inside the trainer directory; they are packaged with it",
    "output-image-uri": "tfjob does not build images from a pool spec; build the image, then give --image",
}
#: Keys every pool must agree on (tfjob runs one trainer in every task).
SHARED = {"executor-image-uri": "executor_image", "python-module": "module", "script": "script", "local-package-path": "package"}

#: Flags that describe the cluster too: given with --worker-pool-spec, the cluster would be said twice.
CLUSTER_KEYWORDS = (
    "scale_tier", "workers", "ps", "evaluators", "chief_machine_type", "worker_machine_type", "ps_machine_type",
    "evaluator_machine_type", "accelerator", "chief_accelerator", "worker_accelerator", "ps_accelerator",
    "evaluator_accelerator", "chief_image", "worker_image", "ps_image", "evaluator_image",
)  # fmt: skip


def _pairs(text: str, position: int) -> dict[str, str]:
    where = f"--worker-pool-spec #{position + 1}"
    if len(text) > MAX_SPEC_CHARS:
        raise UsageError(f"{where} is longer than {MAX_SPEC_CHARS} characters")
    out: dict[str, str] = {}
    for part in text.split(","):
        if not part.strip():
            continue
        key, sep, value = part.partition("=")
        key = key.strip().lower()
        value = value.strip().strip("'\"")
        if not sep or not value:
            raise UsageError(f"{where}: {part.strip()!r} must be KEY=VALUE (e.g. machine-type=n1-standard-4)")
        if key in NOT_TAKEN:
            raise UsageError(f"{where}: {key} is not taken: {NOT_TAKEN[key]}")
        if key not in KEYS:
            raise UsageError(f"{where}: {key!r} is not a pool key{did_you_mean(key, KEYS)}; keys: {', '.join(KEYS)}")
        if key in out:
            raise UsageError(f"{where}: {key} is given twice")
        out[key] = value
    return out


def _whole(value: str, where: str) -> int:
    # ASCII digits only: str.isdigit() also takes '²', which int() refuses.
    if not (value.isascii() and value.isdigit()) or len(value) > 30:
        raise UsageError(f"{where} {value!r} must be a whole number, 0 or more")
    number = int(value)
    check_platform_count(where, number)
    return number


def pool_spec_keywords(specs: Sequence[str], given: dict[str, Any]) -> dict[str, Any]:
    """``Job`` keywords for gcloud's ``--worker-pool-spec`` values, in pool order.

    Args:
        specs: the flag's values, pool 0 first.
        given: the other keywords of the command, to refuse a cluster said twice.

    Raises:
        UsageError: a malformed spec, a key tfjob does not take, more than four pools, an
            unused chief pool, or pools that disagree on the trainer.
    """
    twice = [k for k in CLUSTER_KEYWORDS if given.get(k) is not None]
    if twice:
        flag = "--" + twice[0].replace("_", "-")
        raise UsageError(f"--worker-pool-spec describes the cluster, and so does {flag}; give one")
    if len(specs) > len(ROLES):
        raise UsageError(
            f"--worker-pool-spec is given {len(specs)} times; Vertex AI has {len(ROLES)} pools (chief, workers, ps, evaluators)"
        )
    out: dict[str, Any] = {}
    shared: dict[str, tuple[int, str]] = {}
    for position, text in enumerate(specs):
        role = ROLES[position]
        where = f"--worker-pool-spec #{position + 1}"
        pairs = _pairs(text, position)
        if not pairs:
            if position == 0:
                raise UsageError(f"{where} is the chief's pool (pool 0) and cannot be left empty")
            continue
        if "machine-type" not in pairs:
            raise UsageError(f"{where} has no machine-type; e.g. machine-type=n1-standard-4")
        out[f"{role}_machine_type"] = pairs["machine-type"]
        replicas = _whole(pairs.get("replica-count", "1"), f"{where} replica-count")
        if role == "chief" and replicas != 1:
            raise UsageError(f"{where} replica-count {replicas}: pool 0 is the chief and runs exactly 1 replica; put more in pool 1")
        if role != "chief":
            if replicas < 1:
                raise UsageError(f"{where} replica-count 0: leave the pool's spec empty ('') for no {role} tasks")
            out[{"worker": "workers", "ps": "ps", "evaluator": "evaluators"}[role]] = replicas
        if "accelerator-type" in pairs:
            count = _whole(pairs.get("accelerator-count", "1"), f"{where} accelerator-count")
            out[f"{role}_accelerator"] = Accelerator(pairs["accelerator-type"], count)
        elif "accelerator-count" in pairs:
            raise UsageError(f"{where} accelerator-count is set but accelerator-type is not; name the accelerator")
        if "container-image-uri" in pairs:
            out[f"{role}_image"] = pairs["container-image-uri"]
        if "disk-type" in pairs:
            out[f"{role}_boot_disk_type"] = pairs["disk-type"]
        if "disk-size" in pairs:
            out[f"{role}_boot_disk_size"] = _whole(pairs["disk-size"], f"{where} disk-size")
        for key, keyword in SHARED.items():
            if key not in pairs:
                continue
            if key in shared and shared[key][1] != pairs[key]:
                raise UsageError(
                    f"{where} {key} {pairs[key]!r} differs from pool #{shared[key][0] + 1}'s {shared[key][1]!r}; "
                    "tfjob runs one trainer in every task"
                )
            shared[key] = (position, pairs[key])
            if given.get(keyword) is not None and given[keyword] != pairs[key]:
                raise UsageError(f"{where} {key} {pairs[key]!r} and --{keyword.replace('_', '-')} {given[keyword]!r} disagree; give one")
            out[keyword] = pairs[key]
    images = {out.get(f"{role}_image") for role in ROLES if f"{role}_machine_type" in out}
    if len(images) == 1 and None not in images:  # one image for every pool: the job's image
        out["image"] = images.pop()
        for role in ROLES:
            out.pop(f"{role}_image", None)
    return out
