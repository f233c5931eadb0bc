"""Every bad input through the CLI: one line ``error: …`` on stderr, exit code 2, no traceback."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from tfjob.cli.main import app

CONFIGS = Path(__file__).parent / "data" / "configs"
SUBMIT = ["submit", "trainer/", "--module-name", "trainer.task", "--dry-run"]

#: (id, argv, what the one line must say)
BAD_INPUTS: list[tuple[str, list[str], str]] = [
    ("zero-count", [*SUBMIT, "--workers", "0"], r"--workers 0 must be ≥ 1; leave --workers out"),
    ("negative-count", [*SUBMIT, "--workers", "1", "--ps", "-2"], r"--ps -2 must be ≥ 1"),
    ("not-a-count", [*SUBMIT, "--workers", "many"], r"Invalid value for '--workers'.*\(see `tfjob submit --help`\)"),
    ("ps-without-workers", [*SUBMIT, "--ps", "2"], r"--ps needs --workers ≥ 1: a parameter-server job has no one to serve"),
    ("custom-without-master", [*SUBMIT, "--scale-tier", "CUSTOM"], r"--scale-tier CUSTOM needs --chief-machine-type$"),
    (
        "custom-count-without-type",
        [*SUBMIT, "--scale-tier", "CUSTOM", "--master-machine-type", "n1-standard-4", "--worker-count", "2"],
        r"--scale-tier CUSTOM with --workers 2 needs --worker-machine-type",
    ),
    (
        "tier-fixes-counts",
        [*SUBMIT, "--scale-tier", "STANDARD_1", "--workers", "8"],
        r"--scale-tier STANDARD_1 fixes the cluster, so --workers cannot be set",
    ),
    (
        "accelerator-on-wrong-machine",
        [*SUBMIT, "--chief-machine-type", "e2-standard-4", "--accelerator", "type=NVIDIA_TESLA_T4,count=1"],
        r"--chief-machine-type 'e2-standard-4' cannot take accelerator NVIDIA_TESLA_T4",
    ),
    (
        "accelerator-count",
        [*SUBMIT, "--chief-machine-type", "n1-standard-8", "--accelerator", "type=nvidia-tesla-t4,count=3"],
        r"n1-standard-8 takes NVIDIA_TESLA_T4 in counts of 1, 2, 4, not 3",
    ),
    (
        "chief-replicas",
        [*SUBMIT, "--config", str(CONFIGS / "bad_chief_replicas.yaml")],
        r"replicaCount 3: pool 0 is the chief and runs exactly 1 replica",
    ),
    (
        "unknown-tier",
        [*SUBMIT, "--scale-tier", "PREMUIM_1"],
        r"--scale-tier 'PREMUIM_1' is not a scale tier \(did you mean 'PREMIUM_1'\?\)",
    ),
    (
        "unknown-machine",
        [*SUBMIT, "--workers", "2", "--worker-machine-type", "n1-standrd-8"],
        r"--worker-machine-type 'n1-standrd-8' is not known \(did you mean 'n1-standard-8'\?\)",
    ),
    (
        "unknown-accelerator",
        [*SUBMIT, "--accelerator", "type=nvidia-tesla-t5"],
        r"accelerator 'nvidia-tesla-t5' is not known \(did you mean 'NVIDIA_TESLA_T4'\?\)",
    ),
    (
        "retired-accelerator",
        [*SUBMIT, "--chief-machine-type", "n1-standard-8", "--accelerator", "type=NVIDIA_TESLA_K80,count=1"],
        r"'NVIDIA_TESLA_K80' is retired on Google Cloud; use NVIDIA_TESLA_T4 instead",
    ),
    ("bad-accelerator-syntax", [*SUBMIT, "--accelerator", "kind=t4"], r"--accelerator 'kind=t4': cannot read 'kind=t4'; write it as type="),
    ("long-name", [*SUBMIT, "--display-name", "n" * 129], r"has 129 characters; Vertex AI allows at most 128"),
    ("control-in-name", [*SUBMIT, "--display-name", "census\tjob"], r"contains control characters"),
    (
        "kubernetes-name",
        ["render", "--image", "gcr.io/p/t:1", "-m", "trainer.task", "--backend", "kubeflow", "--name", "Census_Job"],
        r"--display-name 'Census_Job' is not a DNS-1035 label .* use --display-name census-job",
    ),
    ("bad-label-key", [*SUBMIT, "--labels", "Team=ml"], r"label key 'Team' is not valid"),
    ("bad-label-value", [*SUBMIT, "--labels", "team=Data Science"], r"label team='Data Science': values are up to 63"),
    ("label-not-key-value", [*SUBMIT, "--labels", "oops"], r"--labels 'oops' must be KEY=VALUE"),
    ("bad-env", [*SUBMIT, "--env", "1A=x"], r"--env '1A' is not a valid environment variable name"),
    ("bad-timeout", [*SUBMIT, "--timeout", "forever"], r"--timeout 'forever' is not a duration"),
    ("no-module", ["submit", "trainer/", "--dry-run"], r"--module-name is required to run a trainer package"),
    ("bad-module", [*SUBMIT, "--module-name", "trainer/task.py"], r"--module-name 'trainer/task.py' is not a module `python -m` can run"),
    ("package-twice", ["submit", "a/", "--package-path", "b/", "-m", "trainer.task"], r"give the trainer directory once"),
    ("bad-output", [*SUBMIT, "--output", "xml"], r"--output 'xml' must be json or yaml"),
    ("unknown-backend", [*SUBMIT, "--backend", "vertx"], r"--backend 'vertx' is not a backend \(did you mean 'vertex'\?\)"),
    ("unknown-option", [*SUBMIT, "--wrokers", "2"], r"No such option '--wrokers'.*Did you mean.*'--workers'"),
    ("missing-config", [*SUBMIT, "--config", "nowhere.yaml"], r"--config 'nowhere.yaml': no such file"),
    (
        "unknown-config-key",
        [*SUBMIT, "--config", str(CONFIGS / "bad_unknown_key.yaml")],
        r"unknown key 'trainingInput.workerCont' \(did you mean 'workerCount'\?\)",
    ),
    ("bad-yaml", [*SUBMIT, "--config", str(CONFIGS / "bad_yaml.yaml")], r"bad_yaml.yaml: not valid YAML \(line \d+\)"),
    (
        "tuning-config",
        [*SUBMIT, "--config", str(CONFIGS / "legacy_hyperparameters.yaml")],
        r"use `tfjob tune --hparams .*legacy_hyperparameters.yaml`",
    ),
    (
        "legacy-cannot-express",
        ["render", "gs://b/t.tar.gz", "-m", "trainer.task", "--backend", "ai-platform", "--env", "A=1"],
        r"--env has no equivalent in legacy AI Platform Training",
    ),
    ("machines-option", ["machines", "--jsn"], r"No such option '--jsn'"),
    ("unknown-command", ["sumbit"], r"No such command 'sumbit'"),
]

#: A few inputs also go through the installed console script in a real process.
SUBPROCESS_CASES = ["zero-count", "not-a-count", "unknown-machine", "unknown-config-key", "unknown-command"]


def check_one_error_line(code: int, stdout: str, stderr: str, message: str) -> None:
    lines = stderr.splitlines()
    assert code == 2, f"exit code {code}, stderr: {stderr!r}"
    assert len(lines) == 1, f"expected one line on stderr, got {lines!r}"
    assert lines[0].startswith("error: "), lines[0]
    assert "Traceback" not in stdout + stderr
    assert stdout == ""
    assert re.search(message, lines[0]), f"{message!r} not in {lines[0]!r}"


@pytest.mark.parametrize(("argv", "message"), [c[1:] for c in BAD_INPUTS], ids=[c[0] for c in BAD_INPUTS])
def test_bad_input_is_one_error_line_and_exit_2(argv: list[str], message: str) -> None:
    result = CliRunner().invoke(app, argv)
    check_one_error_line(result.exit_code, result.stdout, result.stderr, message)


@pytest.mark.parametrize("case", SUBPROCESS_CASES)
def test_bad_input_in_a_real_process(case: str, tfjob_exe: str) -> None:
    _, argv, message = next(c for c in BAD_INPUTS if c[0] == case)
    proc = subprocess.run([tfjob_exe, *argv], capture_output=True, text=True, timeout=60, env=dict(os.environ))
    check_one_error_line(proc.returncode, proc.stdout, proc.stderr, message)


def test_a_rejected_local_job_prints_only_its_error_not_the_local_notice(tmp_path) -> None:
    """The "runs on this machine" notice comes once the job is accepted, so a mistake stays one line."""
    from click.testing import CliRunner

    from tfjob.cli.main import app

    result = CliRunner().invoke(app, ["submit", str(tmp_path / "missing"), "-m", "trainer.task"])
    assert result.exit_code == 2
    assert result.stderr.splitlines() == [
        f"error: trainer directory {str(tmp_path / 'missing')!r} does not exist; give the directory that holds trainer/"
    ]
    (tmp_path / "a-file").write_text("")
    result = CliRunner().invoke(app, ["submit", str(tmp_path / "a-file"), "-m", "trainer.task"])
    assert result.exit_code == 2
    assert result.stderr.splitlines() == [
        f"error: trainer directory {str(tmp_path / 'a-file')!r} is not a directory; give the directory that holds trainer/"
    ]
    # The same for a package path the cloud backends gather: it exists, so it is not 'no such file'.
    from tfjob.errors import UsageError
    from tfjob.packaging import gather_packages

    with pytest.raises(UsageError, match=r"^packages='/dev/null': is neither a directory nor a regular file"):
        gather_packages(None, ("/dev/null",), module=None)
