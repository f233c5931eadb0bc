"""Each knob declared once — its type, help, flag, config key and the backends that take it —
and the CLI's flags made from those declarations (tfjob.description.knobs, tfjob.backends.knobs)."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys

from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from tfjob.backends import BACKENDS, backend_keywords, find_knob, flag_of, knobs, options_type
from tfjob.cli.main import app
from tfjob.description.knobs import JOB_KNOBS, Knob, declared, kind_of, knob
from tfjob.model import SubmitOptions

#: Options fields a front end sets, never a user: no flag, no knob.
SET_BY_THE_FRONT_END = {"default_staging_bucket"}
USER_BACKENDS = [b for b in BACKENDS if b != "vertex-tuning"]


@pytest.mark.parametrize("backend", USER_BACKENDS)
def test_everything_only_some_backends_take_is_a_declared_knob_of_the_backend(backend: str) -> None:
    common = {f.name for f in dataclasses.fields(SubmitOptions)}
    mine = {f.name for f in dataclasses.fields(options_type(backend))} - common - SET_BY_THE_FRONT_END
    undeclared = sorted(name for name in backend_keywords(backend) - SET_BY_THE_FRONT_END if name not in knobs())
    assert not undeclared, f"{backend}: declare these with tfjob.description.knobs.knob() or in SPEC_KNOBS: {undeclared}"
    for name in mine | set(options_type(backend).SPEC_KEYWORDS):
        assert backend in knobs()[name].backends, (backend, name)
    # …and a knob says a backend takes it only when that backend's options declare it.
    for k in knobs().values():
        if k.backends:
            assert (backend in k.backends) == (k.name in backend_keywords(backend)), (backend, k.name)


def test_every_knob_has_help_a_kind_and_a_flag_and_every_flag_is_one_knobs() -> None:
    seen: dict[str, str] = {}
    for k in knobs().values():
        assert k.help.strip() and k.flag.startswith("--"), k
        for flag in k.flags:
            for spelling in flag.split("/"):
                assert seen.setdefault(spelling, k.name) == k.name, f"{spelling} is declared by {seen[spelling]} and {k.name}"
    # the job's own knobs are the ones every backend takes
    assert all(not k.backends for k in JOB_KNOBS)


def test_a_knob_is_spelt_for_each_front_end() -> None:
    kms = find_knob("kms_key")
    assert kms is not None and (kms.flag, kms.keyword, kms.config) == ("--kms-key", "kms_key", "encryptionSpec.kmsKeyName")
    assert kms.spelling("cli") == "--kms-key" and kms.spelling("api") == "kms_key" and kms.spelling("config") == "encryptionSpec.kmsKeyName"
    assert kms.backends == ("vertex",)
    assert flag_of("ttl_seconds_after_finished") == "--ttl" and flag_of("persistent_resource_id") == "--persistent-resource"
    assert flag_of("name") == "--display-name" and flag_of("module") == "--module-name" and flag_of("chief") == "--chief"
    assert flag_of("not_a_knob") == "--not-a-knob" and find_knob("not_a_knob") is None
    assert set(knobs()["restart_policy"].backends) == {"local", "vertex", "kubeflow", "jobset", "trainjob"}


def test_kinds_follow_the_annotation_unless_declared() -> None:
    assert [kind_of(a) for a in ("bool", "int | None", "float", "str | None", "tuple[str, ...]", "Any")] == [
        "flag", "int", "float", "text", "list", "text",
    ]  # fmt: skip

    @dataclasses.dataclass
    class Opts(SubmitOptions):
        size: int | None = knob("A size.")
        when: str | None = knob("A duration.", kind="duration", config="a.b")
        plain: int = 0

    found = {k.name: k for k in declared(Opts, "x")}
    assert set(found) == {"size", "when"} and found["size"].kind == "int" and found["when"].kind == "duration"
    assert found["when"].backends == ("x",) and found["when"].config == "a.b" and found["size"].flag == "--size"
    with pytest.raises(ValueError, match=r"kind 'number' is not one of"):
        Knob("x", "X.", "number")
    with pytest.raises(ValueError, match=r"must be immutable"):
        knob("X.", default=[])


def test_two_backends_declaring_one_knob_alike_share_its_flag_and_each_keeps_its_help() -> None:
    a = Knob("x", "A's meaning.", "int", backends=("a",))
    b = Knob("x", "B's meaning.", "int", backends=("b",))
    c = Knob("x", "A's meaning.", "int", backends=("c",))
    joined = a.joined(b).joined(c)
    assert joined.backends == ("a", "b", "c") and joined.described() == "a, c: A's meaning; b: B's meaning."
    with pytest.raises(ValueError, match=r"knob x is declared twice differently"):
        a.joined(Knob("x", "A's meaning.", "text", backends=("d",)))


def _submit_options() -> dict[str, click.Option]:
    return {p.name: p for p in app.commands["submit"].params if isinstance(p, click.Option) and p.name}


def test_the_cli_flags_are_made_from_the_declarations() -> None:
    options = _submit_options()
    for k in knobs().values():
        if not k.cli:
            assert k.name not in options, k.name
            continue
        option = options[k.name]
        assert k.flag in option.opts and option.help == k.described(), k.name
        if k.backends:
            assert option.help.startswith(", ".join(k.helps[0][0] if k.helps else k.backends) + ": "), k.name
        assert option.multiple == (k.kind == "list") and (option.is_flag and not option.secondary_opts) == (k.kind == "flag"), k.name
    # tfjob tune offers every knob a study's trials can use
    tune = {p.name for p in app.commands["tune"].params}
    assert {k.name for k in knobs().values() if k.cli and k.tune} <= tune
    assert not {k.name for k in knobs().values() if not k.tune and k.name != "backend"} & tune


def test_help_names_every_backend_and_not_only_a_tfjob() -> None:
    runner = CliRunner()
    top = runner.invoke(app, ["--help"])
    assert top.exit_code == 0 and "JobSet" in top.output and "TrainJob" in top.output and "Vertex AI" in top.output
    backend_help = _submit_options()["backend"].help or ""
    for name in USER_BACKENDS:
        assert name in backend_help, name


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["--kms-key", "projects/p/locations/us-central1/keyRings/r/cryptoKeys/k"],
            r"--kms-key is for the vertex backend, not local; leave it out, or choose --backend vertex",
        ),
        (
            ["--ttl", "60"],
            r"--ttl is for the kubeflow, jobset and trainjob backends, not local; leave it out, or choose --backend kubeflow",
        ),
        (["--persistent-resource-id", "pool"], r"--persistent-resource is for the vertex backend, not local"),
    ],
)
def test_a_flag_the_backend_does_not_take_is_one_line_and_exit_2(argv: list[str], message: str, tmp_path: object) -> None:
    result = CliRunner().invoke(app, ["render", "gs://b/t-0.1.tar.gz", "-m", "trainer.task", "--backend", "local", *argv])
    assert result.exit_code == 2
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ")
    import re

    assert re.search(message, lines[0]), lines[0]


def test_a_misplaced_flag_from_a_real_process_is_one_line_on_stderr() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "tfjob", "render", "gs://b/t-0.1.tar.gz", "-m", "trainer.task", "--backend", "vertex", "--project", "p",
         "--region", "us-central1", "--namespace", "ml"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.splitlines() == [
        "error: --namespace is for the kubeflow, jobset and trainjob backends, not vertex; leave it out, or choose --backend kubeflow"
    ]


def test_a_declared_knobs_plain_custom_job_spec_key_is_read_from_its_declaration() -> None:
    from tfjob.config.document import ConfigDoc
    from tfjob.config.vertex import declared_keys, parse_custom_job_spec
    from tfjob.errors import ConfigFileError

    pools = [{"machineSpec": {"machineType": "n1-standard-4"}, "containerSpec": {"imageUri": "gcr.io/p/t:1"}}]
    new = Knob("artifact_place", "Where.", config="artifactPlace", backends=("vertex",))
    hand_read = Knob("tensorboard_again", "Read by hand already.", config="tensorboard", backends=("vertex",))
    assert "artifactPlace" in declared_keys([new, hand_read, *knobs().values()]) and "tensorboard" not in declared_keys([hand_read])
    values = parse_custom_job_spec({"workerPoolSpecs": pools, "artifactPlace": "us-east1"}, ConfigDoc("job.yaml"), knobs=[new])
    assert values["artifact_place"] == "us-east1"
    with pytest.raises(ConfigFileError, match=r"^job.yaml: artifactPlace 3 must be text"):
        parse_custom_job_spec({"workerPoolSpecs": pools, "artifactPlace": 3}, ConfigDoc("job.yaml"), knobs=[new])
    with pytest.raises(ConfigFileError, match=r"^job.yaml: unknown key 'artifactPlace'"):
        parse_custom_job_spec({"workerPoolSpecs": pools, "artifactPlace": "us-east1"}, ConfigDoc("job.yaml"))


def test_the_vertex_settings_take_every_vertex_knob_and_list_it_in_their_help() -> None:
    import pydoc

    from tfjob import Vertex
    from tfjob.backends.vertex.options import VertexKnobs, VertexOptions

    mine = {f.name for f in dataclasses.fields(VertexKnobs)}
    assert mine <= {f.name for f in dataclasses.fields(Vertex)} and mine <= {f.name for f in dataclasses.fields(VertexOptions)}
    text = pydoc.render_doc(Vertex, renderer=pydoc.plaintext)
    for f in dataclasses.fields(VertexKnobs):
        assert f"{f.name}: {f.metadata['tfjob.knob']['help'][:30]}" in text, f.name


def test_the_knob_addition_diff_in_the_architecture_doc_touches_the_vertex_folder_and_a_test_and_is_in_the_code() -> None:
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    text = (root / "docs" / "architecture.md").read_text()
    section = text[text.index("## Adding a knob: the real diff") :]
    section = section[: section.index("\n## ", 10)]
    stat = re.findall(r"^ (\S+)\s+\|\s+\d+ \+*-*$", section, re.M)
    assert stat and all(p.startswith("sdk/backends/vertex/") or p.startswith("tests/") for p in stat), stat
    assert sum(p.startswith("tests/") for p in stat) == 1
    diff = section[section.index("```diff") :]
    files = re.findall(r"^\+\+\+ b/(\S+)$", diff, re.M)
    assert files == stat
    for chunk in re.split(r"^diff --git ", diff, flags=re.M)[1:]:
        path = re.search(r"^\+\+\+ b/(\S+)$", chunk, re.M).group(1)  # type: ignore[union-attr]

        # Compared as the formatter leaves them: a line it later split (a trailing comma, an
        # expression wrapped in parentheses) still counts.
        def bare(code: str) -> str:
            return "".join(code.split()).translate({ord(c): None for c in ",()"})

        now = bare((root / path).read_text())
        for line in re.findall(r"^\+(?!\+\+ )(.*)$", chunk, re.M):
            assert bare(line) in now, f"{path} no longer has: {line}"


_DECLARED_TABLE = """
import json, sys
from tfjob.cli.main import app
from tfjob.cli import options
import tfjob.backends as b
from tfjob.job.keywords import _kinds, check_backend_keywords, job_keywords
command = app.commands["submit"]
command.make_context("submit", ["trainer/", "-m", "trainer.task", "--workers", "4"])
job_keywords()
check_backend_keywords("local", {"workers", "dialect"})
_kinds()
print(json.dumps({
    "knobs": [repr(k) for k in b.knobs().values()],
    "flags": [[k.name, list(k.flags), k.kind, k.described(), k.cli, k.tune] for k in options.knobs().values()],
    "takers": b.keyword_backends(),
    "fields": b.option_annotations(),
    "options_read": sorted(m for m in sys.modules if m.startswith("tfjob.backends.") and m.endswith(".options")),
    "imported_from": sys.modules["tfjob"].__file__,
}))
"""


def _private_tfjob(root: Path) -> dict[str, str]:
    """A copy of tfjob's sources under ``root`` (its own ``__pycache__``: what this test damages
    no other test reads), and the environment that imports it."""
    import shutil

    import tfjob

    repo = Path(tfjob.__file__).resolve().parent.parent
    skip = shutil.ignore_patterns("__pycache__")
    shutil.copytree(repo / "sdk", root / "tfjob", ignore=skip)
    shutil.copytree(repo / "cli", root / "tfjob" / "cli", ignore=skip)
    shutil.copytree(repo / "container", root / "tfjob" / "container", ignore=skip)
    return {**os.environ, "PYTHONPATH": str(root)}


def _declared_table(env: dict[str, str]) -> dict[str, object]:
    import json

    done = subprocess.run([sys.executable, "-c", _DECLARED_TABLE], capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_the_declarations_are_read_in_memory_and_nothing_is_written_beside_the_package(tmp_path: Path) -> None:
    """What the CLI reads of the knobs' declarations — every knob, who takes each keyword, each
    options field's annotation — is exactly what the declarations give, made in memory: a run
    writes no file into the package's folders (an install may be read-only or shared)."""
    import dataclasses

    import tfjob.backends as backends

    env = {**_private_tfjob(tmp_path), "PYTHONDONTWRITEBYTECODE": "1"}
    before = sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*"))

    made = backends._declared_knobs()
    expected = {
        "knobs": [repr(k) for k in made.values()],
        "flags": [[k.name, list(k.flags), k.kind, k.described(), k.cli, k.tune] for k in made.values()],
        "takers": {
            key: [n for n in backends.BACKENDS if n != "vertex-tuning" and key in backends.backend_keywords(n)]
            for key in sorted({k for n in backends.BACKENDS if n != "vertex-tuning" for k in backends.backend_keywords(n)})
        },
        "fields": {},
    }
    for name in backends.BACKENDS:
        for f in dataclasses.fields(backends.options_type(name)):
            expected["fields"].setdefault(f.name, str(f.type))  # type: ignore[attr-defined]

    for _ in range(2):
        table = _declared_table(env)
        assert table["imported_from"] == str(tmp_path / "tfjob" / "__init__.py")
        assert {k: v for k, v in table.items() if k not in ("options_read", "imported_from")} == expected
    assert sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*")) == before
