"""$TFJOB_HOME/config.yaml: precedence, and every mistake in it one line (exit 2 from the CLI)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tfjob.errors import ConfigFileError
from tfjob.runtime.settings import load_settings


def _home(tmp_path: Path, text: str | bytes) -> dict[str, str]:
    config = tmp_path / "config.yaml"
    config.write_bytes(text if isinstance(text, bytes) else text.encode())
    return {"TFJOB_HOME": str(tmp_path)}


def test_flags_then_environment_then_the_file(tmp_path: Path) -> None:
    env = _home(tmp_path, "project: from-file\nregion: europe-west4\nnamespace: ml\n")
    assert load_settings(env).project == "from-file"
    env["TFJOB_PROJECT"] = "from-env"
    got = load_settings(env, project="from-flag", region=None)
    assert (got.project, got.region, got.namespace) == ("from-flag", "europe-west4", "ml")
    assert load_settings(env).project == "from-env"


def test_no_file_and_an_empty_file_are_no_settings(tmp_path: Path) -> None:
    assert load_settings({"TFJOB_HOME": str(tmp_path / "none")}).project is None
    assert load_settings(_home(tmp_path, "")).project is None


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("poll_interval: [1\n", r"config\.yaml: not valid YAML \(line 2\): expected ',' or '\]'"),
        ("- project\n", r"config\.yaml: expected a mapping of settings, got list"),
        ("projct: p\n", r"config\.yaml: unknown key 'projct'; known keys are api_endpoint, backend,"),
        ("1: a\nfoo: b\n", r"config\.yaml: unknown key '1'; known keys are"),
        ("[" * 500 + "]" * 500, r"config\.yaml: nested more than 64 levels deep"),
        (b"project: \xff\n", r"the settings file '.*config\.yaml': not UTF-8 text"),
        ("project: " + "p" * (1024 * 1024) + "\n", r"the settings file '.*config\.yaml' is larger than 1024 KiB"),
    ],
)
def test_a_bad_file_is_one_line(tmp_path: Path, text: str | bytes, message: str) -> None:
    env = _home(tmp_path, text)
    with pytest.raises(ConfigFileError, match=message) as caught:
        load_settings(env)
    assert "\n" not in str(caught.value)


def test_the_cli_says_a_bad_file_in_one_line_and_exits_2(tmp_path: Path) -> None:
    env = {**os.environ, **_home(tmp_path, "poll_interval: [1\n")}
    trainer = tmp_path / "trainer"
    trainer.mkdir()
    (trainer / "train.py").write_text("print('hi')\n")
    got = subprocess.run(
        [sys.executable, "-m", "tfjob", "render", str(trainer), "--module-name", "train"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert got.returncode == 2, got.stderr
    assert got.stderr.count("\n") == 1 and got.stderr.startswith("error: ") and "not valid YAML (line 2)" in got.stderr
    assert "Traceback" not in got.stderr


def test_a_bad_backend_setting_is_named_where_it_was_set(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tfjob import Job
    from tfjob.errors import SpecError

    env = _home(tmp_path, "backend: kubeflo\n")
    assert load_settings(env).source("backend") == f"backend in {tmp_path / 'config.yaml'}"
    monkeypatch.setenv("TFJOB_HOME", env["TFJOB_HOME"])
    with pytest.raises(SpecError, match=r"^backend in .*config\.yaml 'kubeflo' is not a backend \(did you mean 'kubeflow'\?\)"):
        Job(image="python:3")
    monkeypatch.setenv("TFJOB_BACKEND", "vertx")
    with pytest.raises(SpecError, match=r"^TFJOB_BACKEND 'vertx' is not a backend \(did you mean 'vertex'\?\)"):
        Job(image="python:3")
    with pytest.raises(SpecError, match=r"^backend='locl' is not a backend \(did you mean 'local'\?\)"):
        Job(image="python:3", backend="locl")
