"""tfjob-bootstrap: dispatch, exported variables, packages, ports, errors, stdlib-only start."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import zipfile
from pathlib import Path
from typing import Iterator

import pytest

from helpers import BIN
from tfjob.cluster import render_task_env
from tfjob.container.bootstrap import EX_PORT_IN_USE, main, port_in_use

PROBE = """\
import json, os, sys
print(json.dumps({
    "pid": os.getpid(),
    "argv": sys.argv[1:],
    "argv0": sys.argv[0],
    "path0": sys.path[0],
    "main": __name__,
    "env": {k: os.environ.get(k) for k in ("TF_CONFIG", "AIP_MODEL_DIR", "TFJOB_TASK_TYPE", "TFJOB_TASK_INDEX", "TFJOB_IS_CHIEF", "TFJOB_TRIAL")},
}), flush=True)
code = os.environ.get("PROBE_EXIT")
sys.exit(int(code) if code else 0)
"""

WAITER = """\
import signal, sys
def stop(signum, frame):
    print("trainer got signal", signum, flush=True)
    sys.exit(42)
signal.signal(signal.SIGTERM, stop)
print("ready", flush=True)
signal.pause()
"""


@pytest.fixture
def trainer_dir(tmp_path: Path) -> Path:
    """A trainer source directory with a probe module that reports what it was given."""
    src = tmp_path / "src"
    (src / "trainer").mkdir(parents=True)
    (src / "trainer" / "__init__.py").write_text("")
    (src / "trainer" / "probe.py").write_text(PROBE)
    (src / "trainer" / "waiter.py").write_text(WAITER)
    return src


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("TF_CONFIG", "CLUSTER_SPEC", "AIP_MODEL_DIR")}
    env.update(extra)
    return env


def _bootstrap(cwd: Path, *args: str, env: dict[str, str], console_script: bool = False) -> subprocess.CompletedProcess[str]:
    exe = [str(BIN / "tfjob-bootstrap")] if console_script else [sys.executable, "-m", "tfjob.container.bootstrap"]
    return subprocess.run([*exe, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=120)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


LEGACY = {"chief": ["127.0.0.1:1"], "worker": ["127.0.0.1:2"], "ps": ["127.0.0.1:3"]}


# --- the trainer runs in the bootstrap's place ---------------------------------------------


def test_help_works_as_the_console_script(tmp_path: Path) -> None:
    done = _bootstrap(tmp_path, "--help", env=_env(), console_script=True)
    assert done.returncode == 0
    assert "--module" in done.stdout and "TF_CONFIG" in done.stdout and "--check-port" in done.stdout


def test_trainer_becomes_the_task_with_tf2_tf_config_and_tfjob_variables(trainer_dir: Path) -> None:
    env = render_task_env(LEGACY, "chief", 0, "ai-platform", trial="4")
    proc = subprocess.Popen(
        [str(BIN / "tfjob-bootstrap"), "--module", "trainer.probe", "--tf-config", "tf2", "--", "--steps", "3"],
        cwd=trainer_dir,
        env=_env(**env, PROBE_EXIT="3"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    report = json.loads(out)
    assert proc.returncode == 3, err  # the trainer's exit code is the task's
    assert report["pid"] == proc.pid  # no process between the launcher and the trainer
    assert report["argv"] == ["--steps", "3"]
    # Exactly what `python -m trainer.probe` gives it, even through the console script.
    assert report["main"] == "__main__"
    assert report["argv0"] == str(trainer_dir / "trainer" / "probe.py")
    assert report["path0"] == str(trainer_dir)
    assert json.loads(report["env"]["TF_CONFIG"]) == {
        "cluster": {"chief": ["127.0.0.1:1"], "worker": ["127.0.0.1:2"], "ps": ["127.0.0.1:3"]},
        "task": {"type": "chief", "index": 0, "trial": "4"},
        "environment": "cloud",
        "job": {},
    }
    assert report["env"]["TFJOB_TASK_TYPE"] == "chief"
    assert report["env"]["TFJOB_TASK_INDEX"] == "0"
    assert report["env"]["TFJOB_IS_CHIEF"] == "1"
    assert report["env"]["TFJOB_TRIAL"] == "4"
    assert err == ""  # the bootstrap prefixes and prints nothing of its own


def test_evaluator_runs_the_module_even_under_parameter_server(trainer_dir: Path) -> None:
    cluster = {**LEGACY, "evaluator": ["127.0.0.1:4"]}
    env = render_task_env(cluster, "evaluator", 0, "vertex")
    done = _bootstrap(trainer_dir, "--module", "trainer.probe", "--strategy", "parameter-server", env=_env(**env))
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert json.loads(report["env"]["TF_CONFIG"])["task"] == {"type": "evaluator", "index": 0}
    assert report["env"]["TFJOB_IS_CHIEF"] == "0"


def test_local_process_without_cluster_runs_the_module_with_no_tf_config(trainer_dir: Path) -> None:
    done = _bootstrap(trainer_dir, "--module", "trainer.probe", env=_env())
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["env"]["TF_CONFIG"] is None
    assert report["env"]["TFJOB_IS_CHIEF"] == "1"
    assert report["argv"] == []


def test_sigterm_reaches_the_trainer_directly(trainer_dir: Path) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "tfjob.container.bootstrap", "--module", "trainer.waiter"],
        cwd=trainer_dir,
        env=_env(),
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "ready"
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 42
        assert proc.stdout.read().strip() == f"trainer got signal {int(signal.SIGTERM)}"
    finally:
        proc.kill()
        proc.wait()


# --- --job-dir -----------------------------------------------------------------------------


def test_vertex_passes_no_job_dir_only_its_aip_variables(trainer_dir: Path) -> None:
    # Vertex AI sets AIP_MODEL_DIR from baseOutputDirectory and passes no --job-dir (issue 15.8).
    env = render_task_env({"chief": ["127.0.0.1:1"]}, "chief", 0, "vertex", job_dir="gs://bucket/run", trial="2")
    done = _bootstrap(trainer_dir, "--module", "trainer.probe", "--", "--lr", "0.1", env=_env(**env))
    report = json.loads(done.stdout)
    assert report["argv"] == ["--lr", "0.1"]
    assert report["env"]["AIP_MODEL_DIR"] == "gs://bucket/run/2/model/"


def test_a_given_job_dir_is_passed_on_as_ai_platform_does(trainer_dir: Path) -> None:
    env = render_task_env({"chief": ["127.0.0.1:1"]}, "chief", 0, "ai-platform")
    done = _bootstrap(trainer_dir, "--module", "trainer.probe", "--job-dir", "gs://bucket/run", "--", "--lr", "0.1", env=_env(**env))
    assert json.loads(done.stdout)["argv"] == ["--lr", "0.1", "--job-dir", "gs://bucket/run"]


def test_explicit_job_dir_is_passed_and_the_trainers_own_wins(trainer_dir: Path) -> None:
    done = _bootstrap(trainer_dir, "--module", "trainer.probe", "--job-dir", "/out", env=_env())
    assert json.loads(done.stdout)["argv"] == ["--job-dir", "/out"]
    done = _bootstrap(trainer_dir, "--module", "trainer.probe", "--job-dir", "/out", "--", "--job-dir=/mine", env=_env())
    assert json.loads(done.stdout)["argv"] == ["--job-dir=/mine"]


# --- bad configuration: one line, exit 2 ----------------------------------------------------


def _run_main(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], argv: list[str], **env: str) -> tuple[int, str]:
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    try:
        code = main(argv)
    except SystemExit as e:  # argparse's exits
        code = int(e.code or 0)
    err = capsys.readouterr().err
    return code, err


@pytest.mark.parametrize(
    ("argv", "env", "message"),
    [
        (["--module", "trainer.probe"], {"TF_CONFIG": "{nope"}, "error: TF_CONFIG is not valid JSON"),
        ([], {}, "error: one of the arguments --module/-m --script is required (see tfjob-bootstrap --help)"),
        (["--module", "m", "--strategy", "async"], {}, "error: argument --strategy: invalid choice: 'async'"),
        (["--module", "m", "--bogus"], {}, "error: unrecognized arguments: --bogus"),
        (
            ["--module", "m", "--strategy", "parameter-server"],
            {"TF_CONFIG": json.dumps({"cluster": {"chief": ["h:1"], "worker": ["h:2"]}, "task": {"type": "worker", "index": 0}})},
            "error: --strategy parameter-server (the bootstrap serves ps and worker tasks) needs --workers ≥ 1 and --ps ≥ 1; "
            "add them, or use --strategy module",
        ),
        (
            ["--module", "m", "--package", "/no/such/trainer.tar.gz"],
            {},
            "error: --package /no/such/trainer.tar.gz: no such file or directory",
        ),
    ],
)
def test_bad_configuration_is_one_line_and_exit_2(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path, argv: list[str], env: dict[str, str], message: str
) -> None:
    monkeypatch.chdir(tmp_path)
    code, err = _run_main(monkeypatch, capsys, argv, **env)
    assert code == 2
    assert err.startswith(message)
    assert err.count("\n") == 1


@pytest.mark.parametrize("module", ["no_such_trainer.task", "trainer.nope", "trainer"])
def test_a_module_that_cannot_be_found_is_one_line_and_exit_2(trainer_dir: Path, module: str) -> None:
    done = _bootstrap(trainer_dir, "--module", module, env=_env(), console_script=True)
    assert done.returncode == 2
    assert done.stderr == (
        f"error: --module {module}: no such module in {trainer_dir} or on PYTHONPATH; "
        "run from the trainer's source directory, add it to PYTHONPATH, or install it with --package\n"
    )


def test_the_trainers_own_failures_look_as_under_python_m(trainer_dir: Path) -> None:
    (trainer_dir / "broken").mkdir()
    (trainer_dir / "broken" / "__init__.py").write_text("import a_dependency_nobody_installed\n")
    (trainer_dir / "broken" / "task.py").write_text("")
    (trainer_dir / "trainer" / "crash.py").write_text("raise RuntimeError('loss is NaN')\n")
    for module, last_line in (
        ("broken.task", "ModuleNotFoundError: No module named 'a_dependency_nobody_installed'"),
        ("trainer.crash", "RuntimeError: loss is NaN"),
    ):
        done = _bootstrap(trainer_dir, "--module", module, env=_env())
        plain = subprocess.run([sys.executable, "-m", module], cwd=trainer_dir, env=_env(), capture_output=True, text=True)
        assert done.returncode == plain.returncode == 1
        assert done.stderr.splitlines()[0] == "Traceback (most recent call last):"
        assert done.stderr.splitlines()[-1] == plain.stderr.splitlines()[-1] == last_line


def test_bad_configuration_through_the_real_console_script(tmp_path: Path) -> None:
    done = _bootstrap(
        tmp_path,
        "--module",
        "trainer.task",
        env=_env(TF_CONFIG='{"cluster": {"worker": ["h:1"]}, "task": {"type": "ps", "index": 0}}'),
        console_script=True,
    )
    assert done.returncode == 2
    assert done.stderr == (
        'error: TF_CONFIG task type \'ps\' is not in the cluster (jobs: ["worker"]): "task": {"type": "ps", "index": 0}\n'
    )


# --- the options: argparse only when the plain spellings do not do ------------------------------

_TOKENS = [
    "--module", "-m", "--script", "--package", "--strategy", "--job-dir", "--tf-config", "--check-port", "-h", "--help",
    "--mod", "--module=trainer.task", "--strategy=auto", "--tf-config=tf2", "--check-port=1", "--job-dir=", "-mx",
    "trainer.task", "run.py", "gs://b/t.whl", "module", "parameter-server", "auto", "multi-worker", "tf2", "platform",
    "bogus", "", "-1", "-x", "--other", "--package=p.tar.gz",
]  # fmt: skip


#: Options as requests spell them: one flag and its value each.
_PLAIN = [
    ["--module", "trainer.task"], ["-m", "trainer.task"], ["--module=trainer.task"], ["--script", "run.py"],
    ["--package", "gs://b/t.whl"], ["--package=p.tar.gz"], ["--strategy", "auto"], ["--strategy=multi-worker"],
    ["--strategy", "parameter-server"], ["--tf-config", "tf2"], ["--tf-config=platform"], ["--job-dir", "gs://b/jd"],
    ["--job-dir=/tmp/jd"], ["--check-port"],
]  # fmt: skip


def _argparse_reads(argv: list[str]) -> dict[str, object] | None:
    from tfjob.container.bootstrap import _build_parser

    try:
        return vars(_build_parser().parse_args(argv))
    except SystemExit:
        return None


@pytest.mark.parametrize(
    "argv",
    [
        # What the local launcher and every platform's request give (tfjob.cluster.dispatch.bootstrap_args).
        ["--check-port", "--module", "triv.task", "--strategy", "multi-worker"],
        ["--package", "/tfjob/packages/a.tar.gz", "--package", "b.whl", "--check-port", "--module", "t.task", "--strategy",
         "parameter-server", "--tf-config", "tf2", "--job-dir", "gs://bucket/run"],
        ["--script", "dist_mnist.py", "--job-dir=/out", "--tf-config=platform"],
        ["-m", "trainer.task", "--job-dir", ""],
    ],
)  # fmt: skip
def test_the_plain_options_are_read_without_argparse_as_argparse_reads_them(argv: list[str]) -> None:
    from tfjob.container.bootstrap import _parse_fast

    fast = _parse_fast(argv)
    assert fast is not None and vars(fast) == _argparse_reads(argv)


@pytest.mark.parametrize(
    "argv",
    [[], ["--help"], ["--module", "a", "--script", "b"], ["--mod", "a"], ["--module"], ["--module", "-x"], ["-mx"],
     ["--strategy", "bogus", "--module", "a"], ["--check-port=1", "--module", "a"], ["--module", "a", "extra"],
     ["--module", "a", "--module", "b"], ["--check-port", "--check-port", "-m", "a"]],
)  # fmt: skip
def test_anything_else_is_left_to_argparse(argv: list[str]) -> None:
    from tfjob.container.bootstrap import _parse_fast

    assert _parse_fast(argv) is None


def test_the_fast_reading_agrees_with_argparse_on_any_options(monkeypatch: pytest.MonkeyPatch) -> None:
    from hypothesis import given, strategies as st

    from tfjob.container.bootstrap import _parse_fast

    monkeypatch.delenv("TFJOB_TF_CONFIG_MODE", raising=False)

    read = {"fast": 0, "argparse": 0}

    # Plain requests (as launchers and platforms write them, repeats and mixes included) and any tokens at all.
    plain = st.lists(st.sampled_from(_PLAIN), max_size=6).map(lambda pairs: [token for pair in pairs for token in pair])

    @given(plain | st.lists(st.sampled_from(_TOKENS), max_size=8))
    def agree(argv: list[str]) -> None:
        fast = _parse_fast(argv)
        if fast is None:  # argparse reads them (and words the error)
            read["argparse"] += 1
            return
        read["fast"] += 1
        assert vars(fast) == _argparse_reads(argv)

    agree()
    # Both readings were exercised: a fast reader that declined everything would agree vacuously.
    assert read["fast"] >= 10 and read["argparse"] >= 10, read


def test_the_tf_config_default_comes_from_the_environment_unchecked_as_argparse_has_it(monkeypatch: pytest.MonkeyPatch) -> None:
    from tfjob.container.bootstrap import _parse_fast

    monkeypatch.setenv("TFJOB_TF_CONFIG_MODE", "tf2")
    argv = ["--module", "a"]
    assert vars(_parse_fast(argv) or {}) == _argparse_reads(argv)
    assert _argparse_reads(argv)["tf_config"] == "tf2"  # type: ignore[index]


def test_a_task_started_the_usual_way_imports_no_argparse(trainer_dir: Path) -> None:
    env = _env(**render_task_env({"chief": ["127.0.0.1:1"], "worker": ["127.0.0.1:2"]}, "worker", 0, "vertex"))
    used = _imported(["-m", "tfjob.container.bootstrap", "--module", "trainer.probe", "--strategy", "multi-worker"], trainer_dir, env)
    assert "tfjob.cluster" in used and "argparse" not in used and "gettext" not in used
    assert "argparse" in _imported(["-m", "tfjob.container.bootstrap", "--help"], trainer_dir, env)


# --- --check-port ----------------------------------------------------------------------------


@pytest.fixture
def taken_port() -> Iterator[int]:
    """A 127.0.0.1 port some other process is listening on."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        yield s.getsockname()[1]


def test_check_port_exits_75_naming_the_task_when_its_port_is_taken(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], taken_port: int
) -> None:
    cluster = {"chief": ["127.0.0.1:1"], "worker": ["127.0.0.1:2", f"127.0.0.1:{taken_port}"]}
    env = render_task_env(cluster, "worker", 1, "kubeflow")
    code, err = _run_main(monkeypatch, capsys, ["--module", "trainer.task", "--check-port"], **env)
    assert code == EX_PORT_IN_USE == 75
    assert err == f"error: port of task worker-1 (127.0.0.1:{taken_port}) is already in use\n"


def test_check_port_lets_a_free_port_through(trainer_dir: Path) -> None:
    port = _free_port()
    env = render_task_env({"chief": [f"127.0.0.1:{port}"], "worker": ["127.0.0.1:2"]}, "chief", 0, "vertex")
    done = _bootstrap(trainer_dir, "--module", "trainer.probe", "--check-port", env=_env(**env))
    assert done.returncode == 0, done.stderr


def test_port_in_use(taken_port: int) -> None:
    assert port_in_use(f"127.0.0.1:{taken_port}")
    assert port_in_use(f"localhost:{taken_port}")
    assert not port_in_use(f"127.0.0.1:{_free_port()}")
    # Another machine's port is not ours to check.
    assert not port_in_use(f"cmle-training-workerpool1-0:{taken_port}")


# --- --package ----------------------------------------------------------------------------


def _wheel(directory: Path, name: str = "tfjob_probe_pkg") -> Path:
    """A minimal pure-Python wheel holding a module that prints a marker."""
    path = directory / f"{name}-0.1-py3-none-any.whl"
    dist = f"{name}-0.1.dist-info"
    files = {
        f"{name}.py": "print('installed trainer ran')\n",
        f"{dist}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1\n",
        f"{dist}/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = "".join(f"{f},,\n" for f in files) + f"{dist}/RECORD,,\n"
    with zipfile.ZipFile(path, "w") as zf:
        for f, text in files.items():
            zf.writestr(f, text)
        zf.writestr(f"{dist}/RECORD", record)
    return path


def _pip_env(target: Path) -> dict[str, str]:
    # Install into a private directory, offline: the shared venv stays untouched.
    return _env(PIP_TARGET=str(target), PIP_NO_INDEX="1", PYTHONPATH=str(target))


def test_package_is_pip_installed_before_the_module_runs(tmp_path: Path) -> None:
    wheel = _wheel(tmp_path)
    done = _bootstrap(tmp_path, "--package", str(wheel), "--module", "tfjob_probe_pkg", env=_pip_env(tmp_path / "site"))
    assert done.returncode == 0, done.stderr
    assert done.stdout == "installed trainer ran\n"


def test_pip_failure_is_one_line_and_exit_1(tmp_path: Path) -> None:
    broken = tmp_path / "broken-0.1-py3-none-any.whl"
    broken.write_text("not a zip")
    done = _bootstrap(tmp_path, "--package", str(broken), "--module", "broken", env=_pip_env(tmp_path / "site"))
    assert done.returncode == 1
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith(f"error: pip could not install {broken} (pip exited ")


@pytest.fixture
def storage_emulator() -> Iterator[str]:
    """A local Cloud Storage emulator (gcp-storage-emulator); yields its host:port."""
    from gcp_storage_emulator.server import create_server

    port = _free_port()
    server = create_server("127.0.0.1", port, in_memory=True)
    thread = threading.Thread(target=server.start, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.stop()


@pytest.mark.parametrize("client", ["google-cloud-storage", "stdlib"])
def test_package_from_gcs_is_downloaded_and_installed(
    tmp_path: Path, storage_emulator: str, monkeypatch: pytest.MonkeyPatch, client: str
) -> None:
    # The base image has no Google libraries: the bootstrap then reads the JSON API itself.
    from google.cloud import storage

    monkeypatch.setenv("STORAGE_EMULATOR_HOST", storage_emulator)
    client = storage.Client()
    bucket = client.create_bucket("staging")
    wheel = _wheel(tmp_path)
    bucket.blob(f"packages/{wheel.name}").upload_from_filename(str(wheel))

    env = _pip_env(tmp_path / "site")
    env["STORAGE_EMULATOR_HOST"] = storage_emulator
    if client == "stdlib":  # hide google.cloud.storage, as in the base image
        blocker = tmp_path / "no-google"
        (blocker / "google" / "cloud").mkdir(parents=True)
        (blocker / "google" / "__init__.py").write_text("")
        (blocker / "google" / "cloud" / "__init__.py").write_text("")
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(blocker), env.get("PYTHONPATH", "")) if p)
    done = _bootstrap(tmp_path, "--package", f"gs://staging/packages/{wheel.name}", "--module", "tfjob_probe_pkg", env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "installed trainer ran\n"

    missing = _bootstrap(tmp_path, "--package", "gs://staging/packages/nope.whl", "--module", "x", env=env)
    assert missing.returncode == 2
    assert missing.stderr == "error: --package gs://staging/packages/nope.whl: no such object in Cloud Storage\n"
    for no_object in ("gs://staging/packages/..", "gs://staging/packages/", "gs://staging"):
        refused = _bootstrap(tmp_path, "--package", no_object, "--module", "x", env=env)
        assert (
            refused.returncode == 2
            and refused.stderr == f"error: --package {no_object}: name one object, e.g. gs://BUCKET/path/trainer-0.1.tar.gz\n"
        )


# --- start-up imports nothing outside the standard library ----------------------------------


def _imported(cmd: list[str], cwd: Path, env: dict[str, str]) -> set[str]:
    done = subprocess.run([sys.executable, "-X", "importtime", *cmd], cwd=cwd, env=env, capture_output=True, text=True, timeout=60)
    names = set()
    for line in done.stderr.splitlines():
        if line.startswith("import time:") and "|" in line:
            name = line.rsplit("|", 1)[1].strip()
            if name != "imported package":
                names.add(name)
    return names


@pytest.mark.parametrize("dialect", ["ai-platform", "vertex", "kubeflow"])
def test_bootstrap_imports_only_the_stdlib_before_dispatch(trainer_dir: Path, dialect: str) -> None:
    port = _free_port()
    cluster = {"chief": [f"127.0.0.1:{port}"], "worker": ["127.0.0.1:2"], "ps": ["127.0.0.1:3"]}
    env = _env(**render_task_env(cluster, "chief", 0, dialect))
    startup = _imported(["-c", "pass"], trainer_dir, env)
    # The probe trainer imports only json, os and sys, so anything else is the bootstrap's.
    used = _imported(
        ["-m", "tfjob.container.bootstrap", "--module", "trainer.probe", "--check-port", "--job-dir", "/tmp/x"], trainer_dir, env
    )
    assert "json" in used and "tfjob.cluster" in used  # the measurement sees the bootstrap's imports
    foreign = {
        name
        for name in used - startup
        # tfjob itself, and the trainer's package, which dispatch imports.
        if name.split(".")[0] not in (*sys.stdlib_module_names, "tfjob", "trainer")
    }
    assert foreign == set()
    assert not any(name.startswith("tensorflow") for name in used)
    # Imported only to raise an error (0.6 ms of every task's start): this task raises none.
    assert "tfjob.errors" not in used


GC_PROBE = """\
import gc, json, sys
print(json.dumps({"enabled": gc.isenabled(), "frozen": gc.get_freeze_count()}), flush=True)
"""


@pytest.mark.parametrize("entry", ["python -m", "console script"])
def test_a_task_s_trainer_starts_with_the_collector_as_a_plain_interpreter_s(trainer_dir: Path, entry: str) -> None:
    # The task's process (either entry, as the local backend and the images start it) leaves
    # the collector as a plain interpreter has it: on, nothing frozen.
    (trainer_dir / "trainer" / "gcprobe.py").write_text(GC_PROBE)
    cluster = {"chief": ["127.0.0.1:1"], "worker": ["127.0.0.1:2"]}
    env = _env(**render_task_env(cluster, "worker", 0, "vertex"))
    start = [sys.executable, "-m", "tfjob.container.bootstrap"] if entry == "python -m" else [str(BIN / "tfjob-bootstrap")]
    done = subprocess.run([*start, "--module", "trainer.gcprobe"], cwd=trainer_dir, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout)
    plain = subprocess.run([sys.executable, "-m", "trainer.gcprobe"], cwd=trainer_dir, env=env, capture_output=True, text=True, timeout=60)
    assert seen == json.loads(plain.stdout) == {"enabled": True, "frozen": 0}


def test_main_called_from_python_leaves_its_caller_s_collector_alone(
    trainer_dir: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import gc

    monkeypatch.chdir(trainer_dir)
    monkeypatch.syspath_prepend(str(trainer_dir))
    frozen = gc.get_freeze_count()
    cluster = {"chief": ["127.0.0.1:1"], "worker": ["127.0.0.1:2"]}
    code, err = _run_main(monkeypatch, capsys, ["--module", "trainer.probe"], **render_task_env(cluster, "worker", 0, "vertex"))
    assert (code, err) == (0, "")
    assert gc.get_freeze_count() == frozen and gc.isenabled()
