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

import re
import subprocess
from pathlib import Path

import podman_ci
import pytest
from helpers import BIN
from podman_ci import BUILD_FLAGS
from podman_ci import run as _sh

pytestmark = [pytest.mark.containers, pytest.mark.slow]


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
    _sh(
        "podman",
        "build",
        *BUILD_FLAGS,
        "--build-arg",
        f"BASE_IMAGE={base_image}",
        "-t",
        "localhost/census:ci",
        ".",
        env=podman_env,
        cwd=trainer,
    )
    job_dir = tmp_path / "job"
    done = subprocess.run(
        [tfjob, "submit", "--image", "localhost/census:ci", "-m", "trainer.task", "--workers", "2", "--ps", "1",
         "--job-dir", str(job_dir), "--", "--train-steps", "30", "--job-dir", str(job_dir)],
        capture_output=True, text=True, env=podman_env, timeout=900,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-5000:]
    assert "[chief-0]" in done.stderr and "SUCCEEDED: chief-0 exited with code 0" in done.stderr
    assert "evaluation at step" in done.stderr
    # The summary reads as a process job's: the stopped tasks ended by SIGTERM, not 'exit 143'.
    stopped = [line.split() for line in done.stderr.splitlines() if line.startswith(("worker-", "ps-"))]
    assert stopped and all(row[1:3] == ["STOPPED", "SIGTERM"] for row in stopped), stopped
    assert (job_dir / "model" / "saved_model.pb").exists() or any(job_dir.rglob("saved_model.pb"))
    left = subprocess.run(["podman", "ps", "-a", "-q", "--filter", "label=tfjob.job"], capture_output=True, text=True, env=podman_env)
    assert left.stdout.split() == []


def test_bench_measures_the_container_path(base_image: str, podman_env: dict[str, str], tmp_path: Path) -> None:
    """bench's opt-in containers section: every figure comes out, finite, beside its baseline
    (image builds, and a 1+2+1 job's start-up and teardown as containers against processes)."""
    import json
    import math
    import sys

    out = tmp_path / "bench.json"
    done = subprocess.run([sys.executable, str(podman_ci.ROOT / "bench" / "run.py"), "--only", "containers", "--quick", "--runs", "1",
                           "--json", str(out)], capture_output=True, text=True, env=podman_env, timeout=900)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    figures = {f["key"]: f for f in json.loads(out.read_text())["figures"]}
    assert sorted(figures) == ["containers.base_build", "containers.startup", "containers.teardown", "containers.trainer_build"]
    for f in figures.values():
        for sample in (f["sample"], f["baseline"]):
            assert sample["values"] and all(math.isfinite(v) and v > 0 for v in sample["values"]), f
    left = subprocess.run(["podman", "ps", "-a", "-q", "--filter", "label=tfjob.job"], capture_output=True, text=True, env=podman_env)
    assert left.stdout.split() == []


#: Appended to a test trainer: a barrier at the chief's address from TF_CONFIG. Every task
#: stays up until all have reached it (a task that ends early takes its host name with it,
#: and the job ends with the chief).
CHIEF_WAITS = """
import json as _json, os as _os, socket as _socket, time as _time
_config = _json.loads(_os.environ["TF_CONFIG"])
_host, _port = _config["cluster"]["chief"][0].rsplit(":", 1)
if _config["task"]["type"] == "chief":
    _server = _socket.create_server(("", int(_port)))
    _server.settimeout(120)
    _arrived = [_server.accept()[0] for _ in range(sum(len(a) for a in _config["cluster"].values()) - 1)]
    for _peer in _arrived:
        _peer.close()
else:
    for _ in range(1200):
        try:
            _peer = _socket.create_connection((_host, int(_port)), timeout=1)
            break
        except OSError:
            _time.sleep(0.1)
    _peer.settimeout(120)
    _peer.recv(1)  # until the chief lets every task go
"""

PEERS = (
    """\
import json, os, socket, time
config = json.loads(os.environ["TF_CONFIG"])
hosts = sorted(a for addresses in config["cluster"].values() for a in addresses)

def resolves(host):
    # A peer's name resolves once its container runs; gRPC waits the same way for a peer.
    for _ in range(300):
        try:
            return bool(socket.gethostbyname(host))
        except socket.gaierror:
            time.sleep(0.1)
    return False

# Every peer resolves by the platform's host name on the job's network: no 127.0.0.1 port here.
print("peers", config["task"]["type"], config["task"]["index"], socket.gethostname(),
      [(h, resolves(h.rsplit(":", 1)[0])) for h in hosts], flush=True)
"""
    + CHIEF_WAITS
)


@pytest.mark.parametrize(("dialect", "hosts"), [
    ("kubeflow", ["peers-chief-0:2222", "peers-ps-0:2222", "peers-worker-0:2222", "peers-worker-1:2222"]),
    ("vertex", ["workerpool0-0:2222", "workerpool1-0:2222", "workerpool1-1:2222", "workerpool2-0:2222"]),
])  # fmt: skip
def test_containers_reach_each_other_by_the_platforms_host_names(
    dialect: str, hosts: list[str], base_image: str, podman_env: dict[str, str], tmp_path: Path
) -> None:
    (tmp_path / "peers.py").write_text(PEERS)
    (tmp_path / "Containerfile").write_text(f"FROM {base_image}\nCOPY peers.py /trainer/peers.py\n")
    _sh("podman", "build", *BUILD_FLAGS, "-t", "localhost/peers:ci", str(tmp_path), env=podman_env)
    try:
        done = subprocess.run([str(BIN / "tfjob"), "submit", "--image", "localhost/peers:ci", "-m", "peers", "--workers", "2", "--ps", "1",
                               "--dialect", dialect, "--display-name", "peers"], capture_output=True, text=True, env=podman_env, timeout=300)  # fmt: skip
    finally:
        _sh("podman", "rmi", "-f", "localhost/peers:ci", env=podman_env)
    assert done.returncode == 0, done.stderr[-3000:]
    lines = [line for line in done.stderr.splitlines() if " peers " in line]
    assert len(lines) == 4, done.stderr
    for line in lines:
        assert str([(h, True) for h in hosts]) in line, line
    chief = next(line for line in lines if "peers chief 0" in line)
    assert f"peers chief 0 {hosts[0].split(':')[0]}" in chief  # its own host name is its address's
    for kind in ("ps", "network ls"):
        left = subprocess.run(
            ["podman", *kind.split(), "-q", "--filter", "label=tfjob.job"], capture_output=True, text=True, env=podman_env
        )
        assert left.stdout.split() == [], kind


def test_a_trainer_directory_runs_on_the_base_image_without_a_build(base_image: str, podman_env: dict[str, str], tmp_path: Path) -> None:
    """PACKAGE_PATH with --image locally does what it does on Kubernetes and Vertex AI: the
    trainer's sdist goes into every container (read-only) and the bootstrap installs it first."""
    pkg = tmp_path / "src" / "shipped"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "task.py").write_text(
        "import json, os, shipped\n"
        "task = json.loads(os.environ['TF_CONFIG'])['task']\n"
        "print('shipped', task['type'], task['index'], os.path.dirname(shipped.__file__).startswith('/trainer'), flush=True)\n"
        + CHIEF_WAITS
    )
    done = subprocess.run([str(BIN / "tfjob"), "submit", str(tmp_path / "src"), "-m", "shipped.task", "--image", base_image,
                           "--workers", "1", "--display-name", "shipped"], capture_output=True, text=True, env=podman_env, timeout=300)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    lines = sorted(line.split("shipped ", 1)[1] for line in done.stderr.splitlines() if re.search(r"\] +shipped ", line))
    assert lines == ["chief 0 False", "worker 0 False"], done.stderr  # installed in site-packages, not a copy in /trainer
    left = subprocess.run(["podman", "ps", "-a", "-q", "--filter", "label=tfjob.job"], capture_output=True, text=True, env=podman_env)
    assert left.stdout.split() == []
