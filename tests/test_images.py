"""The images built and run for real (issue 12): podman, a local stand-in for the TensorFlow
base, tfjob's base image and the custom-container template built as their READMEs say, and
the census trainer run as 1 chief + 2 workers + 1 ps containers through `tfjob submit --image`.

No registry is reachable here, so `docker.io/tensorflow/tensorflow:2.18.0` is a stand-in: a
Debian rootfs from mmdebstrap, imported, with tensorflow-cpu installed by pip (the CA bundle
lent to the build, as the host's pip reaches the index). The engine's storage lives in
``~/.cache/tfjob-ci`` (kept between runs: the stand-in is built once; the images of a run
are removed at its end). Under ``CI=true`` as root, the Debian packages are installed here
when missing; anywhere else a missing engine skips with its reason.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from pathlib import Path
from typing import Iterator

import pytest
from conftest import BIN, ROOT

pytestmark = [pytest.mark.containers, pytest.mark.slow]

PACKAGES = ["podman", "buildah", "mmdebstrap", "runc", "uidmap", "fuse-overlayfs", "slirp4netns"]
CACHE = Path(os.environ.get("TFJOB_CI_CACHE", Path.home() / ".cache" / "tfjob-ci"))
STANDIN = "docker.io/tensorflow/tensorflow:2.18.0"
DEBIAN = "localhost/tfjob-ci/debian:bookworm"
BASE = "localhost/tfjob:0.1.0"
CERT = "/etc/ssl/certs/ca-certificates.crt"
BUILD_FLAGS = [
    "--network", "host", "--ulimit", "nofile=1024:1024", "--ulimit", "nproc=1024:1024",
    "-v", f"{CERT}:{CERT}:ro", "-v", f"{CACHE / 'pip.conf'}:/etc/pip.conf:ro",
]  # fmt: skip


def _need(condition: bool, reason: str) -> None:
    if condition:
        return
    if os.environ.get("CI") == "true":
        pytest.fail(f"CI must run the container tests: {reason}")
    pytest.skip(reason)


def _sh(*argv: str, env: dict[str, str], timeout: float = 900, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=timeout, cwd=cwd)
    assert done.returncode == 0, f"{' '.join(argv)}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done


@pytest.fixture(scope="session")
def podman_env() -> Iterator[dict[str, str]]:
    """podman configured for this machine (runc, cgroupfs, 1024 ulimits), storage in the cache."""
    missing = [p for p in ("podman", "mmdebstrap", "runc") if shutil.which(p) is None]
    if missing and os.environ.get("CI") == "true" and os.geteuid() == 0:
        subprocess.run(["apt-get", "install", "-y", "-q", *PACKAGES], capture_output=True, timeout=900,
                       env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"})  # fmt: skip
        missing = [p for p in ("podman", "mmdebstrap", "runc") if shutil.which(p) is None]
    _need(not missing, f"needs {', '.join(missing)} (apt-get install {' '.join(PACKAGES)})")
    _need(os.geteuid() == 0, "the container tests run rootful podman (as CI does)")
    CACHE.mkdir(parents=True, exist_ok=True)
    # A short runroot: podman's socket paths must stay under 108 characters.
    runroot = f"/tmp/tfjob-run-{hashlib.sha256(str(CACHE).encode()).hexdigest()[:8]}"
    (CACHE / "containers.conf").write_text(
        '[containers]\ndefault_ulimits = ["nofile=1024:1024", "nproc=1024:1024"]\n'
        '[engine]\nruntime = "runc"\ncgroup_manager = "cgroupfs"\nevents_logger = "file"\n'
    )
    # RUN steps reach the package index the way this machine's pip does: its CA bundle,
    # lent to each step with a pip.conf naming it (nothing of it stays in an image).
    (CACHE / "pip.conf").write_text(f"[global]\ncert = {CERT}\n")
    (CACHE / "storage.conf").write_text(
        f'[storage]\ndriver = "overlay"\ngraphroot = "{CACHE / "containers" / "storage"}"\nrunroot = "{runroot}"\n'
    )
    env = {**os.environ, "CONTAINERS_CONF": str(CACHE / "containers.conf"), "CONTAINERS_STORAGE_CONF": str(CACHE / "storage.conf")}
    yield env
    subprocess.run(["podman", "rmi", "-f", BASE, "localhost/census:ci"], capture_output=True, env=env, timeout=300)


def _has(image: str, env: dict[str, str]) -> bool:
    return subprocess.run(["podman", "image", "exists", image], env=env).returncode == 0


@pytest.fixture(scope="session")
def standin(podman_env: dict[str, str]) -> str:
    """The TensorFlow base stand-in, built once per cache (about 3 minutes the first time).

    Like the real image (Ubuntu, pip-installed TensorFlow), its Python is not marked
    externally managed (PEP 668), so the base image's pip installs work as they would there.
    """
    env = podman_env
    if not _has(STANDIN, env):
        if not _has(DEBIAN, env):
            rootfs = CACHE / "rootfs.tar"
            if not rootfs.exists():
                _sh("mmdebstrap", "--variant=minbase", "--include=python3,python3-pip,ca-certificates", "bookworm", str(rootfs), env=env)
            _sh("podman", "import", str(rootfs), DEBIAN, env=env)
        (CACHE / "standin.Containerfile").write_text(
            f"FROM {DEBIAN}\n"
            f'RUN python3 -m pip install --break-system-packages --no-cache-dir "tensorflow-cpu==2.18.*" '
            "&& ln -sf /usr/bin/python3 /usr/local/bin/python && rm -f /usr/lib/python3*/EXTERNALLY-MANAGED\n"
        )
        _sh("podman", "build", *BUILD_FLAGS, "-f", str(CACHE / "standin.Containerfile"), "-t", STANDIN, str(CACHE), env=env, timeout=1200)
    return STANDIN


@pytest.fixture(scope="session")
def base_image(standin: str, podman_env: dict[str, str]) -> str:
    """tfjob's base image, built from the repository root as container/README.md says."""
    # --no-cache: the final stage installs the wheel through a bind mount, which a cached
    # layer would not notice changing.
    _sh("podman", "build", *BUILD_FLAGS, "--no-cache", "-f", "container/Dockerfile", "-t", BASE, ".", env=podman_env, cwd=ROOT, timeout=900)
    return BASE


def test_the_base_image_has_the_bootstrap_alone_and_passes_pip_check(base_image: str, podman_env: dict[str, str]) -> None:
    out = _sh("podman", "run", "--rm", "--entrypoint", "sh", base_image, "-c",
              "pip check; which tfjob-bootstrap && ! which tfjob && id -u && python -c 'import tf_keras, tensorflow as tf; print(tf.__version__)'",
              env=podman_env)  # fmt: skip
    lines = out.stdout.splitlines()
    assert "/usr/local/bin/tfjob-bootstrap" in lines and "1000" in lines and any(v.startswith("2.18") for v in lines)
    # pip check's one complaint is the stand-in's: it has tensorflow-cpu where the real image has
    # `tensorflow`, which tf-keras names. Nothing of tfjob's is missing a dependency.
    complaints = [line for line in lines if "requires" in line or "has requirement" in line]
    assert all(line.startswith("tf-keras") and "tensorflow" in line for line in complaints), complaints


def test_the_census_template_runs_as_four_containers(base_image: str, podman_env: dict[str, str], tmp_path: Path) -> None:
    trainer = tmp_path / "census"
    tfjob = str(BIN / "tfjob")
    _sh(tfjob, "init", str(trainer), "--template", "custom-container", env=podman_env)
    _sh("podman", "build", *BUILD_FLAGS, "--build-arg", f"BASE_IMAGE={base_image}", "-t", "localhost/census:ci", ".", env=podman_env, cwd=trainer)
    job_dir = tmp_path / "job"
    done = subprocess.run(
        [tfjob, "submit", "--image", "localhost/census:ci", "-m", "trainer.task", "--workers", "2", "--ps", "1",
         "--job-dir", str(job_dir), "--", "--train-steps", "30", "--job-dir", str(job_dir)],
        capture_output=True, text=True, env=podman_env, timeout=900,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-5000:]
    assert "[chief-0]" in done.stderr and "SUCCEEDED: chief-0 exited with code 0" in done.stderr
    assert "evaluation at step" in done.stderr
    assert (job_dir / "model" / "saved_model.pb").exists() or any(job_dir.rglob("saved_model.pb"))
    left = subprocess.run(["podman", "ps", "-a", "-q", "--filter", "label=tfjob.job"], capture_output=True, text=True, env=podman_env)
    assert left.stdout.split() == []
