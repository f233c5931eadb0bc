"""``tfjob submit`` read without click (tfjob.cli.fast, issue 25.7): where it reads a line, it
reads what click reads; every other line is click's (help, mistakes, short forms…)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import click
import pytest
from hypothesis import given, strategies as st

from tfjob.cli.fast import read_submit, spellings
from tfjob.cli.main import app

SUBMIT = app.commands["submit"]


def clicks(args: list[str]) -> tuple[dict[str, Any], list[str]] | None:
    """What click gives ``submit`` for ``args``, or None when it refuses them."""
    try:
        ctx = SUBMIT.make_context("submit", list(args), resilient_parsing=False)
    except click.ClickException:
        return None
    return dict(ctx.params), ctx.meta.get("tfjob_user_args", [])


def test_every_spelling_of_submit_is_read_as_click_declares_it() -> None:
    table, defaults = spellings()
    declared: dict[str, tuple[str, str]] = {}
    for p in SUBMIT.params:
        if not isinstance(p, click.Option):
            continue
        for spelling in p.opts:
            kind = "on" if p.is_flag else "list" if p.multiple else getattr(p.type, "name", "text")
            declared[spelling] = (str(p.name), {"integer": "int", "text": "text"}.get(kind, kind))
        for spelling in p.secondary_opts:
            declared[spelling] = (str(p.name), "off")
    assert table == declared
    assert defaults == clicks([])[0]  # type: ignore[index]


PLAIN = [
    ["trainer", "-m", "trainer.task", "--workers", "2", "--ps", "1", "--backend", "vertex", "--project", "p", "--dry-run"],
    ["trainer", "--module-name=t.task", "--worker-count", "3", "--quiet", "-d", "--job-dir", "d", "--", "--steps", "5", "--"],
    ["--package-path", "trainer", "name", "--env", "A=1", "--env", "B=2", "--no-chief", "--use-master", "-o", "yaml"],
    ["t", "--labels=a=b", "--async", "--strategy", "multi-worker", "--spot", "--no-install"],
    ["t", "--workers", "+3", "--workers-x", "1"],
    ["t", "--workers", "2", "--workers", "3"],
    ["t", "-mtrainer.task"],
    ["t", "-qd"],
    ["t", "--project", "-x"],
    ["t", "--project"],
    ["t", "--workers", "two"],
    ["t", "u"],
    ["t", "-"],
    ["t", "--quiet=1"],
    ["--help"],
    ["t", "-h"],
]


@pytest.mark.parametrize("args", PLAIN, ids=[" ".join(a) for a in PLAIN])
def test_a_line_read_without_click_is_read_as_click_reads_it(args: list[str]) -> None:
    fast = read_submit(args)
    if fast is not None:
        assert fast == clicks(args)


def test_the_plain_lines_are_read_and_the_others_left_to_click() -> None:
    assert [read_submit(a) is not None for a in PLAIN] == [True] * 4 + [False] * 12


_TABLE, _ = spellings()
_SPELLINGS = sorted(_TABLE)
_VALUES = st.sampled_from(["2", "-1", "x", "a=b", "", "1.5", "t.task", "--", "-q", "gs://b", "0x1", "1_0"])
_TOKENS = st.one_of(
    st.sampled_from(_SPELLINGS),
    st.builds(lambda s, v: f"{s}={v}", st.sampled_from([s for s in _SPELLINGS if s.startswith("--")]), _VALUES),
    _VALUES,
    st.sampled_from(["--bogus", "-h", "-", "trainer", "-m2"]),
)


@given(st.lists(_TOKENS, max_size=12))
def test_any_line_either_is_read_as_click_reads_it_or_is_left_to_click(args: list[str]) -> None:
    fast = read_submit(args)
    if fast is not None:
        assert fast == clicks(args)


def test_a_plain_dry_run_imports_no_click_and_prints_what_click_prints(tmp_path: Path, tfjob_exe: str) -> None:
    trainer = tmp_path / "trainer"
    (trainer / "triv").mkdir(parents=True)
    (trainer / "triv" / "__init__.py").write_text("")
    (trainer / "triv" / "task.py").write_text("print('hi')\n")
    argv = ["submit", str(trainer), "-m", "triv.task", "--workers", "2", "--backend", "kubeflow", "--image", "r/i:1",
            "--display-name", "triv", "--dry-run"]  # fmt: skip  # a name: no time in it
    env = {**os.environ, "TFJOB_HOME": str(tmp_path / "home")}
    code = (
        "import sys\n"
        f"sys.argv = ['tfjob', *{argv!r}]\n"
        "from tfjob.cli.main import main\n"
        "try:\n    main()\nexcept SystemExit as e:\n    assert not e.code, e.code\n"
        "print('click' in sys.modules, file=sys.stderr)\n"
    )
    fast = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, env=env)
    assert fast.returncode == 0 and fast.stderr.splitlines()[-1] == "False", fast.stderr
    slow = subprocess.run(
        [sys.executable, "-c", "import sys; from tfjob.cli.main import app; app.main(sys.argv[1:], 'tfjob')", *argv],
        capture_output=True, text=True, timeout=300, env=env,
    )  # fmt: skip
    assert slow.returncode == 0, slow.stderr
    assert json.loads(fast.stdout) == json.loads(slow.stdout)


@pytest.mark.parametrize(
    "args, line",
    [
        (["--workers", "0"], "error: --workers 0 must be ≥ 1; leave --workers out for a job without that role"),
        (["--workers", "x"], "error: Invalid value for '--workers' / '--worker-count': 'x' is not a valid integer. (see `tfjob submit --help`)"),
    ],
)  # fmt: skip
def test_mistakes_are_one_line_and_exit_2_either_way(tmp_path: Path, tfjob_exe: str, args: list[str], line: str) -> None:
    (tmp_path / "t").mkdir()
    got = subprocess.run([tfjob_exe, "submit", str(tmp_path / "t"), "-m", "t.task", *args, "--dry-run"], capture_output=True, text=True, timeout=120,
                         env={**os.environ, "TFJOB_HOME": str(tmp_path / "home")})  # fmt: skip
    assert (got.returncode, got.stderr.strip(), got.stdout) == (2, line, "")


_ENDING = """\
import atexit, sys, threading, time
atexit.register(lambda: print("atexit ran", flush=True))
if "--thread" in sys.argv:
    sys.argv.remove("--thread")
    threading.Thread(target=lambda: (time.sleep(0.3), print("thread ended", flush=True))).start()
sys.argv = ["tfjob", *sys.argv[1:]]
from tfjob.cli.main import run
run()
"""


@pytest.mark.parametrize("thread", [False, True], ids=["alone", "with a thread running"])
def test_the_command_ends_with_its_status_its_output_and_atexit_s_work_done(tmp_path: Path, thread: bool) -> None:
    """``tfjob`` (``run``) ends without the interpreter's teardown, yet with the command's exit
    status, all its output and the ``atexit`` callbacks; a running thread is waited for."""
    (tmp_path / "t").mkdir()
    (tmp_path / "t" / "__init__.py").write_text("")
    (tmp_path / "t" / "task.py").write_text("")
    env = {**os.environ, "TFJOB_HOME": str(tmp_path / "home")}
    line = [sys.executable, "-c", _ENDING, "submit", str(tmp_path / "t"), "-m", "t.task", "--backend", "kubeflow", "--image", "r/i:1",
            "--display-name", "t", "--dry-run"]  # fmt: skip
    done = subprocess.run([*line, *(["--thread"] if thread else [])], capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    printed = json.loads("\n".join(l for l in lines if l not in ("atexit ran", "thread ended")))
    assert lines[-1] == "atexit ran" and printed["kind"] == "List"
    assert ("thread ended" in lines) == thread
    wrong = subprocess.run([*line, "--workers", "0"], capture_output=True, text=True, timeout=120, env=env)
    assert (wrong.returncode, wrong.stdout) == (2, "atexit ran\n") and wrong.stderr.startswith("error: --workers 0 must be ≥ 1")
