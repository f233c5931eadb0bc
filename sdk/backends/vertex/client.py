"""Vertex AI custom jobs through the official ``aiplatform_v1.JobServiceClient`` over REST.

A small facade that speaks plain dicts (the API's camelCase JSON) and adds what the
client library leaves to its callers:

- bounded retries with backoff and jitter for throttling, server errors and lost
  connections (:mod:`.retry`);
- an **idempotent create**: a create whose answer was lost may still have created
  the job, so before trying again the job is looked up by its ``tfjob-submission-id``
  label, and found rather than created twice;
- errors translated once, here, into tfjob's (:mod:`.errors`).

``api_endpoint`` may be ``http://127.0.0.1:PORT`` (a test server); the default is
the regional endpoint ``{region}-aiplatform.googleapis.com``.
"""

from __future__ import annotations

import json
import random
import time
from typing import Any, Callable

from ...errors import missing_extra
from .render import SUBMISSION_LABEL
from .retry import Backoff, call_with_retry, is_retryable, status_code


def default_endpoint(region: str) -> str:
    """The regional Vertex AI endpoint."""
    return f"{region}-aiplatform.googleapis.com"


def job_id_of(name: str) -> str:
    """``projects/p/locations/r/customJobs/123`` → ``123``."""
    return name.rsplit("/", 1)[-1]


class VertexClient:
    """Create, get, list and cancel custom jobs in one project and region.

    Args:
        project: the project id.
        region: the region (``us-central1``).
        api_endpoint: another endpoint than the regional one (a test server).
        credentials: google-auth credentials (see :mod:`.auth`).
        backoff: retry policy.
        sleep, rng: injected in tests (no real waiting).
        on_retry: told about each retry (error, wait, attempt), e.g. to print it.
    """

    def __init__(
        self,
        project: str,
        region: str,
        *,
        api_endpoint: str | None = None,
        credentials: Any = None,
        backoff: Backoff = Backoff(),
        sleep: Callable[[float], None] = time.sleep,
        rng: random.Random | None = None,
        on_retry: Callable[[BaseException, float, int], None] | None = None,
    ) -> None:
        try:
            from google.api_core.client_options import ClientOptions
            from google.cloud import aiplatform_v1
        except ImportError as e:
            raise missing_extra("vertex", "vertex", e) from e

        self.project = project
        self.region = region
        self.endpoint = api_endpoint or default_endpoint(region)
        self.credentials = credentials
        self.backoff = backoff
        self._sleep = sleep
        self._rng = rng or random.Random()
        self._on_retry = on_retry
        self._types = aiplatform_v1
        self._client = aiplatform_v1.JobServiceClient(
            transport="rest",
            credentials=credentials,
            client_options=ClientOptions(api_endpoint=self.endpoint),
        )

    @property
    def parent(self) -> str:
        return f"projects/{self.project}/locations/{self.region}"

    def job_name(self, job: str) -> str:
        """A full resource name from a job id (a full name is returned as it is)."""
        return job if job.startswith("projects/") else f"{self.parent}/customJobs/{job}"

    # -- plumbing ---------------------------------------------------------------------
    def _to_dict(self, message: Any) -> dict[str, Any]:
        from google.protobuf import json_format

        found: dict[str, Any] = json_format.MessageToDict(type(message).pb(message))
        return found

    def _call(self, action: str, fn: Callable[[], Any], job: str | None = None) -> Any:
        attempts = [1]

        def note(exc: BaseException, delay: float, attempt: int) -> None:
            attempts[0] = attempt + 1
            if self._on_retry is not None:
                self._on_retry(exc, delay, attempt)

        try:
            return call_with_retry(fn, backoff=self.backoff, sleep=self._sleep, rng=self._rng, on_retry=note)
        except Exception as e:
            raise self._translate(e, action, job, attempts[0]) from e

    def _translate(self, exc: BaseException, action: str, job: str | None, attempts: int | None) -> BaseException:
        from .errors import translate

        if not is_translatable(exc):
            return exc
        return translate(
            exc, action=action, project=self.project, region=self.region, endpoint=self.endpoint, job=job,
            attempts=attempts if attempts and attempts > 1 else None,
        )  # fmt: skip

    # -- the calls --------------------------------------------------------------------
    def create_custom_job(self, body: dict[str, Any], submission_id: str) -> dict[str, Any]:
        """Create the job ``body`` (a ``CustomJob`` dict) once, whatever the network does (see :meth:`create_once`)."""
        job = self._types.CustomJob.from_json(json.dumps(body))  # strict: unknown fields fail here
        request = self._types.CreateCustomJobRequest(parent=self.parent, custom_job=job)
        return self.create_once(
            lambda: self._client.create_custom_job(request=request),
            lambda: self.find_by_submission_id(submission_id, display_name=body.get("displayName")),
            what=f"job {body.get('displayName')!r}",
            submission_id=submission_id,
        )

    def create_once(
        self, send: Callable[[], Any], find: Callable[[], dict[str, Any] | None], *, what: str, submission_id: str
    ) -> dict[str, Any]:
        """Send a create, retrying transient failures, so that at most one resource results.

        After a failure that may have been acted on (anything retryable but a 429), the
        resource is first looked up by its ``tfjob-submission-id`` label (``find``): if
        the lost request did create it, that one is returned and nothing is sent
        again. If the look-up itself fails, nothing is sent again either: a second
        create could make a second resource.

        Returns:
            The created resource as a dict.

        Raises:
            SubmissionUncertainError: the resource may exist but could not be checked.
        """
        from ...errors import SubmissionUncertainError, TfjobError

        delays = self.backoff.delays(self._rng)
        attempt = 1
        maybe_created = False

        def look_up(after: BaseException) -> dict[str, Any] | None:
            try:
                return find()
            except TfjobError as e:
                raise SubmissionUncertainError(
                    f"Vertex AI may have created {what} but its answer was lost ({type(after).__name__}) and "
                    f"looking it up failed ({e}); do not submit it again: it carries the label "
                    f"{SUBMISSION_LABEL}={submission_id}",
                    submission_id=submission_id,
                ) from e

        while True:
            try:
                return self._to_dict(send())
            except Exception as e:
                if not is_retryable(e):
                    raise self._translate(e, "create", None, attempt) from e
                # A throttled request was not acted on; any other may have been.
                if status_code(e) != 429:
                    maybe_created = True
                    found = look_up(e)
                    if found is not None:
                        return found
                delay = next(delays, None)
                if delay is None:
                    if maybe_created and status_code(e) == 429:
                        found = look_up(e)  # an earlier try may have been acted on after all
                        if found is not None:
                            return found
                    raise self._translate(e, "create", None, attempt) from e
                if self._on_retry is not None:
                    self._on_retry(e, delay, attempt)
                self._sleep(delay)
                attempt += 1

    def find_by_submission_id(self, submission_id: str, display_name: str | None = None) -> dict[str, Any] | None:
        """The job carrying label ``tfjob-submission-id=<submission_id>``, if there is one."""
        from google.api_core import exceptions as core

        try:
            jobs = self.list_custom_jobs(filter=f'labels.{SUBMISSION_LABEL}="{submission_id}"', limit=10)
        except Exception as e:  # a filter the service does not take: look by name instead
            if not isinstance(e.__cause__, core.BadRequest) or not display_name:
                raise
            jobs = self.list_custom_jobs(filter=f'display_name="{display_name}"', limit=50)
        for job in jobs:
            if job.get("labels", {}).get(SUBMISSION_LABEL) == submission_id:
                return job
        return None

    def get_custom_job(self, job: str) -> dict[str, Any]:
        """The job (by id or resource name) as the service has it now."""
        name = self.job_name(job)
        found: dict[str, Any] = self._call("get", lambda: self._to_dict(self._client.get_custom_job(name=name)), job=job_id_of(name))
        return found

    def list_custom_jobs(self, *, filter: str | None = None, page_size: int = 100, limit: int | None = None) -> list[dict[str, Any]]:
        """Jobs of the project and region matching ``filter``, following every page up to ``limit``."""
        return self.list_pages(
            lambda token: self._client.list_custom_jobs(
                request=self._types.ListCustomJobsRequest(parent=self.parent, filter=filter or "", page_size=page_size, page_token=token)
            ),
            "custom_jobs",
            limit,
        )

    def list_pages(self, fetch: Callable[[str], Any], field: str, limit: int | None) -> list[dict[str, Any]]:
        """Every item of a paged list call (``fetch(page_token)``), up to ``limit``.

        The client's pager exposes the first page's fields; the next page is asked for
        here, so each page gets its own retries.
        """
        out: list[dict[str, Any]] = []
        token = ""
        while True:
            page = self._call("list", lambda: fetch(token))
            out.extend(self._to_dict(item) for item in getattr(page, field))
            token = page.next_page_token
            if not token or (limit is not None and len(out) >= limit):
                return out[:limit] if limit is not None else out

    def cancel_custom_job(self, job: str) -> None:
        """Ask the service to cancel the job (it moves to CANCELLING, then CANCELLED)."""
        name = self.job_name(job)
        self._call("cancel", lambda: self._client.cancel_custom_job(name=name), job=job_id_of(name))


def is_translatable(exc: BaseException) -> bool:
    """True for the errors of Google's libraries and of the HTTP layer (translated to ours)."""
    import requests
    from google.api_core import exceptions as core
    from google.auth import exceptions as auth

    return isinstance(exc, (core.GoogleAPICallError, auth.GoogleAuthError, requests.RequestException))
