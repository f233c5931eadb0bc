"""The wheel: built from the source tree, installed into a fresh venv, its console scripts run.

The suite itself runs on the editable install; this checks what users get from
``pip install tfjob``: the folder → package mapping of pyproject.toml, the package data
(trainer templates, the base image Dockerfile) and both console scripts.

No network: the wheel is built with the setuptools of the running interpreter, and the
fresh venv sees only the runtime closure of click and pyyaml (linked from this
interpreter's site-packages), so the scripts also prove they need nothing else to start.
"""

from __future__ import annotations

import importlib.metadata as metadata
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from packaging.requirements import Requirement

from helpers import ROOT

pytestmark = pytest.mark.slow

#: What a wheel is built from (tests, benchmarks and the venv are not part of it).
SOURCES = ("pyproject.toml", "README.md", "sdk", "cli", "container", "templates")
_JUNK = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info", "build", "dist")


def run(argv: list[str], **kwargs: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, capture_output=True, text=True, timeout=300, **kwargs)  # type: ignore[call-overload]


def runtime_closure(*names: str) -> list[metadata.Distribution]:
    """The installed distributions ``names`` need at run time (extras left out)."""
    seen: dict[str, metadata.Distribution] = {}
    todo = list(names)
    while todo:
        dist = metadata.distribution(todo.pop())
        key = dist.metadata["Name"].lower()
        if key in seen:
            continue
        seen[key] = dist
        for text in dist.requires or []:
            req = Requirement(text)
            if req.marker is None or req.marker.evaluate({"extra": ""}):
                todo.append(req.name)
    return list(seen.values())


def link_distributions(dists: list[metadata.Distribution], target: Path) -> None:
    """Make the top-level modules and metadata of ``dists`` visible in ``target``."""
    target.mkdir()
    for dist in dists:
        tops = {Path(str(f)).parts[0] for f in dist.files or [] if not str(f).startswith("..")}
        for top in tops:
            source = Path(str(dist.locate_file(top)))
            if source.exists() and not (target / top).exists():
                (target / top).symlink_to(source)


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tfjob wheel built from a copy of the source tree (the tree itself stays clean)."""
    src = tmp_path_factory.mktemp("src")
    for name in SOURCES:
        path = ROOT / name
        assert path.exists(), f"{name} is missing: pyproject.toml needs it to build the wheel"
        if path.is_dir():
            shutil.copytree(path, src / name, ignore=_JUNK)
        else:
            shutil.copy2(path, src / name)
    out = tmp_path_factory.mktemp("dist")
    # --no-isolation: build with this interpreter's setuptools instead of fetching one.
    proc = run([sys.executable, "-m", "build", "--wheel", "--no-isolation", "--skip-dependency-check", "--outdir", str(out), str(src)])
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    (built,) = out.glob("tfjob-*.whl")
    return built


@pytest.fixture(scope="module")
def venv(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv with the wheel installed (--no-deps), plus click and pyyaml."""
    env_dir = tmp_path_factory.mktemp("venv") / "env"
    proc = run([sys.executable, "-m", "venv", "--without-pip", str(env_dir)])
    assert proc.returncode == 0, proc.stderr
    python = env_dir / "bin" / "python"
    proc = run([sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps", "--no-index", "-q", str(wheel)])
    assert proc.returncode == 0, proc.stderr
    purelib = run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"]).stdout.strip()
    deps = env_dir / "deps"
    link_distributions(runtime_closure("click", "pyyaml"), deps)
    (Path(purelib) / "tfjob-test-deps.pth").write_text(f"{deps}\n")
    return env_dir


def clean_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV"))}
    env["PATH"] = os.defpath
    return env


def test_wheel_holds_every_package_the_templates_and_the_dockerfile(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    for package in ("tfjob", "tfjob/cli", "tfjob/container", "tfjob/templates", "tfjob/backends"):
        assert f"{package}/__init__.py" in names, package
    # Every module of the source tree ships: a package left out of pyproject's list would not.
    modules = {"tfjob/" + p.relative_to(ROOT / "sdk").as_posix() for p in (ROOT / "sdk").rglob("*.py")}
    modules |= {"tfjob/cli/" + p.relative_to(ROOT / "cli").as_posix() for p in (ROOT / "cli").rglob("*.py")}
    assert modules <= names, sorted(modules - names)
    assert {"tfjob/config/job.py", "tfjob/description/spec.py", "tfjob/cli/main.py", "tfjob/container/bootstrap.py"} <= names
    assert "tfjob/container/Dockerfile" in names, "the base image Dockerfile must ship in the wheel"
    dockerfiles = {f"tfjob/container/{p.name}" for p in (ROOT / "container").glob("*.Dockerfile")}
    assert dockerfiles <= names, sorted(dockerfiles - names)
    templates = {
        "tfjob/templates/" + p.relative_to(ROOT / "templates").as_posix()
        for p in (ROOT / "templates").rglob("*")
        if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc"
    }
    assert len(templates) > 1
    assert templates <= names, sorted(templates - names)
    assert not [n for n in names if n.startswith("tests/") or "__pycache__" in n]
    entry_points = zipfile.ZipFile(wheel).read(next(n for n in names if n.endswith("entry_points.txt"))).decode()
    assert "tfjob = tfjob.cli.main:run" in entry_points
    assert "tfjob-bootstrap = tfjob.container.bootstrap:main" in entry_points


def test_console_scripts_run_from_the_fresh_venv(venv: Path) -> None:
    proc = run([str(venv / "bin" / "tfjob"), "--help"], env=clean_env(), cwd=venv)
    assert proc.returncode == 0, proc.stderr
    assert "Usage: tfjob" in proc.stdout and "submit" in proc.stdout
    proc = run([str(venv / "bin" / "tfjob-bootstrap"), "--help"], env=clean_env(), cwd=venv)
    assert proc.returncode == 0, proc.stderr
    assert "tfjob-bootstrap" in proc.stdout and "--module" in proc.stdout


def test_the_installed_package_is_the_wheel_and_finds_its_data(venv: Path) -> None:
    code = (
        "import importlib.resources as r, tfjob, tfjob.templates, tfjob.container; "
        "print(tfjob.__file__); "
        "print(r.files('tfjob.container').joinpath('Dockerfile').is_file()); "
        "print(sorted(p.name for p in r.files('tfjob.templates').iterdir() if p.is_dir() and not p.name.startswith('_')))"
    )
    proc = run([str(venv / "bin" / "python"), "-c", code], env=clean_env(), cwd=venv)
    assert proc.returncode == 0, proc.stderr
    location, dockerfile, templates = proc.stdout.splitlines()
    assert Path(location).resolve().is_relative_to(venv.resolve()), location
    assert dockerfile == "True"
    expected = sorted(p.name for p in (ROOT / "templates").iterdir() if p.is_dir() and not p.name.startswith("_"))
    assert templates == str(expected)


def test_a_render_runs_from_the_fresh_venv(venv: Path) -> None:
    argv = [
        "render",
        "gs://b/trainer-0.1.tar.gz",
        "-m",
        "trainer.task",
        "--scale-tier",
        "STANDARD_1",
        "--backend",
        "ai-platform",
        "--name",
        "wheel",
    ]
    proc = run([str(venv / "bin" / "tfjob"), *argv], env=clean_env(), cwd=venv)
    assert proc.returncode == 0, proc.stderr
    assert '"scaleTier": "STANDARD_1"' in proc.stdout


def test_the_venv_sees_no_heavy_library(venv: Path) -> None:
    # What the console scripts did above, they did without Google clients or TensorFlow.
    code = "import importlib.util as u; print([m for m in ('google.cloud.aiplatform', 'tensorflow', 'kubernetes') if u.find_spec(m.split('.')[0]) and u.find_spec(m)])"
    proc = run([str(venv / "bin" / "python"), "-c", code], env=clean_env(), cwd=venv)
    assert (proc.returncode, proc.stdout.strip()) == (0, "[]"), proc.stderr


def test_a_type_checker_sees_the_typed_api_of_the_installed_wheel(venv: Path, tmp_path: Path) -> None:
    """The wheel ships ``py.typed``: mypy, pointed at the venv the wheel went into, reads
    tfjob's annotations and reports each of a user's five mistakes — a count given as text,
    a misspelt strategy, an unknown TF_CONFIG mode, a Vertex AI setting given to the
    Kubernetes backend, a job keyword given to a study — while the documented forms check clean."""
    snippet = tmp_path / "pipeline.py"
    snippet.write_text(
        "from tfjob import Job, JobSet, Kubernetes, Local, Replicas, Resources, Tuning, Vertex\n"
        "\n"
        'Job("trainer/", "trainer.task", workers="3")\n'
        'Job("trainer/", "trainer.task", strategy="paramter-server")\n'
        'Job("trainer/", "trainer.task", tf_config="tf3")\n'
        'Job(image="gcr.io/p/t:1", module="trainer.task", backend=Kubernetes(namespace="ml", spot=True))\n'
        'job = Job("trainer/", "trainer.task", workers=Replicas(4, machine_type="g2-standard-8", accelerator="NVIDIA_L4:1"),\n'
        '          ps=2, evaluators=Replicas(1, args=["--eval"]), backend=Vertex(project="p", region="us-central1", spot=True),\n'
        '          strategy="parameter-server", tf_config="tf2")\n'
        'Tuning(job, "hparams.yaml", workerz=3)\n'
        'Job("trainer/", "trainer.task", workers=2, backend=Local(dialect="kubeflow"))\n'
        'Tuning(job, "hparams.yaml", max_trials=4, algorithm="grid")\n'
        "state: str = job.run(timeout=60).state.value\n"
        'Job("trainer/", "trainer.task", workers=Replicas(2, resources=Resources(cpu=4, memory="16Gi", accelerator="NVIDIA_L4:1")),\n'
        '    backend=JobSet(namespace="ml", cluster_kind="generic")).render()\n'
    )
    proc = run(
        [sys.executable, "-m", "mypy", "--python-executable", str(venv / "bin" / "python"), "--strict", "--follow-imports=silent",
         "--no-incremental", "--cache-dir", str(tmp_path / "cache"), "--no-error-summary", "--hide-error-context", str(snippet)],
        cwd=tmp_path,
    )  # fmt: skip
    errors = [line for line in proc.stdout.splitlines() if ": error: " in line]
    found = [line.split(": error: ", 1)[1] for line in errors]
    assert found == [
        'Argument "workers" to "Job" has incompatible type "str"; expected "int | Replicas | None"  [arg-type]',
        'Argument "strategy" to "Job" has incompatible type "Literal[\'paramter-server\']"; '
        "expected \"Literal['module', 'parameter-server', 'auto', 'multi-worker'] | None\"  [arg-type]",
        'Argument "tf_config" to "Job" has incompatible type "Literal[\'tf3\']"; expected "Literal[\'platform\', \'tf2\'] | None"  [arg-type]',
        'Unexpected keyword argument "spot" for "Kubernetes"  [call-arg]',
        'Unexpected keyword argument "workerz" for "Tuning"  [call-arg]',
    ], proc.stdout + proc.stderr
    assert [line.split(":")[1] for line in errors] == ["3", "4", "5", "6", "10"]


def _files_under(root: Path) -> dict[str, tuple[int, int]]:
    return {str(p.relative_to(root)): (p.stat().st_size, p.stat().st_mtime_ns) for p in sorted(root.rglob("*")) if not p.is_symlink()}


def test_the_cli_runs_from_a_read_only_install_and_writes_nothing_under_it(wheel: Path, tmp_path: Path) -> None:
    """Site-packages may be read-only or shared: the wheel installed with ``pip --target`` into
    a folder no one may write, bytecode writing left on, runs ``tfjob submit --dry-run``
    twice (packaging, the bootstrap wheel, the knobs' declarations) and nothing under the
    folder changes; what tfjob keeps goes under ``TFJOB_HOME``. (Run as root, the modes stop
    no write: the comparison of the folder's files before and after does.)"""
    site = tmp_path / "site"
    proc = run([sys.executable, "-m", "pip", "install", "--no-deps", "--no-index", "-q", "--target", str(site), str(wheel)])
    assert proc.returncode == 0, proc.stderr
    deps = tmp_path / "deps"
    link_distributions(runtime_closure("click", "pyyaml", "packaging", "build"), deps)
    bare = tmp_path / "bare"  # an interpreter that has no tfjob of its own: only the read-only one
    assert run([sys.executable, "-m", "venv", "--without-pip", str(bare)]).returncode == 0
    trainer = tmp_path / "work" / "trainer"
    (trainer / "trainer").mkdir(parents=True)
    (trainer / "trainer" / "__init__.py").write_text("")
    (trainer / "trainer" / "task.py").write_text("print('trained')\n")
    for p in sorted(site.rglob("*"), reverse=True):
        p.chmod(p.stat().st_mode & ~0o222)
    site.chmod(site.stat().st_mode & ~0o222)
    try:
        before = _files_under(site)
        env = {**clean_env(), "PYTHONPATH": f"{site}{os.pathsep}{deps}", "TFJOB_HOME": str(tmp_path / "home")}
        argv = [str(bare / "bin" / "python"), "-m", "tfjob.cli", "submit", "trainer", "-m", "trainer.task", "--workers", "2",
                "--backend", "vertex", "--project", "p", "--region", "us-central1", "--dry-run"]  # fmt: skip
        where = run([str(bare / "bin" / "python"), "-c", "import tfjob; print(tfjob.__file__)"], env=env)
        assert where.stdout.strip() == str(site / "tfjob" / "__init__.py"), where.stderr
        for _ in range(2):
            done = run(argv, env=env, cwd=trainer.parent)
            assert done.returncode == 0, done.stderr
            assert '"workerPoolSpecs"' in done.stdout and "would create this CustomJob" in done.stderr
        assert _files_under(site) == before
        assert any((tmp_path / "home").rglob("tfjob_bootstrap-*.whl"))
    finally:
        for p in [site, *site.rglob("*")]:
            if not p.is_symlink():
                p.chmod(p.stat().st_mode | 0o200)
