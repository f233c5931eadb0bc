"""Ignore files (issue 24): git's answers, in linear time, and one line for a line that is no pattern.

The parity test asks git itself (``git check-ignore --no-index``) about a tree and a set of
patterns, and tfjob's matcher must say the same for every path. The adversarial patterns
(``*a*a*a…*c``, ``**/**/…/x``) backtrack catastrophically in a regular-expression engine;
here they must simply finish (the bench measures how fast: ``packaging.ignore_*``).
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from helpers import need_in_ci
from click.testing import CliRunner

from reliability import Reliability
from tfjob.cli.main import app
from tfjob.errors import ConfigFileError
from tfjob.packaging import MAX_IGNORE_RULES, RuleSet, build_sdist, collect_files, is_excluded, parse_ignore

PATTERNS = [
    "*.log", "!keep.log", "/build", "data/", "docs/**/*.md", "a/**", "**/tmp", "file?.txt", "[ab].py", "[!c-e]x.cfg",
    "\\#notes", "trail\\ ", "src/*/gen", "**/cache/**", "deep/**/leaf", "*.tar.gz", "n*e*d*l*e", "x/**/y/**/z", "sub/*.json",
    "!sub/ok.json", "/root.txt", "a?c/*", "dir_only/", "*~", "[0-9][0-9].dat", "odd[]]name", "esc\\*aped",
]  # fmt: skip

PATHS = [
    "a.log", "x/keep.log", "x/b.log", "build/out.py", "src/build/out.py", "data/x.csv", "src/data/y.csv", "data_file",
    "docs/a/b/c.md", "docs/c.md", "src/docs/c.md", "a/b/c", "a/x", "x/y/tmp/z", "tmp", "file1.txt", "file10.txt",
    "b.py", "c.py", "cx.cfg", "fx.cfg", "#notes", "trail ", "src/lib/gen", "src/lib/sub/gen", "p/cache/q/r", "cache/q",
    "deep/leaf", "deep/1/2/leaf", "pkg.tar.gz", "needle", "nxexdxlxe", "nodle", "x/1/y/2/z", "x/y/z", "x/z", "sub/a.json",
    "sub/ok.json", "root.txt", "q/root.txt", "abc/f", "a/c/f", "dir_only/f", "backup~", "12.dat", "1.dat", "odd]name",
    "esc*aped", "escXaped", "plain.py",
]  # fmt: skip


def _git_ignored(root: Path, patterns: list[str], paths: list[str]) -> set[str]:
    root.mkdir(parents=True)
    (root / ".gitignore").write_text("\n".join(patterns) + "\n")
    for rel in paths:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text("x")
    subprocess.run(["git", "init", "-q", str(root)], check=True, capture_output=True)
    # ls-files --others --ignored lists every ignored file, a file inside an ignored directory too.
    out = subprocess.run(
        ["git", "-C", str(root), "ls-files", "--others", "--ignored", "--exclude-standard", "-z"],
        check=True, capture_output=True, text=True,
    ).stdout  # fmt: skip
    return {p for p in out.split("\0") if p}


def test_the_matcher_agrees_with_git(tmp_path: Path, reliability: Reliability) -> None:
    need_in_ci(shutil.which("git") is not None, "needs git (apt-get install git)")
    expected = _git_ignored(tmp_path / "repo", PATTERNS, PATHS)
    rules = RuleSet(parse_ignore("\n".join(PATTERNS)))
    ours = {p for p in PATHS if rules.excluded(p)}
    reliability.tried(len(PATHS))
    assert ours == expected, (sorted(ours - expected), sorted(expected - ours))
    assert len(expected) > 20  # the table exercises exclusion, not only inclusion


@pytest.mark.parametrize(
    "pattern, name",
    [
        ("*a" * 30 + "*c", "a" * 40),
        ("*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*b", "a" * 200),
        ("/" + "**/" * 30 + "x", "/".join(["d"] * 200) + "/y"),
        ("**/" * 40 + "a*a*a*a*a*a*a*a*a*a*b", "/".join(["a" * 30] * 60)),
        ("[a-z]*[a-z]*[a-z]*[a-z]*[a-z]*[a-z]*[a-z]*[a-z]*[a-z]*0", "q" * 250),
    ],
)
@pytest.mark.timeout(120)
def test_adversarial_patterns_finish(pattern: str, name: str) -> None:
    # A backtracking regex takes longer than the age of the universe on the first of these.
    rules = RuleSet(parse_ignore(pattern))
    assert rules.ignored(name, False) is False
    assert rules.ignored(name.replace("y", "x").rstrip("a") + ("c" if name.startswith("aaa") else ""), False) in (True, False)


@pytest.mark.timeout(300)
def test_a_tree_under_an_adversarial_ignore_file_is_packaged(tmp_path: Path) -> None:
    pkg = tmp_path / "trainer"
    deep = pkg / "/".join(["d"] * 40)
    deep.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "task.py").write_text("")
    for i in range(50):
        (deep / (f"{'a' * 40}{i}.txt")).write_text("x")
    lines = ["*a" * 20 + f"*c{i}" for i in range(200)] + ["**/" * 20 + f"x{i}" for i in range(200)]
    (pkg / ".tfjobignore").write_text("\n".join(lines) + "\n")
    found = collect_files(pkg)
    assert len(found.files) == 52


@pytest.mark.parametrize(
    "line, fault",
    [
        ("[z-a]", r"has the range \[z-a\], which runs backwards; write \[a-z\]"),
        ("[!]", r"opens a character class '\[' that is never closed"),
        ("data/[abc", r"opens a character class '\[' that is never closed; write \\\[ for a literal bracket"),
        ("x[]", r"opens a character class .* never closed"),
    ],
)
def test_a_line_that_is_no_pattern_is_named_by_file_and_line(tmp_path: Path, line: str, fault: str) -> None:
    pkg = tmp_path / "trainer"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "task.py").write_text("")
    (pkg / ".tfjobignore").write_text(f"*.log\n# a comment\n{line}\n")
    with pytest.raises(ConfigFileError, match=rf"\.tfjobignore line 3: the pattern '{_re(line)}' {fault}"):
        build_sdist(pkg, tmp_path / "out", module="trainer.task")
    result = CliRunner().invoke(app, ["submit", str(pkg), "-m", "trainer.task", "--backend", "vertex", "--dry-run"])
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert result.stderr.count("\n") == 1 and ".tfjobignore line 3" in result.stderr


def _re(text: str) -> str:
    import re

    return re.escape(text)


def test_an_included_file_is_named_in_its_message(tmp_path: Path) -> None:
    def include(name: str) -> str | None:
        return "ok\n[z-a]\n" if name == ".gitignore" else None

    with pytest.raises(ConfigFileError, match=r"^\.gitignore line 2: the pattern '\[z-a\]'"):
        parse_ignore("#!include:.gitignore\n", include, name=".tfjobignore")


def test_ignore_files_are_bounded_in_patterns(tmp_path: Path) -> None:
    with pytest.raises(ConfigFileError, match=rf"line {MAX_IGNORE_RULES + 1}: more than 10,000 ignore patterns"):
        parse_ignore("\n".join(f"f{i}" for i in range(MAX_IGNORE_RULES + 1)))
    with pytest.raises(ConfigFileError, match=r"a pattern of 5,000 characters; a path is at most 4,096"):
        parse_ignore("x" * 5000)
    # Identical lines count once in matching (the last decides), and the answer is git's.
    rules = parse_ignore("*.log\n!*.log\n*.log\n")
    assert is_excluded("a.log", rules) and len(RuleSet(rules).rules) == 2
