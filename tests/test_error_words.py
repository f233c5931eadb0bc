"""An error carries the field, the value and the fix, and each face words it: the CLI as
flags (``--workers 0``), the Python API as keywords (``workers=0``), a config file as the
file and its key. No front end rewrites another's text."""

from __future__ import annotations

import pickle

import pytest

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
    assert both(error) == ("give the trainer once: --module-name or --script, not both", "give the trainer once: module or script, not both")


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
