"""A registry's view of an image, over the Docker Registry HTTP API v2 (stdlib only).

:func:`manifest_digest` asks a registry whether it holds ``PATH:TAG`` (a ``HEAD`` of the
manifest) and returns its digest, so an image already pushed is never pushed again. It
follows the registries' token dance (``401`` with ``WWW-Authenticate: Bearer realm=…`` →
a token from the realm → the request again), with the credentials of
:func:`registry_credentials`: for Artifact Registry (``*.pkg.dev``) and Container Registry
(``gcr.io``) the Google access token tfjob already uses, as the password of the user
``oauth2accesstoken``; elsewhere what ``podman login`` / ``docker login`` stored.

Loopback registries (``localhost``, ``127.0.0.0/8``, ``[::1]``) are spoken to over plain
HTTP, as docker treats them (insecure by default); every other one over HTTPS.
"""

from __future__ import annotations

import base64
import http.client
import json
import os
import re
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from ..errors import AuthError, BackendError, SpecError
from ..shown import inert

#: What a manifest HEAD accepts: a single image's manifest or an index, Docker's or OCI's.
MANIFEST_TYPES = ", ".join([
    "application/vnd.oci.image.manifest.v1+json",
    "application/vnd.docker.distribution.manifest.v2+json",
    "application/vnd.oci.image.index.v1+json",
    "application/vnd.docker.distribution.manifest.list.v2+json",
])  # fmt: skip
#: The largest answer body read from a registry (a token, an error).
MAX_BODY = 64 * 1024
_DIGEST = re.compile(r"sha256:[0-9a-f]{64}\Z")


class RegistryError(BackendError):
    """A registry refused the login, cannot be reached, or answered what it should not."""


@dataclass(frozen=True)
class Repository:
    """``REGISTRY/PATH`` split: ``host`` as the engine names it, ``path`` inside it."""

    host: str
    path: str

    @property
    def name(self) -> str:
        return f"{self.host}/{self.path}"

    @property
    def loopback(self) -> bool:
        return is_loopback(self.host)

    @property
    def google(self) -> bool:
        return is_google_registry(self.host)


def parse_repository(repo: str, field: str = "image_repo") -> Repository:
    """``REGISTRY/PATH`` (no tag, no digest) as a :class:`Repository`.

    Raises:
        SpecError: not a repository reference, or one with a tag or digest.
    """
    from ..description.spec import check_image

    if not repo.strip():  # e.g. an unset $REPO: a repository is meant, not an image
        raise SpecError(
            field=field,
            problem="is empty",
            fix="give the repository to push to, REGISTRY/PATH, e.g. us-central1-docker.pkg.dev/PROJECT/REPO/trainer",
        )
    check_image(repo, field)
    last = repo.rsplit("/", 1)[-1]
    if "@" in repo or ":" in last:
        raise SpecError(
            field=field,
            value=repo,
            problem="names a tag or digest",
            fix="give the repository alone (REGISTRY/PATH), tfjob tags the image by its content",
        )
    first, _, rest = repo.partition("/")
    if not rest or not ("." in first or ":" in first or first == "localhost" or first.startswith("[")):
        raise SpecError(
            field=field,
            value=repo,
            problem="names no registry",
            fix="give REGISTRY/PATH, e.g. us-central1-docker.pkg.dev/PROJECT/REPO/trainer or 127.0.0.1:5000/trainer",
        )
    return Repository(first, rest)


def is_loopback(host: str) -> bool:
    """``localhost``, ``127.x.y.z`` or ``[::1]``, with or without a port."""
    name = host[1:].split("]")[0] if host.startswith("[") else host.rsplit(":", 1)[0] if host.count(":") == 1 else host
    return name == "localhost" or name == "::1" or re.fullmatch(r"127\.\d{1,3}\.\d{1,3}\.\d{1,3}", name) is not None


def is_google_registry(host: str) -> bool:
    """Artifact Registry (``REGION-docker.pkg.dev``) or Container Registry (``gcr.io``, ``eu.gcr.io``…)."""
    name = host.split(":")[0]
    return name.endswith(".pkg.dev") or name == "gcr.io" or name.endswith(".gcr.io")


def base_url(host: str) -> str:
    """Where the registry API of ``host`` answers (Docker Hub's is not at docker.io itself)."""
    if host in ("docker.io", "index.docker.io"):
        host = "registry-1.docker.io"
    return f"{'http' if is_loopback(host) else 'https'}://{host}"


def google_access_token(credentials: object = None) -> str:
    """The access token of the Google credentials tfjob uses (application-default ones
    unless given): the password of ``oauth2accesstoken`` at Google's registries.

    Raises:
        AuthError: no credentials, or their token endpoint refused them.
    """
    from ..backends.vertex.auth import ready_credentials

    token = getattr(ready_credentials(credentials), "token", None)
    if not token:
        raise AuthError("the Google credentials gave no access token for the registry; run `gcloud auth application-default login`")
    return str(token)


def engine_auth_files(engine: str) -> list[Path]:
    """Where ``podman login`` / ``docker login`` keep what they stored, in the order they read them."""
    env = os.environ
    if engine == "docker":
        return [Path(env.get("DOCKER_CONFIG") or Path.home() / ".docker") / "config.json"]
    files = []
    if env.get("REGISTRY_AUTH_FILE"):
        files.append(Path(env["REGISTRY_AUTH_FILE"]))
    runtime = env.get("XDG_RUNTIME_DIR") or f"/run/user/{os.getuid()}"
    files += [Path(runtime) / "containers" / "auth.json", Path.home() / ".config" / "containers" / "auth.json",
              Path(env.get("DOCKER_CONFIG") or Path.home() / ".docker") / "config.json"]  # fmt: skip
    return files


def stored_credentials(host: str, engine: str) -> tuple[str, str] | None:
    """The user and password the engine stored for ``host`` (an ``auths`` entry), if any.
    Credential helpers (``credHelpers``) are the engine's own business: the push goes
    through the engine, which asks them; only the manifest check then goes without."""
    from ..description.limits import read_bounded_text

    for path in engine_auth_files(engine):
        try:
            data = json.loads(read_bounded_text(path, str(path), 1024 * 1024, "registry auth file"))
        except Exception:  # noqa: BLE001 - a missing or unreadable store is no credentials
            continue
        entry = (data.get("auths") or {}).get(host) if isinstance(data, dict) and isinstance(data.get("auths"), dict) else None
        if isinstance(entry, dict) and isinstance(entry.get("auth"), str):
            try:
                user, _, password = base64.b64decode(entry["auth"]).decode().partition(":")
            except ValueError:
                continue
            if user:
                return user, password
    return None


def _challenge(header: str) -> tuple[str, dict[str, str]]:
    scheme, _, rest = header.strip().partition(" ")
    return scheme.lower(), dict(re.findall(r'(\w+)="([^"]*)"', rest))


def _open(request: urllib.request.Request, timeout: float) -> tuple[int, dict[str, str], bytes]:
    try:
        with urllib.request.urlopen(request, timeout=timeout) as answer:  # noqa: S310 - the registry the user named
            return answer.status, {k.lower(): v for k, v in answer.headers.items()}, answer.read(MAX_BODY)
    except urllib.error.HTTPError as e:
        return e.code, {k.lower(): v for k, v in e.headers.items()}, e.read(MAX_BODY) if e.fp else b""


def manifest_digest(repo: Repository, tag: str, *, credentials: tuple[str, str] | None = None, timeout: float = 30) -> str | None:
    """The digest of ``repo:tag``'s manifest on its registry, or None when it has none.

    Raises:
        RegistryError: the registry cannot be reached, or refused the credentials (named).
    """
    url = f"{base_url(repo.host)}/v2/{repo.path}/manifests/{urllib.parse.quote(tag)}"
    headers = {"Accept": MANIFEST_TYPES}
    try:
        status, answer, _ = _open(urllib.request.Request(url, method="HEAD", headers=headers), timeout)
        if status == 401:
            scheme, params = _challenge(answer.get("www-authenticate", ""))
            basic = "Basic " + base64.b64encode(":".join(credentials).encode()).decode() if credentials else None
            if scheme == "bearer" and params.get("realm"):
                query = {k: v for k, v in params.items() if k in ("service", "scope")}
                query.setdefault("scope", f"repository:{repo.path}:pull")
                token_request = urllib.request.Request(params["realm"] + "?" + urllib.parse.urlencode(query))
                if basic:
                    token_request.add_header("Authorization", basic)
                code, _, body = _open(token_request, timeout)
                if code != 200:
                    raise _refused(repo, code, credentials)
                try:
                    document = json.loads(body)
                    token = document.get("token") or document.get("access_token")
                except (ValueError, AttributeError):
                    token = None
                if not token:
                    raise RegistryError(f"registry {repo.host} answered its token request without a token")
                headers["Authorization"] = f"Bearer {token}"
            elif scheme == "basic" and basic:
                headers["Authorization"] = basic
            else:
                raise _refused(repo, status, credentials)
            status, answer, _ = _open(urllib.request.Request(url, method="HEAD", headers=headers), timeout)
    except OSError as e:
        reason = getattr(e, "reason", None) or e.strerror or e
        raise RegistryError(
            f"registry {repo.host} cannot be reached ({inert(str(reason))[:200]}); check --image-repo and the network"
        ) from None
    except (http.client.HTTPException, ValueError) as e:
        # More than 100 headers, a header line past 64 KiB, a status line that is no HTTP, a realm that is no URL.
        said = inert(str(e) or type(e).__name__)[:200]
        raise RegistryError(
            f"registry {repo.host} answered what is no registry's HTTP answer ({type(e).__name__}: {said}); check --image-repo"
        ) from None
    if status in (401, 403):
        raise _refused(repo, status, credentials)
    if status == 404:
        return None
    if status != 200:
        raise RegistryError(f"registry {repo.host} answered HTTP {status} for {repo.path}:{tag}")
    digest = answer.get("docker-content-digest", "")
    if not _DIGEST.match(digest):
        raise RegistryError(f"registry {repo.host} holds {repo.path}:{tag} but named no sha256 digest for it")
    return digest


def _refused(repo: Repository, status: int, credentials: tuple[str, str] | None) -> RegistryError:
    how = f"the login of {credentials[0]!r}" if credentials else "access without a login"
    fix = ("check `gcloud auth application-default login` and the Artifact Registry Writer role" if repo.google
           else f"log in with `podman login {repo.host}` (or docker login)")  # fmt: skip
    return RegistryError(f"registry {repo.host} refused {how} (HTTP {status}) for {repo.path}; {fix}")
