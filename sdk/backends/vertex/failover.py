"""Failover: ``--region A,B,…`` tries the next region when one refuses the job for want of quota
or machines — as another attempt of the same tfjob job.

Two moments a region can say no:

- at the create: a resource quota (429 naming an accelerator, CPU or disk metric) or a stockout
  answered to ``customJobs.create`` (:class:`~tfjob.errors.CapacityError`, never retried in the
  same region): :func:`create_in_turn` creates the job in the next region at once;
- once created: the job ends FAILED because its region had no machines for it (``Resources are
  insufficient in region``, ``ZONE_RESOURCE_POOL_EXHAUSTED``): the follow loop
  (:func:`.service.follow_job`) asks :func:`failover_reason` and :func:`fail_over` submits the
  same ``CustomJob`` in the next region.

Never on the trainer's own failure (a replica's non-zero exit is the program's, whatever its
message says); never two attempts at once (the next is created only once the previous one was
refused or has ended). The staged package is reused: every region is checked against the
staging bucket's location before anything is created (a multi-region ``US`` bucket serves
``us-central1`` and ``us-east4``; a bucket that cannot serve a region is refused up front).
Every attempt is in the job's record (``extra["attempts"]``, with its region), its history,
``tfjob status``, its JSON and its report.
"""

from __future__ import annotations

import re
import time
import uuid
from typing import Any, Callable

from ...results.capacity import classify
from ...errors import CapacityError
from ...description.fallbacks import patched
from ...pricing import repriced
from ...model import JobState
from ...runtime.store import JobRecord, JobStore

Echo = Callable[[str], None]
#: Where a job's record keeps a follower's claim on making its next attempt (:mod:`.attempts`).
CLAIM = "next_attempt"
_REGION_OF = re.compile(r"/locations/([^/]+)/")


def region_of(resource_name: str) -> str | None:
    """``projects/P/locations/R/customJobs/ID`` → ``R``."""
    found = _REGION_OF.search(resource_name + "/")
    return found.group(1) if found else None


def described(candidate: dict[str, Any]) -> str:
    return f"{candidate['region']}" + (f" with {candidate['label']}" if candidate.get("label") else "")


def create_in_turn(
    submission: Any,
    pending: JobRecord,
    store: JobStore,
    *,
    echo: Echo,
    make_client: Callable[..., Any],
    created_record: Callable[..., JobRecord],
) -> JobRecord:
    """Create the job as its first candidate (its first region, its own machines); on a quota
    refusal or a stockout, as the next one, and so on; return the created job's record (its
    refused attempts in ``extra["attempts"]``, the candidates left in ``extra["failover"]``).
    ``make_client(project, region, endpoint, echo, credentials)`` makes a region's client and
    ``created_record(pending, job, extra)`` the record (:mod:`.service`'s, given by the backend)."""
    from .follow import console_url

    plan = submission.plan
    candidates = list(plan.candidates or [{"region": plan.region, "label": "", "machine_specs": {}}])
    client = submission.client
    attempts: list[dict[str, Any]] = []
    for index, candidate in enumerate(candidates):
        region = candidate["region"]
        if region != getattr(client, "region", region):
            endpoint = submission.location.get("api_endpoint")
            client = make_client(plan.project, region, endpoint, echo, getattr(client, "credentials", None))
            submission.location = {**submission.location, "region": region}
            store.update(pending.id, options=submission.location)  # a lost answer is looked up where it was sent
            pending.options = submission.location
        try:
            job = client.create_custom_job(patched(plan.body, candidate["machine_specs"]), plan.submission_id)
        except CapacityError as e:
            if index + 1 >= len(candidates):
                if attempts:
                    tried = "; ".join(described(c) for c in candidates)
                    raise CapacityError(
                        f"{e} (every candidate of --region / the fallback lists was tried: {tried})", capacity=e.capacity, region=region
                    ) from e
                raise
            attempts.append({"resource_name": f"projects/{plan.project}/locations/{region}", "region": region, "variant": candidate["label"],
                             "state": "REFUSED", "ended": time.time(), "reason": e.capacity.kind, "message": str(e)[:500]})  # fmt: skip
            echo(f"{e}; trying {described(candidates[index + 1])} (attempt {len(attempts) + 1})")
            continue
        extra = dict(submission.extra)
        if index > 0 and "price" in extra:  # the price of what was created: its region, its machines
            extra["price"] = repriced(extra["price"], patched(plan.body, candidate["machine_specs"]), region)
        if attempts:
            extra["attempts"] = [*attempts, {"resource_name": job["name"], "region": region, "variant": candidate["label"]}]
        if index + 1 < len(candidates):
            extra["failover"] = candidates[index + 1 :]
        record = created_record(pending, job, extra)
        record.options = {**record.options, "region": region}
        record.extra["console_url"] = console_url(plan.project or "", region, record.id)
        echo(f"submitted Vertex AI job {record.id} ({submission.spec.name}) in {described(candidate)}: {record.extra['console_url']}")
        return record
    raise AssertionError("unreachable: every candidate either created the job or raised")


def failover_reason(job: dict[str, Any], record: JobRecord | None) -> str | None:
    """Why a FAILED attempt is tried again in the next region (a stockout, a quota), or None:
    no region left, not a capacity failure, or the trainer's own failure."""
    from .follow import failed_replica, parse_state

    if record is None or not record.extra.get("failover"):
        return None
    if parse_state(job.get("state")) is not JobState.FAILED:
        return None
    message = str((job.get("error") or {}).get("message", ""))[:4096]
    if failed_replica(message) is not None:
        return None  # the program failed: never moved elsewhere
    found = classify(message)
    if found is None or not found.fails_over:
        return None
    return "a stockout" if found.kind == "stockout" else "a quota refusal"


#: A ``CustomJob``'s fields a user sets (the rest are the service's): what a new attempt sends again.
INPUT_FIELDS = ("displayName", "jobSpec", "labels", "encryptionSpec")


def fail_over(
    store: JobStore,
    job_id: str,
    failed: dict[str, Any],
    reason: str,
    *,
    echo: Echo,
    client: Any,
    make_client: Callable[..., Any],
    submission: str | None = None,
    look_first: bool = False,
) -> tuple[str, Any] | None:
    """Create the failed attempt's job again as the next candidate (the same request,
    ``NAME-attemptN``, the submission label ``submission``, default a new one); record it; return
    the new attempt's Vertex AI id and its region's client (made by ``make_client(project, region,
    endpoint, echo, credentials)``). A candidate that refuses the create for want of quota or
    machines is a REFUSED attempt and the next one is tried; when none is left the job ends FAILED
    (None). With ``look_first``, a job already carrying the label is taken (:func:`create_attempt`)."""
    from .client import job_id_of
    from .follow import job_status
    from .render import SUBMISSION_LABEL

    record = store.get(job_id)
    assert record is not None
    left = list(record.extra.get("failover") or [])
    first = {"resource_name": record.extra.get("resource_name", ""), "region": region_of(str(record.extra.get("resource_name", "")))}
    attempts = list(record.extra.get("attempts") or [first])
    error = failed.get("error") or {}
    attempts[-1] = {**attempts[-1], "state": JobState.FAILED.value, "ended": job_status(failed, job_id).ended or time.time(),
                    "message": str(error.get("message", ""))[:500], "reason": reason}  # fmt: skip
    ended = f"attempt {len(attempts)} ended with {reason} in {attempts[-1].get('region')}"
    submission = submission or uuid.uuid4().hex
    options = dict(record.options)
    while True:
        candidate = left.pop(0)
        region, number = str(candidate["region"]), len(attempts) + 1
        body = patched({k: failed[k] for k in INPUT_FIELDS if k in failed}, candidate.get("machine_specs") or {})
        suffix = f"-attempt{number}"
        body["displayName"] = re.sub(r"-attempt\d+$", "", str(body.get("displayName", record.name)))[: 128 - len(suffix)] + suffix
        body["labels"] = {**dict(body.get("labels") or {}), SUBMISSION_LABEL: submission}
        credentials = getattr(client, "credentials", None)
        new_client = make_client(str(options["project"]), region, options.get("api_endpoint"), echo, credentials)
        try:
            job = create_attempt(new_client, body, submission, look_first)
            break
        except CapacityError as e:
            attempts.append({"resource_name": f"projects/{options['project']}/locations/{region}", "region": region,
                             "variant": candidate.get("label", ""), "state": "REFUSED", "ended": time.time(),
                             "reason": e.capacity.kind, "message": str(e)[:500]})  # fmt: skip
            if not left:
                _all_refused(store, job_id, record.extra, attempts, f"{ended}; {e}", echo)
                return None
            echo(f"job {job_id}: {e}; trying {described(left[0])} (attempt {len(attempts) + 1})")
    new_id = job_id_of(job["name"])
    attempts.append({"resource_name": job["name"], "region": region, "variant": candidate.get("label", "")})
    kept = {k: v for k, v in record.extra.items() if k != CLAIM}  # (the claim on making it is done with)
    extra = {**kept, "attempts": attempts, "current_job": new_id, "resource_name": job["name"], "failover": left}
    if "price" in extra:  # the price of what runs now: its region, its machines
        extra["price"] = repriced(extra["price"], body, region)
    store.update(job_id, extra=extra, options={**options, "region": region})
    line = f"{ended}: submitted in {described(candidate)} as attempt {number} ({job['name']})"
    store.note(job_id, line)
    echo(f"job {job_id} {line}")
    return new_id, new_client


def _all_refused(store: JobStore, job_id: str, extra: dict[str, Any], attempts: list[dict[str, Any]], why: str, echo: Echo) -> None:
    """Every candidate left refused the create: the job ends FAILED, its attempts recorded."""
    tried = "; ".join(str(a.get("region")) + (f" with {a['variant']}" if a.get("variant") else "") for a in attempts)
    message = f"{why} (every candidate of --region / the fallback lists was tried: {tried})"
    kept = {k: v for k, v in extra.items() if k != CLAIM}
    store.update(job_id, extra={**kept, "attempts": attempts, "failover": []})
    store.set_state(job_id, JobState.FAILED, message[:1000])
    echo(f"job {job_id}: {message}")


def create_attempt(client: Any, body: dict[str, Any], submission: str, look_first: bool) -> dict[str, Any]:
    """Create the attempt ``body`` labelled ``submission`` — unless a follower that claimed it
    before (and died, or whose create failed) created it: then that job (``look_first``)."""
    found = client.find_by_submission_id(submission, display_name=body.get("displayName")) if look_first else None
    return found if found is not None else client.create_custom_job(body, submission)  # type: ignore[no-any-return]
