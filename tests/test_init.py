"""``tfjob init`` and :mod:`tfjob.scaffold`: templates listed, copied, named; mistakes refused."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from helpers import ROOT

from tfjob.cli.main import app
from tfjob.errors import UsageError
from tfjob.scaffold import build_package_name, get_template, init_template, list_templates, render_text, template_files

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    tomllib = None

TEMPLATES = ("census-multiworker", "census-ps", "custom-container")
TRAINER = {
    "trainer/__init__.py",
    "trainer/task.py",
    "trainer/model.py",
    "trainer/data.py",
    "trainer/experiment.py",
    "trainer/checkpoints.py",
}


def run_cli(*args: str) -> "object":
    return CliRunner().invoke(app, list(args))


def test_list_templates_names_every_template_with_one_line() -> None:
    listed = dict(list_templates())
    assert sorted(listed) == list(TEMPLATES)
    assert all(summary and "\n" not in summary for summary in listed.values())
    assert "ParameterServerStrategy" in listed["census-ps"]
    assert "MultiWorkerMirroredStrategy" in listed["census-multiworker"]


def test_cli_list_prints_one_line_per_template() -> None:
    result = run_cli("init", "--list")
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert [line.split()[0] for line in lines] == list(TEMPLATES)
    assert all(len(line.split(None, 1)) == 2 for line in lines)


@pytest.mark.parametrize("template", TEMPLATES)
def test_init_copies_a_complete_trainer(template: str, tmp_path: Path) -> None:
    dest = init_template(tmp_path / "My Census_Trainer", template)
    assert dest == (tmp_path / "My Census_Trainer").resolve()
    files = {p.relative_to(dest).as_posix() for p in dest.rglob("*") if p.is_file()}
    assert TRAINER | {"pyproject.toml", "README.md"} <= files
    assert not any("__pycache__" in f or f.endswith(".pyc") or f == "template.json" for f in files)
    for rel in files:
        assert "{{name}}" not in (dest / rel).read_text(encoding="utf-8"), rel
    pyproject = (dest / "pyproject.toml").read_text(encoding="utf-8")
    assert 'name = "my-census-trainer"' in pyproject
    assert (dest / "README.md").read_text(encoding="utf-8").startswith("# my-census-trainer")
    if tomllib is not None:
        assert tomllib.loads(pyproject)["project"]["name"] == "my-census-trainer"


def test_multiworker_replaces_only_the_task_of_census_ps(tmp_path: Path) -> None:
    ps = init_template(tmp_path / "ps", "census-ps")
    mw = init_template(tmp_path / "mw", "census-multiworker")
    assert "MultiWorkerMirroredStrategy(" in (mw / "trainer/task.py").read_text()
    assert "ParameterServerStrategy(" in (ps / "trainer/task.py").read_text()
    for shared in ("trainer/model.py", "trainer/data.py", "trainer/experiment.py", "trainer/checkpoints.py"):
        assert (mw / shared).read_bytes() == (ps / shared).read_bytes()
    assert "MultiWorkerMirroredStrategy" in (mw / "README.md").read_text()
    assert "MultiWorkerMirroredStrategy" not in (ps / "README.md").read_text()


def test_custom_container_adds_a_dockerfile_to_the_trainer(tmp_path: Path) -> None:
    dest = init_template(tmp_path / "img", "custom-container")
    dockerfile = (dest / "Dockerfile").read_text()
    assert "FROM ${BASE_IMAGE}" in dockerfile and "COPY" in dockerfile
    assert (dest / ".dockerignore").is_file()
    assert "tfjob submit --image" in (dest / "README.md").read_text()


def test_explicit_name_fills_the_placeholders(tmp_path: Path) -> None:
    dest = init_template(tmp_path / "x", package_name="income.model_v2")
    assert 'name = "income.model_v2"' in (dest / "pyproject.toml").read_text()


@pytest.mark.parametrize("dirname, expected", [("census", "census"), ("My Trainer!", "my-trainer"), ("2024_job", "trainer-2024-job")])
def test_package_name_from_the_directory(dirname: str, expected: str, tmp_path: Path) -> None:
    assert build_package_name(dirname) == expected
    assert f'name = "{expected}"' in (init_template(tmp_path / dirname) / "pyproject.toml").read_text()


def test_render_text_fills_every_placeholder() -> None:
    assert render_text('# {{name}}\nname = "{{name}}"\n', "abc") == '# abc\nname = "abc"\n'


def test_template_files_are_what_init_writes(tmp_path: Path) -> None:
    files = template_files("census-multiworker", "n")
    dest = init_template(tmp_path / "n", "census-multiworker")
    assert {rel: (dest / rel).read_bytes() for rel in files} == files
    assert sorted(p.relative_to(dest).as_posix() for p in dest.rglob("*") if p.is_file()) == sorted(files)


def test_non_empty_directory_is_refused_without_force(tmp_path: Path) -> None:
    dest = tmp_path / "busy"
    dest.mkdir()
    (dest / "notes.txt").write_text("mine")
    with pytest.raises(UsageError, match=r"busy' is not empty: .*--force"):
        init_template(dest)
    assert sorted(p.name for p in dest.iterdir()) == ["notes.txt"]


def test_force_overwrites_template_files_and_keeps_the_others(tmp_path: Path) -> None:
    dest = tmp_path / "busy"
    (dest / "trainer").mkdir(parents=True)
    (dest / "notes.txt").write_text("mine")
    (dest / "trainer" / "task.py").write_text("old")
    init_template(dest, force=True)
    assert (dest / "notes.txt").read_text() == "mine"
    assert "ParameterServerStrategy" in (dest / "trainer" / "task.py").read_text()


def test_an_empty_existing_directory_is_fine(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    assert (init_template(tmp_path / "empty") / "trainer" / "task.py").is_file()


def test_a_file_as_destination_is_refused(tmp_path: Path) -> None:
    (tmp_path / "f").write_text("x")
    with pytest.raises(UsageError, match=r"is a file, not a directory"):
        init_template(tmp_path / "f", force=True)


def test_an_empty_name_a_link_inside_or_an_unwritable_place_is_refused(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match=r"^the directory to create cannot be empty"):
        init_template("", "census-ps")
    # --force never writes through a link in the tree to a place outside it.
    outside = tmp_path / "outside"
    outside.mkdir()
    dest = tmp_path / "dest"
    dest.mkdir()
    (dest / "trainer").symlink_to(outside, target_is_directory=True)
    with pytest.raises(UsageError, match=r"'.*dest/trainer' is a symbolic link: tfjob init writes only inside"):
        init_template(dest, "census-ps", force=True)
    assert list(outside.iterdir()) == []
    with pytest.raises(UsageError, match=r"^cannot write '/proc/self/.*': .*; give a directory you can write$"):
        init_template("/proc/self", "census-ps", force=True)


def test_unknown_template_lists_the_choices(tmp_path: Path) -> None:
    with pytest.raises(
        UsageError,
        match=r"'census-pss' is not a template \(did you mean 'census-ps'\?\); choose one of: census-multiworker, census-ps, custom-container",
    ):
        init_template(tmp_path / "x", "census-pss")
    assert not (tmp_path / "x").exists()


def test_invalid_distribution_name_is_refused(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match=r"--name 'my trainer' is not a valid distribution name"):
        init_template(tmp_path / "x", package_name="my trainer")


def test_get_template_reads_the_manifest() -> None:
    t = get_template("census-multiworker")
    assert t.base == "census-ps"
    assert "--workers 1" in t.run and "--ps" not in t.run


def test_cli_init_prints_the_directory_and_the_next_command(tmp_path: Path) -> None:
    result = run_cli("init", str(tmp_path / "mw"), "--template", "census-multiworker", "--name", "mw-trainer")
    assert result.exit_code == 0, result.output
    assert result.stdout.strip() == str((tmp_path / "mw").resolve())
    assert f"next: tfjob submit {tmp_path / 'mw'} --module-name trainer.task --workers 1" in result.stderr
    assert 'name = "mw-trainer"' in (tmp_path / "mw" / "pyproject.toml").read_text()


def test_the_next_hints_are_the_readmes_commands(tmp_path: Path) -> None:
    """`tfjob init`'s hint names the job dir the README uses, and a container template's builds with tfjob."""
    readme = (ROOT / "README.md").read_text()
    census = run_cli("init", str(tmp_path / "census"), "--template", "census-ps")
    (hint,) = [line for line in census.stderr.splitlines() if line.startswith("next: ")]
    assert "--job-dir runs/census " in hint and "--job-dir runs/census " in readme
    image = run_cli("init", str(tmp_path / "image"), "--template", "custom-container")
    (hint,) = [line for line in image.stderr.splitlines() if line.startswith("next: ")]
    assert f"next: tfjob submit {tmp_path / 'image'} --module-name trainer.task --build --image-repo REPO " in hint
    assert "docker build" not in hint and "--job-dir runs/census-image " in readme


@pytest.mark.parametrize(
    "args, message",
    [
        ((), r"give the directory to create: tfjob init DIR"),
        (("--template", "nope", "DIR"), r"--template 'nope' is not a template"),
        (("--name", "a b", "DIR"), r"--name 'a b' is not a valid distribution name"),
    ],
)
def test_cli_mistakes_are_one_line_and_exit_2(args: tuple[str, ...], message: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    result = run_cli("init", *args)
    assert result.exit_code == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ")
    assert re.search(message, lines[0])
    assert not (tmp_path / "DIR").exists()


def test_cli_refuses_a_non_empty_directory_then_force_writes(tmp_path: Path) -> None:
    (tmp_path / "t").mkdir()
    (tmp_path / "t" / "x").write_text("")
    refused = run_cli("init", str(tmp_path / "t"))
    assert refused.exit_code == 2
    assert "is not empty" in refused.stderr and "Traceback" not in refused.output
    forced = run_cli("init", str(tmp_path / "t"), "--force")
    assert forced.exit_code == 0, forced.output
    assert (tmp_path / "t" / "trainer" / "task.py").is_file()


def test_init_as_a_real_process(tfjob_exe: str, tmp_path: Path) -> None:
    done = subprocess.run([tfjob_exe, "init", "census", "-t", "census-ps"], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == str((tmp_path / "census").resolve())
    again = subprocess.run([tfjob_exe, "init", "census"], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert again.returncode == 2
    assert again.stderr.startswith("error: 'census' is not empty") and again.stderr.count("\n") == 1


def test_the_initialized_trainer_packages_as_an_sdist(tmp_path: Path) -> None:
    import tarfile

    from tfjob.packaging import build_sdist

    dest = init_template(tmp_path / "census-trainer", "census-ps")
    for output in ("census-output/model/saved_model.pb", "census-job/data/adult.data.csv"):  # local runs' outputs
        (dest / output).parent.mkdir(parents=True)
        (dest / output).write_text("x")
    built = build_sdist(dest, tmp_path / "dist", module="trainer.task")
    with tarfile.open(built.path) as tar:
        names = tar.getnames()
        pkg_info = tar.extractfile(next(n for n in names if n.endswith("/PKG-INFO"))).read().decode()
    assert any(n.endswith("/trainer/task.py") for n in names)
    assert any(n.endswith("/trainer/data.py") for n in names)
    assert "Name: census-trainer" in pkg_info
    assert not any("census-output" in n or "census-job" in n for n in names)
