"""The suite's own rules, checked through pytest runs of their own: a golden file is
rewritten only when the run asks (``--update-golden``), never by an exported variable."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import REAL_HOME, ROOT

INNER = """
import os
from pathlib import Path

from helpers import golden_text


def test_golden(tmp_path):
    golden = Path(os.environ["GOLDEN_FILE"])
    assert "TFJOB_REGEN_GOLDEN" not in os.environ
    print("golden now:", golden_text(golden, "rendered now\\n").strip())
"""


def _inner(tmp_path: Path, *args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    # This suite's conftest.py as a plugin of a run in another directory (its option, its clearing).
    (tmp_path / "test_inner.py").write_text(INNER)
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-s", "-p", "conftest", "-p", "no:randomly", "-p", "no:cacheprovider", "-n", "0",
         *args, "test_inner.py"],
        cwd=tmp_path, capture_output=True, text=True, timeout=300,
        env={**os.environ, **env, "PYTHONPATH": os.pathsep.join([str(ROOT / "tests"), os.environ.get("PYTHONPATH", "")])},
    )  # fmt: skip


@pytest.mark.parametrize("exported", ["TFJOB_UPDATE_GOLDEN", "TFJOB_REGEN_GOLDEN"])
def test_an_exported_variable_does_not_rewrite_goldens(tmp_path: Path, exported: str) -> None:
    golden = tmp_path / "golden.txt"
    golden.write_text("as reviewed\n")
    done = _inner(tmp_path, env={exported: "1", "GOLDEN_FILE": str(golden)})
    assert done.returncode == 0, done.stdout[-3000:]
    assert "golden now: as reviewed" in done.stdout
    assert golden.read_text() == "as reviewed\n"


def test_update_golden_rewrites_them(tmp_path: Path) -> None:
    golden = tmp_path / "golden.txt"
    golden.write_text("as reviewed\n")
    done = _inner(tmp_path, "--update-golden", env={"TFJOB_REGEN_GOLDEN": "1", "GOLDEN_FILE": str(golden)})
    assert done.returncode == 0, done.stdout[-3000:]
    assert "golden now: rendered now" in done.stdout
    assert golden.read_text() == "rendered now\n"


def test_each_test_has_a_home_of_its_own_where_no_credential_is_found(tmp_path: Path) -> None:
    from google.auth import _cloud_sdk
    from tfjob.images.registry import engine_auth_files

    home = Path.home()
    assert home != REAL_HOME and os.environ["HOME"] == str(home)
    assert not home.is_relative_to(tmp_path)  # not packaged with what a test puts in tmp_path
    # google.auth.default's well-known file (gcloud's ADC), docker's and podman's logins: all in this home, none there.
    adc = Path(_cloud_sdk.get_application_default_credentials_path())
    assert adc.is_relative_to(home) and not adc.exists()
    in_home = [f for f in engine_auth_files("docker") + engine_auth_files("podman") if f.is_relative_to(home)]
    assert len(in_home) == 3 and not any(f.exists() for f in in_home), in_home
    for var in ("CLOUDSDK_CONFIG", "DOCKER_CONFIG", "GOOGLE_APPLICATION_CREDENTIALS", "AWS_SECRET_ACCESS_KEY", "KUBECONFIG"):
        assert var not in os.environ
    # What the suite relies on stays reachable: pip's configuration and cache, the container tests' cache.
    for kept in (".config/pip", ".cache/pip"):
        if (REAL_HOME / kept).exists():
            assert (home / kept).resolve() == (REAL_HOME / kept).resolve()
    assert not Path(os.environ["TFJOB_CI_CACHE"]).is_relative_to(home)


@pytest.mark.parametrize("value", ["true", "True", "TRUE", "1", "yes"])
def test_any_ci_value_that_says_so_makes_a_missing_prerequisite_a_failure(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    from helpers import in_ci, need_in_ci, need_module

    monkeypatch.setenv("CI", value)
    assert in_ci()
    with pytest.raises(pytest.fail.Exception, match=r"^CI must run this test: needs the moon$"):
        need_in_ci(False, "needs the moon")
    with pytest.raises(pytest.fail.Exception, match=r"^CI must run this test: tfjob_no_such_module cannot be imported .*: pip it"):
        need_module("tfjob_no_such_module", "pip it")
    need_in_ci(True, "never said")


@pytest.mark.parametrize("value", [None, "", "0", "false", "False", "no"])
def test_outside_ci_a_missing_prerequisite_is_a_skip(monkeypatch: pytest.MonkeyPatch, value: str | None) -> None:
    from helpers import in_ci, need_in_ci

    if value is None:
        monkeypatch.delenv("CI", raising=False)
    else:
        monkeypatch.setenv("CI", value)
    assert not in_ci()
    with pytest.raises(pytest.skip.Exception, match=r"^needs the moon$"):
        need_in_ci(False, "needs the moon")
