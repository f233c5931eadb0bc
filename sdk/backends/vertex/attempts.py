"""The next attempt of a Vertex AI job, made by whoever follows the job.

An attempt can end without its job ending: FAILED for want of machines or quota with a
candidate left (``--region A,B``, the fallback lists: :mod:`.failover`), or for a retryable
platform error with ``max_restarts`` left. Whoever follows the job then makes its next attempt:
the command that submitted it (:func:`.service.follow_job`), or later, from any process,
``tfjob wait ID``, ``JobHandle.wait()``/``result()`` and ``tfjob logs ID --follow``
(:func:`.service.watch_status`). What to try next is in the job's record (``extra["failover"]``,
``extra["max_restarts"]``, its project and endpoint; no credentials), and the request is the
ended attempt's own, read back from Vertex AI.

Never two attempts at once, however many follow the job: a follower first claims the step in
the job's record (:meth:`~tfjob.runtime.store.JobStore.change`, one transaction: the ended
attempt is still the current one and no live claim is there) and only then creates; the others
see the claim, look again later, and follow the attempt the record then names. A claim names the
new attempt's submission label before the create: a claim whose process died (or that is older
than :data:`CLAIM_SECONDS`), or whose create failed, is taken over, and the job it may have
created is looked up by that label before one is created. No attempt is made once a cancel
was asked for: the job then ends CANCELLED, its ended attempt's failure (a stockout…) kept
among its attempts (:func:`end_cancelled`). A one-shot read (``tfjob status``) claims nothing:
it says what following the job would do.
"""

from __future__ import annotations

import os
import socket
import time
import uuid
from typing import Any, Callable

from ...model import JobState
from ...runtime.store import JobRecord, JobStore, process_alive, process_start_time
from .failover import CLAIM, INPUT_FIELDS, create_attempt, described, fail_over, failover_reason, region_of

Echo = Callable[[str], None]
#: A claim older than this is stale even where its process cannot be checked (another machine).
CLAIM_SECONDS = 600.0


def current_attempt(job_id: str, record: JobRecord | None) -> str:
    """The Vertex AI id of the job's current attempt (a failover or a restart creates it under a new id)."""
    current = record.extra.get("current_job") if record is not None else None
    return current if isinstance(current, str) and current.isdigit() else job_id


def next_step(job: dict[str, Any], record: JobRecord | None, max_restarts: int | None = None) -> tuple[str, str] | None:
    """What follows the ended attempt ``job`` of ``record``'s job: ``("failover", why)`` (a candidate
    is left), ``("restart", why)`` (a retryable failure, ``max_restarts`` — the record's unless
    given — not used up), or None: the job ends with it. Never on the trainer's own failure, nor
    once a cancel was asked for (CANCELLING)."""
    from .follow import retryable_failure

    if record is None or record.state is JobState.CANCELLING or record.state.is_terminal:
        return None
    moved = failover_reason(job, record)
    if moved is not None:
        return "failover", moved
    why = retryable_failure(job)
    limit = record.extra.get("max_restarts") if max_restarts is None else max_restarts
    done = len(record.extra.get("attempts") or [None]) - 1
    return ("restart", why) if why is not None and isinstance(limit, int) and done < limit else None


def _live(claim: dict[str, Any]) -> bool:
    """Whether another follower may still be making the next attempt under ``claim``."""
    at = claim.get("at")
    if not isinstance(at, (int, float)) or time.time() - at > CLAIM_SECONDS or not claim.get("pid"):
        return False  # too old, or given up (its create failed): taken over
    return claim.get("host") != socket.gethostname() or process_alive(claim.get("pid"), claim.get("start"))


def claim_next(store: JobStore, job_id: str, ended: str) -> dict[str, Any] | str:
    """Claim the making of the attempt after ``ended`` (a Vertex AI id): the claim, or ``"moved"``
    (the record names a later attempt already), ``"held"`` (another follower is making it) or
    ``"stopped"`` (a cancel was asked for, the job ended or is no longer recorded)."""
    outcome: dict[str, Any] = {}

    def decide(record: JobRecord) -> dict[str, Any] | None:
        if record.state is JobState.CANCELLING or record.state.is_terminal:
            outcome["said"] = "stopped"
            return None
        if current_attempt(job_id, record) != ended:
            outcome["said"] = "moved"
            return None
        held = record.extra.get(CLAIM)
        held = held if isinstance(held, dict) and held.get("after") == ended else None
        if held is not None and _live(held):
            outcome["said"] = "held"
            return None
        pid = os.getpid()
        claim = {"after": ended, "submission_id": str(held["submission_id"]) if held and held.get("submission_id") else uuid.uuid4().hex,
                 "look_first": held is not None, "pid": pid, "start": process_start_time(pid), "host": socket.gethostname(),
                 "at": time.time()}  # fmt: skip
        outcome["said"] = claim
        return {"extra": {**record.extra, CLAIM: claim}}

    store.change(job_id, decide)
    said: dict[str, Any] | str = outcome.get("said", "stopped")  # (a job no longer recorded: nothing to make)
    return said


def _give_up(store: JobStore, job_id: str, claim: dict[str, Any]) -> None:
    """The create under ``claim`` failed: the next follower takes the claim over (looking its label up first)."""

    def decide(record: JobRecord) -> dict[str, Any] | None:
        if record.extra.get(CLAIM) != claim:
            return None
        return {"extra": {**record.extra, CLAIM: {**claim, "pid": None, "look_first": True}}}

    store.change(job_id, decide)


def advance(
    store: JobStore,
    job_id: str,
    ended: dict[str, Any],
    *,
    echo: Echo,
    client: Any,
    make_client: Callable[..., Any],
    max_restarts: int | None = None,
) -> tuple[str, Any] | str | None:
    """After the job's current attempt ended as ``ended`` (Vertex AI's ``CustomJob``): the attempt
    to follow now and a client of its region — made here, under a claim, or already by another
    follower — or ``"held"`` (another follower is making it: look again later), or None: the job
    ends with ``ended``."""
    from .client import job_id_of

    ended_id = job_id_of(str(ended.get("name", "")))
    record = store.get(job_id)
    step = next_step(ended, record, max_restarts)
    if record is None or (step is None and current_attempt(job_id, record) == ended_id):
        return None
    said = claim_next(store, job_id, ended_id)
    if said == "stopped":
        return None
    if said == "held":
        return "held"
    if said == "moved":
        return _follow_moved(store, job_id, client, make_client, echo)
    assert isinstance(said, dict)
    if step is None:  # (the record moved and came back: nothing to make)
        _give_up(store, job_id, said)
        return None
    try:
        if step[0] == "failover":
            made = fail_over(store, job_id, ended, step[1], echo=echo, client=client, make_client=make_client,
                             submission=said["submission_id"], look_first=bool(said["look_first"]))  # fmt: skip
        else:
            made = restart(
                store, job_id, ended, step[1], client, echo, submission=said["submission_id"], look_first=bool(said["look_first"])
            )
    except BaseException:
        _give_up(store, job_id, said)
        raise
    now = store.get(job_id)
    if made is not None and now is not None and now.state is JobState.CANCELLING:
        made[1].cancel_custom_job(made[0])  # a cancel came while it was being made: it ends CANCELLED as it was asked
    return made


def _follow_moved(store: JobStore, job_id: str, client: Any, make_client: Callable[..., Any], echo: Echo) -> tuple[str, Any]:
    """The attempt another follower made, and a client of its region."""
    record = store.get(job_id)
    assert record is not None
    options = record.options
    region = options.get("region")
    if region and region != getattr(client, "region", region):
        client = make_client(str(options["project"]), str(region), options.get("api_endpoint"), echo, getattr(client, "credentials", None))
    return current_attempt(job_id, record), client


def restart(
    store: JobStore, job_id: str, failed: dict[str, Any], reason: str, client: Any, echo: Echo, *, submission: str, look_first: bool = False
) -> tuple[str, Any]:
    """Create the failed attempt's job again (the same spec, ``NAME-attemptN``, the submission
    label ``submission``), record the attempt in ``job_id``'s record; return the new attempt's
    Vertex AI id and the client."""
    import re

    from .client import job_id_of
    from .follow import job_status
    from .render import SUBMISSION_LABEL

    record = store.get(job_id)
    assert record is not None
    attempts = list(record.extra.get("attempts") or [{"resource_name": record.extra.get("resource_name", "")}])
    error = failed.get("error") or {}
    attempts[-1] = {**attempts[-1], "state": JobState.FAILED.value, "ended": job_status(failed, job_id).ended or time.time(),
                    "message": str(error.get("message", ""))[:500], "reason": reason}  # fmt: skip
    number = len(attempts) + 1
    body = {k: failed[k] for k in INPUT_FIELDS if k in failed}
    suffix = f"-attempt{number}"
    base = re.sub(r"-attempt\d+$", "", str(body.get("displayName", record.name)))
    body["displayName"] = base[: 128 - len(suffix)] + suffix
    body["labels"] = {**dict(body.get("labels") or {}), SUBMISSION_LABEL: submission}
    job = create_attempt(client, body, submission, look_first)
    new_id = job_id_of(job["name"])
    attempts.append({"resource_name": job["name"]})
    line = f"attempt {number - 1} ended {reason}: submitted again as attempt {number} ({job['name']})"
    extra = {k: v for k, v in record.extra.items() if k != CLAIM}
    store.update(job_id, extra={**extra, "attempts": attempts, "current_job": new_id, "resource_name": job["name"]})
    store.note(job_id, line)
    echo(f"job {job_id} {line}")
    return new_id, client


def cancelled_between(job_id: str, job: dict[str, Any], record: JobRecord | None) -> tuple[str, list[Any]] | None:
    """When a cancel was asked for (CANCELLING) while the job had no attempt running — its current
    attempt ``job`` ended FAILED with a next one due, and no follower is making it — what its
    CANCELLED end says and its attempts (the ended one's end and why); else None."""
    from dataclasses import replace

    from .client import job_id_of
    from .follow import job_status

    ended = job_id_of(str(job.get("name", "")))
    if record is None or record.state is not JobState.CANCELLING or current_attempt(job_id, record) != ended:
        return None
    held = record.extra.get(CLAIM)
    if isinstance(held, dict) and held.get("after") == ended and _live(held):
        return None  # a follower that claimed it before the cancel is making it: it cancels it (:func:`advance`)
    step = next_step(job, replace(record, state=JobState.RUNNING))
    if step is None:
        return None  # the attempt's own end is the job's
    first = {"resource_name": record.extra.get("resource_name", ""), "region": region_of(str(record.extra.get("resource_name", "")))}
    attempts = list(record.extra.get("attempts") or [first])
    message = str((job.get("error") or {}).get("message", ""))[:500]
    attempts[-1] = {**attempts[-1], "state": JobState.FAILED.value, "ended": job_status(job, job_id).ended or time.time(),
                    "message": message, "reason": step[1]}  # fmt: skip
    where = region_of(str(job.get("name", "")))
    number = len(attempts)
    line = (f"cancelled between attempts: attempt {number} ended with {step[1]}" + (f" in {where}" if where else "")
            + f" ({message[:200]}); no attempt {number + 1} was made")  # fmt: skip
    return line, attempts


def end_cancelled(store: JobStore, job_id: str, job: dict[str, Any]) -> bool:
    """End the job CANCELLED when a cancel stopped its next attempt (:func:`cancelled_between`),
    its attempts recorded; True if it did."""
    record = store.get(job_id)
    found = cancelled_between(job_id, job, record)
    if found is None or record is None:
        return False
    line, attempts = found
    extra = {k: v for k, v in record.extra.items() if k != CLAIM}
    return store.set_state(job_id, JobState.CANCELLED, line, only_from=(JobState.CANCELLING,), extra={**extra, "attempts": attempts})


def attempts_of(store: JobStore, job_id: str) -> list[Any]:
    record = store.get(job_id)
    return list(record.extra.get("attempts") or []) if record is not None else []


def end_attempt(store: JobStore, job_id: str, state: JobState, ended: float | None) -> None:
    """Write the last attempt's end (state and time) into the job's record."""
    record = store.get(job_id)
    if record is None or not record.extra.get("attempts"):
        return
    attempts = list(record.extra["attempts"])
    if isinstance(attempts[-1], dict) and (attempts[-1].get("state") == "REFUSED" or attempts[-1].get("reason")):
        return  # (every candidate left refused the create, or a cancel stopped the next: its end is written)
    attempts[-1] = {**attempts[-1], "state": state.value, "ended": ended or time.time()}
    store.update(job_id, extra={**record.extra, "attempts": attempts})


def what_following_does(job_id: str, job: dict[str, Any], record: JobRecord | None) -> str | None:
    """What ``tfjob wait`` would do after the ended attempt ``job`` (a one-shot read says it, and
    makes nothing), or None: the job ends with it."""
    step = next_step(job, record)
    if step is None or record is None:
        return None
    number = len(record.extra.get("attempts") or [None])
    if step[0] == "restart":
        message = str((job.get("error") or {}).get("message", ""))[:200]
        return f"this attempt failed ({message}); following the job (`tfjob wait {job_id}`) submits it again"
    nxt = (record.extra.get("failover") or [{"region": "?"}])[0]
    where = region_of(str(job.get("name", ""))) or "its region"
    return f"{step[1]} ended attempt {number} in {where}; `tfjob wait {job_id}` tries the next candidate ({described(nxt)})"
