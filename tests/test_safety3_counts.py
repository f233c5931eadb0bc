"""Issue 36, high 4: a task count is checked before a single task is built.

``--workers 100000000`` used to list every task (a tuple each, then a name each) before the
512-task check: gigabytes, then a MemoryError traceback. Each command runs here under an
address-space limit of 1 GiB, far below what listing the tasks takes and far above what
tfjob needs to refuse them: it must end with the one-line refusal.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import write_trainer

LIMIT = 1 << 30
HUGE = "1000000000"


def _limited() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (LIMIT, LIMIT))


def _run(argv: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        argv, capture_output=True, text=True, timeout=300, cwd=cwd, preexec_fn=_limited, env={**os.environ, "TFJOB_HOME": str(cwd / "home")}
    )


@pytest.fixture
def trainer(tmp_path: Path) -> Path:
    return write_trainer(tmp_path, "print('hello')\n")


@pytest.mark.parametrize(
    "args",
    [
        ["render", "--backend", "local"],
        ["submit", "--backend", "local"],
        ["submit", "--backend", "local", "--image", "example.com/trainer:1"],
        ["submit", "--backend", "local", "--detach"],
    ],
    ids=["render", "submit", "submit-image", "submit-detach"],
)
def test_a_local_job_of_a_billion_workers_is_refused_in_one_line(tmp_path: Path, trainer: Path, tfjob_exe: str, args: list[str]) -> None:
    out = _run([tfjob_exe, *args, "--package-path", str(trainer), "--module-name", "trainer.task", "--workers", HUGE], tmp_path)
    assert out.returncode == 2, out.stderr[-2000:]
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: this job has 1000000001 tasks"), out.stderr[-2000:]
    assert "Traceback" not in out.stderr


def test_the_api_refuses_a_billion_workers_before_building_them(tmp_path: Path) -> None:
    script = (
        "from tfjob import Job\n"
        "from tfjob.errors import SpecError\n"
        "try:\n"
        "    Job(module='trainer.task', workers=10**9).render()\n"
        "except SpecError as e:\n"
        "    print('refused:', e)\n"
    )
    out = _run([sys.executable, "-c", script], tmp_path)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.startswith("refused: this job has 1000000001 tasks"), out.stdout


def test_gang_scheduling_counts_the_tasks_without_listing_them(tmp_path: Path, tfjob_exe: str) -> None:
    argv = [tfjob_exe, "render", "--backend", "kubeflow", "--image", "example.com/t:1", "--module-name", "trainer.task"]
    out = _run([*argv, "--workers", HUGE, "--min-available", "1000000002"], tmp_path)
    assert out.returncode == 2, out.stderr[-2000:]
    assert "1000000001 tasks" in out.stderr and "Traceback" not in out.stderr
