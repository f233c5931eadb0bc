"""The same user mistake gets the same answer on every backend (issue 14): a flag the chosen
backend does not take, and a trainer module that is not there, are one line and exit 2."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
from helpers import BIN, write_trainer

from tfjob._internal import job_from_keywords
from tfjob.backends import flag_words

TFJOB = str(BIN / "tfjob")


@pytest.fixture
def trainer(tmp_path: Path) -> Path:
    return write_trainer(tmp_path, "print('hi')\n").parent


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([TFJOB, *args], capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize(
    "backend, flag",
    [
        ("kubeflow", ["--network", "projects/1/global/networks/n"]),
        ("vertex", ["--clean-pod-policy", "All"]),
        ("vertex", ["--namespace", "ml"]),
        ("kubeflow", ["--staging-bucket", "gs://b"]),
        ("local", ["--executor-image", "img"]),
        ("local", ["--kubeconfig", "/x"]),
        ("kubeflow", ["--dialect", "kubeflow"]),
    ],
)
def test_a_flag_the_backend_does_not_take_is_refused(trainer: Path, backend: str, flag: list[str]) -> None:
    image = ["--image", "img:1"] if backend != "local" else []
    package = [str(trainer)] if backend == "local" else []
    done = _run("render", *package, "-m", "trainer.task", *image, "--backend", backend, *flag)
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1 and done.stderr.startswith(f"error: {flag[0]} ")
    assert f"not {backend}" in done.stderr


@pytest.mark.parametrize("backend", ["local", "vertex", "ai-platform"])
def test_a_missing_module_is_a_usage_error_everywhere_it_can_be_seen(trainer: Path, backend: str) -> None:
    # Locally and for packaged trainers the module is checked before anything starts. (In a
    # container image it cannot be seen from here: the task then fails on every backend.)
    command = "submit" if backend == "local" else "render"
    done = _run(command, str(trainer), "-m", "trainer.nope", "--backend", backend)
    assert done.returncode == 2, done.stderr
    assert "no trainer/nope.py" in done.stderr and "Traceback" not in done.stderr


@pytest.mark.parametrize(
    "backend, cls, own, other",
    [
        ("local", "LocalOptions", {"dialect": "kubeflow", "grace": 1.0}, "namespace"),
        ("vertex", "VertexOptions", {"region": "europe-west4", "executor_image": "img"}, "dialect"),
        ("kubeflow", "TFJobOptions", {"namespace": "ml", "restart_policy": "Never"}, "region"),
        ("jobset", "KubernetesOptions", {"namespace": "ml", "restart_policy": "OnFailure"}, "clean_pod_policy"),
        ("ai-platform", "GoogleCloudOptions", {"region": "us-east1"}, "executor_image"),
    ],
)
def test_a_job_gets_its_backends_own_typed_options(backend: str, cls: str, own: dict, other: str) -> None:
    from tfjob.errors import SpecError

    job = job_from_keywords(None, "trainer.task", {"image": "img:1", "backend": backend, **own})
    assert type(job.options).__name__ == cls
    assert {k: getattr(job.options, k) for k in own} == own
    assert not hasattr(job.options, other)
    with pytest.raises(SpecError, match=rf"^{other} is for the .* not {backend}; leave it out, or choose backend='[a-z-]+'$") as caught:
        job_from_keywords(None, "trainer.task", {"image": "img:1", "backend": backend, **{other: "x"}})
    assert caught.value.worded("cli", flag_words).startswith(f"--{other.replace('_', '-')} is for the ")  # what the CLI prints


def test_a_mistyped_keyword_names_the_near_one_and_what_the_chosen_backend_takes() -> None:
    from tfjob.errors import SpecError

    with pytest.raises(SpecError, match=r"^Job\(\) got an unknown argument 'namespce'") as caught:
        job_from_keywords(None, "trainer.task", {"image": "img:1", "backend": "kubeflow", "namespce": "ml"})
    message = str(caught.value)
    assert message.startswith("Job() got an unknown argument 'namespce' (did you mean 'namespace'?); the kubeflow backend takes: ")
    taken = message.split("takes: ")[1].split(", ")
    assert {"namespace", "restart_policy", "workers", "image"} <= set(taken)
    assert not {"dialect", "executor_image", "spot"} & set(taken)  # other backends' keywords are not offered


@pytest.mark.parametrize(
    "given, api, cli",
    [
        (dict(workers=0, ps=1), "workers=0 must be ≥ 1; leave workers out", "--workers 0 must be ≥ 1; leave --workers out"),
        (dict(ps=2), "ps needs workers ≥ 1", "--ps needs --workers ≥ 1"),
        (
            dict(worker_machine_type="zz"),
            "worker_machine_type='zz' is set but workers is not",
            "--worker-machine-type zz is set but --workers is not",
        ),
        (dict(scale_tier="NOPE"), "scale_tier='NOPE' is not a scale tier", "--scale-tier 'NOPE' is not a scale tier"),
    ],
)
def test_a_job_speaks_in_keywords_and_the_cli_in_flags(trainer: Path, given: dict, api: str, cli: str) -> None:
    from tfjob.errors import SpecError

    with pytest.raises(SpecError, match="^" + re.escape(api)) as caught:
        job_from_keywords(str(trainer / "trainer"), "trainer.task", {**given})
    assert str(caught.value).startswith(api) and "--" not in str(caught.value)
    assert caught.value.worded("cli", flag_words).startswith(cli)
    flags = [arg for key, value in given.items() for arg in ("--" + key.replace("_", "-"), str(value))]
    done = _run("render", str(trainer / "trainer"), "-m", "trainer.task", *flags)
    assert done.returncode == 2 and done.stderr.startswith(f"error: {cli}") and done.stderr.count("\n") == 1, done.stderr


@pytest.mark.parametrize("name", ["vertex", "kubeflow", "jobset"])
def test_settings_given_to_a_backend_fill_its_options_instead_of_the_environment(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Settings the caller resolved (``get_backend(name, settings=...)``) fill what the job's
    options leave out, and the environment is not read by the backend: without them it has
    none set (the edge — the CLI, Job, get_job — resolves them, as load_settings() here)."""
    from tfjob.backends import get_backend
    from tfjob.runtime.settings import Settings, load_settings
    from tfjob.runtime.store import JobStore

    monkeypatch.setenv("TFJOB_PROJECT", "from-env")
    monkeypatch.setenv("TFJOB_REGION", "us-east1")
    monkeypatch.setenv("TFJOB_NAMESPACE", "env-ns")
    given = Settings(project="given", region="europe-west4", namespace="given-ns")
    filled = vars(get_backend(name, settings=given).typed(None))
    read = vars(get_backend(name, settings=load_settings()).typed(None))
    unset = vars(get_backend(name).typed(None))
    if name == "vertex":
        assert (filled["project"], filled["region"]) == ("given", "europe-west4")
        assert (read["project"], read["region"]) == ("from-env", "us-east1")
        assert (unset["project"], unset["region"]) == (None, None)
    else:
        assert (filled["namespace"], read["namespace"], unset["namespace"]) == ("given-ns", "env-ns", None)
    assert get_backend(name, settings=given).with_store(JobStore()).settings is given  # a copy keeps them
