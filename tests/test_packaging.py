"""Packaging a trainer: canonical bytes, exclusions, ignore files, clear errors, pip-installable."""

from __future__ import annotations

import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
from helpers import cli_words

from tfjob.errors import PackagingError
from tfjob.packaging.ignore import is_excluded, parse_ignore
from tfjob.packaging import BuiltPackage, build_sdist, collect_files, looks_like_secret


def make_trainer(root: Path, name: str = "trainer") -> Path:
    pkg = root / name
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "task.py").write_text("import sys\nprint('task ran with', sys.argv[1:])\n")
    (pkg / "model.py").write_text("UNITS = 8\n")
    return pkg


def members(built: BuiltPackage) -> list[str]:
    with tarfile.open(built.path) as tar:
        return tar.getnames()


def test_identical_input_gives_identical_bytes(tmp_path: Path) -> None:
    pkg = make_trainer(tmp_path / "src")
    first = build_sdist(pkg, tmp_path / "out1", module="trainer.task")
    # Touching every file (new mtimes) and rebuilding elsewhere changes nothing.
    for f in pkg.iterdir():
        os.utime(f, (1_700_000_000, 1_700_000_000))
    second = build_sdist(pkg, tmp_path / "out2", module="trainer.task")
    assert first.path.read_bytes() == second.path.read_bytes()
    assert first.sha256 == second.sha256
    assert first.path != second.path


def test_archive_is_canonical(tmp_path: Path) -> None:
    built = build_sdist(make_trainer(tmp_path / "src"), tmp_path / "out", module="trainer.task")
    data = built.path.read_bytes()
    assert data[4:8] == b"\x00\x00\x00\x00", "gzip header must carry no timestamp"
    with tarfile.open(built.path) as tar:
        infos = tar.getmembers()
    assert [i.name for i in infos] == sorted(i.name for i in infos)
    assert {(i.uid, i.gid, i.uname, i.gname, i.mtime) for i in infos} == {(0, 0, "", "", 315532800)}
    assert built.name == "trainer" and built.version == "0.0.0"
    assert built.path.name == "trainer-0.0.0.tar.gz"
    assert built.size == len(data)


def test_changed_content_changes_digest(tmp_path: Path) -> None:
    pkg = make_trainer(tmp_path / "src")
    before = build_sdist(pkg, tmp_path / "out", module="trainer.task")
    (pkg / "model.py").write_text("UNITS = 16\n")
    after = build_sdist(pkg, tmp_path / "out", module="trainer.task")
    assert before.sha256 != after.sha256
    assert before.path.exists() and after.path.exists()


@pytest.mark.parametrize(
    "name, content",
    [
        (".env", "API_TOKEN=abc\n"),
        (".env.production", "API_TOKEN=abc\n"),
        ("server.pem", "-----BEGIN PRIVATE KEY-----\n"),
        ("tls.key", "secret\n"),
        ("id_rsa", "-----BEGIN OPENSSH PRIVATE KEY-----\n"),
        ("id_rsa.pub", "ssh-rsa AAAA\n"),
        (".netrc", "machine x login y password z\n"),
        ("sa.json", '{"type": "service_account", "private_key": "-----BEGIN"}'),
    ],
)
def test_secrets_are_excluded_and_reported(tmp_path: Path, name: str, content: str) -> None:
    pkg = make_trainer(tmp_path / "src")
    (pkg / name).write_text(content)
    built = build_sdist(pkg, tmp_path / "out", module="trainer.task")
    assert built.excluded_secrets == (name,)
    assert f"trainer-0.0.0/trainer/{name}" not in members(built)


def test_plain_json_is_kept(tmp_path: Path) -> None:
    pkg = make_trainer(tmp_path / "src")
    (pkg / "vocab.json").write_text('{"words": ["private_key is just a word here"]}')
    (pkg / "labels.json").write_text('[{"private_key": 1}]')
    built = build_sdist(pkg, tmp_path / "out", module="trainer.task")
    assert built.excluded_secrets == ()
    assert "trainer-0.0.0/trainer/vocab.json" in members(built)
    assert "trainer-0.0.0/trainer/labels.json" in members(built)
    assert not looks_like_secret(pkg / "labels.json")


def test_caches_vcs_and_virtualenvs_are_left_out(tmp_path: Path) -> None:
    pkg = make_trainer(tmp_path / "src")
    (pkg / "__pycache__").mkdir()
    (pkg / "__pycache__" / "task.cpython-311.pyc").write_bytes(b"\0")
    (pkg / "stale.pyc").write_bytes(b"\0")
    (pkg / ".git").mkdir()
    (pkg / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    venv = pkg / "myenv"
    (venv / "lib").mkdir(parents=True)
    (venv / "pyvenv.cfg").write_text("home = /usr/bin\n")
    (venv / "lib" / "site.py").write_text("")
    found = collect_files(pkg)
    files, secrets = found.files, found.secrets
    assert files == ["__init__.py", "model.py", "task.py"]
    assert secrets == []


def test_ignore_files_are_honoured(tmp_path: Path) -> None:
    pkg = make_trainer(tmp_path / "src")
    (pkg / "data").mkdir()
    (pkg / "data" / "big.csv").write_text("1,2\n")
    (pkg / "data" / "small.csv").write_text("1\n")
    (pkg / "notes.md").write_text("notes\n")
    (pkg / "debug.log").write_text("x\n")
    (pkg / ".gitignore").write_text("*.log\n")
    (pkg / ".gcloudignore").write_text("#!include:.gitignore\n# docs stay home\n*.md\n")
    (pkg / ".tfjobignore").write_text("data/*\n!data/small.csv\n")
    built = build_sdist(pkg, tmp_path / "out", module="trainer.task")
    names = {m.split("/", 2)[2] for m in members(built) if m.count("/") >= 2}
    assert names == {"__init__.py", "model.py", "task.py", "data/small.csv", ".gitignore"}


def test_ignore_files_are_read_within_bounds(tmp_path: Path) -> None:
    from tfjob.errors import ConfigFileError
    from tfjob.packaging import MAX_IGNORE_FILE_BYTES

    pkg = make_trainer(tmp_path / "src")
    (pkg / "notes.md").write_text("notes\n")
    # Bytes that are not UTF-8 (a Latin-1 comment) do not stop the rules around them.
    (pkg / ".tfjobignore").write_bytes(b"# caf\xe9\n*.md\n")
    built = build_sdist(pkg, tmp_path / "out", module="trainer.task")
    assert not any(m.endswith("notes.md") for m in members(built))
    # An included file beyond the bound is one line naming it, whatever includes it.
    (pkg / ".gitignore").write_text("*.log\n" * (MAX_IGNORE_FILE_BYTES // 6 + 1))
    (pkg / ".gcloudignore").write_text("#!include:.gitignore\n")
    with pytest.raises(ConfigFileError, match=r"^the ignore file '.*\.gitignore' is larger than 1024 KiB") as caught:
        build_sdist(pkg, tmp_path / "out2", module="trainer.task")
    assert "\n" not in str(caught.value)


def test_package_data_is_installed_by_generated_setup(tmp_path: Path) -> None:
    pkg = make_trainer(tmp_path / "src")
    (pkg / "assets").mkdir()
    (pkg / "assets" / "vocab.txt").write_text("a\nb\n")
    (pkg / "task.py").write_text(
        "from pathlib import Path\nimport sys\n"
        "print('vocab', Path(__file__).with_name('assets').joinpath('vocab.txt').read_text().split(), sys.argv[1:])\n"
    )
    built = build_sdist(pkg, tmp_path / "out", module="trainer.task")
    target = tmp_path / "site"
    pip = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation", "--target", str(target), str(built.path)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert pip.returncode == 0, pip.stderr
    run = subprocess.run(
        [sys.executable, "-m", "trainer.task", "--steps", "3"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(target)},
        timeout=60,
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "vocab ['a', 'b'] ['--steps', '3']"


def test_directory_holding_the_package(tmp_path: Path) -> None:
    project = tmp_path / "project"
    make_trainer(project)
    (project / "README.txt").write_text("readme\n")
    built = build_sdist(project, tmp_path / "out", module="trainer.task")
    assert built.name == "trainer"
    assert "trainer-0.0.0/trainer/task.py" in members(built)
    assert "trainer-0.0.0/README.txt" in members(built)


def test_pep517_project_is_built_by_its_backend(tmp_path: Path) -> None:
    project = tmp_path / "proj"
    (project / "src" / "mytrainer").mkdir(parents=True)
    (project / "pyproject.toml").write_text(
        '[build-system]\nrequires = ["setuptools>=61"]\nbuild-backend = "setuptools.build_meta"\n'
        '[project]\nname = "mytrainer"\nversion = "1.2.0"\n'
    )
    (project / "src" / "mytrainer" / "__init__.py").write_text("")
    (project / "src" / "mytrainer" / "task.py").write_text("print('ok')\n")
    (project / "deploy.key").write_text("secret\n")
    first = build_sdist(project, tmp_path / "a", module="mytrainer.task")
    second = build_sdist(project, tmp_path / "b", module="mytrainer.task")
    assert (first.name, first.version) == ("mytrainer", "1.2.0")
    assert first.path.read_bytes() == second.path.read_bytes()
    assert first.excluded_secrets == ("deploy.key",)
    names = members(first)
    assert "mytrainer-1.2.0/src/mytrainer/task.py" in names
    assert not any(n.endswith("deploy.key") for n in names)
    assert sorted(project.iterdir()) == [project / "deploy.key", project / "pyproject.toml", project / "src"], (
        "the build wrote into the user's tree"
    )


@pytest.mark.parametrize(
    "layout, module, match",
    [
        ("missing", "trainer.task", r"trainer directory .* does not exist"),
        ("file", "trainer.task", r"is not a directory"),
        ("no-init", "trainer.task", r"has no __init__.py and no trainer/__init__.py"),
        ("package", "trainer.train", r"--module-name trainer.train: no trainer/train.py"),
        ("package", "other.task", r"is the package 'trainer', so the module must start with trainer\."),
        ("project", "mytrainer.nope", r"--module-name mytrainer.nope: no mytrainer/nope.py in project"),
    ],
)
def test_clear_errors(tmp_path: Path, layout: str, module: str, match: str) -> None:
    target = tmp_path / "trainer"
    if layout == "file":
        target.write_text("x")
    elif layout == "no-init":
        target.mkdir()
        (target / "task.py").write_text("")
    elif layout == "package":
        target = make_trainer(tmp_path)
    elif layout == "project":
        (target / "mytrainer").mkdir(parents=True)
        (target / "setup.py").write_text("from setuptools import setup\nsetup(name='mytrainer')\n")
        (target / "mytrainer" / "__init__.py").write_text("")
    with pytest.raises(PackagingError, match=match), cli_words():
        build_sdist(target, tmp_path / "out", module=module)


def test_default_out_dir_is_under_tfjob_home(tmp_path: Path, isolated_env: Path) -> None:
    built = build_sdist(make_trainer(tmp_path / "src"), module="trainer.task")
    assert built.path.is_relative_to(isolated_env / "build")


@pytest.mark.parametrize(
    "rules, path, excluded",
    [
        ("*.log", "a/b/x.log", True),
        ("*.log\n!keep.log", "a/keep.log", False),
        ("/build", "build/x.py", True),
        ("/build", "src/build/x.py", False),
        ("data/", "src/data/x", True),
        ("data/", "data", False),
        ("docs/**/*.md", "docs/a/b/c.md", True),
        ("docs/**/*.md", "docs/c.md", True),
        ("docs/**/*.md", "src/docs/c.md", False),
        ("a/**", "a/b/c", True),
        ("**/tmp", "x/y/tmp/z", True),
        ("file?.txt", "file1.txt", True),
        ("file?.txt", "file10.txt", False),
        ("[ab].py", "b.py", True),
        ("[!ab].py", "b.py", False),
        ("\\#notes", "#notes", True),
        ("# a comment", "# a comment", False),
        ("trail  ", "trail", True),
    ],
)
def test_gitignore_syntax(rules: str, path: str, excluded: bool) -> None:
    assert is_excluded(path, parse_ignore(rules)) is excluded


def test_a_packages_entry_is_one_built_file_on_every_backend(tmp_path: Path) -> None:
    from tfjob.packaging import check_built_package

    tgz = tmp_path / "extra-1.0.tgz"
    tgz.write_bytes(b"")
    assert check_built_package(str(tgz)) == tgz  # pip installs .tgz sdists: local and Vertex AI take it alike
    for given, problem in (("/dev/null", "is not a regular file"), (str(tmp_path / "none.whl"), "does not exist"),
                           (str(tmp_path), "is not a regular file")):  # fmt: skip
        with pytest.raises(PackagingError, match=rf"^--packages '{given}' {problem}; give built"), cli_words():
            check_built_package(given)
    (tmp_path / "notes.txt").write_text("x")
    with pytest.raises(PackagingError, match=r"is not a \.tar\.gz, \.tgz, \.zip or \.whl package"), cli_words():
        check_built_package(str(tmp_path / "notes.txt"))


def test_a_trainer_with_data_beyond_the_bound_is_refused_naming_the_largest(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import tfjob.packaging as packaging
    import tfjob.packaging.tree  # noqa: F401 - loads the submodule patched below (packaging.tree)

    pkg = make_trainer(tmp_path / "src")
    (pkg / "data").mkdir()
    with open(pkg / "data" / "train.bin", "wb") as f:  # sparse: no disk used
        f.truncate(packaging.MAX_PACKAGE_BYTES + 1)
    with pytest.raises(
        PackagingError, match=r"has more than 512\.0 MiB to package \(largest: data/ 1 file 512\.0 MiB.*\.tfjobignore line \(e\.g\. data/\)"
    ) as caught:
        build_sdist(pkg, tmp_path / "out", module="trainer.task")
    assert "\n" not in str(caught.value)
    (pkg / ".tfjobignore").write_text("data/\n")
    assert build_sdist(pkg, tmp_path / "out", module="trainer.task").path.is_file()  # the fix it names works
    monkeypatch.setattr(packaging.tree, "MAX_PACKAGE_FILES", 5)
    for i in range(6):
        (pkg / f"m{i}.py").write_text("")
    with pytest.raises(PackagingError, match=r"has more than 5 files to package"):
        build_sdist(pkg, tmp_path / "out2", module="trainer.task")
