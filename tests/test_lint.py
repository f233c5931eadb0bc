"""ruff (lint and format) and mypy, as configured in pyproject.toml, report nothing on what they check; and the
test suite keeps its own rules (match= on every raises, nothing outside the repository, no conftest imports)."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

from helpers import ROOT


def test_ruff_finds_nothing() -> None:
    done = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "."], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr


def test_ruff_format_leaves_everything_as_it_is() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "ruff", "format", "--check", "--no-cache", "."], cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_mypy_finds_nothing_in_the_public_api(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--cache-dir", str(tmp_path / "cache")], cwd=ROOT, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0 and done.stdout.startswith("Success: no issues found"), done.stdout + done.stderr


def _test_sources() -> list[Path]:
    return sorted(p for p in (ROOT / "tests").rglob("*.py") if "data" not in p.relative_to(ROOT / "tests").parts)


def test_every_pytest_raises_says_what_it_expects() -> None:
    """``pytest.raises(E)`` alone passes on any E, from anywhere: each one names its message."""
    bare = []
    for path in _test_sources():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "raises":
                if (
                    isinstance(node.func.value, ast.Name)
                    and node.func.value.id == "pytest"
                    and not any(k.arg == "match" for k in node.keywords)
                ):
                    bare.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert not bare, "pytest.raises without match=: " + ", ".join(bare)


def test_the_tests_stand_alone() -> None:
    """Nothing reads a directory beside the project, and conftest is never imported (it would
    load twice): shared paths and markers are in tests/helpers.py."""
    for path in [*_test_sources(), *sorted((ROOT / "bench").rglob("*.py"))]:
        if path == Path(__file__).resolve():
            continue  # this check names what it looks for
        text = path.read_text()
        outside = "../" + "shared"  # spelt in two pieces, so this check is not itself a reference
        assert outside not in text and 'parent / "' + 'shared"' not in text, path
        assert not re.search(r"^\s*(from (tests\.)?conftest import|import (tests\.)?conftest)", text, re.M), path


def test_render_code_reads_typed_options() -> None:
    """A backend's render takes its own options class (``options_as`` at the entry), so a
    misspelt option is an AttributeError in the tests, not a silent default; its options'
    checks read their fields by name too (no computed ``getattr(options, …)`` anywhere in a backend)."""
    found = [
        f"{path.relative_to(ROOT)}:{n}"
        for path in sorted((ROOT / "sdk" / "backends").rglob("*.py"))
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if "getattr(options" in line
    ]
    assert not found, found
