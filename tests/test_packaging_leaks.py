"""Nothing secret leaves the machine: a hostile trainer tree, packaged on every path that packages.

The tree (made by each test) holds every credential file and link an attacker or a careless
user could leave in a trainer directory. Each secret carries a unique marker; the archives
tfjob writes (Vertex staging, tuning, the local ``--install`` mode, both kinds of trainer)
are then read member by member: no marker, no link target's content, and every left-out
file named in one warning line.
"""

from __future__ import annotations

import json
import os
import tarfile
from pathlib import Path

import pytest
from click.testing import CliRunner

from reliability import Reliability
from tfjob.cli.main import app
from tfjob.packaging import build_sdist, collect_files, secret_in_content

MARK = "LEAKMARK"
PEM = "-----BEGIN RSA PRIVATE KEY-----\nMIIEow" + MARK + "\n-----END RSA PRIVATE KEY-----\n"

#: path in the trainer → content; every one must stay out of every package.
SECRETS: dict[str, str] = {
    "application_default_credentials.json": json.dumps(
        {"type": "authorized_user", "client_id": "x", "client_secret": MARK + "1", "refresh_token": "r"}
    ),
    ".aws/credentials": f"[default]\naws_access_key_id = AKIA{MARK}\naws_secret_access_key = {MARK}2\n",
    ".docker/config.json": json.dumps({"auths": {"gcr.io": {"auth": MARK + "3"}}}),
    ".git-credentials": f"https://user:{MARK}4@github.com\n",
    ".pypirc": f"[pypi]\npassword = {MARK}5\n",
    ".npmrc": f"//registry.npmjs.org/:_authToken={MARK}6\n",
    "kubeconfig": f"apiVersion: v1\nusers:\n- user:\n    token: {MARK}7\n",
    ".kube/config": f"apiVersion: v1\nusers:\n- user:\n    token: {MARK}8\n",
    ".ssh/deploy_key": f"opaque key material {MARK}9\n",
    "prod.env": f"DB_PASSWORD={MARK}10\n",
    "server.key.txt": f"{MARK}11\n",
    "ID_RSA": f"{MARK}12\n",
    "certs/TLS.PEM": f"{MARK}13\n",
    # Found by content, whatever the name.
    "notes/deploy.txt": PEM.replace(MARK, MARK + "14"),
    "nested.json": json.dumps({"deploy": {"creds": [{"private_key": PEM.replace(MARK, MARK + "15")}]}}),
    "escaped.json": '{"type": "service_account", "private\\u005fkey": "' + MARK + '16"}',
    "sa_key_no_extension": json.dumps({"type": "service_account", "private_key_id": "k", "private_key": MARK + "17"}),
    "sa.yaml": f"type: service_account\nprivate_key: |\n  {MARK}18\n",
    "oauth.yaml": f"client_secret: {MARK}19\nrefresh_token: abc\n",
    "aws.ini": f"AWS_ACCESS_KEY_ID={MARK}20\nAWS_SECRET_ACCESS_KEY=x\n",
}
OUTSIDE = "OUTSIDEMARK"


def make_hostile(root: Path, outside: Path) -> Path:
    """A bare trainer package ``root/trainer`` full of secrets and escaping links."""
    pkg = root / "trainer"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "task.py").write_text("print('training')\n")
    (pkg / "vocab.json").write_text('{"words": ["private_key is a word"]}')
    for rel, content in SECRETS.items():
        path = pkg / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content)
    outside.mkdir(parents=True, exist_ok=True)
    (outside / "secret.txt").write_text(OUTSIDE + "\n")
    (outside / "dir").mkdir(exist_ok=True)
    (outside / "dir" / "inner.txt").write_text(OUTSIDE + "\n")
    links = {
        "shadow": "/etc/shadow",
        "passwd": "/etc/passwd",
        "environ": "/proc/self/environ",
        "mem": "/proc/self/mem",
        "outside.txt": str(outside / "secret.txt"),
        "relative_escape.txt": os.path.relpath(outside / "secret.txt", pkg),
        "outside_dir": str(outside / "dir"),
        "dangling": str(outside / "missing"),
        "loop_a": "loop_b",
        "loop_b": "loop_a",
        "inside_link.txt": "task.py",  # stays inside: packaged as its file
    }
    for name, target in links.items():
        os.symlink(target, pkg / name)
    os.mkfifo(pkg / "fifo")
    return pkg


def archives(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*.tar.gz") if ".partial" not in p.parts)


LEFT_OUT = [*SECRETS, "shadow", "passwd", "environ", "mem", "outside.txt", "relative_escape.txt", "dangling", "fifo"]


def leaks(archive: Path) -> tuple[list[str], set[str]]:
    """What of the secrets and link targets is in the archive, and its member names."""
    found: list[str] = []
    names = set()
    with tarfile.open(archive) as tar:
        for member in tar.getmembers():
            name = member.name.split("/", 1)[1] if "/" in member.name else member.name
            names.add(name)
            if member.issym() or member.islnk():
                found.append(f"{name} (a link)")
            if member.isfile():
                data = tar.extractfile(member).read()  # type: ignore[union-attr]
                for marker in (MARK.encode(), OUTSIDE.encode(), b"root:"):  # root: is /etc/passwd, /etc/shadow
                    if marker in data:
                        found.append(f"{name} holds {marker.decode()}")
    found += [rel for rel in LEFT_OUT if any(n.endswith("/" + rel) or n == rel for n in names)]
    return found, names


def assert_clean(archive: Path, reliability: Reliability) -> set[str]:
    """No marker, no outside content, no secret or link member: return the member names."""
    found, names = leaks(archive)
    reliability.packaged(len(found))
    assert not found, f"{archive.name}: {found}"
    return names


def assert_warned(text: str, reliability: Reliability) -> None:
    reliability.output(text)
    assert "Traceback" not in text
    for rel in SECRETS:
        assert rel in text, rel
    for rel in ("shadow", "environ", "outside.txt", "relative_escape.txt", "outside_dir", "dangling", "fifo"):
        assert rel in text, rel


@pytest.fixture
def hostile(tmp_path: Path) -> Path:
    return make_hostile(tmp_path / "work", tmp_path / "elsewhere")


@pytest.mark.reliability
def test_collect_files_decides_every_case(hostile: Path, reliability: Reliability) -> None:
    found = collect_files(hostile)
    reliability.tried(len(SECRETS) + 12)
    assert set(found.secrets) == set(SECRETS)
    assert {line.split(" -> ")[0] for line in found.links} == {
        "shadow", "passwd", "environ", "mem", "outside.txt", "relative_escape.txt", "outside_dir", "dangling", "loop_a", "loop_b"
    }  # fmt: skip
    assert found.special == ["fifo"]
    assert "inside_link.txt" in found.files and found.sources["inside_link.txt"] == (hostile / "task.py").resolve()
    assert "vocab.json" in found.files
    assert len(found.warnings()) == 3  # one line per kind: secrets, links, special files


@pytest.mark.reliability
def test_bare_package_path(hostile: Path, tmp_path: Path, reliability: Reliability) -> None:
    built = build_sdist(hostile, tmp_path / "out", module="trainer.task")
    names = assert_clean(built.path, reliability)
    assert "trainer/inside_link.txt" in names
    assert_warned("\n".join(built.warnings), reliability)


@pytest.mark.reliability
def test_project_path(hostile: Path, tmp_path: Path, reliability: Reliability) -> None:
    (hostile.parent / "pyproject.toml").write_text(
        '[build-system]\nrequires = ["setuptools>=68"]\nbuild-backend = "setuptools.build_meta"\n'
        '[project]\nname = "trainer"\nversion = "1.0"\n[tool.setuptools]\npackages = ["trainer"]\n[tool.setuptools.package-data]\n"*" = ["**/*"]\n'
    )
    # Every secret of the tree, moved to the project root where setuptools would also look.
    make_hostile(hostile.parent / "more", tmp_path / "elsewhere2")
    built = build_sdist(hostile.parent, tmp_path / "out", module="trainer.task")
    assert_clean(built.path, reliability)
    assert_warned("\n".join(built.warnings), reliability)


@pytest.mark.reliability
def test_vertex_staging_path(hostile: Path, tmp_path: Path, reliability: Reliability) -> None:
    result = CliRunner().invoke(
        app, ["submit", str(hostile), "-m", "trainer.task", "--backend", "vertex", "--workers", "1", "--ps", "1", "--dry-run"]
    )
    assert result.exit_code == 0, result.output
    assert_warned(result.stderr, reliability)
    built = archives(Path(os.environ["TFJOB_HOME"]))
    assert built, "the dry run staged no package"
    for archive in built:
        assert_clean(archive, reliability)


@pytest.mark.reliability
def test_tuning_path(hostile: Path, tmp_path: Path, reliability: Reliability) -> None:
    hparams = tmp_path / "hp.yaml"
    hparams.write_text(
        "trainingInput:\n  hyperparameters:\n    goal: MAXIMIZE\n    hyperparameterMetricTag: acc\n    maxTrials: 2\n"
        "    params:\n    - parameterName: lr\n      type: DOUBLE\n      minValue: 0.01\n      maxValue: 0.1\n"
    )
    result = CliRunner().invoke(
        app, ["tune", str(hostile), "-m", "trainer.task", "--hparams", str(hparams), "--backend", "vertex", "--dry-run", "--workers", "1"]
    )
    assert result.exit_code == 0, result.output
    assert_warned(result.stderr, reliability)
    for archive in archives(Path(os.environ["TFJOB_HOME"])):
        assert_clean(archive, reliability)


@pytest.mark.reliability
def test_local_install_path(hostile: Path, tfjob_exe: str, reliability: Reliability) -> None:
    import subprocess

    out = subprocess.run(
        [tfjob_exe, "submit", str(hostile), "-m", "trainer.task", "--install", "--backend", "local"],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert "Traceback" not in out.stderr
    assert_warned(out.stdout + out.stderr, reliability)
    built = archives(Path(os.environ["TFJOB_HOME"]))
    assert built, "the --install run built no package"
    for archive in built:
        assert_clean(archive, reliability)


def test_include_secrets_and_negation_keep_a_file_on_purpose(tmp_path: Path) -> None:
    pkg = tmp_path / "trainer"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "task.py").write_text("")
    (pkg / "test_fixture.pem").write_text(PEM)
    (pkg / "prod.env").write_text("A=1\n")
    (pkg / ".tfjobignore").write_text("!test_fixture.pem\n")
    built = build_sdist(pkg, tmp_path / "out", module="trainer.task")
    assert built.excluded_secrets == ("prod.env",)
    assert any("kept on purpose" in w and "test_fixture.pem" in w for w in built.warnings)
    everything = build_sdist(pkg, tmp_path / "out2", module="trainer.task", include_secrets=True)
    assert everything.excluded_secrets == ()
    assert any("prod.env" in w for w in everything.warnings)


@pytest.mark.parametrize(
    "head, secret",
    [
        (b"-----BEGIN OPENSSH PRIVATE KEY-----\nabc", True),
        (b"-----BEGIN ENCRYPTED PRIVATE KEY-----\n", True),
        (b"-----BEGIN CERTIFICATE-----\n", False),
        (b'[{"private_key": 1}]', False),
        (b'{"words": ["private_key"]}', False),
        (b'{"TYPE": "Service_Account"}', True),
        (b"refresh_token: a\nclient_secret: b\n", True),
        (b"refresh_token: a\n", False),
        (b"\0\0binary private_key: x", False),
    ],
)
def test_content_rules(head: bytes, secret: bool) -> None:
    assert (secret_in_content(head) is not None) is secret


def test_python_sources_are_judged_by_pem_blocks_only() -> None:
    assert secret_in_content(b'CONFIG = {"type": "service_account", "private_key": "x"}', python_source=True) is None
    assert secret_in_content(PEM.encode(), python_source=True) is not None


def test_a_key_deep_in_a_big_file_is_found_and_a_clean_big_file_ships(tmp_path: Path) -> None:
    # Issue 36: the whole file is judged (a window at a time), not its first 64 KiB only:
    # a key pasted 4 MiB into a data file or a log keeps the file out; the same data without it ships.
    pkg = tmp_path / "trainer"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "task.py").write_text("")
    for name, tail in (("data.csv", PEM.encode()), ("clean.csv", b"1,2\n")):
        with open(pkg / name, "wb") as f:
            f.write(b"a,b\n" * (1 << 20))  # 4 MiB of data
            f.write(tail)
    found = collect_files(pkg)
    assert "data.csv" in found.secrets and "data.csv" not in found.files
    assert "clean.csv" in found.files
    assert any("data.csv" in w for w in found.warnings()), found.warnings()


def test_the_inspector_sees_a_leak(hostile: Path, tmp_path: Path) -> None:
    # --include-secrets packages the credentials: the same inspection must then find them.
    built = build_sdist(hostile, tmp_path / "out", module="trainer.task", include_secrets=True)
    found, _ = leaks(built.path)
    assert len([f for f in found if "holds LEAKMARK" in f]) == len(SECRETS)
    assert not any("OUTSIDEMARK" in f or "root:" in f for f in found)  # links are never followed, even then
