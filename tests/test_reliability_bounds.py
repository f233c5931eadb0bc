"""No input can exhaust the machine, and every bad input is one line: counts, documents, API types.

Each case runs the real CLI in a subprocess (so memory and time are the real ones) and
asserts the exit code, exactly one ``error:`` line naming the bound, and no traceback.
"""

from __future__ import annotations

import os
import re
import subprocess
import time
from pathlib import Path

import pytest
from helpers import write_trainer

from reliability import Reliability
from tfjob._internal import job_from_keywords
from tfjob import Job
from tfjob.errors import SpecError
from tfjob.description.limits import INT32_MAX, LOCAL_MAX_TASKS

HUGE = "99999999999999999999"


@pytest.fixture
def trainer(tmp_path: Path) -> Path:
    return write_trainer(tmp_path, "print('hi')\n")


def run_cli(tfjob_exe: str, *args: str, reliability: Reliability, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    out = subprocess.run([tfjob_exe, *args], capture_output=True, text=True, timeout=timeout)
    reliability.tried()
    reliability.output(out.stderr + out.stdout)
    return out


def assert_one_error(out: subprocess.CompletedProcess[str], *needles: str) -> None:
    assert out.returncode == 2, (out.returncode, out.stderr[-2000:])
    lines = [line for line in out.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error:"), out.stderr[-2000:]
    assert "Traceback" not in out.stderr
    for needle in needles:
        assert needle in lines[0], lines[0]


@pytest.mark.reliability
@pytest.mark.parametrize(
    "args, needles",
    [
        (["render", "--backend", "local", "--workers", HUGE], [HUGE, str(INT32_MAX)]),
        (["render", "--backend", "vertex", "--workers", HUGE], [HUGE, str(INT32_MAX)]),
        (["render", "--backend", "kubeflow", "--image", "img", "--ps", HUGE, "--workers", "1"], ["--ps", str(INT32_MAX)]),
        (["render", "--backend", "local", "--workers", "10000"], ["10001 tasks", str(LOCAL_MAX_TASKS)]),
        (["submit", "--backend", "local", "--workers", "600", "--ps", "2"], ["603 tasks", str(LOCAL_MAX_TASKS)]),
        (["submit", "--backend", "local", "--grace", "inf"], ["--grace"]),
        (["submit", "--backend", "local", "--grace", "nan"], ["--grace"]),
        (["submit", "--backend", "local", "--env", "TF_CONFIG={}"], ["TF_CONFIG", "reserved"]),
        (["submit", "--backend", "local", "--env", "AIP_MODEL_DIR=/x"], ["AIP_MODEL_DIR", "reserved"]),
        (["submit", "--backend", "vertex", "--dry-run", "--labels", "tfjob=mine"], ["'tfjob'", "reserved"]),
    ],
)
def test_counts_and_reserved_names_are_one_line(
    trainer: Path, tfjob_exe: str, reliability: Reliability, args: list[str], needles: list[str]
) -> None:
    started = time.monotonic()
    out = run_cli(tfjob_exe, *args[:1], str(trainer), "-m", "trainer.task", *args[1:], reliability=reliability)
    assert_one_error(out, *needles)
    assert len(out.stdout) < 10_000  # nothing was rendered
    assert time.monotonic() - started < 60


@pytest.mark.reliability
def test_list_limit_is_bounded(tfjob_exe: str, reliability: Reliability) -> None:
    out = run_cli(tfjob_exe, "list", "-n", HUGE, reliability=reliability)
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert "10000" in out.stderr


@pytest.mark.reliability
def test_study_counts_are_bounded(trainer: Path, tmp_path: Path, tfjob_exe: str, reliability: Reliability) -> None:
    hparams = tmp_path / "hp.yaml"
    hparams.write_text(
        f"trainingInput:\n  hyperparameters:\n    goal: MAXIMIZE\n    hyperparameterMetricTag: acc\n    maxTrials: {HUGE}\n"
        "    params:\n    - parameterName: lr\n      type: DOUBLE\n      minValue: 0.01\n      maxValue: 0.1\n"
    )
    out = run_cli(
        tfjob_exe,
        "tune",
        str(trainer),
        "-m",
        "trainer.task",
        "--hparams",
        str(hparams),
        "--backend",
        "vertex",
        "--dry-run",
        reliability=reliability,
    )
    assert_one_error(out, "maxTrials", str(INT32_MAX))


def _documents(tmp: Path) -> dict[str, Path]:
    docs = {
        "deep.yaml": "a:\n" + "".join("  " * i + "b:\n" for i in range(1, 500)) + "  " * 500 + "c: 1\n",
        "deep.json": "[" * 100_000 + "]" * 100_000,
        "flow.yaml": "x: " + "[" * 1000 + "]" * 1000 + "\n",
        "huge.yaml": "a: " + "x" * (2 << 20) + "\n",
    }
    out = {}
    for name, text in docs.items():
        (tmp / name).write_text(text)
        out[name] = tmp / name
    os.mkfifo(tmp / "fifo.yaml")
    out["fifo.yaml"] = tmp / "fifo.yaml"
    out["/dev/zero"] = Path("/dev/zero")
    return out


@pytest.mark.reliability
@pytest.mark.parametrize("flag", ["--config", "--hparams"])
@pytest.mark.parametrize("name", ["deep.yaml", "deep.json", "flow.yaml", "huge.yaml", "fifo.yaml", "/dev/zero"])
def test_documents_are_bounded(trainer: Path, tmp_path: Path, tfjob_exe: str, reliability: Reliability, flag: str, name: str) -> None:
    path = _documents(tmp_path)[name]
    command = "submit" if flag == "--config" else "tune"
    out = run_cli(
        tfjob_exe,
        command,
        str(trainer),
        "-m",
        "trainer.task",
        flag,
        str(path),
        "--backend",
        "vertex",
        "--dry-run",
        reliability=reliability,
        timeout=30,
    )
    assert_one_error(out, str(path))


def test_categorical_values_are_checked_in_linear_time() -> None:
    from tfjob.tuning.study import ParameterSpec

    values = [f"v{i}" for i in range(40_000)]
    spec = ParameterSpec("p", "CATEGORICAL", values=values)
    assert len(spec.values) == 40_000
    with pytest.raises(SpecError, match="v7 more than once"):
        ParameterSpec("p", "CATEGORICAL", values=[*values, "v7"])


@pytest.mark.parametrize(
    "keywords, message",
    [
        ({"args": "--x 1"}, "args='--x 1' must be a list of strings"),
        ({"job_dir": 123}, "job_dir=123 must be text"),
        ({"labels": "a=b"}, "labels='a=b' must be a mapping"),
        ({"env": ["A=1"]}, "env=['A=1'] must be a mapping"),
        ({"packages": "x.whl"}, "packages='x.whl' must be a list of strings"),
        ({"env": {"A": 1}}, "the value 1 must be text"),
    ],
)
def test_python_api_types_are_spec_errors(trainer: Path, keywords: dict, message: str) -> None:
    with pytest.raises(SpecError, match=message.replace("[", r"\[").replace("]", r"\]").replace("(", r"\(")):
        job_from_keywords(str(trainer), "trainer.task", {**keywords})


def test_a_path_object_is_taken_for_a_path(trainer: Path, tmp_path: Path) -> None:
    job = Job(trainer, "trainer.task", job_dir=tmp_path / "out")
    assert job.spec.job_dir == str(tmp_path / "out")


@pytest.mark.reliability
@pytest.mark.parametrize(
    "extra, needle", [("/nonexistent.whl", "does not exist"), ("/etc/hostname", "is not a .tar.gz"), ("gs://b/x.whl", "local files only")]
)
def test_local_packages_that_cannot_be_installed_are_one_line(
    trainer: Path, tfjob_exe: str, reliability: Reliability, extra: str, needle: str
) -> None:
    out = run_cli(tfjob_exe, "submit", str(trainer), "-m", "trainer.task", "--install", "--packages", extra, reliability=reliability)
    assert_one_error(out, needle)


def test_local_packages_are_installed_next_to_the_trainer(trainer: Path, tmp_path: Path, tfjob_exe: str) -> None:
    import zipfile

    wheel = tmp_path / "extra_pkg-1.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as z:
        z.writestr("extra_pkg/__init__.py", "VALUE = 42\n")
        z.writestr("extra_pkg-1.0.dist-info/METADATA", "Metadata-Version: 2.1\nName: extra_pkg\nVersion: 1.0\n")
        z.writestr("extra_pkg-1.0.dist-info/WHEEL", "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n")
        z.writestr("extra_pkg-1.0.dist-info/RECORD", "")
    (trainer / "task.py").write_text("import extra_pkg\nprint('extra', extra_pkg.VALUE)\n")
    without = subprocess.run(
        [tfjob_exe, "submit", str(trainer), "-m", "trainer.task", "--packages", str(wheel)], capture_output=True, text=True, timeout=120
    )
    assert without.returncode == 2 and "add --install" in without.stderr
    done = subprocess.run(
        [tfjob_exe, "submit", str(trainer), "-m", "trainer.task", "--install", "--packages", str(wheel)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert "extra 42" in done.stderr


def test_local_render_grows_linearly_with_the_task_count(trainer: Path) -> None:
    import json

    from tfjob.model import SubmitOptions
    from tfjob.backends.local.backend import LocalBackend
    from tfjob.description.request import build_spec

    def size(workers: int) -> int:
        spec = build_spec(dict(name="j", module="trainer.task", package=str(trainer), workers=workers, ps=10))
        return len(json.dumps(LocalBackend().render(spec, SubmitOptions())))

    small, large = size(100), size(400)
    assert large < 4.5 * small  # 4× the tasks: about 4× the output, not 16×
    rendered = LocalBackend().render(build_spec(dict(name="j", module="trainer.task", package=str(trainer), workers=30)), SubmitOptions())
    assert json.loads(rendered["cluster_variables"]["TF_CONFIG"])["cluster"]["worker"][29].startswith("127.0.0.1:")
    assert rendered["tasks"][5]["task"] == {"type": "worker", "index": 4} and "TF_CONFIG" not in rendered["tasks"][5]["env"]


# -- documents bounded by their expanded size (issue 24) ---------------------------------------
#: Nine levels of nine aliases: 366 bytes that expand to 9**9 strings (gigabytes once rendered).
ALIAS_BOMB = "spec:\n  a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n" + "".join(
    f"  a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]\n" for i in range(1, 9)
)


def _hostile_documents(tmp: Path) -> dict[str, tuple[Path, str]]:
    """name → (file, what the one error line says)."""
    docs = {
        "bomb.yaml": (ALIAS_BOMB, "expand it to more than"),
        "cycle.yaml": ("spec: &a\n  containers: [*a]\n", "contain itself"),
        "self.yaml": ("spec: &a [*a]\n", "contain itself"),
        "digits.yaml": ("spec:\n  x: " + "9" * 5000 + "\n", "more than 4300 digits"),
        "hex.yaml": ("spec:\n  x: 0x" + "f" * 4000 + "\n", "more than 4300 digits"),
        # YAML 1.1's base-60 integers: 320 KB took 52 s to compute (quadratic) before this bound.
        "base60.yaml": ("spec:\n  x: 1" + ":1" * 160_000 + "\n", "more than 4300 digits"),
        "digits.json": ('{"spec": {"x": ' + "9" * 5000 + "}}", "more than 4300 digits"),
        # An alias placed deeper than its anchor nests the expanded document deeper than 64.
        "deep-alias.yaml": (
            "a: &a " + "[" * 40 + "1" + "]" * 40 + "\nb: " + "[" * 40 + "*a" + "]" * 40 + "\n",
            "nested more than 64 levels",
        ),
    }
    out = {}
    for name, (text, needle) in docs.items():
        (tmp / name).write_text(text)
        out[name] = (tmp / name, needle)
    return out


READERS = {
    "--config": ["submit", "TRAINER", "-m", "trainer.task", "--backend", "vertex", "--dry-run", "--config", "FILE"],
    "--hparams": ["tune", "TRAINER", "-m", "trainer.task", "--backend", "vertex", "--dry-run", "--hparams", "FILE"],
    "--pod-template": [
        "submit",
        "TRAINER",
        "-m",
        "trainer.task",
        "--backend",
        "kubeflow",
        "--image",
        "img",
        "--dry-run",
        "-o",
        "json",
        "--pod-template",
        "FILE",
    ],
    "--pod-template jobset": ["render", "TRAINER", "-m", "trainer.task", "--backend", "jobset", "--image", "img", "--pod-template", "FILE"],
    "kubeconfig": ["submit", "TRAINER", "-m", "trainer.task", "--backend", "kubeflow", "--image", "img", "--kubeconfig", "FILE"],
    "config.yaml": ["submit", "TRAINER", "-m", "trainer.task", "--backend", "vertex", "--dry-run"],
}


#: Every reader (through the real CLI) gets the bomb, the cycle and the long integer; the other
#: documents go through the same function (tfjob.config.files.read_config_file), checked in process.
DOCUMENT_CASES = [
    *((reader, name) for reader in sorted(READERS) for name in ("bomb.yaml", "cycle.yaml", "digits.yaml")),
    ("--pod-template", "base60.yaml"),
    ("--config", "digits.json"),
]


@pytest.mark.reliability
@pytest.mark.parametrize("reader, name", DOCUMENT_CASES)
def test_every_document_is_bounded_by_its_expanded_size(
    trainer: Path, tmp_path: Path, tfjob_exe: str, reliability: Reliability, reader: str, name: str
) -> None:
    path, needle = _hostile_documents(tmp_path)[name]
    args = [str(trainer) if a == "TRAINER" else str(path) if a == "FILE" else a for a in READERS[reader]]
    if reader == "config.yaml":
        home = Path(os.environ["TFJOB_HOME"])
        home.mkdir(parents=True, exist_ok=True)
        (home / "config.yaml").write_bytes(path.read_bytes())
        path = home / "config.yaml"
    started = time.monotonic()
    out = run_cli(tfjob_exe, *args, reliability=reliability, timeout=120)
    assert_one_error(out, str(path), needle)
    assert len(out.stdout) < 10_000  # nothing was rendered
    assert time.monotonic() - started < 60  # what it guards against took minutes, or never ended


@pytest.mark.reliability
@pytest.mark.parametrize(
    "name", ["bomb.yaml", "cycle.yaml", "self.yaml", "digits.yaml", "hex.yaml", "base60.yaml", "digits.json", "deep-alias.yaml"]
)
def test_the_document_reader_refuses_each_in_one_line(tmp_path: Path, reliability: Reliability, name: str) -> None:
    from tfjob.config.files import read_config_file
    from tfjob.errors import ConfigFileError

    path, needle = _hostile_documents(tmp_path)[name]
    reliability.tried()
    started = time.monotonic()
    with pytest.raises(ConfigFileError, match=re.escape(needle)) as info:
        read_config_file(path, "--pod-template")
    assert str(info.value).startswith(f"{path}: ") and "\n" not in str(info.value)
    assert time.monotonic() - started < 30  # what it guards against took minutes, or never ended


def test_merge_keys_are_counted(tmp_path: Path) -> None:
    from tfjob.config.files import MAX_MERGED_KEYS, read_config_file
    from tfjob.errors import ConfigFileError

    keys = "".join(f"  k{i}: 1\n" for i in range(MAX_MERGED_KEYS // 2 + 1))
    path = tmp_path / "merge.yaml"
    path.write_text(f"base: &base\n{keys}one:\n  <<: *base\ntwo:\n  <<: *base\n")
    with pytest.raises(ConfigFileError, match=rf"merge.yaml: its YAML merge keys \(<<\) copy more than {MAX_MERGED_KEYS} keys"):
        read_config_file(path)
    path.write_text(f"base: &base\n{keys}one:\n  <<: *base\n")
    assert len(read_config_file(path)["one"]) == MAX_MERGED_KEYS // 2 + 1


def test_aliases_within_bounds_are_read(tmp_path: Path) -> None:
    from tfjob.config.files import EXPANSION, MAX_DOCUMENT_BYTES, check_expanded, read_config_file

    path = tmp_path / "ok.yaml"
    path.write_text("defaults: &d {cpu: '1', memory: 2Gi}\nchief: {resources: *d}\nworker: {resources: *d}\n")
    assert read_config_file(path)["worker"] == {"resources": {"cpu": "1", "memory": "2Gi"}}
    # A document without aliases measures about its JSON text, far below the bound.
    import json

    document = {"a": [{"b": "x" * 100, "c": None, "d": 12345}] * 3}
    measured = check_expanded(json.loads(json.dumps(document)), "doc", EXPANSION * MAX_DOCUMENT_BYTES)
    assert len(json.dumps(document)) * 0.7 < measured < len(json.dumps(document)) * 1.5


# -- numbers: timeouts with a ceiling, ASCII digits, tuning ranges (issue 24) ------------------
@pytest.mark.reliability
@pytest.mark.parametrize(
    "backend, value, needle",
    [
        *(
            (b, "99999999999999999999999", "is more than a year (31536000 s)")
            for b in ("local", "vertex", "kubeflow", "jobset", "trainjob")
        ),
        ("kubeflow", "400d", "is more than a year"),
        ("local", "٥", "'٥' is not a duration"),
        ("vertex", "inf", "is not a duration"),
    ],
)
def test_a_timeout_has_a_ceiling_and_ascii_digits(
    trainer: Path, tfjob_exe: str, reliability: Reliability, backend: str, value: str, needle: str
) -> None:
    image = ["--image", "img"] if backend in ("kubeflow", "jobset", "trainjob") else []
    out = run_cli(
        tfjob_exe, "render", str(trainer), "-m", "trainer.task", "--backend", backend, *image, "--timeout", value, reliability=reliability
    )
    assert_one_error(out, "--timeout", needle)


@pytest.mark.reliability
def test_a_huge_timeout_is_refused_before_a_local_job_starts(trainer: Path, tfjob_exe: str, reliability: Reliability) -> None:
    out = run_cli(tfjob_exe, "submit", str(trainer), "-m", "trainer.task", "--timeout", HUGE + "000", reliability=reliability)
    assert_one_error(out, "--timeout", "more than a year")
    assert "no jobs yet" in run_cli(tfjob_exe, "list", reliability=reliability).stderr  # nothing recorded


@pytest.mark.reliability
def test_a_config_max_running_time_has_the_same_ceiling(trainer: Path, tmp_path: Path, tfjob_exe: str, reliability: Reliability) -> None:
    config = tmp_path / "job.yaml"
    config.write_text(f"trainingInput:\n  scheduling:\n    maxRunningTime: {HUGE}000s\n")
    out = run_cli(
        tfjob_exe,
        "submit",
        str(trainer),
        "-m",
        "trainer.task",
        "--config",
        str(config),
        "--backend",
        "vertex",
        "--dry-run",
        reliability=reliability,
    )
    assert_one_error(out, "maxRunningTime", "more than a year")


@pytest.mark.parametrize("timeout", [float("inf"), float("nan"), 10**30, 1e300, -1])
def test_api_timeouts_are_spec_errors(trainer: Path, timeout: float) -> None:
    with pytest.raises(SpecError, match=r"timeout.* (is more than a year|must be a positive number)"):
        Job(str(trainer), "trainer.task", timeout=timeout)
    with pytest.raises(SpecError, match=r"timeout=.* (is more than a year|must be a number of seconds ≥ 0)"):
        Job(str(trainer), "trainer.task").run(timeout=timeout)


def test_a_handle_wait_timeout_is_bounded(trainer: Path) -> None:
    handle = Job(str(trainer), "trainer.task").submit()
    handle.wait(120)
    with pytest.raises(SpecError, match=r"timeout=inf is more than a year"):
        handle.wait(float("inf"))


def _study(tmp: Path, param: str) -> Path:
    path = tmp / "hp.yaml"
    path.write_text(
        "trainingInput:\n  hyperparameters:\n    goal: MAXIMIZE\n    hyperparameterMetricTag: acc\n    maxTrials: 2\n"
        f"    params:\n    - parameterName: p\n{param}"
    )
    return path


@pytest.mark.reliability
@pytest.mark.parametrize(
    "param, needle",
    [
        ('      type: CATEGORICAL\n      categoricalValues: ["a\\0b", "c"]\n', "holds a NUL character"),
        ("      type: DOUBLE\n      minValue: -1.7e308\n      maxValue: 1.7e308\n", "is wider than a number holds"),
        ("      type: INTEGER\n      minValue: -99999999999999999999\n      maxValue: 1\n", "must fit 64 bits"),
    ],
)
def test_a_tuning_parameter_that_cannot_run_is_refused_before_any_trial(
    trainer: Path, tmp_path: Path, tfjob_exe: str, reliability: Reliability, param: str, needle: str
) -> None:
    # Not a dry run: a real local study, which used to start (and record) a trial first.
    out = run_cli(
        tfjob_exe,
        "tune",
        str(trainer),
        "-m",
        "trainer.task",
        "--hparams",
        str(_study(tmp_path, param)),
        "--backend",
        "local",
        reliability=reliability,
        timeout=120,
    )
    assert_one_error(out, "parameter p", needle)
    assert "no jobs yet" in run_cli(tfjob_exe, "list", reliability=reliability).stderr  # nothing recorded
