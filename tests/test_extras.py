"""The backends' client libraries are extras (``tfjob[vertex]``, ``tfjob[kubernetes]``,
``tfjob[all]``): local training installs neither, and a backend whose library is missing
is one line naming the pip command, exit 2.

"Missing" is real here: the CLI runs in a child interpreter whose import system refuses
``google.*`` (but the ``google`` namespace itself, which protobuf users have) and
``kubernetes``, as an interpreter without those distributions would.
"""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from helpers import ROOT

#: A child interpreter without the Google Cloud and Kubernetes client libraries.
_WITHOUT = """
import sys

class Without:
    def find_spec(self, name, path=None, target=None):
        if name.startswith(("google.", "kubernetes")) and not name.startswith("google.protobuf"):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None

sys.meta_path.insert(0, Without())
from tfjob.cli.main import main
sys.exit(main(sys.argv[1:]))
"""


def tfjob_without_clients(*argv: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", _WITHOUT, *argv], cwd=cwd, capture_output=True, text=True, timeout=120)


def test_the_client_libraries_are_extras_and_the_tests_install_them() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    core = " ".join(project["dependencies"])
    assert "google" not in core and "kubernetes" not in core
    extras = project["optional-dependencies"]
    assert {r.split(">=")[0] for r in extras["vertex"]} == {
        "google-cloud-aiplatform",
        "google-cloud-storage",
        "google-cloud-logging",
        "google-auth",
    }
    assert [r.split(">=")[0] for r in extras["kubernetes"]] == ["kubernetes"]
    assert extras["all"] == ["tfjob[vertex,kubernetes]"]
    assert "tfjob[all]" in extras["test"]  # the README's and CI's '.[test,tf]' installs every backend


@pytest.mark.parametrize(
    ("argv", "extra", "missing"),
    [
        (
            ["submit", "--backend", "vertex", "--project", "p", "--region", "us-central1", "--image", "gcr.io/p/t:1", "-m", "trainer.task"],
            "vertex",
            "google.auth",
        ),
        (["submit", "--backend", "kubeflow", "--image", "img:1", "-m", "trainer.task"], "kubernetes", "kubernetes"),
        (["submit", "--backend", "jobset", "--image", "img:1", "-m", "trainer.task"], "kubernetes", "kubernetes"),
    ],
)
def test_a_missing_client_library_is_one_line_naming_the_pip_command(argv: list[str], extra: str, missing: str, tmp_path: Path) -> None:
    done = tfjob_without_clients(*argv, cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    backend = "vertex" if extra == "vertex" else "Kubernetes"
    what = "the Google Cloud client libraries" if extra == "vertex" else "the Kubernetes client library"
    assert done.stderr.splitlines() == [
        f"error: the {backend} backend needs {what} ({missing} is missing), which tfjob installs only on request: pip install 'tfjob[{extra}]'"
    ]


def test_rendering_and_local_runs_need_neither(tmp_path: Path) -> None:
    """What the README's first command does — a local job — and every render run without them."""
    trainer = tmp_path / "trainer"
    trainer.mkdir()
    (trainer / "__init__.py").write_text("")
    (trainer / "task.py").write_text("import json, os\nprint('task', json.loads(os.environ['TF_CONFIG'])['task']['type'])\n")
    done = tfjob_without_clients("submit", ".", "-m", "trainer.task", "--workers", "1", "--quiet", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    cloud = ["--project", "p", "--region", "us-central1", "--staging-bucket", "gs://b"]
    for backend in ("vertex", "kubeflow", "jobset", "trainjob", "ai-platform"):
        where = cloud if backend in ("vertex", "ai-platform") else ["--image", "img:1"]  # the trainer shipped in a ConfigMap
        done = tfjob_without_clients("render", ".", "-m", "trainer.task", "--workers", "1", "--backend", backend, *where, cwd=tmp_path)
        assert done.returncode == 0 and done.stdout.startswith("{"), (backend, done.stderr)
