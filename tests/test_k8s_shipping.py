"""Kubernetes without an image rebuild per change (issue 12.4): ``tfjob submit DIR -m M
--image <the tfjob base image> --backend kubeflow|jobset|trainjob`` ships the trainer's sdist
in a ConfigMap of the job, and every pod's bootstrap installs it before it dispatches.

Rendered, created against the Kubernetes stand-in (the ConfigMap owned by the job, gone
with it), refused in one line when it cannot fit, and — the part a cluster would do —
a pod's command run for real: the ConfigMap's bytes at the mount, the bootstrap from its
own wheel in a fresh environment, pip installing the shipped sdist offline, the module run.
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, Iterator

import pytest
import yaml
from click.testing import CliRunner

from helpers import CRDS, need_in_ci, write_trainer
from fakes.kube_api import FakeKube, kube_fixture
from tfjob.cli.main import app
from tfjob.packaging import build_sdist
from tfjob.backends.kubeflow.shipment import pod_specs

BASE = "registry.example/tfjob:0.1.0"
CRD = CRDS / "kubeflow.org_tfjobs.yaml"


@pytest.fixture
def trainer(tmp_path: Path) -> Path:
    task = (
        "import json, os, sys\n"
        "task = json.loads(os.environ.get('TF_CONFIG', '{}')).get('task')\n"
        "print('shipped trainer ran as', task, 'with', sys.argv[1:])\n"
    )
    return write_trainer(tmp_path / "src", task).parent


@pytest.fixture
def fake(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeKube]:
    yield from kube_fixture(CRD, tmp_path, monkeypatch)


def _render(*argv: str) -> dict[str, Any]:
    cut = argv.index("--") if "--" in argv else len(argv)
    result = CliRunner().invoke(app, ["render", *argv[:cut], "--output", "json", *argv[cut:]])
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)


def _bootstrap_containers(node: Any) -> Iterator[dict[str, Any]]:
    if isinstance(node, dict):
        if node.get("command") == ["tfjob-bootstrap"]:
            yield node
        for value in node.values():
            yield from _bootstrap_containers(value)
    elif isinstance(node, list):
        for value in node:
            yield from _bootstrap_containers(value)


@pytest.mark.parametrize(("backend", "kinds"), [
    ("kubeflow", ["ConfigMap", "TFJob"]),
    ("jobset", ["ConfigMap", "JobSet"]),
    ("trainjob", ["ConfigMap", "ClusterTrainingRuntime", "TrainJob"]),
])  # fmt: skip
def test_every_pod_installs_the_shipped_sdist_before_dispatch(backend: str, kinds: list[str], trainer: Path, tmp_path: Path) -> None:
    listed = _render(str(trainer), "-m", "trainer.task", "--image", BASE, "--workers", "2", "--ps", "1",
                     "--backend", backend, "--display-name", "shipped", "--", "--steps", "5")  # fmt: skip
    assert listed["kind"] == "List" and [i["kind"] for i in listed["items"]] == kinds
    configmap = listed["items"][0]
    built = build_sdist(trainer, tmp_path / "expected", module="trainer.task")
    # The very bytes of the sdist a Vertex AI job would stage, and the job's name on it.
    assert configmap["metadata"]["name"] == "shipped-packages" and configmap["immutable"] is True
    assert {k: base64.b64decode(v) for k, v in configmap["binaryData"].items()} == {built.filename: built.path.read_bytes()}
    assert configmap["metadata"]["labels"] == {"app.kubernetes.io/managed-by": "tfjob", "tfjob.dev/job-name": "shipped"}
    containers = list(_bootstrap_containers(listed["items"][1:]))
    assert containers
    for container in containers:
        args = container["args"]
        assert args[:4] == ["--package", f"/tfjob/packages/{built.filename}", "--module", "trainer.task"]
        assert args[args.index("--") + 1 :] == ["--steps", "5"]
        assert container["volumeMounts"] == [{"name": "tfjob-packages", "mountPath": "/tfjob/packages", "readOnly": True}]


def test_each_pod_spec_mounts_the_configmap_once(trainer: Path) -> None:
    listed = _render(str(trainer), "-m", "trainer.task", "--image", BASE, "--workers", "2", "--ps", "1", "--backend", "kubeflow",
                     "--display-name", "shipped")  # fmt: skip
    specs = listed["items"][1]["spec"]["tfReplicaSpecs"]
    assert set(specs) == {"Chief", "Worker", "PS"}
    for replica in specs.values():
        assert replica["template"]["spec"]["volumes"] == [{"name": "tfjob-packages", "configMap": {"name": "shipped-packages"}}]


def test_a_gs_package_is_downloaded_by_the_bootstrap_and_needs_no_configmap() -> None:
    manifest = _render("gs://bucket/trainer-0.1.tar.gz", "-m", "trainer.task", "--image", BASE, "--backend", "kubeflow",
                       "--display-name", "from-gcs")  # fmt: skip
    assert manifest["kind"] == "TFJob"
    (chief,) = manifest["spec"]["tfReplicaSpecs"]["Chief"]["template"]["spec"]["containers"]
    assert chief["args"][:4] == ["--package", "gs://bucket/trainer-0.1.tar.gz", "--module", "trainer.task"]
    assert "volumeMounts" not in chief and "volumes" not in manifest["spec"]["tfReplicaSpecs"]["Chief"]["template"]["spec"]


def test_extra_packages_ship_beside_the_trainer_in_order(trainer: Path, tmp_path: Path) -> None:
    helper = tmp_path / "helpers-1.0-py3-none-any.whl"
    helper.write_bytes(b"PK\x05\x06" + b"\x00" * 18)
    listed = _render(str(trainer), "-m", "trainer.task", "--image", BASE, "--backend", "kubeflow", "--display-name", "extra",
                     "--packages", f"{helper},gs://b/lib-2.0.tar.gz")  # fmt: skip
    configmap, tfjob = listed["items"]
    assert list(configmap["binaryData"]) == ["trainer-0.0.0.tar.gz", helper.name]
    args = tfjob["spec"]["tfReplicaSpecs"]["Chief"]["template"]["spec"]["containers"][0]["args"]
    assert args[:6] == ["--package", "/tfjob/packages/trainer-0.0.0.tar.gz", "--package", f"/tfjob/packages/{helper.name}",
                        "--package", "gs://b/lib-2.0.tar.gz"]  # fmt: skip


@pytest.mark.parametrize(("setup", "message"), [
    ("big", "more than a Kubernetes ConfigMap holds (1.0 MB): stage the package in a bucket and give its gs:// URI"),
    ("no-module", "trainer.nothing"),
    ("no-image", "pass --image"),
    ("missing", "no such file or directory"),
    ("bad-key", "a ConfigMap key is letters, digits, '-', '_' and '.' (at most 253), so 'my lib-1.0.tar.gz' cannot be shipped"),
])  # fmt: skip
def test_what_cannot_ship_is_one_line_and_exit_2(setup: str, message: str, trainer: Path, tmp_path: Path) -> None:
    argv = [str(trainer), "-m", "trainer.task", "--image", BASE, "--backend", "kubeflow", "--display-name", "x"]
    if setup == "big":
        (trainer / "trainer" / "weights.bin").write_bytes(os.urandom(1_200_000))  # random: gzip cannot shrink it
    elif setup == "no-module":
        argv[2] = "trainer.nothing"
    elif setup == "no-image":
        argv.remove("--image")
        argv.remove(BASE)
    elif setup == "bad-key":
        (tmp_path / "my lib-1.0.tar.gz").write_bytes(b"")
        argv += ["--packages", str(tmp_path / "my lib-1.0.tar.gz")]
    else:
        argv += ["--packages", str(tmp_path / "absent.whl")]
    result = CliRunner().invoke(app, ["render", *argv])
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.stderr and result.stderr.count("\n") == 1, result.stderr
    assert result.stderr.startswith("error: ") and message in result.stderr


def test_submit_creates_the_configmap_owned_by_the_job_and_cancel_collects_it(fake: FakeKube, trainer: Path, tmp_path: Path) -> None:
    kubeconfig = str(fake.write_kubeconfig(tmp_path / "kubeconfig"))
    runner = CliRunner()
    result = runner.invoke(app, ["submit", str(trainer), "-m", "trainer.task", "--image", BASE, "--workers", "1", "--backend",
                                 "kubeflow", "--kubeconfig", kubeconfig, "--display-name", "ship-it", "--async"])  # fmt: skip
    assert result.exit_code == 0, result.stderr
    assert result.stdout == "default/ship-it\n"
    tfjob = fake.tfjobs[("default", "ship-it")]
    configmap = fake.configmaps[("default", "ship-it-packages")]
    assert configmap["metadata"]["ownerReferences"] == [
        {"apiVersion": "kubeflow.org/v1", "kind": "TFJob", "name": "ship-it", "uid": tfjob["metadata"]["uid"], "blockOwnerDeletion": False}
    ]
    assert [m for m, p in fake.requests if "configmaps" in p or "tfjobs" in p] == ["POST", "POST"]  # the job, then its packages
    # A second submit of the same name is refused by the cluster before any ConfigMap is touched.
    again = runner.invoke(app, ["submit", str(trainer), "-m", "trainer.task", "--image", BASE, "--backend", "kubeflow",
                                "--kubeconfig", kubeconfig, "--display-name", "ship-it", "--async"])  # fmt: skip
    assert again.exit_code == 2 and "already exists" in again.stderr
    assert fake.configmaps[("default", "ship-it-packages")]["metadata"]["uid"] == configmap["metadata"]["uid"]
    cancel = runner.invoke(app, ["cancel", "default/ship-it"])
    assert cancel.exit_code == 0, cancel.stderr
    assert fake.tfjobs == {} and fake.configmaps == {}  # the garbage collector took the packages with the job


def test_a_stale_configmap_of_tfjob_is_replaced_and_anyone_elses_is_not(fake: FakeKube, trainer: Path, tmp_path: Path) -> None:
    kubeconfig = str(fake.write_kubeconfig(tmp_path / "kubeconfig"))
    fake.configmaps[("default", "mine-packages")] = {"metadata": {"name": "mine-packages", "namespace": "default", "uid": "old",
                                                                  "labels": {"app.kubernetes.io/managed-by": "tfjob"}}}  # fmt: skip
    fake.configmaps[("default", "theirs-packages")] = {"metadata": {"name": "theirs-packages", "namespace": "default", "uid": "keep"}}
    base = ["submit", str(trainer), "-m", "trainer.task", "--image", BASE, "--backend", "kubeflow", "--kubeconfig", kubeconfig, "--async"]
    mine = CliRunner().invoke(app, [*base, "--display-name", "mine"])
    assert mine.exit_code == 0, mine.stderr
    assert fake.configmaps[("default", "mine-packages")]["metadata"]["uid"] != "old"
    theirs = CliRunner().invoke(app, [*base, "--display-name", "theirs"])
    assert theirs.exit_code == 2 and "ConfigMap default/theirs-packages exists and is not tfjob's" in theirs.stderr
    assert fake.configmaps[("default", "theirs-packages")]["metadata"]["uid"] == "keep"
    assert ("default", "theirs") not in fake.tfjobs  # the job made for it was deleted again: nothing half-made


def test_the_jobset_and_trainjob_backends_ship_the_same_way(fake: FakeKube, trainer: Path, tmp_path: Path) -> None:
    kubeconfig = str(fake.write_kubeconfig(tmp_path / "kubeconfig"))
    for backend, store in (("jobset", "jobsets"), ("trainjob", "trainjobs")):
        name = f"via-{backend}"
        result = CliRunner().invoke(app, ["submit", str(trainer), "-m", "trainer.task", "--image", BASE, "--backend", backend,
                                          "--kubeconfig", kubeconfig, "--display-name", name, "--async"])  # fmt: skip
        assert result.exit_code == 0, result.stderr
        owner = getattr(fake, store)[("default", name)]
        configmap = fake.configmaps[("default", f"{name}-packages")]
        assert configmap["metadata"]["ownerReferences"][0]["uid"] == owner["metadata"]["uid"]
        assert CliRunner().invoke(app, ["cancel", f"default/{name}"]).exit_code == 0
        assert ("default", f"{name}-packages") not in fake.configmaps


def installed_as_wheel(name: str, out: Path) -> Path:
    """The pure-Python distribution ``name`` installed in this environment, packed again as a
    wheel in ``out`` (its files as RECORD lists them, a RECORD of their hashes anew)."""
    import hashlib
    import importlib.metadata
    import zipfile

    dist = importlib.metadata.distribution(name)
    version = dist.version
    info = f"{dist.metadata['Name'].replace('-', '_')}-{version}.dist-info"
    installer = {f"{info}/{n}" for n in ("RECORD", "INSTALLER", "REQUESTED", "direct_url.json")}
    files = [f for f in dist.files or [] if not str(f).startswith("..") and "__pycache__" not in f.parts and str(f) not in installer]
    assert any(str(f) == f"{info}/WHEEL" for f in files), f"{name} {version} was not installed from a wheel"
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"{info.removesuffix('.dist-info')}-py3-none-any.whl"
    record = []
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as whl:
        for f in files:
            data = Path(f.locate()).read_bytes()
            digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
            whl.writestr(str(f), data)
            record.append(f"{f},sha256={digest},{len(data)}")
        whl.writestr(f"{info}/RECORD", "\n".join([*record, f"{info}/RECORD,,"]) + "\n")
    return path


def test_a_pods_command_installs_the_shipped_sdist_and_runs_the_module(trainer: Path, tmp_path: Path) -> None:
    """What the kubelet and the image do, done here: the ConfigMap's files at the mount, the
    container's command and args, in an environment holding only the bootstrap's wheel."""
    from tfjob.container import wheel

    listed = _render(str(trainer), "-m", "trainer.task", "--image", BASE, "--workers", "1", "--backend", "kubeflow",
                     "--display-name", "pod", "--", "--steps", "3")  # fmt: skip
    configmap, tfjob = listed["items"]
    mount = tmp_path / "mount"
    mount.mkdir()
    for name, data in configmap["binaryData"].items():
        (mount / name).write_bytes(base64.b64decode(data))
    (container,) = tfjob["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"]["containers"]
    args = [a.replace("/tfjob/packages", str(mount)) for a in container["args"]]

    # A fresh environment: its own pip and setuptools (as the TensorFlow image has), no tfjob but the wheel.
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    boot = wheel.build(str(tmp_path / "wheel"))
    offline = {"PATH": f"{venv / 'bin'}{os.pathsep}{os.environ['PATH']}", "HOME": str(tmp_path), "PIP_NO_INDEX": "1"}
    done = subprocess.run(
        [str(python), "-m", "pip", "install", "-q", "--no-index", boot], env=offline, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    tf_config = {"cluster": {"chief": ["pod-chief-0.default.svc:2222"], "worker": ["pod-worker-0.default.svc:2222"]},
                 "task": {"type": "worker", "index": 0}}  # the operator's, for this pod  # fmt: skip

    def pod() -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(venv / "bin" / container["command"][0]), *args], env={**offline, "TF_CONFIG": json.dumps(tf_config)},
                              capture_output=True, text=True, timeout=180, cwd=tmp_path)  # fmt: skip

    # Python 3.11's own setuptools (65) cannot build a wheel without the `wheel` package: one line says so.
    lacking = pod()
    assert lacking.returncode == 1 and lacking.stderr.splitlines()[-1] == (
        "error: --package trainer-0.0.0.tar.gz is a source archive, and building it here needs setuptools 70.1 or later "
        "(or the wheel package), which this image lacks (the TensorFlow images have it): add "
        '`pip install "setuptools>=70.1"` to the image, or give a built wheel'
    ), lacking.stderr
    # The TensorFlow image's toolchain: this environment's setuptools (the test extra's), as a
    # wheel installed with no index, like the bootstrap's: the test reaches nothing beyond the machine.
    import importlib.metadata

    have = importlib.metadata.version("setuptools")
    need_in_ci(
        tuple(map(int, have.split(".")[:2])) >= (70, 1), f"setuptools {have} here, the test extra's is >=70.1 (pip install -e '.[test]')"
    )
    toolchain = installed_as_wheel("setuptools", tmp_path / "toolchain")
    got = subprocess.run(
        [str(python), "-m", "pip", "install", "-q", "--no-index", str(toolchain)], env=offline, capture_output=True, text=True, timeout=300
    )
    assert got.returncode == 0, got.stderr
    ran = pod()
    assert ran.returncode == 0, ran.stderr[-3000:]
    assert "shipped trainer ran as {'type': 'worker', 'index': 0} with ['--steps', '3']" in ran.stdout
    assert yaml.safe_dump(configmap)  # the List is what `kubectl apply -f` takes, too


# -- a path --job-dir on Kubernetes: a shared volume, writable by the image's user (issue 12) --
JOB_VOLUME = """\
default:
  spec:
    volumes: [{name: job, persistentVolumeClaim: {claimName: census-job}}]
    containers:
      - name: tensorflow
        volumeMounts: [{name: job, mountPath: /shared}]
"""


@pytest.mark.parametrize("backend", ["kubeflow", "jobset", "trainjob"])
def test_a_job_dir_on_a_mounted_volume_gets_the_images_group(backend: str, tmp_path: Path) -> None:
    template = tmp_path / "pod.yaml"
    template.write_text(JOB_VOLUME)
    manifest = _render("-m", "trainer.task", "--image", BASE, "--workers", "1", "--backend", backend, "--display-name", "jd",
                       "--job-dir", "/shared/census", "--pod-template", str(template))  # fmt: skip
    pods = [node for node in pod_specs(manifest)]
    assert pods
    for pod in pods:
        assert pod["securityContext"] == {"fsGroup": 1000}  # uid/gid 1000 is the base image's tfjob user
        assert pod["volumes"] == [{"name": "job", "persistentVolumeClaim": {"claimName": "census-job"}}]


def test_the_templates_own_fs_group_is_kept(tmp_path: Path) -> None:
    template = tmp_path / "pod.yaml"
    template.write_text(JOB_VOLUME.replace("  spec:\n", "  spec:\n    securityContext: {fsGroup: 2000, runAsUser: 2000}\n", 1))
    manifest = _render("-m", "trainer.task", "--image", BASE, "--backend", "kubeflow", "--display-name", "jd",
                       "--job-dir", "/shared", "--pod-template", str(template))  # fmt: skip
    (pod,) = pod_specs(manifest)
    assert pod["securityContext"] == {"fsGroup": 2000, "runAsUser": 2000}


def test_a_gs_job_dir_needs_no_volume() -> None:
    manifest = _render("-m", "trainer.task", "--image", BASE, "--backend", "kubeflow", "--display-name", "jd", "--job-dir", "gs://b/out")
    (pod,) = pod_specs(manifest)
    assert "securityContext" not in pod and "volumes" not in pod


@pytest.mark.parametrize(("job_dir", "message"), [
    ("/job", "--job-dir /job: no volume is mounted there in the chief pods, so each pod would write its own filesystem"),
    ("/sharedness", "no volume is mounted there"),  # /shared is mounted, but /sharedness is not under it
    ("runs/census", "--job-dir runs/census: on Kubernetes the job dir is a path in every pod; give an absolute path"),
])  # fmt: skip
def test_a_job_dir_no_pod_can_share_is_one_line(job_dir: str, message: str, tmp_path: Path) -> None:
    template = tmp_path / "pod.yaml"
    template.write_text(JOB_VOLUME)
    result = CliRunner().invoke(app, ["render", "-m", "trainer.task", "--image", BASE, "--backend", "kubeflow", "--job-dir", job_dir,
                                      "--pod-template", str(template)])  # fmt: skip
    assert result.exit_code == 2, result.output
    assert result.stderr.count("\n") == 1 and message in result.stderr, result.stderr
