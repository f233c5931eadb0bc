"""Machine and accelerator fallback lists: ``--accelerator NVIDIA_L4:1,NVIDIA_TESLA_T4:1``,
``--worker-machine-type g2-standard-8,n1-standard-8`` (pure).

The first of a list is the job's own choice (what ``--dry-run`` shows and the spec holds); the
others are the candidates tried in turn, after a quota refusal or a stockout, as further
attempts of the same job (Vertex AI: :mod:`tfjob.backends.vertex.failover`). Candidate *k*
takes the *k*-th alternative of each list (a shorter list keeps its last). Only Vertex AI tries
them: on Kubernetes the scheduler, not tfjob, picks the node, and a pod that fits no node waits
(``no-node-fits``) rather than failing, so there is nothing to fail over from.
"""

from __future__ import annotations

import copy
from typing import Any, Sequence

from ..errors import SpecError

#: The knobs that take a list, and the roles (Vertex AI pool indexes) each sets.
ROLE_KNOBS: dict[str, tuple[str, ...]] = {
    "accelerator": ("chief", "worker", "evaluator"),
    "chief_accelerator": ("chief",),
    "worker_accelerator": ("worker",),
    "ps_accelerator": ("ps",),
    "evaluator_accelerator": ("evaluator",),
    "chief_machine_type": ("chief",),
    "worker_machine_type": ("worker",),
    "ps_machine_type": ("ps",),
    "evaluator_machine_type": ("evaluator",),
}
POOLS = {"chief": 0, "worker": 1, "ps": 2, "evaluator": 3}
#: At most this many alternatives per knob.
MAX_FALLBACKS = 8


def _is_list(knob: str, value: Any) -> bool:
    if not isinstance(value, str) or "," not in value:
        return False
    # gcloud's accelerator form (type=X,count=N) has commas of its own, and an = sign.
    return knob.endswith("machine_type") or "=" not in value


def split_fallbacks(values: dict[str, Any]) -> tuple[str, ...]:
    """Take the lists out of ``values`` (keywords): each knob keeps its first choice; return the
    alternatives as ``("worker_accelerator=NVIDIA_TESLA_T4:1", …)``, in order."""
    out: list[str] = []
    for knob in ROLE_KNOBS:
        value = values.get(knob)
        if not _is_list(knob, value):
            continue
        parts = [p.strip() for p in str(value).split(",")]
        if any(not p for p in parts):
            raise SpecError(field=knob, value=value, problem="has an empty choice", fix="write choices like NVIDIA_L4:1,NVIDIA_TESLA_T4:1")
        if len(parts) > MAX_FALLBACKS + 1:
            raise SpecError(field=knob, value=value, problem=f"lists {len(parts)} choices, more than {MAX_FALLBACKS + 1}")
        values[knob] = parts[0]
        out += [f"{knob}={p}" for p in parts[1:]]
    return tuple(out)


def parse_fallbacks(entries: Sequence[str]) -> dict[str, list[str]]:
    """``("worker_accelerator=NVIDIA_TESLA_T4:1", …)`` → ``{"worker_accelerator": ["NVIDIA_TESLA_T4:1"]}``, checked."""
    from .machines import well_formed_machine_type
    from .spec import Accelerator

    out: dict[str, list[str]] = {}
    for entry in entries:
        knob, sep, value = str(entry).partition("=")
        if not sep or knob not in ROLE_KNOBS or not value.strip():
            raise SpecError(field="fallbacks", value=entry, problem="must be KNOB=CHOICE", fix=f"with KNOB one of {', '.join(ROLE_KNOBS)}")
        value = value.strip()
        if knob.endswith("accelerator"):
            Accelerator.parse(value, knob)
        elif not well_formed_machine_type(value):
            raise SpecError(field=knob, value=value, problem="is not a machine type", fix="e.g. n1-standard-8")
        out.setdefault(knob, []).append(value)
    return out


def machine_specs(body: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Every pool's machineSpec in ``body`` (a ``CustomJob``): pool index → machineSpec."""
    pools = (body.get("jobSpec") or {}).get("workerPoolSpecs") or []
    return {str(i): copy.deepcopy(p.get("machineSpec") or {}) for i, p in enumerate(pools) if p}


def variants(body: dict[str, Any], entries: Sequence[str]) -> list[tuple[str, dict[str, dict[str, Any]]]]:
    """The candidates after the job's own choice: ``(label, {pool index: machineSpec})`` each,
    every pool's machineSpec of ``body`` (a ``CustomJob``) with the candidate's choices."""
    from .spec import Accelerator

    lists = parse_fallbacks(entries)
    if not lists:
        return []
    pools = (body.get("jobSpec") or {}).get("workerPoolSpecs") or []
    count = max(len(v) for v in lists.values())
    out = []
    for k in range(count):
        specs = machine_specs(body)
        said = []
        for knob, choices in lists.items():
            choice = choices[min(k, len(choices) - 1)]
            roles = ROLE_KNOBS[knob]
            if knob == "accelerator":  # a role's own list wins over the shared one
                roles = tuple(r for r in roles if f"{r}_accelerator" not in lists)
            for role in roles:
                index = POOLS[role]
                if index >= len(pools) or not pools[index]:
                    continue
                spec = specs[str(index)]
                if knob.endswith("machine_type"):
                    spec["machineType"] = choice
                else:
                    if knob == "accelerator" and not spec.get("acceleratorType"):
                        continue  # the shared accelerator goes where the job put it
                    acc = Accelerator.parse(choice, knob)
                    spec["acceleratorType"], spec["acceleratorCount"] = acc.type, acc.count
            said.append(f"{knob.replace('_', '-')} {choice}")
        out.append((", ".join(said), specs))
    return out


def patched(body: dict[str, Any], specs: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """``body`` with the pools' machineSpecs replaced by ``specs`` (pool index → machineSpec)."""
    if not specs:
        return body
    out = copy.deepcopy(body)
    pools = out["jobSpec"]["workerPoolSpecs"]
    for index, spec in specs.items():
        pools[int(index)]["machineSpec"] = spec
    return out
