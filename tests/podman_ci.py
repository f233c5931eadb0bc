"""podman on this kind of machine, for the container tests and bench's container figures.

Rootful podman with ``runc`` (``crun`` fails on this cgroup setup), ``cgroupfs`` and
1024 ``nofile``/``nproc`` ulimits, its storage under :data:`CACHE` (kept between runs so
the TensorFlow stand-in is built once). No registry is reachable, so
``docker.io/tensorflow/tensorflow:2.18.0`` is a stand-in: a Debian rootfs from
``mmdebstrap``, imported, with ``tensorflow-cpu`` installed by pip, the host's CA bundle
and pip configuration lent to each ``RUN`` step (nothing of them stays in an image).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Iterator

#: The Debian packages the container tests need (installed under CI as root).
PACKAGES = ["podman", "buildah", "mmdebstrap", "runc", "uidmap", "fuse-overlayfs", "slirp4netns"]
CACHE = Path(os.environ.get("TFJOB_CI_CACHE", Path.home() / ".cache" / "tfjob-ci"))
STANDIN = "docker.io/tensorflow/tensorflow:2.18.0"
DEBIAN = "localhost/tfjob-ci/debian:bookworm"
BASE = "localhost/tfjob:0.1.0"
CERT = "/etc/ssl/certs/ca-certificates.crt"
ROOT = Path(__file__).resolve().parent.parent
BUILD_FLAGS = [
    "--network", "host", "--ulimit", "nofile=1024:1024", "--ulimit", "nproc=1024:1024",
    "-v", f"{CERT}:{CERT}:ro", "-v", f"{CACHE / 'pip.conf'}:/etc/pip.conf:ro",
]  # fmt: skip


def missing_tools() -> list[str]:
    """The commands of :data:`PACKAGES` the tests call that are not installed."""
    return [p for p in ("podman", "mmdebstrap", "runc") if shutil.which(p) is None]


def install_tools() -> str:
    """``apt-get install`` :data:`PACKAGES` (as root): "" on success, else what apt said
    (the caller checks :func:`missing_tools` after)."""
    from helpers import apt_install

    return apt_install(*PACKAGES)


def configure() -> dict[str, str]:
    """Write podman's configuration under :data:`CACHE`; return the environment that uses it."""
    CACHE.mkdir(parents=True, exist_ok=True)
    # A short runroot: podman's socket paths must stay under 108 characters.
    runroot = f"/tmp/tfjob-run-{hashlib.sha256(str(CACHE).encode()).hexdigest()[:8]}"
    (CACHE / "containers.conf").write_text(
        '[containers]\ndefault_ulimits = ["nofile=1024:1024", "nproc=1024:1024"]\n'
        '[engine]\nruntime = "runc"\ncgroup_manager = "cgroupfs"\nevents_logger = "file"\n'
    )
    (CACHE / "pip.conf").write_text(f"[global]\ncert = {CERT}\n")
    (CACHE / "storage.conf").write_text(
        f'[storage]\ndriver = "overlay"\ngraphroot = "{CACHE / "containers" / "storage"}"\nrunroot = "{runroot}"\n'
    )
    return {**os.environ, "CONTAINERS_CONF": str(CACHE / "containers.conf"), "CONTAINERS_STORAGE_CONF": str(CACHE / "storage.conf")}


@contextlib.contextmanager
def store_lock() -> Iterator[None]:
    """Hold the image store for this test session: an exclusive lock on a file of the
    cache, waited for while another session (another checkout's run) holds it."""
    import fcntl

    CACHE.mkdir(parents=True, exist_ok=True)
    with open(CACHE / "session.lock", "a") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            print(f"podman_ci: another test run holds {CACHE}'s image store; waiting for it", file=sys.stderr, flush=True)
            fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def run(*argv: str, env: dict[str, str], timeout: float = 900, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """Run a command that must succeed (the assertion names it with the end of its output)."""
    done = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=timeout, cwd=cwd)
    assert done.returncode == 0, f"{' '.join(argv)}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done


def has_image(image: str, env: dict[str, str]) -> bool:
    return subprocess.run(["podman", "image", "exists", image], env=env).returncode == 0


def ensure_standin(env: dict[str, str]) -> str:
    """The TensorFlow base stand-in, built once per cache (about 3 minutes the first time).

    Like the real image (Ubuntu, pip-installed TensorFlow), its Python is not marked
    externally managed (PEP 668), so the base image's pip installs work as they would there.
    """
    if not has_image(STANDIN, env):
        if not has_image(DEBIAN, env):
            rootfs = CACHE / "rootfs.tar"
            if not rootfs.exists():
                run("mmdebstrap", "--variant=minbase", "--include=python3,python3-pip,ca-certificates", "bookworm", str(rootfs), env=env)
            run("podman", "import", str(rootfs), DEBIAN, env=env)
        (CACHE / "standin.Containerfile").write_text(
            f"FROM {DEBIAN}\n"
            f'RUN python3 -m pip install --break-system-packages --no-cache-dir "tensorflow-cpu==2.18.*" '
            "&& ln -sf /usr/bin/python3 /usr/local/bin/python && rm -f /usr/lib/python3*/EXTERNALLY-MANAGED\n"
        )
        run("podman", "build", *BUILD_FLAGS, "-f", str(CACHE / "standin.Containerfile"), "-t", STANDIN, str(CACHE), env=env, timeout=1200)
    return STANDIN


def remove_images(env: dict[str, str], *images: str) -> None:
    """Remove ``images``, then the dangling ones builds left in the cache's store (a
    multi-stage build's first stage, a tag's previous image): the store keeps only the
    stand-ins between runs."""
    if images:
        subprocess.run(["podman", "rmi", "-f", *images], capture_output=True, env=env, timeout=300)
    subprocess.run(["podman", "image", "prune", "-f"], capture_output=True, env=env, timeout=300)


def build_base(env: dict[str, str]) -> str:
    """tfjob's base image, built from the repository root as container/README.md says.

    ``--no-cache``: the final stage installs the wheel through a bind mount, which a cached
    layer would not notice changing.
    """
    run("podman", "build", *BUILD_FLAGS, "--no-cache", "-f", "container/Dockerfile", "-t", BASE, ".", env=env, cwd=ROOT, timeout=900)
    return BASE
