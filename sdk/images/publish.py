"""An image found, pulled or pushed: the registry asked for a tag's digest (a dry run goes on without
it), an image of the same inputs found in the engine's store, the push with a private login file."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import tempfile
from pathlib import Path
from typing import Iterator

from ..runtime.engine import Engine
from ..errors import BackendError, ImageBuildError
from . import recipe as recipes
from .registry import Repository, RegistryError, google_access_token, manifest_digest, stored_credentials
from .plan import inspect_image
from .stream import Progress, first_line, run_streamed, short


def look_up(
    repo: Repository, tag: str, engine: Engine | None, credentials: object, push: bool, progress: Progress
) -> tuple[str | None, tuple[str, str] | None]:
    """(the digest of ``repo:tag`` on its registry or None, the login for it). A dry run
    (``push`` False) that cannot log in or reach the registry — no Google credentials, no
    ``[vertex]`` extra, no network — goes on without asking it, and says so."""
    try:
        pair = registry_login(repo, engine, credentials)
        return manifest_digest(repo, tag, credentials=pair), pair
    except BackendError as e:
        if push:
            raise
        progress.say(
            f"dry run: {repo.host} was not asked whether it has {repo.name}:{tag} ({first_line(e)}); a real build or submit logs in and pushes it there"
        )
        return None, None


def find_built(engine: Engine, key: str, tag: str) -> str | None:
    """The id of an image of ``key`` in the engine's store (under ``tag``, or under another
    name: the label says what it was built from), tagged ``tag``; None when there is none."""
    local = inspect_image(engine, tag)
    if local is not None and (local.get("Config") or {}).get("Labels", {}).get(recipes.LABEL_KEY) == key:
        return str(local.get("Id", ""))
    done = engine._run("images", "-q", "--no-trunc", "--filter", f"label={recipes.LABEL_KEY}={key}")
    ids = list(dict.fromkeys(done.stdout.split())) if done.returncode == 0 else []
    if not ids:
        return None
    if engine._run("tag", ids[0], tag).returncode != 0:
        return None
    return ids[0] if ids[0].startswith("sha256:") else f"sha256:{ids[0]}"


def pulled(engine: Engine, repo: Repository, reference: str, progress: Progress) -> dict[str, object]:
    """The engine's view of ``reference`` (``REPO@sha256:…``), pulled first when its store
    does not know the image by that digest (layers it has are not fetched again)."""
    found = inspect_image(engine, reference)
    if found is not None:
        return found
    progress.say(f"pulling {reference}")
    flags = ["--tls-verify=false"] if engine.name == "podman" and repo.loopback else []
    code, tail = run_streamed(engine.command("pull", *flags, reference), progress, what=f"pulling {reference}")
    found = inspect_image(engine, reference) if code == 0 else None
    if found is None:
        said = next((line for line in reversed(tail) if line.strip()), "no output")
        raise ImageBuildError(f"pulling {reference} from {repo.host} failed: {short(said, 240)}")
    return found


def registry_login(repo: Repository, engine: Engine | None, credentials: object) -> tuple[str, str] | None:
    if repo.google:
        return "oauth2accesstoken", google_access_token(credentials)
    return stored_credentials(repo.host, engine.name if engine is not None else "podman")


@contextlib.contextmanager
def auth_file(engine: Engine, repo: Repository, pair: tuple[str, str] | None) -> Iterator[tuple[list[str], dict[str, str] | None]]:
    """Flags and environment that give the engine ``pair`` for the push, in a private
    file removed afterwards (never on a command line); none when the engine's own store serves."""
    if pair is None or not repo.google:
        yield [], None
        return
    import base64

    folder = Path(tempfile.mkdtemp(prefix="tfjob-auth-"))
    try:
        os.chmod(folder, 0o700)
        auth = {"auths": {repo.host: {"auth": base64.b64encode(":".join(pair).encode()).decode()}}}
        path = folder / "config.json"
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as f:
            json.dump(auth, f)
        if engine.name == "docker":
            yield [], {**os.environ, "DOCKER_CONFIG": str(folder)}
        else:
            yield ["--authfile", str(path)], None
    finally:
        shutil.rmtree(folder, ignore_errors=True)


_REFUSED = re.compile(r"unauthorized|authentication required|denied|401|403", re.I)


def push_image(engine: Engine, repo: Repository, tag: str, pair: tuple[str, str] | None, progress: Progress) -> str:
    progress.say(f"pushing {tag}")
    with tempfile.TemporaryDirectory(prefix="tfjob-push-") as tmp, auth_file(engine, repo, pair) as (flags, env):
        digestfile = Path(tmp) / "digest"
        if engine.name == "podman":
            argv = engine.command("push", *flags, "--digestfile", str(digestfile),
                                  *(["--tls-verify=false"] if repo.loopback else []), tag)  # fmt: skip
        else:
            argv = engine.command("push", tag)
        code, tail = run_streamed(argv, progress, env, what=f"pushing {tag} to {repo.host}")
        digest = digestfile.read_text().strip() if digestfile.is_file() else ""
    if code != 0:
        said = next((line for line in reversed(tail) if line.strip()), "no output")
        if _REFUSED.search(said):
            raise RegistryError(f"registry {repo.host} refused the push of {tag}: {short(said, 240)}")
        raise ImageBuildError(f"pushing {tag} to {repo.host} failed: {short(said, 240)}")
    if not digest:
        m = next((re.search(r"digest: (sha256:[0-9a-f]{64})", line) for line in reversed(tail) if "digest: sha256:" in line), None)
        digest = m.group(1) if m else ""
    if not re.fullmatch(r"sha256:[0-9a-f]{64}", digest):
        found = manifest_digest(repo, tag.rsplit(":", 1)[1], credentials=pair)
        if not found:
            raise ImageBuildError(f"{engine.name} pushed {tag} but {repo.host} names no digest for it")
        digest = found
    progress.say(f"pushed {repo.name}@{digest}")
    return digest
