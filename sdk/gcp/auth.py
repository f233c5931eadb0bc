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

from ..errors import UsageError

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
