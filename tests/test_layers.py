"""The layout docs/architecture.md states, checked: the packages are layers, each importing only
the layers below it; a backend is a folder that imports only the layers below it — never another
backend's folder, the API (`tfjob.job`, `tfjob.tune`) or the CLI — so adding a backend means
adding a folder."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BACKENDS = ROOT / "sdk" / "backends"
FOLDERS = sorted(p.name for p in BACKENDS.iterdir() if p.is_dir() and (p / "__init__.py").exists())
ABOVE = ("tfjob.job", "tfjob.tune", "tfjob.cli", "tfjob.backends", "tfjob.after", "tfjob.images")  # tfjob.backends: the registry itself

#: docs/architecture.md's layers, bottom to top: what sits in sdk/ (a package, or a module at the
#: top); each imports only from its own layer and the layers below it.
LAYERS: list[tuple[str, ...]] = [
    ("_version", "errors", "lazy", "shown", "model", "hypertune", "cluster", "container"),  # the bottom; stdlib only
    ("description",),  # the job description: pure, validated data
    ("config", "results", "pricing"),  # readers into it; what a job's end is read into; prices
    ("runtime", "tuning"),  # settings, the job store, the lifecycle, the engine; studies
    ("packaging", "functions"),  # what is shipped; a function as a trainer package
    ("backends",),  # one folder per platform
    ("images", "after"),  # images built for a trainer; outputs, metrics, the report
    ("__init__", "__main__", "_internal", "job", "tune", "platforms", "scaffold", "pipelines"),  # the API, and what sits on it
]


def imports_of(path: Path, package: list[str] | None = None) -> list[tuple[int, str]]:
    """Every module ``path`` imports (function-level ones too), as absolute names."""
    package = package or ["tfjob", *path.relative_to(ROOT / "sdk").parent.parts]
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                module = ".".join(base + (node.module.split(".") if node.module else []))
            else:
                module = node.module or ""
            found += [(node.lineno, f"{module}.{a.name}") for a in node.names] if not node.module else [(node.lineno, module)]
        elif isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names]
    return found


def unit_of(module: str) -> str:
    """``tfjob.description.spec`` -> ``description`` (a package, or a module at the top)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def layer_violations(path: Path, package: list[str] | None = None) -> list[str]:
    """The imports of ``path`` (an sdk/ file, or one said to be in ``package``) that reach a layer above its own."""
    rank = {unit: i for i, units in enumerate(LAYERS) for unit in units}
    package = package or ["tfjob", *path.relative_to(ROOT / "sdk").parent.parts]
    mine = rank[unit_of(".".join([*package, path.stem]))]
    wrong = []
    for line, module in imports_of(path, package):
        if module.startswith("tfjob.") and module.split(".")[1] != "cli" and rank[unit_of(module)] > mine:
            wrong.append(f"{path.name}:{line} imports {module}")
    return wrong


def test_the_packages_are_layers_each_importing_only_those_below_it() -> None:
    files = sorted((ROOT / "sdk").rglob("*.py"))
    units = {unit_of(".".join(["tfjob", *p.relative_to(ROOT / "sdk").with_suffix("").parts])) for p in files}
    assert units <= {u for layer in LAYERS for u in layer}, "a module in sdk/ is in no layer: add it to LAYERS and docs/architecture.md"
    wrong = [w for path in files for w in layer_violations(path)]
    assert not wrong, "\n".join(wrong)
    # The flat modules were grouped: at the top only the bottom's modules and the API's.
    assert {p.stem for p in (ROOT / "sdk").glob("*.py")} <= set(LAYERS[0]) | set(LAYERS[-1])


def test_the_layer_check_sees_an_import_from_above(tmp_path: Path) -> None:
    fake = tmp_path / "x.py"
    fake.write_text("from ..errors import SpecError\nfrom .machines import X\ndef f():\n    from ..runtime.store import JobStore\n")
    assert layer_violations(fake, ["tfjob", "description"]) == ["x.py:4 imports tfjob.runtime.store"]


def test_every_backend_is_a_folder_in_the_registry_with_its_own_options() -> None:
    import dataclasses

    from tfjob.backends import BACKENDS as registry
    from tfjob.backends import backend_keywords, options_type
    from tfjob.model import SubmitOptions

    assert set(FOLDERS) == {"local", "vertex", "kubeflow", "aiplatform"}
    assert not [p.name for p in BACKENDS.glob("*.py") if p.name not in ("__init__.py", "base.py")]
    for name, (module, _) in registry.items():
        assert module.split(".")[2] in FOLDERS, name
        cls = options_type(name)
        assert issubclass(cls, SubmitOptions) and cls.__module__.split(".")[2] in (module.split(".")[2], "base"), name
        assert {f.name for f in dataclasses.fields(SubmitOptions)} <= {f.name for f in dataclasses.fields(cls)}
    # What only one backend takes is declared by it, and by no backend that does not take it.
    assert "dialect" in backend_keywords("local") and "dialect" not in backend_keywords("vertex")
    assert "clean_pod_policy" in backend_keywords("kubeflow") and "clean_pod_policy" not in backend_keywords("jobset")
    assert "spot" in backend_keywords("vertex") and "spot" not in backend_keywords("ai-platform")


def wrong_imports(folder: str, path: Path, package: list[str] | None = None) -> list[str]:
    mine = f"tfjob.backends.{folder}"
    wrong = []
    for line, module in imports_of(path, package):
        if not module.startswith("tfjob.") or module == mine or module.startswith((mine + ".", "tfjob.backends.base")):
            continue
        if module.startswith(ABOVE):
            wrong.append(f"{path.name}:{line} imports {module}")
    return wrong


@pytest.mark.parametrize("folder", FOLDERS)
def test_a_backend_imports_only_the_layers_below_it(folder: str) -> None:
    wrong = [w for path in sorted((BACKENDS / folder).rglob("*.py")) for w in wrong_imports(folder, path)]
    assert not wrong, "\n".join(wrong)


def test_the_check_sees_an_import_of_another_backend_or_of_the_api(tmp_path: Path) -> None:
    fake = tmp_path / "x.py"
    fake.write_text(
        "from ...cluster.dispatch import BOOTSTRAP\ndef f():\n    from ..vertex.render import render_custom_job\n    from ...job import Job\n"
    )
    assert wrong_imports("local", fake, ["tfjob", "backends", "local"]) == [
        "x.py:3 imports tfjob.backends.vertex.render",
        "x.py:4 imports tfjob.job",
    ]


@pytest.mark.parametrize("folder", FOLDERS)
def test_a_backend_folder_exports_its_backends_and_options_without_loading_them(folder: str) -> None:
    import subprocess
    import sys

    code = (
        f"import sys, tfjob.backends.{folder} as f\n"
        "assert not [m for m in sys.modules if m.startswith(('google.cloud.', 'google.auth', 'kubernetes'))], 'a client library was imported'\n"
        "for name in f.__all__:\n"
        "    cls = getattr(f, name)\n"
        f"    assert cls.__name__ == name and cls.__module__.startswith('tfjob.backends.{folder}.'), name\n"
        "print(len(f.__all__))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and int(done.stdout) >= 1, done.stderr


PACKAGING_ORDER = ["secrets", "ignore", "tree", "archive", "cache", "sdist"]


@pytest.mark.parametrize("module", PACKAGING_ORDER)
def test_packaging_is_a_package_of_its_concerns_each_importing_only_those_before_it(module: str) -> None:
    # docs/architecture.md: secrets · ignore · tree · archive · cache · sdist, each only the ones
    # before it, and below packaging only the bottom layers and the job description.
    below = (
        "tfjob.errors",
        "tfjob.description.limits",
        "tfjob.lazy",
        "tfjob.description.spec",
        "tfjob.description.requirements",
        "tfjob.runtime.settings",
    )
    earlier = tuple(f"tfjob.packaging.{m}" for m in PACKAGING_ORDER[: PACKAGING_ORDER.index(module)])
    path = ROOT / "sdk" / "packaging" / f"{module}.py"
    wrong = [
        f"{module}.py:{line} imports {name}"
        for line, name in imports_of(path)
        if name.startswith("tfjob.") and not name.startswith(below + earlier)
    ]
    assert not wrong, "\n".join(wrong)
    assert {p.stem for p in (ROOT / "sdk" / "packaging").glob("*.py")} == {"__init__", *PACKAGING_ORDER}


CLI = ROOT / "cli"


def cli_wrong_imports(path: Path) -> list[str]:
    """What ``path`` (a CLI module) imports of tfjob beyond the public API and the CLI's own
    internal one: ``from tfjob import N`` with N in ``tfjob.__all__``, ``from tfjob._internal
    import N`` with N in ``tfjob._internal.__all__``, and the CLI's own modules."""
    import tfjob
    import tfjob._internal

    offered = {"tfjob": set(tfjob.__all__), "tfjob._internal": set(tfjob._internal.__all__)}
    wrong = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level or (node.module or "").startswith("tfjob.cli"):
                continue  # the CLI's own modules
            if node.module in offered:
                wrong += [
                    f"{path.name}:{node.lineno} imports {node.module}.{a.name}, which {node.module} does not export"
                    for a in node.names
                    if a.name not in offered[node.module]
                ]
            elif (node.module or "").split(".")[0] == "tfjob":
                wrong.append(f"{path.name}:{node.lineno} imports from {node.module}")
        elif isinstance(node, ast.Import):
            wrong += [
                f"{path.name}:{node.lineno} imports {a.name}"
                for a in node.names
                if a.name.split(".")[0] == "tfjob" and not a.name.startswith("tfjob.cli")
            ]
    return wrong


def test_the_cli_uses_only_the_public_api() -> None:
    # docs/architecture.md: the CLI is a shell over what `tfjob` exports, so what it needs is
    # public, documented API (a handle's method, tfjob.list_jobs…), never a backend's internals.
    wrong = [w for path in sorted(CLI.glob("*.py")) for w in cli_wrong_imports(path)]
    assert not wrong, "\n".join(wrong)


def test_the_cli_check_sees_an_internal_import(tmp_path: Path) -> None:
    fake = tmp_path / "x.py"
    fake.write_text(
        "from tfjob import Job, get_job\nfrom .app import app\nfrom tfjob.cli.options import JOB_OPTIONS\n"
        "def f():\n    from tfjob.backends.local.reap import reap_lost\n    from tfjob import reap_lost\n    import tfjob.runtime.store\n"
        "    from tfjob._internal import job_knobs\n    from tfjob import job_knobs\n    from tfjob._internal import reap_lost\n"
    )
    assert cli_wrong_imports(fake) == [
        "x.py:5 imports from tfjob.backends.local.reap",
        "x.py:6 imports tfjob.reap_lost, which tfjob does not export",
        "x.py:7 imports tfjob.runtime.store",
        "x.py:9 imports tfjob.job_knobs, which tfjob does not export",
        "x.py:10 imports tfjob._internal.reap_lost, which tfjob._internal does not export",
    ]


def test_every_public_name_is_documented_and_the_job_model_has_one_home() -> None:
    import tfjob
    import tfjob.backends
    import tfjob.backends.base
    import tfjob.model

    for name in tfjob.__all__:
        if name != "__version__":
            assert (getattr(tfjob, name).__doc__ or "").strip(), f"tfjob.{name} has no docstring"
    # About thirty names a program programs against; what only the command line needs is
    # tfjob._internal's, and every name there still loads.
    import tfjob._internal

    assert len(tfjob.__all__) <= 33, sorted(tfjob.__all__)
    assert not set(tfjob.__all__) & set(tfjob._internal.__all__)
    assert all(getattr(tfjob._internal, name) is not None for name in tfjob._internal.__all__)
    model = ("JobState", "JobStatus", "TaskStatus", "SubmitOptions")
    for name in model:
        assert getattr(tfjob.model, name).__module__ == "tfjob.model"
        assert not hasattr(tfjob.backends, name) and not hasattr(tfjob.backends.base, name), name
    assert all(getattr(tfjob, n) is getattr(tfjob.model, n) for n in model if n in tfjob.__all__)
    # And no module reaches for it elsewhere.
    wrong = [
        f"{path.relative_to(ROOT)}:{line}"
        for folder in ("sdk", "cli", "tests", "bench")
        for path in sorted((ROOT / folder).rglob("*.py"))
        for line, text in enumerate(path.read_text().splitlines(), 1)
        if text.lstrip().startswith(
            ("from tfjob.backends import", "from tfjob.backends.base import", "from ..base import", "from .base import")
        )
        and any(f" {n}" in text or f",{n}" in text for n in model)
    ]
    assert not wrong, wrong
