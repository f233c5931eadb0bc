"""Google's "not now" answers told apart: a resource quota, rate limiting, a stockout.

Vertex AI answers a ``customJobs.create`` it cannot serve with ``429 RESOURCE_EXHAUSTED``
for two different reasons: too many requests per minute (rate limiting: another try a
little later succeeds, :mod:`.retry` retries it) and a resource quota of the project in
the region — accelerators, CPUs, disks — that the job would exceed (no number of tries
cures it). A stockout (``Resources are insufficient in region``,
``ZONE_RESOURCE_POOL_EXHAUSTED``) is the region lacking the machines, whatever the quota.
:func:`capacity_of_error` reads which from the error's message and its ``ErrorInfo``
(:func:`tfjob.results.capacity.classify`); the refusal is raised as one
:class:`~tfjob.errors.CapacityError` line (:func:`capacity_error`).
"""

from __future__ import annotations

from typing import Any

from ...results.capacity import QUOTA, STOCKOUT, Capacity, classify, quota_line
from ...errors import CapacityError


def capacity_of_error(exc: BaseException) -> Capacity | None:
    """The quota, rate limit or stockout a Google API error speaks of (None: something else)."""
    code = getattr(exc, "code", None)
    if code not in (429, 503, 400, 403, 409) and not (isinstance(code, int) and code == 8):
        return None
    message = str(getattr(exc, "message", None) or exc)
    reason = getattr(exc, "reason", None)
    metadata = getattr(exc, "metadata", None) or {}
    found = classify(message, reason=reason if isinstance(reason, str) else None, metadata=dict(metadata))
    if found is None and code == 429:
        return Capacity("rate", evidence=message[:240])
    return found


def refused(exc: BaseException) -> bool:
    """True for a resource quota or a stockout: never worth retrying the same request."""
    found = capacity_of_error(exc)
    return found is not None and found.kind in (QUOTA, STOCKOUT)


def capacity_error(
    exc: BaseException, *, project: str | None, region: str | None, backend: str = "vertex", platform: str = "Vertex AI"
) -> CapacityError | None:
    """The one-line error of a quota refusal or a stockout, or None for anything else."""
    found = capacity_of_error(exc)
    if found is None or found.kind not in (QUOTA, STOCKOUT):
        return None
    line = quota_line(found, backend=backend, project=project, region=region)
    return CapacityError(f"{platform} refused the job: {line}", capacity=found, region=found.region or region)


def as_capacity_error(error: Any) -> CapacityError | None:
    """``error`` if it is a CapacityError, or the one it was raised from."""
    seen = 0
    while error is not None and seen < 8:
        if isinstance(error, CapacityError):
            return error
        error = error.__cause__
        seen += 1
    return None
