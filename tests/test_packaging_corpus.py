"""The leak corpus (issue 24): credentials of every kind, under innocent names, in every
encoding, pickled, and hard-linked in from outside — and 0 of them reach what leaves the
machine: the sdist (bare and project), the Kubernetes ConfigMap, and a container build
context (``tfjob.packaging.copy_shippable``).

Every fake secret is made here (a fresh RSA key through ``cryptography``, hand-written fake
PEM bodies when it is missing; random token bodies); none is a real credential. Each holds
the marker ``CORPUSMARK`` (in its own encoding), so a leak is found however it is written.
"""

from __future__ import annotations

import base64
import io
import json
import os
import pickle
import secrets as random_secrets
import string
import tarfile
from pathlib import Path
from typing import Callable

import pytest
from click.testing import CliRunner

from reliability import Reliability
from tfjob.cli.main import app
from tfjob.packaging import build_sdist, collect_files, copy_shippable, pickle_strings, secret_in_content

MARK = "CORPUSMARK"
OUTSIDE = "OUTSIDECORPUS"


def _alnum(n: int) -> str:
    return "".join(random_secrets.choice(string.ascii_letters + string.digits) for _ in range(n))


def _upper(n: int) -> str:
    return "".join(random_secrets.choice(string.ascii_uppercase + string.digits) for _ in range(n))


def private_key_pem() -> str:
    """A freshly generated RSA key (never a real one), or a fake PEM body without cryptography."""
    try:
        from cryptography.hazmat.primitives import serialization
        from cryptography.hazmat.primitives.asymmetric import rsa
    except ImportError:  # pragma: no cover - cryptography comes with google-auth here
        body = base64.b64encode(os.urandom(600)).decode()
        return (
            "-----BEGIN RSA PRIVATE KEY-----\n"
            + "\n".join(body[i : i + 64] for i in range(0, len(body), 64))
            + "\n-----END RSA PRIVATE KEY-----\n"
        )
    key = rsa.generate_private_key(public_exponent=65537, key_size=1024)
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL, serialization.NoEncryption()
    ).decode()


def google_token_pickle() -> bytes:
    """What google-auth's installed-app flow saves as token.pickle: pickled user Credentials."""
    from google.oauth2.credentials import Credentials

    creds = Credentials(
        token="ya29." + _alnum(40), refresh_token="1//0" + _alnum(40) + MARK, client_id="1234.apps.googleusercontent.com",
        client_secret="GOCSPX-" + _alnum(28) + MARK, token_uri="https://oauth2.googleapis.com/token",
    )  # fmt: skip
    return pickle.dumps(creds, protocol=pickle.HIGHEST_PROTOCOL)


def corpus() -> dict[str, bytes]:
    """path in the trainer → bytes; every one must stay out of everything shipped."""
    pem = private_key_pem()
    pem_marked = pem.replace("-----END", MARK + "\n-----END")
    service_account = json.dumps({
        "type": "service_account", "project_id": "p", "private_key_id": _alnum(40),
        "private_key": pem_marked, "client_email": "sa@p.iam.gserviceaccount.com",
    })  # fmt: skip
    s3cfg = f"[default]\naccess_key = AKIA{_upper(16)}\nsecret_key = {_alnum(40)}{MARK}\nhost_base = s3.amazonaws.com\n"
    boto = f"[Credentials]\naws_access_key_id = AKIA{_upper(16)}\naws_secret_access_key = {_alnum(40)}{MARK}\n"
    putty = (
        "PuTTY-User-Key-File-3: ssh-ed25519\nEncryption: none\nComment: "
        + MARK
        + "\nPublic-Lines: 2\n"
        + _alnum(64)
        + "\n"
        + _alnum(20)
        + "\nPrivate-Lines: 1\n"
        + _alnum(44)
        + "\nPrivate-MAC: "
        + _alnum(64)
        + "\n"
    )
    ssh2 = (
        '---- BEGIN SSH2 ENCRYPTED PRIVATE KEY ----\nComment: "'
        + MARK
        + '"\n'
        + "\n".join(_alnum(70) for _ in range(5))
        + "\n---- END SSH2 ENCRYPTED PRIVATE KEY ----\n"
    )
    k8s_secret = (
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: db-" + MARK.lower() + "\ntype: Opaque\n"
        "data:\n  password: " + base64.b64encode(MARK.encode()).decode() + "\n"
    )
    k8s_secret_json = json.dumps({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "db"}, "stringData": {"pw": MARK}})
    kubeconfig = (
        "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: https://10.0.0.1\n"
        "users:\n- name: " + MARK + "\n  user:\n    client-certificate-data: " + base64.b64encode(b"cert").decode() + "\n"
        "    client-key-data: " + base64.b64encode(pem.encode()).decode() + "\n"
    )
    kube_token = f"apiVersion: v1\nusers:\n- name: u\n  user:\n    token: {_alnum(40)}{MARK}\n"
    oauth_client = json.dumps(
        {"installed": {"client_id": "1.apps.googleusercontent.com", "client_secret": "GOCSPX-" + _alnum(28), "note": MARK}}
    )
    sa_fields = json.dumps({"client_email": "x@p.iam.gserviceaccount.com", "private_key_id": _alnum(40), "note": MARK})
    refresh_pair = {"refresh_token": "1//0" + _alnum(40), "client_secret": _alnum(24), "note": MARK}
    entropy = f"# service settings\nSERVICE_URL=https://example.org\nAPI_TOKEN={_alnum(20)}9{MARK}\n"
    pickled = google_token_pickle()
    # A log with a key pasted past the first 64 KiB, and one 3 MiB in (windows further on).
    log_lines = "".join(f"step {i}: loss={1 / (i + 1):.6f} lr=0.01 batch=128\n" for i in range(2000))
    late_key_log = (log_lines + "debug dump follows\n" + pem_marked + "done\n").encode()
    notebook_outputs = [{"output_type": "stream", "name": "stdout", "text": [log_lines] * 40}]
    late_key_notebook = json.dumps({"cells": [
        {"cell_type": "code", "source": ["train()"], "outputs": notebook_outputs},
        {"cell_type": "code", "source": ["KEY = " + repr(pem_marked)], "outputs": []},
    ], "nbformat": 4, "nbformat_minor": 5})  # fmt: skip
    # gsutil's boto file: a refresh token alone, short and long, and spelled without gs_.
    boto_refresh_short = f"[Credentials]\ngs_oauth2_refresh_token = 1/{MARK}\n[Boto]\nhttps_validate_certificates = True\n"
    boto_refresh_long = f"[Credentials]\ngs_oauth2_refresh_token = 1//0{_alnum(60)}{MARK}\n"
    boto_refresh_bare = f"[OAuth2]\noauth2_refresh_token: {MARK}x\n"
    # A service-account key as a dict in Python source, its private key without a PEM block.
    sa_python = (
        f"# {MARK}\nSERVICE_ACCOUNT = {{\n    'type': 'service_account',\n    'project_id': 'p',\n"
        f"    'private_key': 'MIIEvQIBADANBgkqhkiG9w0BAQEFAASC{_alnum(200)}',\n"
        "    'client_email': 'trainer@p.iam.gserviceaccount.com',\n}\n"
    )
    sa_python_json_style = (
        f'"""{MARK}"""\nCREDS = dict(**{{"type": "service_account", "client_email": "a@p.iam.gserviceaccount.com", '
        f'"private_key": r"{_alnum(64)}"}})\n'
    )
    return {
        # by name
        ".s3cfg": s3cfg.encode(),
        ".boto": boto.encode(),
        "keys/deploy.ppk": putty.encode(),
        "token.pickle": pickled,
        # by content, under innocent names
        "conf/s3.conf": s3cfg.encode(),
        "conf/boto.cfg": boto.encode(),
        "notes/putty.txt": putty.encode(),
        "notes/ssh2.txt": ssh2.encode(),
        "notes/key.txt": pem_marked.encode(),
        "notes/key.b64": base64.b64encode(pem_marked.encode()),
        "manifests/db.yaml": k8s_secret.encode(),
        "manifests/db.json": k8s_secret_json.encode(),
        "cluster.yaml": kubeconfig.encode(),
        "cluster-token.yaml": kube_token.encode(),
        "oauth_client.json": oauth_client.encode(),
        "account.json": sa_fields.encode(),
        "settings.ini": entropy.encode(),
        "deploy.sh": f"#!/bin/sh\n# {MARK}\nexport GH=ghp_{_alnum(36)}\n".encode(),
        "aws_keys.py": f"KEY = 'AKIA{_upper(16)}'  # {MARK}\n".encode(),
        # encodings: UTF-16 / UTF-32, with and without a byte-order mark
        "enc/sa-utf16.json": service_account.encode("utf-16"),
        "enc/sa-utf16le.json": service_account.encode("utf-16-le"),
        "enc/sa-utf16be.json": service_account.encode("utf-16-be"),
        "enc/sa-utf32.json": service_account.encode("utf-32"),
        "enc/sa-utf32be.json": service_account.encode("utf-32-be"),
        "enc/s3-utf16.cfg": s3cfg.encode("utf-16"),
        "enc/secret-utf16le.yaml": k8s_secret.encode("utf-16-le"),
        # pickles: google-auth's under another name, and plain dicts in old and new protocols
        "cache/session.bin": pickled,
        "cache/state.pkl": pickle.dumps(refresh_pair, protocol=0),
        "cache/state4": pickle.dumps(refresh_pair, protocol=4),
        # issue 36: what the second round still packaged
        "logs/train.log": late_key_log,
        "logs/big.log": (log_lines * 80).encode() + b"\n" + pem_marked.encode(),  # ~3 MiB in
        "logs/train-utf16.log": late_key_log.decode().encode("utf-16"),
        "notebooks/explore.ipynb": late_key_notebook.encode(),
        "conf/gsutil.cfg": boto_refresh_short.encode(),
        "conf/gcs-boto.ini": boto_refresh_long.encode(),
        "conf/oauth.cfg": boto_refresh_bare.encode(),
        "auth_config.py": sa_python.encode(),
        "creds_helper.py": sa_python_json_style.encode(),
        # secret stores known by name, whatever they hold
        ".streamlit/secrets.toml": f'[connections.db]\npassword = "{MARK}"\n'.encode(),
        "app/secrets.toml": f'api = "{MARK}"\n'.encode(),
        ".netrc": f"machine api.wandb.ai login user password {MARK}\n".encode(),
        ".pgpass": f"localhost:5432:db:user:{MARK}\n".encode(),
        "credentials.json": json.dumps({"web": {"client_id": "x", "note": MARK}}).encode(),
        ".git-credentials": f"https://user:{MARK}@github.com\n".encode(),
        ".npmrc": f"//registry.npmjs.org/:_authToken={MARK}\n".encode(),
        ".pypirc": f"[pypi]\nusername = __token__\npassword = {MARK}\n".encode(),
        ".my.cnf": f"[client]\npassword={MARK}\n".encode(),
        ".kaggle/kaggle.json": json.dumps({"username": "u", "key": MARK}).encode(),
        ".cache/huggingface/token": f"hf_{MARK}\n".encode(),
    }


def ordinary_files() -> dict[str, bytes]:
    """Files that look near a credential and are none: each must still be packaged."""
    log_lines = "".join(f"step {i}: loss={1 / (i + 1):.6f} token_count={i * 7} secret_sauce=none\n" for i in range(40000))
    return {
        "logs/clean.log": log_lines.encode(),  # ~2.5 MiB, no key anywhere
        "auth_helpers.py": (
            "def service_account_info(key: str, email: str) -> dict:\n"
            "    return {'type': 'service_account', 'private_key': key, 'client_email': email}\n"
        ).encode(),
        "docs_snippet.py": "EXAMPLE = {'type': 'service_account', 'client_email': 'you@example.com'}\n".encode(),
        "gsutil_defaults.cfg": b"[Boto]\nhttps_validate_certificates = True\n[GSUtil]\nparallel_composite_upload_threshold = 150M\n",
        "secrets_schema.toml": b"# the names of the secrets the app reads (their values are in the platform)\nkeys = ['db']\n",
        "credentials.py": b"def load(path):\n    return open(path).read()\n",
    }


#: Decoded views a marker is searched in (the secrets are stored in these encodings).
_CODECS = ("utf-8", "utf-16-le", "utf-16-be", "utf-32-le", "utf-32-be")


def _holds_marker(data: bytes, marker: str) -> bool:
    if any(marker.encode(codec) in data for codec in _CODECS):
        return True
    try:
        return marker.encode() in base64.b64decode(data, validate=False)
    except Exception:  # noqa: BLE001 - not base64: no marker there
        return False


def make_corpus(root: Path, outside: Path) -> tuple[Path, dict[str, bytes]]:
    """A bare trainer ``root/trainer`` holding the corpus and two hard links to outside files."""
    pkg = root / "trainer"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "task.py").write_text("print('training')\n")
    (pkg / "vocab.json").write_text('{"tokens": ["token", "secret", "password"], "max_tokens": 1024}\n')
    (pkg / "config.yaml").write_text("learning_rate: 0.01\ntokenizer: bert-base-uncased\nsecret_name: db-creds\n")
    for rel, data in ordinary_files().items():
        (pkg / rel).parent.mkdir(parents=True, exist_ok=True)
        (pkg / rel).write_bytes(data)
    items = corpus()
    for rel, data in items.items():
        path = pkg / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    outside.mkdir(parents=True, exist_ok=True)
    (outside / "shadow").write_text(f"root:{OUTSIDE}:19000:0:99999:7:::\n")
    os.link(outside / "shadow", pkg / "shadow_copy.txt")
    os.link(outside / "shadow", pkg / "notes" / "also_shadow.txt")  # two names here, three in all
    # A hard link inside the tree only (both names here): packaged.
    (pkg / "data.csv").write_text("a,b\n1,2\n")
    os.link(pkg / "data.csv", pkg / "data_copy.csv")
    return pkg, items


LEFT_OUT = ("shadow_copy.txt", "notes/also_shadow.txt")


def leaks_in(files: dict[str, bytes], items: dict[str, bytes]) -> list[str]:
    """What of the corpus is in ``files`` (member path → bytes): by name and by marker."""
    found = []
    for name, data in files.items():
        rel = name
        if any(rel == c or rel.endswith("/" + c) for c in (*items, *LEFT_OUT)):
            found.append(f"{name} (a corpus file)")
        if _holds_marker(data, MARK) or _holds_marker(data, OUTSIDE):
            found.append(f"{name} holds a marker")
    return found


def tar_files(data: bytes) -> dict[str, bytes]:
    out = {}
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        for member in tar.getmembers():
            assert not (member.issym() or member.islnk()), member.name
            if member.isfile():
                out[member.name] = tar.extractfile(member).read()  # type: ignore[union-attr]
    return out


@pytest.fixture
def leaky(tmp_path: Path) -> tuple[Path, dict[str, bytes]]:
    return make_corpus(tmp_path / "work", tmp_path / "elsewhere")


def test_the_inspector_finds_every_corpus_file_when_secrets_are_kept(leaky: tuple[Path, dict[str, bytes]], tmp_path: Path) -> None:
    # The inspection is real: with --include-secrets every corpus file is in the sdist and found.
    pkg, items = leaky
    built = build_sdist(pkg, tmp_path / "out", module="trainer.task", include_secrets=True)
    files = {name.split("/", 2)[2]: data for name, data in tar_files(built.path.read_bytes()).items() if name.count("/") >= 2}
    found = leaks_in(files, items)
    assert {f.split(" ")[0] for f in found if "corpus file" in f} == set(items)
    assert all(_holds_marker(items[rel], MARK) for rel in items), "every corpus file carries the marker"


@pytest.mark.reliability
def test_the_walk_leaves_every_corpus_file_out(leaky: tuple[Path, dict[str, bytes]], reliability: Reliability) -> None:
    pkg, items = leaky
    found = collect_files(pkg)
    reliability.tried(len(items) + len(LEFT_OUT))
    assert set(found.secrets) == set(items)
    assert found.hardlinks == sorted(LEFT_OUT)
    assert {"data.csv", "data_copy.csv", "vocab.json", "config.yaml", "task.py", *ordinary_files()} <= set(found.files)
    reliability.packaged(len(leaks_in({rel: (pkg / rel).read_bytes() for rel in found.files}, items)))
    warnings = "\n".join(found.warnings())
    assert "shadow_copy.txt" in warnings and "hard links" in warnings


@pytest.mark.reliability
@pytest.mark.parametrize("kind", ["bare", "project"])
def test_no_corpus_file_reaches_the_sdist(
    kind: str, leaky: tuple[Path, dict[str, bytes]], tmp_path: Path, reliability: Reliability
) -> None:
    pkg, items = leaky
    source = pkg
    if kind == "project":
        (pkg.parent / "pyproject.toml").write_text(
            '[build-system]\nrequires = ["setuptools>=61"]\nbuild-backend = "setuptools.build_meta"\n'
            '[project]\nname = "trainer"\nversion = "1.0"\n[tool.setuptools]\npackages = ["trainer"]\n'
            '[tool.setuptools.package-data]\n"*" = ["**/*", "*"]\n'
        )
        source = pkg.parent
    built = build_sdist(source, tmp_path / "out", module="trainer.task")
    files = tar_files(built.path.read_bytes())
    found = leaks_in(files, items)
    reliability.tried(len(items))
    reliability.packaged(len(found))
    assert not found
    assert any(name.endswith("data_copy.csv") for name in files)
    assert [rel for rel in ordinary_files() if not any(name.endswith("/" + rel) for name in files)] == []


@pytest.mark.reliability
def test_no_corpus_file_reaches_the_kubernetes_configmap(leaky: tuple[Path, dict[str, bytes]], reliability: Reliability) -> None:
    pkg, items = leaky
    result = CliRunner().invoke(app, ["render", str(pkg), "-m", "trainer.task", "--image", "registry.example/tfjob:0.1.0",
                                      "--workers", "1", "--backend", "kubeflow", "--display-name", "corpus", "--output", "json"])  # fmt: skip
    assert result.exit_code == 0, result.output
    reliability.output(result.stderr)
    manifest = json.loads(result.stdout)
    (configmap,) = [item for item in manifest["items"] if item["kind"] == "ConfigMap"]
    shipped: dict[str, bytes] = {}
    for archive in configmap["binaryData"].values():
        shipped.update({name.split("/", 2)[-1]: data for name, data in tar_files(base64.b64decode(archive)).items()})
    assert "task.py" in shipped
    assert [rel for rel in ordinary_files() if rel not in shipped] == []
    found = leaks_in(shipped, items)
    # The manifest's own text (names, labels, annotations) carries nothing of the corpus either.
    if MARK in result.stdout or OUTSIDE in result.stdout:
        found.append("the manifest's text")
    reliability.tried(len(items))
    reliability.packaged(len(found))
    assert not found
    assert "shadow_copy.txt" in result.stderr and "token.pickle" in result.stderr


@pytest.mark.reliability
def test_no_corpus_file_reaches_an_image_build_context(
    leaky: tuple[Path, dict[str, bytes]], tmp_path: Path, reliability: Reliability
) -> None:
    pkg, items = leaky
    context = tmp_path / "context"
    found = copy_shippable(pkg, context)
    written = {p.relative_to(context).as_posix(): p.read_bytes() for p in context.rglob("*") if p.is_file()}
    assert not [p for p in context.rglob("*") if p.is_symlink()]
    assert set(written) == set(found.files)
    leaks = leaks_in(written, items)
    reliability.tried(len(items))
    reliability.packaged(len(leaks))
    assert not leaks
    assert (context / "data_copy.csv").read_text() == "a,b\n1,2\n"
    assert [rel for rel in ordinary_files() if rel not in written] == []


def test_the_census_template_loses_no_file(tmp_path: Path) -> None:
    # No false positive on the code users start from: every file of the templates ships.
    from importlib import resources

    for template in ("census-ps", "census-multiworker", "custom-container"):
        result = CliRunner().invoke(app, ["init", str(tmp_path / template), "--template", template])
        assert result.exit_code == 0, result.output
        found = collect_files(tmp_path / template)
        assert found.secrets == [] and found.hardlinks == [] and found.links == [], template
    assert resources.files("tfjob.templates")


@pytest.mark.parametrize(
    "make, secret",
    [
        (lambda: b"---- BEGIN SSH2 PRIVATE KEY ----\nabc", True),
        (lambda: b"PuTTY-User-Key-File-2: ssh-rsa\n", True),
        (lambda: "kind: Secret\napiVersion: v1\n".encode("utf-16"), True),
        (lambda: b"kind: SecretStore\napiVersion: v1\n", False),
        (lambda: b"AKIAIOSFODNN7EXAMPLE", False),  # AWS's documented example key is no credential
        (lambda: b"learning_rate: 0.01\nmax_tokens: 1024\npassword_min_length: 12\n", False),
        (lambda: b"api_key: ${API_KEY}\n", False),
        (lambda: ("x" * 100).encode("utf-16-le") + b"\0\0", False),
        (lambda: pickle.dumps({"learning_rate": 0.1, "tokens": ["a", "b"]}, protocol=4), False),
        (lambda: b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR" + os.urandom(2000).replace(b"-----", b"....."), False),
    ],
)
def test_content_rules_of_the_new_kinds(make: Callable[[], bytes], secret: bool) -> None:
    assert (secret_in_content(make()) is not None) is secret


def test_pickle_strings_never_runs_the_pickle(tmp_path: Path) -> None:
    ran = tmp_path / "ran"

    class Boom:
        def __reduce__(self) -> tuple[object, tuple[str]]:
            return (os.system, (f"touch {ran}",))

    data = pickle.dumps({"refresh_token": "r", "obj": Boom()}, protocol=4)
    strings = pickle_strings(data)
    assert "refresh_token" in strings and not ran.exists()
    assert pickle_strings(data[: len(data) // 2])  # a damaged pickle gives what was read before the damage


def test_a_wildcard_negation_never_keeps_a_secret(tmp_path: Path) -> None:
    pkg = tmp_path / "trainer"
    (pkg / "configs").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "task.py").write_text("")
    (pkg / "configs" / "sa.json").write_text(json.dumps({"type": "service_account", "private_key": "-----BEGIN"}))
    (pkg / "configs" / "fixture.json").write_text(json.dumps({"type": "service_account", "private_key": "-----BEGIN"}))
    (pkg / "prod.env").write_text("A=1\n")
    (pkg / ".tfjobignore").write_text("!*\n!configs/*.json\n!configs/fixture.json\n")
    found = collect_files(pkg)
    assert found.secrets == ["configs/sa.json", "prod.env"]
    assert found.kept_secrets == ["configs/fixture.json"]
    lines = found.warnings()
    assert any("wildcard" in line and "configs/sa.json (by '!configs/*.json')" in line and "prod.env (by '!*')" in line for line in lines)


def test_control_characters_in_names_are_escaped_in_every_warning(tmp_path: Path) -> None:
    pkg = tmp_path / "trainer"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "task.py").write_text("")
    (pkg / "evil\n\x1b[2Jname.env").write_text("A=1\n")
    os.symlink("/etc/passwd", pkg / "link\rout")
    os.mkfifo(pkg / "fifo\x07")
    lines = collect_files(pkg).warnings()
    assert len(lines) == 3
    text = "\n".join(lines)
    assert "evil\\n\\x1b[2Jname.env" in text and "link\\rout" in text and "fifo\\x07" in text
    assert not any(c in line for line in lines for c in "\n\r\x1b\x07")


@pytest.mark.reliability
@pytest.mark.parametrize("recipe", ["generated", "own Dockerfile"])
def test_no_corpus_file_reaches_a_tfjob_build_context(recipe: str, leaky: tuple[Path, dict[str, bytes]], reliability: Reliability) -> None:
    # `tfjob build` (tfjob.images): the generated recipe ships the sdist; a trainer's own
    # Dockerfile ships the directory filtered by collect_files. Neither carries the corpus.
    from tfjob.images.build import plan_build

    pkg, items = leaky
    source, module = pkg, "trainer.task"
    if recipe == "own Dockerfile":
        (pkg / "Dockerfile").write_text("ARG BASE_IMAGE=tfjob:0.1.0\nFROM ${BASE_IMAGE}\nCOPY . /trainer/trainer/\n")
        plan = plan_build(source, module=None, base=None, base_ref="tfjob:0.1.0")
    else:
        from tfjob.images.plan import BaseImage  # the base image's facts, as the builder reads them from the engine

        base = BaseImage(ref="tfjob:0.1.0", id="sha256:" + "b" * 64, user="1000:1000", has_bootstrap=True)
        plan = plan_build(source, module=module, base=base, base_ref=base.ref)
    shipped = dict(plan.files)
    for name, data in plan.files.items():
        if name.endswith(".tar.gz"):
            shipped.update(tar_files(data))
    found = leaks_in(shipped, items)
    reliability.tried(len(items))
    reliability.packaged(len(found))
    assert not found
    assert any(name.endswith("task.py") for name in shipped)


@pytest.mark.reliability
@pytest.mark.parametrize("recipe", ["generated", "own Dockerfile"])
def test_no_corpus_file_reaches_either_image_context(recipe: str, leaky: tuple[Path, dict[str, bytes]], reliability: Reliability) -> None:
    """Both contexts `tfjob build` makes (issue 36): the sdist on the base image, and the
    directory's own Dockerfile on the directory filtered as the sdist is."""
    from tfjob.images.build import plan_build
    from tfjob.images.plan import BaseImage

    pkg, items = leaky
    source = pkg.parent
    if recipe == "own Dockerfile":
        (source / "Dockerfile").write_text("ARG BASE_IMAGE\nFROM ${BASE_IMAGE}\nCOPY . /app\n")
    base = BaseImage(ref="tfjob:0.1.0", id="sha256:" + "b" * 64, user="1000:1000", has_bootstrap=True)
    plan = plan_build(source, module="trainer.task", base=base, base_ref=base.ref)
    shipped: dict[str, bytes] = {}
    for rel, data in plan.files.items():
        if rel.endswith(".tar.gz"):  # the trainer's sdist in the generated context
            shipped.update({name.split("/", 1)[-1]: body for name, body in tar_files(data).items()})
        else:
            shipped[rel] = data
    found = leaks_in(shipped, items)
    reliability.tried(len(items))
    reliability.packaged(len(found))
    assert not found
    assert [rel for rel in ordinary_files() if not any(name.endswith(rel) for name in shipped)] == []
