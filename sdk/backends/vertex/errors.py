"""Google's exceptions → tfjob's, at the boundary, with messages that say what to do.

=====================================  ==============================================
what Google raised                     what the user reads (and the exit code)
=====================================  ==============================================
400 InvalidArgument / FailedPrecond.   UsageError (2): the server's message and field
401 Unauthenticated, RefreshError      AuthError (1): credentials expired, how to refresh
DefaultCredentialsError                AuthError (1): no credentials, how to get them
403 PermissionDenied                   AuthError (1): the permission, the role, the project
403 SERVICE_DISABLED                   AuthError (1): how to enable the Vertex AI API
404 on a job                           JobNotFoundError (2)
404 on the project / region            UsageError (2): which of the two to check
429 naming a resource quota           CapacityError (1), not retried: metric, region, limit, fixes
503/429 "Resources are insufficient"   CapacityError (1), not retried: region, fixes
429 / 5xx after the last retry         BackendError (1): the status, try again later
connection refused / reset             BackendError (1): the endpoint that was not reached
=====================================  ==============================================

No message carries an access token or key material: :func:`redact` is applied to
every text that came from outside.
"""

from __future__ import annotations

import re
from typing import Any

from ...errors import AuthError, BackendError, JobNotFoundError, TfjobError, UsageError

#: The permission each action needs, for a 403 that does not name it.
PERMISSIONS = {
    "create": "aiplatform.customJobs.create",
    "get": "aiplatform.customJobs.get",
    "list": "aiplatform.customJobs.list",
    "cancel": "aiplatform.customJobs.cancel",
    "logs": "logging.logEntries.list",
    "stage": "storage.objects.create",
}
#: The predefined role that grants each permission.
ROLES = {
    "logs": "roles/logging.viewer",
    "stage": "roles/storage.objectAdmin",
}
DEFAULT_ROLE = "roles/aiplatform.user"
REFRESH_HINT = "run `gcloud auth application-default login` (or point GOOGLE_APPLICATION_CREDENTIALS at a valid service-account key file)"

# (pattern, keep the first group): the kept group is the label in front of the secret.
_SECRETS: list[tuple[re.Pattern[str], bool]] = [
    (re.compile(r"ya29\.[\w.\-]+"), False),  # OAuth2 access tokens
    (re.compile(r"1//[\w\-]{20,}"), False),  # refresh tokens
    (re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----.*?(?:-----END [A-Z ]*PRIVATE KEY-----|$)", re.S), False),
    (re.compile(r"(?i)(bearer\s+)[\w.\-~+/]+=*"), True),
    (re.compile(r"(?i)(\"?(?:access_token|refresh_token|id_token|private_key|client_secret)\"?\s*[:=]\s*\"?)[^\",\s}]+"), True),
]
_PREFIX = re.compile(r"^[A-Z]+ \S+: ")
_PERMISSION = re.compile(r"[Pp]ermission '?([a-z]+\.[A-Za-z]+\.[A-Za-z]+)'?")


def redact(text: str) -> str:
    """``text`` with anything that looks like a token or key replaced by ``[redacted]``."""
    for pattern, keep in _SECRETS:
        text = pattern.sub((lambda m: m.group(1) + "[redacted]") if keep else "[redacted]", text)
    return text


def server_message(exc: BaseException) -> str:
    """The message the service sent, without the method and URL google.api_core adds."""
    message = getattr(exc, "message", None) or str(exc)
    return redact(_PREFIX.sub("", str(message)).strip())


def _field_violations(exc: BaseException) -> list[str]:
    out = []
    for detail in getattr(exc, "details", None) or []:
        if isinstance(detail, dict):
            for v in detail.get("fieldViolations", []) or []:
                out.append(f"{v.get('field', '?')}: {v.get('description', '')}".strip())
    return [redact(v) for v in out]


def _error_info(exc: BaseException) -> tuple[str | None, dict[str, Any]]:
    reason = getattr(exc, "reason", None)
    metadata = getattr(exc, "metadata", None) or {}
    return reason, dict(metadata)


def translate(
    exc: BaseException,
    *,
    action: str,
    project: str | None = None,
    region: str | None = None,
    endpoint: str | None = None,
    job: str | None = None,
    attempts: int | None = None,
) -> TfjobError:
    """The tfjob error to raise (``from exc``) for a failed Google call.

    Args:
        exc: what the client library raised.
        action: ``create``, ``get``, ``list``, ``cancel``, ``logs`` or ``stage``.
        project, region, endpoint, job: named in messages.
        attempts: tries made, when retries ran out.
    """
    import requests
    from google.api_core import exceptions as core
    from google.auth import exceptions as auth

    where = f"project {project!r}" + (f", region {region!r}" if region else "")
    if isinstance(exc, auth.DefaultCredentialsError):
        return _no_credentials(exc)
    if isinstance(exc, auth.RefreshError) or isinstance(exc, core.Unauthorized):
        return AuthError(f"the Google Cloud credentials were refused (expired or revoked): {REFRESH_HINT}")
    if isinstance(exc, auth.TransportError) or isinstance(exc, (requests.ConnectionError, requests.Timeout)):
        tries = f" after {attempts} attempts" if attempts else ""
        return BackendError(
            f"cannot reach {endpoint or 'Google Cloud'}{tries} ({type(exc).__name__}); check the network and --api-endpoint, then try again"
        )
    if not isinstance(exc, core.GoogleAPICallError):
        return BackendError(f"{action} failed: {redact(str(exc))}")

    message = server_message(exc)
    code = exc.code if isinstance(exc.code, int) else None
    api_reason, metadata = _error_info(exc)
    if isinstance(exc, core.Forbidden):
        return _forbidden(message, api_reason, metadata, action=action, where=where, project=project)
    if isinstance(exc, core.NotFound):
        if job is not None and action in ("get", "cancel"):
            return JobNotFoundError(f"no Vertex AI job {job} in {where}: check the id with `tfjob list`; the server said: {message}")
        return UsageError(
            problem=f"{where} was not found by Vertex AI: check {{project}} (the project id, not its name or number) "
            f"and {{region}} (a region where Vertex AI runs, e.g. us-central1); the server said: {message}"
        )
    from .quota import capacity_error

    short = capacity_error(exc, project=project, region=region)
    if short is not None:
        return short
    if isinstance(exc, (core.BadRequest, core.FailedPrecondition)) or code == 400:
        fields = _field_violations(exc)
        detail = f" [{'; '.join(fields)}]" if fields else ""
        return UsageError(f"Vertex AI refused the request: {message}{detail}")
    if code in (408, 429, 500, 502, 503, 504):
        tries = f" after {attempts} attempts" if attempts else ""
        what = "is rate limiting the requests (429)" if code == 429 else f"answered {code}"
        return BackendError(f"Vertex AI {what}{tries} while trying to {action}: {message}; try again in a few minutes")
    return BackendError(f"Vertex AI answered {code} while trying to {action}: {message}")


def _no_credentials(exc: BaseException) -> AuthError:
    """No usable application-default credentials: the file GOOGLE_APPLICATION_CREDENTIALS names, or none at all."""
    import os

    named = os.environ.get("GOOGLE_APPLICATION_CREDENTIALS")
    if named:
        # The file the user pointed at is the problem: say which, and google-auth's reason.
        # google-auth's args are (message, the error it caught): the message reads alone.
        first = exc.args[0] if exc.args and isinstance(exc.args[0], str) else str(exc)
        reason = (first.strip().splitlines() or ["it cannot be used"])[0].rstrip(".")
        if len(exc.args) > 1 and str(exc.args[1]).strip():
            reason += ": " + str(exc.args[1]).strip().splitlines()[0]
        reason = reason[:300]
        return AuthError(
            f"GOOGLE_APPLICATION_CREDENTIALS names {named}, which cannot be used ({reason}); "
            "point it at a valid key file, or unset it and run `gcloud auth application-default login`"
        )
    return AuthError(f"no Google Cloud credentials found: {REFRESH_HINT}")


def _forbidden(
    message: str, api_reason: str | None, metadata: dict[str, Any], *, action: str, where: str, project: str | None
) -> AuthError:
    """A 403: the API is not enabled in the project, or the caller lacks a permission (named, with a role that has it)."""
    if api_reason == "SERVICE_DISABLED" or "has not been used" in message or "is disabled" in message:
        service = metadata.get("service", "aiplatform.googleapis.com")
        return AuthError(f"the {service} API is not enabled in {where}: run `gcloud services enable {service} --project {project}`")
    match = _PERMISSION.search(message)
    permission = metadata.get("permission") or (match.group(1) if match else PERMISSIONS.get(action, "?"))
    role = ROLES.get(action, DEFAULT_ROLE)
    return AuthError(
        f"permission denied in {where}: the caller lacks {permission} "
        f"(grant it, e.g. with role {role}, on project {project}); the server said: {message}"
    )
