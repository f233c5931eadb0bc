"""`tfjob build` and `tfjob submit --build` with real parts (issue 26): podman, tfjob's base
image (conftest's session fixtures, as test_images.py builds it), and a real registry on
127.0.0.1 (Debian's docker-registry, :mod:`registry_ci`) whose access log counts every
request a push sends.

The custom-container template is built, pushed, run from the engine's store as 1 chief + 2
workers + 1 ps containers, and pulled by digest into a clean store (a second storage root)
and run there to a SavedModel; a re-submit of unchanged code uploads nothing; a one-line
change uploads one layer; a broken RUN step, a missing requirement and a registry that
refuses the login each end in one line; the Vertex AI and Kubernetes renders of a built job
name the pushed digest (golden, and checked by the CustomJob protobuf and the TFJob CRD).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import time
import urllib.request
from pathlib import Path
from typing import Any, Iterator

import podman_ci
import pytest
import registry_ci
import yaml
from helpers import BIN, golden_text

pytestmark = [pytest.mark.containers, pytest.mark.slow]

TFJOB = str(BIN / "tfjob")
GOLDEN = Path(__file__).parent / "golden" / "build"
#: The training arguments of every run: a few steps, the job dir.
STEPS = "3"


@pytest.fixture(scope="module")
def registry(podman_env: dict[str, str], tmp_path_factory: pytest.TempPathFactory) -> Iterator[registry_ci.Registry]:
    registry_ci.ensure()
    running = registry_ci.start(tmp_path_factory.mktemp("registry"))
    yield running
    running.stop()


@pytest.fixture(scope="module")
def build_env(podman_env: dict[str, str], base_image: str) -> Iterator[dict[str, str]]:
    """podman's environment, with the build steps lent the host's network and CA bundle (as the
    stand-in's build is), so a RUN's pip reaches the package index here."""
    yield {**podman_env, "TFJOB_BUILD_FLAGS": shlex.join(podman_ci.BUILD_FLAGS)}
    done = subprocess.run(
        ["podman", "images", "-q", "--filter", "label=dev.tfjob.build.key"], capture_output=True, text=True, env=podman_env
    )
    podman_ci.remove_images(podman_env, *sorted(set(done.stdout.split())))


@pytest.fixture(scope="module")
def census(tmp_path_factory: pytest.TempPathFactory, build_env: dict[str, str]) -> Path:
    """The custom-container template, as `tfjob init` writes it."""
    trainer = tmp_path_factory.mktemp("census") / "census"
    subprocess.run([TFJOB, "init", str(trainer), "--template", "custom-container"], check=True, capture_output=True, env=build_env)
    return trainer


def _tfjob(*args: str, env: dict[str, str], timeout: float = 900) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [TFJOB, *args], capture_output=True, text=True, env={**env, "TFJOB_HOME": os.environ["TFJOB_HOME"]}, timeout=timeout
    )


def _build(trainer: Path, repo: str, env: dict[str, str]) -> dict[str, Any]:
    done = _tfjob("build", str(trainer), "-m", "trainer.task", "--image-repo", repo, "-o", "json", env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stderr == ""  # --output json: nothing but the result
    return json.loads(done.stdout)


def _manifest(registry: registry_ci.Registry, path: str, reference: str) -> dict[str, Any]:
    request = urllib.request.Request(
        f"http://{registry.host}/v2/{path}/manifests/{reference}",
        headers={"Accept": "application/vnd.oci.image.manifest.v1+json, application/vnd.docker.distribution.manifest.v2+json"},
    )
    with urllib.request.urlopen(request, timeout=30) as answer:
        return json.loads(answer.read())


def _uploaded_blobs(requests: list[tuple[str, str, int]]) -> set[str]:
    """The digests of the blobs whose upload a PUT completed."""
    return {
        m.group(1)
        for method, path, _ in requests
        if method == "PUT"
        for m in [re.search(r"[?&]digest=(sha256(?:%3A|:)[0-9a-f]{64})", path)]
        if m
    }


def _run_job(env: dict[str, str], job_dir: Path, *how: str) -> subprocess.CompletedProcess[str]:
    return _tfjob("submit", *how, "-m", "trainer.task", "--workers", "2", "--ps", "1", "--job-dir", str(job_dir),
                  "--", "--train-steps", STEPS, "--job-dir", str(job_dir), env=env)  # fmt: skip


def _assert_trained(done: subprocess.CompletedProcess[str], job_dir: Path) -> None:
    assert done.returncode == 0, done.stderr[-5000:]
    assert "SUCCEEDED: chief-0 exited with code 0" in done.stderr
    assert [t for t in ("[chief-0]", "[worker-0]", "[worker-1]", "[ps-0]") if t not in done.stderr] == []
    assert list(job_dir.rglob("saved_model.pb")), sorted(p.name for p in job_dir.rglob("*"))


def _no_containers_left(env: dict[str, str]) -> None:
    left = subprocess.run(["podman", "ps", "-a", "-q", "--filter", "label=tfjob.job"], capture_output=True, text=True, env=env)
    assert left.stdout.split() == []


def test_build_push_resubmit_unchanged_and_run_by_digest_from_a_clean_store(
    census: Path, registry: registry_ci.Registry, build_env: dict[str, str], tmp_path: Path
) -> None:
    repo = f"{registry.host}/tfjob-ci/census"
    first = _build(census, repo, build_env)
    assert first["pushed"] is True and first["dockerfile"] == "Dockerfile"
    assert re.fullmatch(rf"{re.escape(repo)}@sha256:[0-9a-f]{{64}}", first["reference"]), first
    assert first["tag"] == f"{repo}:{first['key'][:32]}"
    assert _uploaded_blobs(registry.requests()), "the first push uploads the image's blobs"

    # Unchanged code, submitted: nothing is built, the registry is only asked (no upload at all).
    seen = len(registry.requests())
    job_dir = tmp_path / "job"
    done = _run_job(build_env, job_dir, str(census), "--build", "--image-repo", repo)
    _assert_trained(done, job_dir)
    assert "nothing to build or push" in done.stderr
    after = registry.requests()[seen:]
    assert registry.uploads(seen) == [] and after and all(method in ("GET", "HEAD") for method, _, _ in after), after
    from tfjob.runtime.store import JobStore

    store = JobStore()
    try:
        (record,) = store.list()
        assert record.spec["image"] == first["reference"] and not record.spec.get("package")  # the record names the digest
    finally:
        store.close()
    _no_containers_left(build_env)

    # The pushed image alone is enough: pulled by digest into an empty store, it trains there.
    clean = tmp_path / "clean-store"
    runroot = f"/tmp/tfjob-run-clean-{os.getpid()}"
    (tmp_path / "storage.conf").write_text(f'[storage]\ndriver = "overlay"\ngraphroot = "{clean}"\nrunroot = "{runroot}"\n')
    clean_env = {**build_env, "CONTAINERS_STORAGE_CONF": str(tmp_path / "storage.conf")}
    try:
        images = subprocess.run(["podman", "images", "-q"], capture_output=True, text=True, env=clean_env, timeout=120)
        assert images.returncode == 0 and images.stdout.split() == []
        podman_ci.run("podman", "pull", "-q", "--tls-verify=false", first["reference"], env=clean_env, timeout=900)
        clean_dir = tmp_path / "clean-job"
        _assert_trained(_run_job(clean_env, clean_dir, "--image", first["reference"]), clean_dir)
        _no_containers_left(clean_env)
    finally:
        subprocess.run(["podman", "rmi", "-a", "-f"], capture_output=True, env=clean_env, timeout=300)
        shutil.rmtree(clean, ignore_errors=True)
        shutil.rmtree(runroot, ignore_errors=True)


def test_a_one_line_change_pushes_one_new_layer(census: Path, registry: registry_ci.Registry, build_env: dict[str, str]) -> None:
    repo = f"{registry.host}/tfjob-ci/census"
    before = _build(census, repo, build_env)
    task = census / "trainer" / "task.py"
    task.write_text(task.read_text() + "# one line more\n")
    seen = len(registry.requests())
    after = _build(census, repo, build_env)
    assert after["built"] is True and after["pushed"] is True and after["reference"] != before["reference"]
    old = _manifest(registry, "tfjob-ci/census", before["digest"])["layers"]
    new = _manifest(registry, "tfjob-ci/census", after["digest"])["layers"]
    assert len(new) == len(old) and [l["digest"] for l in new[:-1]] == [l["digest"] for l in old[:-1]]
    assert new[-1]["digest"] != old[-1]["digest"]
    config = _manifest(registry, "tfjob-ci/census", after["digest"])["config"]["digest"]
    uploaded = {d.replace("%3A", ":") for d in _uploaded_blobs(registry.requests()[seen:])}
    assert uploaded == {new[-1]["digest"], config}, uploaded  # the top layer and the image's config, nothing else
    sent = sum(l["size"] for l in new if l["digest"] in uploaded)
    assert sent < sum(l["size"] for l in new) / 10


def test_the_generated_recipe_puts_the_requirements_below_the_trainer(build_env: dict[str, str], tmp_path: Path) -> None:
    """A directory without a Dockerfile: its sdist and requirements.txt on the base image. The
    image runs the trainer from the installed package with its requirement, and a one-line
    change of the trainer makes one new filesystem layer on the same requirements layer."""
    trainer = tmp_path / "bare"
    (trainer / "trainer").mkdir(parents=True)
    (trainer / "trainer" / "__init__.py").write_text("")
    task = trainer / "trainer" / "task.py"
    task.write_text("import six, trainer\nprint('bare', six.__version__, trainer.__file__, flush=True)\n")
    (trainer / "requirements.txt").write_text("six==1.16.0\n")

    def build() -> tuple[dict[str, Any], list[str]]:
        done = _tfjob("build", str(trainer), "-m", "trainer.task", "-o", "json", env=build_env)
        assert done.returncode == 0, done.stderr[-3000:]
        built = json.loads(done.stdout)
        layers = subprocess.run(["podman", "image", "inspect", "--format", "{{json .RootFS.Layers}}", built["reference"]],
                                capture_output=True, text=True, env=build_env, check=True)  # fmt: skip
        return built, json.loads(layers.stdout)

    first, before = build()
    assert first["dockerfile"] == "generated" and first["reference"].startswith("localhost/tfjob/bare:") and first["digest"] is None
    ran = podman_ci.run("podman", "run", "--rm", first["reference"], env=build_env, timeout=300)
    assert "bare 1.16.0 /usr/local/lib/" in ran.stdout + ran.stderr  # the installed sdist, not a copy of the directory
    task.write_text(task.read_text() + "# one line more\n")
    second, after = build()
    assert second["built"] is True and second["key"] != first["key"]
    assert len(after) == len(before) and after[:-1] == before[:-1] and after[-1] != before[-1]


def _one_error_line(done: subprocess.CompletedProcess[str], code: int) -> str:
    assert done.returncode == code, (done.returncode, done.stderr[-3000:])
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), done.stderr[-3000:]
    assert "Traceback" not in done.stderr
    return lines[0]


def test_a_broken_run_step_is_one_line_naming_it(build_env: dict[str, str], tmp_path: Path) -> None:
    trainer = tmp_path / "broken"
    (trainer / "trainer").mkdir(parents=True)
    (trainer / "trainer" / "__init__.py").write_text("")
    (trainer / "Dockerfile").write_text("ARG BASE_IMAGE=tfjob:0.1.0\nFROM ${BASE_IMAGE}\nRUN tfjob-no-such-command --now\n")
    line = _one_error_line(_tfjob("build", str(trainer), "-o", "json", env=build_env), 1)
    assert "failed at step RUN tfjob-no-such-command --now" in line and "exit status 127" in line, line
    tagged = subprocess.run(["podman", "images", "--format", "{{.Repository}}", "--filter", "reference=localhost/tfjob/broken"],
                            capture_output=True, text=True, env=build_env)  # fmt: skip
    assert tagged.returncode == 0 and tagged.stdout.split() == []


def test_a_missing_requirement_is_one_line_naming_the_step(build_env: dict[str, str], tmp_path: Path) -> None:
    trainer = tmp_path / "needs"
    (trainer / "trainer").mkdir(parents=True)
    (trainer / "trainer" / "__init__.py").write_text("")
    (trainer / "trainer" / "task.py").write_text("print('never')\n")
    (trainer / "requirements.txt").write_text("tfjob-no-such-package-anywhere==9.9.9\n")
    line = _one_error_line(_tfjob("build", str(trainer), "-m", "trainer.task", "-o", "json", env=build_env), 1)
    assert "failed at step installing requirements.txt" in line and "tfjob-no-such-package-anywhere" in line, line


def test_a_registry_that_refuses_the_login_is_named(build_env: dict[str, str], census: Path, tmp_path: Path) -> None:
    registry_ci.ensure()
    locked = registry_ci.start(tmp_path / "locked", auth="refuse")
    try:
        auth = tmp_path / "auth.json"
        auth.write_text(json.dumps({"auths": {locked.host: {"auth": "dGZqb2I6d3Jvbmc="}}}))  # tfjob:wrong
        for env, who in (({**build_env, "REGISTRY_AUTH_FILE": str(auth)}, "the login of 'tfjob'"), (build_env, "access without a login")):
            line = _one_error_line(_tfjob("build", str(census), "--image-repo", f"{locked.host}/tfjob-ci/census", "-o", "json", env=env), 1)
            assert f"registry {locked.host} refused {who} (HTTP 401)" in line, line
        assert locked.uploads() == []
    finally:
        locked.stop()


def test_ctrl_c_during_a_build_records_nothing_and_tags_nothing(build_env: dict[str, str], tmp_path: Path) -> None:
    trainer = tmp_path / "slow"
    (trainer / "trainer").mkdir(parents=True)
    (trainer / "trainer" / "__init__.py").write_text("")
    (trainer / "trainer" / "task.py").write_text("print('never')\n")
    (trainer / "Dockerfile").write_text(f"ARG BASE_IMAGE=tfjob:0.1.0\nFROM ${{BASE_IMAGE}}\nRUN echo {time.time_ns()} && sleep 60\n")
    env = {**build_env, "TFJOB_HOME": os.environ["TFJOB_HOME"]}
    proc = subprocess.Popen([TFJOB, "submit", str(trainer), "-m", "trainer.task", "--build"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env, start_new_session=True)  # fmt: skip
    assert proc.stderr is not None
    for line in proc.stderr:
        if "build step 2/" in line:
            break
    time.sleep(1)
    os.killpg(proc.pid, signal.SIGINT)  # as a terminal's Ctrl-C reaches the whole foreground group
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err[-2000:]
    assert "Traceback" not in err
    listed = subprocess.run([TFJOB, "list", "--json"], capture_output=True, text=True, env=env)
    assert json.loads(listed.stdout or "[]") == []
    tagged = subprocess.run(["podman", "images", "--format", "{{.Repository}}", "--filter", "reference=localhost/tfjob/slow"],
                            capture_output=True, text=True, env=build_env)  # fmt: skip
    assert tagged.stdout.split() == []


def _normalized(text: str, registry: registry_ci.Registry, digest: str) -> str:
    text = text.replace(registry.host, "127.0.0.1:5000").replace(digest, "sha256:" + "d" * 64)
    return re.sub(r'("tfjob-submission-id": ")[0-9a-f]{32}', r"\g<1>" + "0" * 32, text)


def test_renders_of_a_built_job_name_the_pushed_digest(census: Path, registry: registry_ci.Registry, build_env: dict[str, str]) -> None:
    repo = f"{registry.host}/tfjob-ci/census"
    pushed = _build(census, repo, build_env)
    common = [
        str(census),
        "-m",
        "trainer.task",
        "--build",
        "--image-repo",
        repo,
        "--workers",
        "2",
        "--ps",
        "1",
        "--display-name",
        "census-built",
    ]
    vertex = _tfjob(
        "render", *common, "--backend", "vertex", "--project", "p", "--region", "us-central1", "--", "--train-steps", STEPS, env=build_env
    )
    kube = _tfjob("render", *common, "--backend", "kubeflow", "-o", "yaml", "--", "--train-steps", STEPS, env=build_env)
    for done in (vertex, kube):
        assert done.returncode == 0, done.stderr[-3000:]
        assert "nothing to build or push" in done.stderr
    body = json.loads(vertex.stdout)
    assert {p["containerSpec"]["imageUri"] for p in body["jobSpec"]["workerPoolSpecs"]} == {pushed["reference"]}
    manifest = yaml.safe_load(kube.stdout)
    images = {c["image"] for r in manifest["spec"]["tfReplicaSpecs"].values() for c in r["template"]["spec"]["containers"]}
    assert images == {pushed["reference"]}
    texts = {"vertex.json": _normalized(json.dumps(body, indent=2, sort_keys=True) + "\n", registry, pushed["digest"]),
             "kubeflow.yaml": _normalized(kube.stdout, registry, pushed["digest"])}  # fmt: skip
    for name, text in texts.items():
        path = GOLDEN / name
        assert text == golden_text(path, text), f"{name} changed; regenerate with `pytest --update-golden` and review the diff"


def test_a_dry_run_needs_no_credentials_and_names_the_content_tag(census: Path, build_env: dict[str, str]) -> None:
    """`submit --build --image-repo REPO --dry-run` on Artifact Registry with no Google credentials:
    the image is built (or found) here, the request names REPO:<content tag>, and what a real
    submit would push is said; the registry is not asked."""
    repo = "us-central1-docker.pkg.dev/my-project/trainers/census"
    env = {**build_env, "GOOGLE_APPLICATION_CREDENTIALS": "/nonexistent/credentials.json", "HTTPS_PROXY": "http://127.0.0.1:9"}
    done = _tfjob("submit", str(census), "-m", "trainer.task", "--build", "--image-repo", repo, "--workers", "2", "--ps", "1",
                  "--backend", "vertex", "--project", "p", "--region", "us-central1", "--dry-run", env=env)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    images = {p["containerSpec"]["imageUri"] for p in json.loads(done.stdout)["jobSpec"]["workerPoolSpecs"]}
    (image,) = images
    assert re.fullmatch(rf"{re.escape(repo)}:[0-9a-f]{{32}}", image), image
    assert f"dry run: us-central1-docker.pkg.dev was not asked whether it has {image}" in done.stderr
    assert f"dry run: the request names {image}, built here" in done.stderr and "a real submit pushes it there" in done.stderr
    local = subprocess.run(["podman", "image", "exists", image], env=build_env)
    assert local.returncode == 0  # built (or found) here, tagged as it would be pushed
