"""An error carries the field, the value and the fix, and each face words it: the CLI as
flags (``--workers 0``), the Python API as keywords (``workers=0``), a config file as the
file and its key. No front end rewrites another's text."""

from __future__ import annotations

import pickle

import pytest

from tfjob._internal import job_from_keywords
from tfjob.backends import flag_words
from tfjob.errors import NOTHING, ConfigFileError, SpecError, Word, shown


def both(error: SpecError) -> tuple[str, str]:
    """(the CLI's words, the API's words) of ``error``."""
    return error.worded("cli", flag_words), str(error)


def test_the_field_is_a_flag_on_the_command_line_and_a_keyword_in_python() -> None:
    error = SpecError(field="workers", value=0, problem="must be ≥ 1", fix="leave {workers} out for a job without workers")
    assert both(error) == (
        "--workers 0 must be ≥ 1; leave --workers out for a job without workers",
        "workers=0 must be ≥ 1; leave workers out for a job without workers",
    )
    assert error.worded("api") == str(error) == error.args[0]
    assert (error.field, error.value, error.problem) == ("workers", 0, "must be ≥ 1")


def test_the_declared_spelling_is_the_flag() -> None:
    """A knob whose flag is not its name with dashes is spelt as it is declared."""
    error = SpecError(field="ttl_seconds_after_finished", value=-1, problem="must be ≥ 0")
    assert both(error) == ("--ttl -1 must be ≥ 0", "ttl_seconds_after_finished=-1 must be ≥ 0")
    assert both(SpecError(field="module", value="a/b", problem="is not a module")) == (
        "--module-name 'a/b' is not a module", "module='a/b' is not a module",
    )  # fmt: skip
    # a switch given False is its off spelling; a flag given True is the flag alone
    assert both(SpecError(field="chief", value=False, problem="needs {workers} ≥ 1")) == (
        "--no-chief needs --workers ≥ 1", "chief=False needs workers ≥ 1",
    )  # fmt: skip
    assert both(SpecError(field="spot", value=True, problem="and {flex_start=True} are two strategies")) == (
        "--spot and --flex-start are two strategies", "spot=True and flex_start=True are two strategies",
    )  # fmt: skip
    # without the declarations, the name with dashes
    assert SpecError(field="ttl_seconds_after_finished", value=-1, problem="must be ≥ 0").worded("cli") == (
        "--ttl-seconds-after-finished -1 must be ≥ 0"
    )


def test_other_knobs_in_the_problem_and_fix_are_worded_alike() -> None:
    error = SpecError(field="dialect", value="x", problem="is not a dialect", fix="choose {backend=kubeflow} or drop {dialect}")
    assert both(error) == (
        "--dialect 'x' is not a dialect; choose --backend kubeflow or drop --dialect",
        "dialect='x' is not a dialect; choose backend='kubeflow' or drop dialect",
    )
    # braces that name no knob stay as they are
    error = SpecError(field="env", value=3, problem="must be a mapping", fix="e.g. env={'KEY': 'value'} {Not a name}")
    assert both(error)[1] == "env=3 must be a mapping; e.g. env={'KEY': 'value'} {Not a name}"
    # a problem with no field is worded too
    error = SpecError(problem="give the trainer once: {module} or {script}, not both")
    assert both(error) == (
        "give the trainer once: --module-name or --script, not both",
        "give the trainer once: module or script, not both",
    )


def test_a_value_is_shown_bounded_and_a_word_bare_on_the_command_line() -> None:
    error = SpecError(field="kms_key", value="k" * 10_000, problem="must be a key's full name")
    cli, api = both(error)
    assert len(cli) < 200 and len(api) < 200 and api.startswith("kms_key='kkk") and "…" in api
    assert shown("x" * 500).endswith("…") and len(shown("x" * 500)) == 100
    assert both(SpecError(field="scale_tier", value=Word("STANDARD_1"), problem="fixes the cluster")) == (
        "--scale-tier STANDARD_1 fixes the cluster", "scale_tier='STANDARD_1' fixes the cluster",
    )  # fmt: skip
    assert both(SpecError(field="workers", problem="is not set")) == ("--workers is not set", "workers is not set")
    assert SpecError(field="workers", value=NOTHING, problem=": x").worded() == "workers: x"


def test_a_plain_message_stays_as_it_is() -> None:
    error = SpecError("the job has no chief; give it {workers}")
    assert both(error) == ("the job has no chief; give it {workers}",) * 2
    assert error.field is None and error.value is NOTHING


def test_a_config_file_error_names_the_file_and_key_not_a_flag() -> None:
    inner = SpecError(field="workers", value=0, problem="must be ≥ 1", fix="leave {workers} out")
    error = ConfigFileError.at("job.yaml", "trainingInput.workerCount", inner)
    assert both(error) == (
        "job.yaml: trainingInput.workerCount 0 must be ≥ 1; leave --workers out",
        "job.yaml: trainingInput.workerCount 0 must be ≥ 1; leave workers out",
    )
    assert (error.file, error.key, error.value) == ("job.yaml", "trainingInput.workerCount", 0)
    assert str(ConfigFileError.at("job.yaml", "a.b", SpecError("plain words"))) == "job.yaml: a.b: plain words"
    assert str(ConfigFileError("job.yaml: plain")) == "job.yaml: plain"


def test_an_error_survives_pickling_with_its_parts() -> None:
    """Errors cross processes (a local job's supervisor, a pipeline step)."""
    error = pickle.loads(pickle.dumps(SpecError(field="ps", value=2, problem="needs {workers} ≥ 1")))
    assert both(error) == ("--ps 2 needs --workers ≥ 1", "ps=2 needs workers ≥ 1")
    error = pickle.loads(pickle.dumps(ConfigFileError(file="f.json", key="k", value=1, problem="must be text")))
    assert str(error) == "f.json: k 1 must be text" and error.key == "k"


@pytest.mark.parametrize("cls", [SpecError, ConfigFileError])
def test_it_is_still_a_value_error(cls: type[SpecError]) -> None:
    with pytest.raises(ValueError, match=r"^workers=0 must be ≥ 1$"):
        raise cls(field="workers", value=0, problem="must be ≥ 1")


# -- the same mistake through the CLI and through Job(...) ---------------------------------------

IMAGE = "gcr.io/p/t:1"


def _cli_line(argv: list[str]) -> str:
    """The one error line ``tfjob`` prints (exit 2), without its ``error: ``."""
    from click.testing import CliRunner

    from tfjob.cli.main import app

    result = CliRunner().invoke(app, argv)
    lines = result.stderr.splitlines()
    assert result.exit_code == 2 and len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    return lines[0][len("error: ") :]


def _api_message(make: object) -> str:
    from tfjob.errors import SpecError

    with pytest.raises(SpecError, match=r"\S") as caught:
        make()  # type: ignore[operator]
    return str(caught.value)


def _cases() -> list[tuple[str, list[str], object, str, str]]:
    """(what, CLI argv, the same through the API, the CLI's words, the API's words)."""
    from tfjob import Job, Kubernetes, Vertex

    return [
        (
            "a count",
            ["render", "--image", IMAGE, "--backend", "vertex", "--workers", "0"],
            lambda: Job(image=IMAGE, workers=0, backend="vertex"),
            "--workers 0 must be ≥ 1; leave --workers out for a job without that role",
            "workers=0 must be ≥ 1; leave workers out for a job without that role",
        ),
        (
            "a machine type",
            ["render", "--image", IMAGE, "--backend", "vertex", "--workers", "2", "--worker-machine-type", "bogus"],
            lambda: job_from_keywords(None, None, {'image': IMAGE, 'workers': 2, 'worker_machine_type': "bogus", 'backend': "vertex"}),
            "--worker-machine-type 'bogus' is not known; use a Compute Engine type such as n1-standard-4 (see `tfjob machines`)",
            "worker_machine_type='bogus' is not known; use a Compute Engine type such as n1-standard-4 (see `tfjob machines`)",
        ),
        (
            "a Vertex setting",
            ["render", "--image", IMAGE, "--backend", "vertex", "--kms-key", "my-key"],
            lambda: Job(image=IMAGE, backend=Vertex(kms_key="my-key")),
            "--kms-key 'my-key' must be a Cloud KMS key's full name; write projects/PROJECT/locations/REGION/keyRings/RING/cryptoKeys/KEY",
            "kms_key='my-key' must be a Cloud KMS key's full name; write projects/PROJECT/locations/REGION/keyRings/RING/cryptoKeys/KEY",
        ),
        (
            "a Kubernetes setting",
            ["render", "--image", IMAGE, "--backend", "kubeflow", "--namespace", "ML_Team"],
            lambda: Job(image=IMAGE, backend=Kubernetes(namespace="ML_Team")).render(),
            "--namespace 'ML_Team' is not a DNS-1035 label (lower-case letters, digits and '-', starting with a letter, not ending "
            "with '-'), as Kubernetes requires for a TFJob; use --namespace ml-team",
            "namespace='ML_Team' is not a DNS-1035 label (lower-case letters, digits and '-', starting with a letter, not ending "
            "with '-'), as Kubernetes requires for a TFJob; use namespace='ml-team'",
        ),
        (
            "a setting its backend does not take",
            ["render", "--image", IMAGE, "--backend", "kubeflow", "--spot"],
            lambda: job_from_keywords(None, None, {'image': IMAGE, 'backend': "kubeflow", 'spot': True}),
            "--spot is for the vertex backend, not kubeflow; leave it out, or choose --backend vertex",
            "spot is for the vertex backend, not kubeflow; leave it out, or choose backend='vertex'",
        ),
    ]  # fmt: skip


@pytest.mark.parametrize("index", range(5), ids=["count", "machine", "vertex", "kubernetes", "misplaced"])
def test_the_cli_says_flags_and_a_job_says_keywords(index: int) -> None:
    _, argv, make, cli, api = _cases()[index]
    assert _cli_line(argv) == cli
    assert _api_message(make) == api
    assert "--" not in api.split(";")[0]  # the field and the problem name no flag


def test_a_config_file_error_names_the_file_and_key_on_both_faces(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from tfjob import Job

    config = tmp_path / "job.yaml"
    config.write_text("trainingInput:\n  scaleTier: GOLD\n  masterConfig: {imageUri: gcr.io/p/t:1}\n")
    words = f"{config}: trainingInput.scaleTier 'GOLD' is not a scale tier; choose one of BASIC, STANDARD_1, PREMIUM_1, BASIC_GPU, BASIC_TPU, CUSTOM"
    assert _cli_line(["render", "--config", str(config), "--backend", "vertex"]) == words
    assert _api_message(lambda: Job(config=str(config), backend="vertex")) == words
    # A knob's check, made on a file's key, names the key, not the knob's flag or keyword.
    config.write_text(
        "workerPoolSpecs:\n  - {machineSpec: {machineType: n1-standard-4}, diskSpec: {bootDiskSizeGb: 10}, containerSpec: {imageUri: i}}\n"
    )
    words = f"{config}: workerPoolSpecs[0].diskSpec.bootDiskSizeGb 10 must be a whole number of GB from 100 to 64000"
    assert _cli_line(["render", "--config", str(config), "--backend", "vertex"]) == words
    assert _api_message(lambda: Job(config=str(config), backend="vertex")) == words


def test_a_replicas_value_is_named_as_it_was_given() -> None:
    """``Job(workers=Replicas(…))`` hears of its Replicas value, not of the flat keyword it becomes."""
    from tfjob import Job, Replicas

    assert _api_message(lambda: Job(image=IMAGE, workers=Replicas(2, machine_type="bogus"), backend="vertex")) == (
        "workers=Replicas(…, machine_type='bogus') is not known; use a Compute Engine type such as n1-standard-4 (see `tfjob machines`)"
    )
    assert _api_message(lambda: Job(image=IMAGE, workers=1, ps=Replicas(1, image="Bad Image"), backend="vertex")).startswith(
        "ps=Replicas(…, image='Bad Image') is not an image reference; write [REGISTRY/]NAME"
    )
    # the flat keyword, where it was given as one (the CLI's way)
    assert _api_message(
        lambda: job_from_keywords(None, None, {"image": IMAGE, "workers": 2, "worker_machine_type": "bogus", "backend": "vertex"})
    ).startswith("worker_machine_type='bogus' is not known")
