"""Credentials for Google Cloud: the ones given, else application-default credentials.

google-auth's application-default credentials (``gcloud auth application-default
login``, ``GOOGLE_APPLICATION_CREDENTIALS``, or the metadata server), with the
cloud-platform scope — unless the caller hands the backend its own
(``VertexBackend(credentials=…)``, as the Vertex AI SDK's ``aiplatform.init(credentials=…)``).
There is no switch that sends no credentials: tests use a service-account key whose
token endpoint is the local stand-in, so the real token path runs.
"""

from __future__ import annotations

import os
from typing import Any, Mapping
from urllib.parse import urlparse

from ...errors import missing_extra

SCOPES = ("https://www.googleapis.com/auth/cloud-platform",)


def is_google_endpoint(endpoint: str | None) -> bool:
    """True unless ``endpoint`` names a host outside Google's domains."""
    if not endpoint:
        return True
    host = urlparse(endpoint if "://" in endpoint else f"https://{endpoint}").hostname or ""
    return host.endswith((".googleapis.com", ".google.com")) or host in ("googleapis.com", "google.com")


def resolve_credentials(credentials: Any = None) -> Any:
    """The credentials to call Google Cloud with: ``credentials`` when given, else the
    application-default ones.

    Raises:
        AuthError: no application-default credentials can be found.
    """
    if credentials is not None:
        return credentials
    _check_key_files()
    try:
        import google.auth
        from google.auth import exceptions as auth_exceptions
    except ImportError as e:
        raise missing_extra("vertex", "vertex", e) from e

    from .errors import translate

    try:
        found, _ = google.auth.default(scopes=list(SCOPES))
    except auth_exceptions.DefaultCredentialsError as e:
        raise translate(e, action="auth") from e
    except (ValueError, KeyError, TypeError, AttributeError) as e:
        # A key file of the right type with fields missing or wrong (google-auth's own
        # errors for it are not DefaultCredentialsError): the same answer.
        unusable = auth_exceptions.DefaultCredentialsError(f"not a usable key file: {e}")  # type: ignore[no-untyped-call]
        raise translate(unusable, action="auth") from e
    return found


#: The largest credentials file handed to google-auth (a key file is about 2 KiB).
MAX_KEY_FILE_BYTES = 64 * 1024


def _check_key_files(env: Mapping[str, str] | None = None) -> None:
    """Refuse, before google-auth reads it whole, a credentials file that is no key file:
    a FIFO or device (a read that never ends) or a file far larger than any key.

    Raises:
        AuthError: naming the file and the fix.
    """
    import stat

    from ...errors import AuthError

    env = os.environ if env is None else env
    named = env.get("GOOGLE_APPLICATION_CREDENTIALS")
    well_known = _well_known_file(env)
    if named:
        path, where = named, f"GOOGLE_APPLICATION_CREDENTIALS names {named}"
    else:
        path, where = well_known, f"the application-default credentials file {well_known}"
    try:
        info = os.stat(path)
    except OSError:
        return  # missing: google-auth names it (or looks elsewhere)
    fix = (
        "point it at a valid key file, or unset it and run `gcloud auth application-default login`"
        if named
        else "run `gcloud auth application-default login` again"
    )
    if not stat.S_ISREG(info.st_mode):
        if not named:
            return  # google-auth passes over a well-known path that is not a file
        raise AuthError(f"{where}, which is not a regular file; {fix}")
    if info.st_size > MAX_KEY_FILE_BYTES:
        raise AuthError(f"{where}, which is {info.st_size} bytes: no key file is larger than {MAX_KEY_FILE_BYTES // 1024} KiB; {fix}")
    import json

    try:
        with open(path, "rb") as f:
            document = json.loads(f.read(MAX_KEY_FILE_BYTES + 1))
    except (OSError, ValueError):
        return  # unreadable or not JSON: google-auth's own message names the file
    if not isinstance(document, dict):
        raise AuthError(f'{where}, which is JSON but no key file (a key is an object with a "type"); {fix}')


def credentials_source(credentials: Any, env: Mapping[str, str] | None = None) -> str:
    """Where the credentials came from, for a message: the file, or the metadata server."""
    env = os.environ if env is None else env
    kind = type(credentials).__module__.rsplit(".", 1)[-1]
    if kind == "compute_engine" or "compute_engine" in type(credentials).__module__:
        return "the metadata server's (this VM's service account)"
    path = env.get("GOOGLE_APPLICATION_CREDENTIALS") or _well_known_file(env)
    return f"the application-default credentials in {path}"


def _well_known_file(env: Mapping[str, str]) -> str:
    """Where ``gcloud auth application-default login`` writes its credentials."""
    return os.path.join(env.get("CLOUDSDK_CONFIG") or os.path.expanduser("~/.config/gcloud"), "application_default_credentials.json")


def ensure_token(credentials: Any, env: Mapping[str, str] | None = None, *, given: bool = False) -> None:
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
    source = "the credentials given to the Vertex AI backend" if given else credentials_source(credentials, env)
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


def ready_credentials(credentials: Any = None) -> Any:
    """:func:`resolve_credentials`, with a token already in hand (:func:`ensure_token`)."""
    given = credentials is not None
    credentials = resolve_credentials(credentials)
    ensure_token(credentials, given=given)
    return credentials


def _first_line(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    line = text[0] if text else type(error).__name__
    return line if len(line) <= 200 else line[:199] + "…"
