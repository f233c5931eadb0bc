"""Credentials for Google Cloud: application-default credentials, or none for a test endpoint.

Real use: google-auth's application-default credentials (``gcloud auth
application-default login``, ``GOOGLE_APPLICATION_CREDENTIALS``, or the metadata
server), with the cloud-platform scope.

Test seam: ``TFJOB_VERTEX_ANONYMOUS=1`` sends no credentials at all. It is honoured
only when the API endpoint is not a Google one (a local HTTP server standing in for
Vertex AI); against a Google endpoint it is an error, so it can never silently
send unauthenticated requests to Google.
"""

from __future__ import annotations

import os
from typing import Any, Mapping
from urllib.parse import urlparse

from ...errors import UsageError

#: Set to 1 to send no credentials to a non-Google endpoint (tests, emulators).
ANONYMOUS_ENV = "TFJOB_VERTEX_ANONYMOUS"
SCOPES = ("https://www.googleapis.com/auth/cloud-platform",)


def is_google_endpoint(endpoint: str | None) -> bool:
    """True unless ``endpoint`` names a host outside Google's domains."""
    if not endpoint:
        return True
    host = urlparse(endpoint if "://" in endpoint else f"https://{endpoint}").hostname or ""
    return host.endswith((".googleapis.com", ".google.com")) or host in ("googleapis.com", "google.com")


def resolve_credentials(api_endpoint: str | None, env: Mapping[str, str] | None = None) -> Any:
    """The credentials to call ``api_endpoint`` with.

    Raises:
        UsageError: the anonymous test seam is asked for against a Google endpoint.
        AuthError: no application-default credentials can be found.
    """
    env = os.environ if env is None else env
    if env.get(ANONYMOUS_ENV) == "1":
        if is_google_endpoint(api_endpoint):
            raise UsageError(
                f"{ANONYMOUS_ENV}=1 sends no credentials and is only for a local test endpoint "
                f"(--api-endpoint http://127.0.0.1:PORT); unset it to use your Google Cloud credentials"
            )
        from google.auth.credentials import AnonymousCredentials

        return AnonymousCredentials()
    import google.auth
    from google.auth import exceptions as auth_exceptions

    from .errors import translate

    try:
        credentials, _ = google.auth.default(scopes=list(SCOPES))
    except auth_exceptions.DefaultCredentialsError as e:
        raise translate(e, action="auth") from e
    return credentials


def credentials_source(credentials: Any, env: Mapping[str, str] | None = None) -> str:
    """Where the credentials came from, for a message: the file, or the metadata server."""
    env = os.environ if env is None else env
    kind = type(credentials).__module__.rsplit(".", 1)[-1]
    if kind == "compute_engine" or "compute_engine" in type(credentials).__module__:
        return "the metadata server's (this VM's service account)"
    path = env.get("GOOGLE_APPLICATION_CREDENTIALS") or os.path.join(
        env.get("CLOUDSDK_CONFIG") or os.path.expanduser("~/.config/gcloud"), "application_default_credentials.json"
    )
    return f"the application-default credentials in {path}"


def ensure_token(credentials: Any, env: Mapping[str, str] | None = None) -> None:
    """Get an access token now, before anything is sent: a token endpoint that cannot be
    reached (offline, a proxy, a bad credentials file) is then a credentials failure,
    said as one, and never taken for a create whose answer was lost.

    Raises:
        AuthError: the token endpoint cannot be reached, or refuses the credentials;
            the message names the credentials, the host and the fix.
    """
    from google.auth import exceptions as auth_exceptions
    from google.auth.credentials import AnonymousCredentials

    from ...errors import AuthError

    if isinstance(credentials, AnonymousCredentials) or (getattr(credentials, "valid", False) and getattr(credentials, "token", None)):
        return
    import google.auth.transport.requests

    token_uri = getattr(credentials, "_token_uri", None) or getattr(credentials, "token_uri", None) or "https://oauth2.googleapis.com/token"
    host = urlparse(str(token_uri)).hostname or str(token_uri)
    source = credentials_source(credentials, env)
    try:
        credentials.refresh(google.auth.transport.requests.Request())
    except auth_exceptions.RefreshError as e:
        raise AuthError(
            f"{source} were refused by {host} ({_first_line(e)}); nothing was sent. "
            "Log in again: gcloud auth application-default login (or set GOOGLE_APPLICATION_CREDENTIALS to a valid key)"
        ) from e
    except auth_exceptions.TransportError as e:
        raise AuthError(
            f"cannot get an access token for {source}: {host} cannot be reached ({_first_line(e)}); nothing was sent. "
            f"Check the network or proxy to {host}, then try again"
        ) from e


def _first_line(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    line = text[0] if text else type(error).__name__
    return line if len(line) <= 200 else line[:199] + "…"
