"""The parts of `tfjob build` that need no container engine: the generated Dockerfile and
the content key (pure), the build context filtered as the sdist is, the one-line failure
messages read from real engine output, the registry check against a local HTTP server
speaking the registry token protocol, and the keyword/flag checks of `--build`.
(The container tests are in test_image_build.py.)"""

from __future__ import annotations

import base64
import json
import os
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Iterator

import pytest

from helpers import need_module
from click.testing import CliRunner

from tfjob import Job, Vertex
from tfjob.cli.main import app
from tfjob.errors import SpecError
from tfjob.images import recipe
from tfjob.images.build import build_failure, plan_build, uses_base_arg
from tfjob.images.plan import BaseImage
from tfjob.images.registry import RegistryError, is_google_registry, is_loopback, manifest_digest, parse_repository
from tfjob.packaging import build_sdist

BASE = BaseImage(ref="tfjob:0.1.0", id="sha256:" + "b" * 64, user="1000:1000", has_bootstrap=True)


def _trainer(root: Path, requirements: str | None = "pandas==2.2.2\n") -> Path:
    pkg = root / "trainer"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "task.py").write_text("print('hello')\n")
    if requirements is not None:
        (root / "requirements.txt").write_text(requirements)
    return root


def test_the_requirements_layer_comes_before_the_package_layer(tmp_path: Path) -> None:
    plan = plan_build(_trainer(tmp_path / "t"), module="trainer.task", base=BASE, base_ref=BASE.ref)
    lines = plan.dockerfile.splitlines()
    runs = [i for i, line in enumerate(lines) if line.startswith("RUN ")]
    assert len(runs) == 2
    requirements_step = "\n".join(lines[runs[0] : runs[1]])
    package_step = "\n".join(lines[runs[1] :])
    assert "requirements.txt" in requirements_step and "trainer-0.0.0.tar.gz" not in requirements_step
    assert "trainer-0.0.0.tar.gz" in package_step and "--no-build-isolation" in package_step
    assert lines[1] == "FROM tfjob:0.1.0" and "USER 1000:1000" in lines and 'ENTRYPOINT ["tfjob-bootstrap"]' in lines
    assert 'CMD ["--module", "trainer.task"]' in lines
    # The base has the bootstrap: it is not installed again.
    assert not any(name.startswith("bootstrap/") for name in plan.files)


def test_the_image_carries_the_same_sdist_a_package_job_ships(tmp_path: Path) -> None:
    source = _trainer(tmp_path / "t")
    plan = plan_build(source, module="trainer.task", base=BASE, base_ref=BASE.ref)
    shipped = build_sdist(source, module="trainer.task")
    (name,) = [n for n in plan.files if n.startswith("package/")]
    assert plan.files[name] == shipped.path.read_bytes() and plan.package_sha256 == shipped.sha256
    assert name == f"package/{shipped.sha256[:32]}/{shipped.filename}"


def test_a_base_without_the_bootstrap_gets_its_wheel(tmp_path: Path) -> None:
    platform = BaseImage(
        ref="us-docker.pkg.dev/vertex-ai/training/tf-cpu.2-17.py310:latest", id="sha256:" + "c" * 64, user="", has_bootstrap=False
    )
    plan = plan_build(_trainer(tmp_path / "t", None), module="trainer.task", base=platform, base_ref=platform.ref)
    (wheel,) = [n for n in plan.files if n.startswith("bootstrap/")]
    assert wheel.endswith("-py3-none-any.whl") and wheel.split("/")[1] in plan.dockerfile
    assert "USER" not in plan.dockerfile.split("RUN", 1)[1].split("ENTRYPOINT")[0].replace("USER 0", "")


def test_the_key_changes_with_every_input_and_only_then(tmp_path: Path) -> None:
    source = _trainer(tmp_path / "t")
    first = plan_build(source, module="trainer.task", base=BASE, base_ref=BASE.ref).key
    assert plan_build(source, module="trainer.task", base=BASE, base_ref=BASE.ref).key == first
    other_base = BaseImage(BASE.ref, "sha256:" + "e" * 64, BASE.user, True)
    assert plan_build(source, module="trainer.task", base=other_base, base_ref=BASE.ref).key != first
    (source / "trainer" / "task.py").write_text("print('hello')\n# one line\n")
    changed = plan_build(source, module="trainer.task", base=BASE, base_ref=BASE.ref).key
    assert changed != first
    (source / "requirements.txt").write_text("pandas==2.2.3\n")
    assert plan_build(source, module="trainer.task", base=BASE, base_ref=BASE.ref).key not in (first, changed)
    assert len(recipe.image_tag(first)) == 32


def test_an_own_dockerfile_context_is_filtered_as_the_sdist_is(tmp_path: Path) -> None:
    source = _trainer(tmp_path / "t", None)
    (source / "Dockerfile").write_text("ARG BASE_IMAGE=tfjob:0.1.0\nFROM ${BASE_IMAGE}\nCOPY trainer/ /trainer/trainer/\n")
    (source / "trainer" / "key.json").write_text(
        json.dumps(
            {"type": "service_account", "private_key": "-----BEGIN PRIVATE KEY-----\nx\n-----END PRIVATE KEY-----\n", "client_email": "a@b"}
        )
    )
    (source / ".env").write_text("TOKEN=1\n")
    outside = tmp_path / "outside.txt"
    outside.write_text("not the trainer's\n")
    (source / "trainer" / "escape.txt").symlink_to(outside)
    (source / ".git").mkdir()
    (source / ".git" / "config").write_text("[core]\n")
    plan = plan_build(source, module="trainer.task", base=BASE, base_ref=BASE.ref)
    assert sorted(plan.files) == ["Dockerfile", "trainer/__init__.py", "trainer/task.py"]
    assert plan.build_args == {"BASE_IMAGE": "tfjob:0.1.0"} and plan.kind == "Dockerfile"
    assert any("trainer/key.json" in w and ".env" in w for w in plan.warnings)
    assert any("escape.txt" in w for w in plan.warnings)
    assert uses_base_arg(plan.dockerfile) and not uses_base_arg("FROM python:3.11\n")


#: What podman 4.3 and docker (BuildKit) print when a RUN step fails, as they print it.
PODMAN_TAIL = [
    "STEP 3/8: RUN --mount=type=bind,source=requirements/0f0f,target=/tmp/tfjob-build/requirements/0f0f PIP_BREAK_SYSTEM_PACKAGES=1 "
    "python -m pip install --no-cache-dir -r /tmp/tfjob-build/requirements/0f0f/requirements.txt",
    "ERROR: Could not find a version that satisfies the requirement tfjob-no-such-package==9.9 (from versions: none)",
    "ERROR: No matching distribution found for tfjob-no-such-package==9.9",
    'Error: building at STEP "RUN --mount=type=bind,source=requirements/0f0f,target=/tmp/tfjob-build/requirements/0f0f '
    'PIP_BREAK_SYSTEM_PACKAGES=1 python -m pip install --no-cache-dir -r /tmp/tfjob-build/requirements/0f0f/requirements.txt": '
    "while running runtime: exit status 1",
]
DOCKER_TAIL = [
    "#6 [2/3] RUN make-it-so",
    "#6 0.215 /bin/sh: 1: make-it-so: not found",
    '#6 ERROR: process "/bin/sh -c make-it-so" did not complete successfully: exit code: 127',
    'ERROR: failed to solve: process "/bin/sh -c make-it-so" did not complete successfully: exit code: 127',
]


def test_a_failed_step_is_one_line_naming_it(tmp_path: Path) -> None:
    plan = plan_build(_trainer(tmp_path / "t", "tfjob-no-such-package==9.9\n"), module="trainer.task", base=BASE, base_ref=BASE.ref)
    plan.steps["0f0f"] = "installing requirements.txt"
    line = build_failure(PODMAN_TAIL, plan, tmp_path / "t")
    assert "\n" not in line and "installing requirements.txt" in line and "exit status 1" in line
    assert "No matching distribution found for tfjob-no-such-package==9.9" in line
    line = build_failure(DOCKER_TAIL, plan, tmp_path / "t")
    assert "\n" not in line and "/bin/sh -c make-it-so" in line and "exit code: 127" in line


@pytest.mark.parametrize(("repo", "error"), [
    ("127.0.0.1:5000/census", None),
    ("us-central1-docker.pkg.dev/p/r/census", None),
    ("census", "names no registry"),
    ("127.0.0.1:5000/census:1", "names a tag or digest"),
    ("127.0.0.1:5000/Census", "not an image reference"),
    ("-x/census", "not an image reference"),
])  # fmt: skip
def test_an_image_repository_is_a_registry_and_a_path(repo: str, error: str | None) -> None:
    if error is None:
        parsed = parse_repository(repo)
        assert parsed.name == repo
    else:
        with pytest.raises(SpecError, match=error):
            parse_repository(repo)


def test_which_registries_are_loopback_or_google() -> None:
    assert is_loopback("127.0.0.1:5000") and is_loopback("localhost") and is_loopback("[::1]:5000")
    assert not is_loopback("127.0.0.1.example.com") and not is_loopback("10.0.0.1:5000")
    assert is_google_registry("us-central1-docker.pkg.dev") and is_google_registry("gcr.io") and is_google_registry("eu.gcr.io")
    assert not is_google_registry("pkg.dev.example.com") and not is_google_registry("127.0.0.1:5000")


class _Registry(BaseHTTPRequestHandler):
    """The registry token protocol as Docker Hub and Artifact Registry speak it: 401 with a
    Bearer challenge, a token for the right basic credentials, the manifest for the token."""

    digest = "sha256:" + "a" * 64
    seen: list[tuple[str, str, str]] = []

    def log_message(self, *args: object) -> None:
        pass

    def _answer(self, code: int, headers: dict[str, str], body: bytes = b"") -> None:
        self.send_response(code)
        for k, v in headers.items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def do_GET(self) -> None:
        self.seen.append((self.command, self.path, self.headers.get("Authorization", "")))
        good = "Basic " + base64.b64encode(b"oauth2accesstoken:ya29.token").decode()
        if self.path.startswith("/token?") and self.headers.get("Authorization") == good:
            self._answer(200, {"Content-Type": "application/json"}, json.dumps({"token": "registry-token"}).encode())
        else:
            self._answer(401, {}, b'{"errors":[{"code":"UNAUTHORIZED"}]}')

    def do_HEAD(self) -> None:
        self.seen.append((self.command, self.path, self.headers.get("Authorization", "")))
        if self.headers.get("Authorization") != "Bearer registry-token":
            realm = f"http://{self.headers['Host']}/token"
            self._answer(401, {"WWW-Authenticate": f'Bearer realm="{realm}",service="test",scope="repository:p/r/census:pull"'})
        elif self.path.endswith("/manifests/have"):
            self._answer(200, {"Docker-Content-Digest": self.digest})
        else:
            self._answer(404, {})


@pytest.fixture
def token_registry() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Registry)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    _Registry.seen = []
    try:
        yield f"127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_the_manifest_check_follows_the_token_protocol(token_registry: str) -> None:
    repo = parse_repository(f"{token_registry}/p/r/census")
    creds = ("oauth2accesstoken", "ya29.token")
    assert manifest_digest(repo, "have", credentials=creds) == _Registry.digest
    assert manifest_digest(repo, "missing", credentials=creds) is None
    token_requests = [s for s in _Registry.seen if s[1].startswith("/token?")]
    assert token_requests and all("service=test" in s[1] and "scope=repository" in s[1] for s in token_requests)
    with pytest.raises(RegistryError, match=rf"registry {token_registry} refused the login of 'oauth2accesstoken' \(HTTP 401\)"):
        manifest_digest(repo, "have", credentials=("oauth2accesstoken", "expired"))


def test_an_unreachable_registry_is_named() -> None:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(RegistryError, match=rf"registry 127.0.0.1:{port} cannot be reached"):
        manifest_digest(parse_repository(f"127.0.0.1:{port}/x"), "t", timeout=5)


def test_build_keywords_are_checked_before_anything_runs(tmp_path: Path) -> None:
    source = _trainer(tmp_path / "t", None)
    with pytest.raises(SpecError, match="needs --image-repo|needs image_repo"):
        Job(str(source), "trainer.task", build=True, backend=Vertex(project="p", region="us-central1"))
    with pytest.raises(SpecError, match="drop --image|drop image"):
        Job(str(source), "trainer.task", build=True, image="gcr.io/p/x:1")
    with pytest.raises(SpecError, match="add --build|add build"):
        Job(str(source), "trainer.task", image_repo="127.0.0.1:5000/x")
    with pytest.raises(SpecError, match="trainer directory"):
        Job("gs://b/trainer-0.1.tar.gz", "trainer.task", build=True)
    with pytest.raises(SpecError, match="names no registry"):
        Job(str(source), "trainer.task", build=True, image_repo="census")
    with pytest.raises(SpecError, match="Cloud Build: give --image-repo|Cloud Build: give image_repo"):
        Job(str(source), "trainer.task", build=True, cloud_build=True)
    with pytest.raises(SpecError, match="add --build|add build"):
        Job(str(source), "trainer.task", cloud_build=True)


@pytest.mark.parametrize(("argv", "message"), [
    (["build", "/no/such/dir"], "is not a directory"),
    (["build", ".", "--output", "yaml"], "--output 'yaml' must be text or json"),
    (["build", ".", "--base", "Not An Image"], "--base 'Not An Image' is not an image reference"),
    (["build", ".", "--container-engine", "rkt"], "--container-engine 'rkt' is not one of podman, docker"),
    (["submit", ".", "-m", "trainer.task", "--image-repo", "127.0.0.1:5000/x"], "add --build"),
])  # fmt: skip
def test_cli_mistakes_are_one_line_exit_2(argv: list[str], message: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _trainer(tmp_path / "t", None)
    monkeypatch.chdir(tmp_path / "t")
    result = CliRunner().invoke(app, argv)
    assert result.exit_code == 2, result.output
    assert result.stderr.count("\n") == 1 and message in result.stderr, result.stderr


def test_no_credential_helper_value_leaks_into_argv_or_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Google's token reaches the engine in a private file, removed after the push."""
    from tfjob.runtime.engine import Engine
    from tfjob.images.publish import auth_file

    repo = parse_repository("us-central1-docker.pkg.dev/p/r/census")
    with auth_file(Engine("podman", "/usr/bin/podman"), repo, ("oauth2accesstoken", "ya29.secret")) as (flags, env):
        assert flags[0] == "--authfile" and env is None
        path = Path(flags[1])
        assert oct(path.stat().st_mode & 0o777) == "0o600" and oct(path.parent.stat().st_mode & 0o777) == "0o700"
        assert (
            json.loads(path.read_text())["auths"]["us-central1-docker.pkg.dev"]["auth"]
            == base64.b64encode(b"oauth2accesstoken:ya29.secret").decode()
        )
        assert "ya29.secret" not in " ".join(flags)
    assert not path.exists() and not path.parent.exists()
    with auth_file(Engine("docker", "/usr/bin/docker"), repo, ("oauth2accesstoken", "ya29.secret")) as (flags, env):
        assert flags == [] and env is not None and (Path(env["DOCKER_CONFIG"]) / "config.json").is_file()
    local = parse_repository("127.0.0.1:5000/x")
    with auth_file(Engine("podman", "/usr/bin/podman"), local, ("u", "p")) as (flags, env):
        assert flags == [] and env is None  # the engine's own store serves
    assert os.environ.get("DOCKER_CONFIG") is None or "tfjob-auth" not in os.environ["DOCKER_CONFIG"]


def test_the_golden_renders_of_a_built_job_pass_the_platforms_schemas() -> None:
    """The goldens test_image_build.py compares a built job's renders with (a pushed digest in
    every pool and pod) are what Vertex AI's CustomJob type and the TFJob CRD take."""
    import yaml
    from test_render_kubeflow import _schema_errors, _strict
    from test_render_kubeflow import CRD as TFJOB_CRD
    from test_render_vertex import strict_roundtrip

    jsonschema = need_module("jsonschema", "pip install -e '.[test]'")
    golden = Path(__file__).parent / "golden" / "build"
    reference = "127.0.0.1:5000/tfjob-ci/census@sha256:" + "d" * 64
    body = json.loads((golden / "vertex.json").read_text())
    assert strict_roundtrip(body) == body
    assert [p["containerSpec"]["imageUri"] for p in body["jobSpec"]["workerPoolSpecs"]] == [reference] * 3
    manifest = yaml.safe_load((golden / "kubeflow.yaml").read_text())
    crd = yaml.safe_load(TFJOB_CRD.read_text())
    validator = jsonschema.Draft7Validator(_strict(crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]))
    assert _schema_errors(validator, manifest) == []
    from tfjob.backends.kubeflow.render import find_tfjob_problems

    assert find_tfjob_problems(manifest) == []
    pods = [c["image"] for r in manifest["spec"]["tfReplicaSpecs"].values() for c in r["template"]["spec"]["containers"]]
    assert pods == [reference] * 3
