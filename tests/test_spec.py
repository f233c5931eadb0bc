"""tfjob.description.spec: scale tiers, legacy machine names, every validation rule, serialization."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers import cli_words

from tfjob.errors import SpecError, UsageError
from tfjob.description.machines import LEGACY_MACHINES, MACHINES
from tfjob.description.spec import (
    Accelerator,
    JobSpec,
    Machine,
    Pool,
    ScaleTier,
    parse_duration,
    parse_key_values,
)
from tfjob.description.request import build_spec
from tfjob.description.shape import tier_pools


def pools_of(spec: JobSpec) -> list[tuple[str, int, str, str | None, int]]:
    """(role, replicas, machine type, accelerator, count) of every pool, in role order."""
    out = []
    for p in spec.pools:
        acc = p.machine.accelerator
        out.append((p.role, p.replicas, p.machine.type, acc.type if acc else None, acc.count if acc else 0))
    return out


def job(**kwargs: object) -> JobSpec:
    kwargs.setdefault("name", "census")
    kwargs.setdefault("module", "trainer.task")
    return build_spec(dict(**kwargs))  # type: ignore[arg-type]


# -- scale tiers, exactly as DESIGN.md states them -----------------------------------------

TIER_POOLS = {
    "BASIC": [("chief", 1, "n1-standard-4", None, 0)],
    "STANDARD_1": [
        ("chief", 1, "n1-highcpu-8", None, 0),
        ("worker", 4, "n1-highcpu-8", None, 0),
        ("ps", 3, "n1-standard-4", None, 0),
    ],
    "PREMIUM_1": [
        ("chief", 1, "n1-highcpu-16", None, 0),
        ("worker", 19, "n1-highcpu-16", None, 0),
        ("ps", 11, "n1-highmem-8", None, 0),
    ],
    # One machine with one GPU: the tier's K80 is retired, a T4 stands in.
    "BASIC_GPU": [("chief", 1, "n1-standard-8", "NVIDIA_TESLA_T4", 1)],
    # The master plus a Cloud TPU (v2, 8 cores).
    "BASIC_TPU": [("chief", 1, "n1-standard-4", None, 0), ("worker", 1, "cloud-tpu", "TPU_V2", 8)],
}


@pytest.mark.parametrize("tier", sorted(TIER_POOLS))
def test_every_predefined_tier_expands_as_documented(tier: str) -> None:
    spec = job(scale_tier=tier)
    assert pools_of(spec) == TIER_POOLS[tier]
    assert spec.scale_tier is ScaleTier(tier)
    assert [(p.role, p.replicas) for p in tier_pools(ScaleTier(tier))] == [(r[0], r[1]) for r in TIER_POOLS[tier]]


def test_custom_tier_takes_explicit_machines_and_counts() -> None:
    spec = job(
        scale_tier="CUSTOM",
        chief_machine_type="n1-highcpu-16",
        workers=9,
        worker_machine_type="n1-highcpu-16",
        ps=3,
        ps_machine_type="n1-highmem-8",
        evaluators=1,
        evaluator_machine_type="n1-highcpu-16",
    )
    assert pools_of(spec) == [
        ("chief", 1, "n1-highcpu-16", None, 0),
        ("worker", 9, "n1-highcpu-16", None, 0),
        ("ps", 3, "n1-highmem-8", None, 0),
        ("evaluator", 1, "n1-highcpu-16", None, 0),
    ]


@pytest.mark.parametrize("spelling", ["standard_1", "Standard-1", " STANDARD_1 ", ScaleTier.STANDARD_1])
def test_tier_spellings(spelling: object) -> None:
    assert ScaleTier.parse(spelling) is ScaleTier.STANDARD_1  # type: ignore[arg-type]


def test_no_tier_defaults_every_pool_to_n1_standard_4() -> None:
    assert pools_of(job()) == [("chief", 1, "n1-standard-4", None, 0)]
    assert pools_of(job(workers=2, ps=1, evaluators=1)) == [
        ("chief", 1, "n1-standard-4", None, 0),
        ("worker", 2, "n1-standard-4", None, 0),
        ("ps", 1, "n1-standard-4", None, 0),
        ("evaluator", 1, "n1-standard-4", None, 0),
    ]


# -- legacy machine names -----------------------------------------------------------------

LEGACY = {
    "standard": ("n1-standard-4", None, 0),
    "large_model": ("n1-highmem-8", None, 0),
    "complex_model_s": ("n1-highcpu-8", None, 0),
    "complex_model_m": ("n1-highcpu-16", None, 0),
    "complex_model_l": ("n1-highcpu-32", None, 0),
    "standard_gpu": ("n1-standard-8", "NVIDIA_TESLA_T4", 1),
    "complex_model_m_gpu": ("n1-standard-16", "NVIDIA_TESLA_T4", 4),
    "complex_model_l_gpu": ("n1-standard-32", "NVIDIA_TESLA_T4", 4),
    "standard_p100": ("n1-standard-8", "NVIDIA_TESLA_P100", 1),
    "complex_model_m_p100": ("n1-standard-16", "NVIDIA_TESLA_P100", 4),
    "standard_v100": ("n1-standard-8", "NVIDIA_TESLA_V100", 1),
    "large_model_v100": ("n1-highmem-8", "NVIDIA_TESLA_V100", 1),
    "complex_model_m_v100": ("n1-standard-16", "NVIDIA_TESLA_V100", 4),
    "complex_model_l_v100": ("n1-standard-32", "NVIDIA_TESLA_V100", 8),
    "cloud_tpu": ("cloud-tpu", "TPU_V2", 8),
}


@pytest.mark.parametrize("name", sorted(LEGACY))
def test_legacy_machine_names_map_to_compute_engine(name: str) -> None:
    machine_type, acc, count = LEGACY[name]
    machine = Machine.resolve(name)
    assert machine.type == machine_type
    assert machine.accelerator == (Accelerator(acc, count) if acc else None)
    # Also through the options users give, in any case.
    spec = job(scale_tier="CUSTOM", chief_machine_type=name.upper())
    assert spec.pools[0].machine == machine


def test_every_legacy_name_is_tested_and_maps_to_a_known_machine() -> None:
    assert set(LEGACY_MACHINES) == set(LEGACY)
    assert all(target in MACHINES for target, _, _ in LEGACY_MACHINES.values())


def test_an_explicit_accelerator_beats_the_legacy_names_own() -> None:
    machine = Machine.resolve("standard_gpu", Accelerator("NVIDIA_TESLA_V100", 2))
    assert machine == Machine("n1-standard-8", Accelerator("NVIDIA_TESLA_V100", 2))


def test_machines_with_built_in_gpus_spell_them_out() -> None:
    assert Machine("a2-highgpu-2g").accelerator == Accelerator("NVIDIA_TESLA_A100", 2)
    assert Machine("g2-standard-8").accelerator == Accelerator("NVIDIA_L4", 1)
    assert Machine("n1-standard-4").accelerator is None


# -- accelerators ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("type=nvidia-tesla-t4,count=2", Accelerator("NVIDIA_TESLA_T4", 2)),
        ("count=4, type=NVIDIA_TESLA_V100", Accelerator("NVIDIA_TESLA_V100", 4)),
        ("nvidia_tesla_p100", Accelerator("NVIDIA_TESLA_P100", 1)),
        ("TYPE=tpu-v3,COUNT=8", Accelerator("TPU_V3", 8)),
    ],
)
def test_accelerator_spellings(text: str, expected: Accelerator) -> None:
    assert Accelerator.parse(text) == expected


def test_accelerator_flag_applies_to_chief_workers_and_evaluators_not_ps() -> None:
    spec = job(
        workers=2,
        ps=1,
        evaluators=1,
        chief_machine_type="n1-standard-8",
        worker_machine_type="n1-standard-8",
        evaluator_machine_type="n1-standard-8",
        accelerator="type=NVIDIA_TESLA_T4,count=1",
    )
    assert [(r, a) for r, _, _, a, _ in pools_of(spec)] == [
        ("chief", "NVIDIA_TESLA_T4"),
        ("worker", "NVIDIA_TESLA_T4"),
        ("ps", None),
        ("evaluator", "NVIDIA_TESLA_T4"),
    ]
    one = job(workers=2, worker_accelerator="NVIDIA_TESLA_T4")
    assert [a for _, _, _, a, _ in pools_of(one)] == [None, "NVIDIA_TESLA_T4"]


# -- every validation rule: the message names the field, the value and the fix --------------

BAD = [
    (dict(workers=0), r"--workers 0 must be ≥ 1; leave --workers out"),
    (dict(workers=-3), r"--workers -3 must be ≥ 1"),
    (dict(workers=1, ps=-1), r"--ps -1 must be ≥ 1"),
    (dict(evaluators=0), r"--evaluators 0 must be ≥ 1"),
    (dict(workers=2.5), r"--workers 2.5 must be a whole number"),
    (dict(workers=True), r"--workers True must be a whole number"),
    (dict(ps=2), r"--ps needs --workers ≥ 1: a parameter-server job has no one to serve"),
    (dict(scale_tier="CUSTOM"), r"--scale-tier CUSTOM needs --chief-machine-type$"),
    (
        dict(scale_tier="CUSTOM", chief_machine_type="n1-standard-4", workers=2),
        r"--scale-tier CUSTOM with --workers 2 needs --worker-machine-type",
    ),
    (
        dict(scale_tier="CUSTOM", chief_machine_type="n1-standard-4", workers=1, worker_machine_type="n1-standard-4", ps=2),
        r"--scale-tier CUSTOM with --ps 2 needs --ps-machine-type",
    ),
    (dict(scale_tier="CUSTOM", chief_machine_type="n1-standard-4", evaluators=1), r"--evaluators 1 needs --evaluator-machine-type"),
    (
        dict(scale_tier="STANDARD_1", workers=8),
        r"--scale-tier STANDARD_1 fixes the cluster, so --workers cannot be set; use --scale-tier CUSTOM",
    ),
    (
        dict(scale_tier="BASIC", chief_machine_type="n1-standard-8"),
        r"--scale-tier BASIC fixes the cluster, so --chief-machine-type cannot be set",
    ),
    (dict(scale_tier="BASIC", accelerator="NVIDIA_TESLA_T4"), r"--scale-tier BASIC fixes the cluster, so --accelerator cannot be set"),
    (dict(worker_machine_type="n1-standard-8"), r"--worker-machine-type n1-standard-8 is set but --workers is not"),
    (
        dict(chief_machine_type="e2-standard-4", accelerator="NVIDIA_TESLA_T4"),
        r"--chief-machine-type 'e2-standard-4' cannot take accelerator NVIDIA_TESLA_T4: use an n1-\* machine type",
    ),
    (
        dict(chief_machine_type="a2-highgpu-1g", accelerator="NVIDIA_TESLA_T4"),
        r"'a2-highgpu-1g' cannot take accelerator NVIDIA_TESLA_T4: it takes only NVIDIA_TESLA_A100",
    ),
    (
        dict(chief_machine_type="n1-standard-8", accelerator="type=NVIDIA_TESLA_T4,count=3"),
        r"n1-standard-8 takes NVIDIA_TESLA_T4 in counts of 1, 2, 4, not 3",
    ),
    (dict(chief_machine_type="cloud-tpu"), r"machine type 'cloud-tpu' needs an accelerator: type=TPU_V2,count=8"),
    (dict(scale_tier="PREMUIM_1"), r"--scale-tier 'PREMUIM_1' is not a scale tier \(did you mean 'PREMIUM_1'\?\); choose one of BASIC"),
    (dict(scale_tier="GOLD"), r"--scale-tier 'GOLD' is not a scale tier; choose one of"),
    (
        dict(chief_machine_type="n1-standrd-8"),
        r"--chief-machine-type 'n1-standrd-8' is not known \(did you mean 'n1-standard-8'\?\).*`tfjob machines`",
    ),
    (dict(chief_machine_type="complex_modl_m"), r"is not known \(did you mean 'complex_model_m'\?\)"),
    (dict(accelerator="nvidia-tesla-t5"), r"accelerator 'nvidia-tesla-t5' is not known \(did you mean 'NVIDIA_TESLA_T4'\?\)"),
    (dict(accelerator="NVIDIA_TESLA_K80"), r"accelerator 'NVIDIA_TESLA_K80' is retired on Google Cloud; use NVIDIA_TESLA_T4 instead"),
    (dict(accelerator="type=NVIDIA_TESLA_T4,count=0"), r"--accelerator 'NVIDIA_TESLA_T4': count 0 must be a whole number ≥ 1"),
    (dict(accelerator="type=NVIDIA_TESLA_T4,cnt=2"), r"--accelerator 'type=NVIDIA_TESLA_T4,cnt=2': cannot read 'cnt=2'; write it as type="),
    (dict(accelerator="count=2"), r"--accelerator 'count=2' has no type="),
    (dict(accelerator=""), r"--accelerator is empty"),
    (dict(name=""), r"--display-name '' is empty; give the job a name \(--display-name NAME\)"),
    (dict(name="x" * 129), r"has 129 characters; Vertex AI allows at most 128"),
    (dict(name="census\tjob"), r"--display-name 'census\\tjob' contains control characters"),
    (dict(module=None), r"--module-name is required to run a trainer package \(or --script, or --image"),
    (dict(module="trainer/task.py"), r"--module-name 'trainer/task.py' is not a module `python -m` can run"),
    (dict(env={"1X": "y"}), r"--env '1X' is not a valid environment variable name"),
    (dict(labels={"Team": "ml"}), r"label key 'Team' is not valid; start with a lower-case letter"),
    (dict(labels={"team": "Data Science"}), r"label team='Data Science': values are up to 63 lower-case letters"),
    (dict(labels={"team": "x" * 64}), r"label team=.*values are up to 63"),
    (dict(labels={f"k{i}": "v" for i in range(65)}), r"--labels has 65 labels; Vertex AI and Kubernetes allow at most 64"),
    (dict(timeout=0), r"--timeout 0 must be a positive number of seconds"),
    (dict(timeout=-5.0), r"--timeout -5.0 must be a positive number"),
]


@pytest.mark.parametrize(("kwargs", "message"), BAD, ids=[f"bad{i}" for i in range(len(BAD))])
def test_validation_errors_name_field_value_and_fix(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(SpecError, match=message) as caught, cli_words():
        job(**kwargs)
    assert isinstance(caught.value, (UsageError, ValueError)) and caught.value.exit_code == 2
    assert "\n" not in str(caught.value) and "\n" not in str(caught.value.__cause__)


def test_pool_rules() -> None:
    with pytest.raises(SpecError, match=r"the chief runs exactly 1 replica, not 2; add the others as --workers"), cli_words():
        Pool("chief", 2)
    with pytest.raises(SpecError, match=r"pool role 'workers' is not one of chief, worker, ps, evaluator \(did you mean 'worker'\?\)"):
        Pool("workers", 2)
    assert not JobSpec(name="j", module="a.b", pools=(Pool("worker", 2),)).has_chief  # worker 0 is the chief
    with pytest.raises(SpecError, match=r"the job has no chief and no workers"):
        JobSpec(name="j", module="a.b", pools=(Pool("ps", 2),))
    with pytest.raises(SpecError, match=r"the job has two chiefs"):
        JobSpec(name="j", module="a.b", pools=(Pool("chief", 1), Pool("chief", 1)))
    with pytest.raises(SpecError, match=r"the job has two worker pools"):
        JobSpec(name="j", module="a.b", pools=(Pool("chief", 1), Pool("worker", 1), Pool("worker", 2)))


def test_pools_are_kept_in_role_order() -> None:
    spec = JobSpec(name="j", module="a.b", pools=(Pool("evaluator", 1), Pool("ps", 1), Pool("chief", 1), Pool("worker", 2)))
    assert [p.role for p in spec.pools] == ["chief", "worker", "ps", "evaluator"]
    assert spec.tasks() == [("chief", 0), ("worker", 0), ("worker", 1), ("ps", 0), ("evaluator", 0)]
    assert (spec.count("worker"), spec.count("ps"), spec.pool("nothing")) == (2, 1, None)


def test_an_image_job_needs_no_module_and_pools_may_name_their_own() -> None:
    spec = job(module=None, image="gcr.io/p/t:1", workers=1, worker_image="gcr.io/p/w:1")
    assert (spec.image_for("chief"), spec.image_for("worker"), spec.image_for("ps")) == ("gcr.io/p/t:1", "gcr.io/p/w:1", "gcr.io/p/t:1")


# -- small parsers -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("7200", 7200.0), ("7200s", 7200.0), ("2h", 7200.0), ("1h30m", 5400.0), ("45m", 2700.0), ("1.5s", 1.5), ("1d", 86400.0), (90, 90.0)],
)
def test_parse_duration(text: object, seconds: float) -> None:
    assert parse_duration(text) == seconds  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("text", "message"), [("abc", r"'abc' is not a duration"), ("0", r"must be longer than 0 seconds"), ("", r"is empty")]
)
def test_parse_duration_errors(text: str, message: str) -> None:
    with pytest.raises(SpecError, match=message):
        parse_duration(text)


def test_parse_key_values() -> None:
    assert parse_key_values(["a=1,b=2", "c=x=y"], "labels") == {"a": "1", "b": "2", "c": "x=y"}
    # --env values may hold commas: one KEY=VALUE per flag.
    assert parse_key_values(["PATHS=a,b"], "env") == {"PATHS": "a,b"}
    assert parse_key_values(None, "env") == {}
    with pytest.raises(SpecError, match=r"^labels='oops' must be KEY=VALUE$"):
        parse_key_values("oops", "labels")


# -- serialization ---------------------------------------------------------------------------


def test_to_dict_from_dict_round_trip_of_a_full_spec() -> None:
    spec = job(
        scale_tier="CUSTOM",
        chief_machine_type="complex_model_m_gpu",
        workers=3,
        worker_machine_type="n1-standard-8",
        worker_accelerator="type=NVIDIA_TESLA_V100,count=2",
        ps=2,
        ps_machine_type="large_model",
        evaluators=1,
        evaluator_machine_type="n1-standard-4",
        package="trainer/",
        packages=["gs://b/extra-1.0.tar.gz"],
        chief_image="gcr.io/p/chief:1",
        args=["--epochs", "3"],
        env={"A": "1"},
        job_dir="gs://b/out",
        labels={"team": "ml"},
        service_account="sa@p.iam.gserviceaccount.com",
        timeout=3600.0,
        region="us-central1",
        runtime_version="2.11",
        python_version="3.7",
        use_chief=False,
    )
    data = json.loads(json.dumps(spec.to_dict()))
    assert data["scale_tier"] == "CUSTOM" and data["args"] == ["--epochs", "3"]
    assert JobSpec.from_dict(data) == spec


def test_a_record_written_before_the_vertex_knobs_moved_to_the_options_still_reads() -> None:
    data = {
        **job().to_dict(),
        "network": None,
        "kms_key": None,
        "reserved_ip_ranges": [],
        "tensorboard": "projects/1/locations/r/tensorboards/2",
    }
    assert JobSpec.from_dict(data) == job()


def test_from_dict_rejects_unknown_fields() -> None:
    data = job().to_dict()
    data["colour"] = "blue"
    with pytest.raises(SpecError, match=r"unknown job spec fields: colour"):
        JobSpec.from_dict(data)


_N1 = [m for m in MACHINES if m.startswith("n1-")]


@st.composite
def specs(draw: st.DrawFn) -> JobSpec:
    kwargs: dict[str, object] = {"name": draw(st.from_regex(r"[a-z][a-z0-9-]{0,30}", fullmatch=True))}
    kwargs["chief_machine_type"] = draw(st.sampled_from(_N1 + list(LEGACY_MACHINES)[:5]))
    workers = draw(st.none() | st.integers(1, 20))
    kwargs["workers"] = workers
    if workers:
        kwargs["ps"] = draw(st.none() | st.integers(1, 8))
    kwargs["evaluators"] = draw(st.none() | st.integers(1, 2))
    if draw(st.booleans()):
        kwargs["accelerator"] = Accelerator(
            draw(st.sampled_from(["NVIDIA_TESLA_T4", "NVIDIA_TESLA_P100"])), draw(st.sampled_from([1, 2, 4]))
        )
        kwargs["chief_machine_type"] = draw(st.sampled_from(_N1))
    kwargs["args"] = draw(st.lists(st.text(max_size=8), max_size=4))
    kwargs["labels"] = draw(
        st.dictionaries(
            st.from_regex(r"[a-z][a-z0-9_-]{0,8}", fullmatch=True), st.from_regex(r"[a-z0-9_-]{0,8}", fullmatch=True), max_size=3
        )
    )
    kwargs["timeout"] = draw(st.none() | st.floats(1, 1e6))
    kwargs["image"] = draw(st.none() | st.just("gcr.io/p/t:1"))
    return job(**kwargs)


@settings(max_examples=60, deadline=None)
@given(specs())
def test_any_valid_spec_survives_json(spec: JobSpec) -> None:
    assert JobSpec.from_dict(json.loads(json.dumps(spec.to_dict()))) == spec


@pytest.mark.parametrize(
    "image",
    ["python:3", "localhost/tfjob:0.1.0", "us-docker.pkg.dev/my-project/trainers/census:1", "127.0.0.1:5000/x",
     "[::1]:5000/a/b_c.d:v1.2-rc", "REGISTRY.example/x", "gcr.io/p/t@sha256:" + "a" * 64, "gcr.io/p/t:1@sha256:" + "0" * 64],
)  # fmt: skip
def test_image_references_registries_take(image: str) -> None:
    assert build_spec(dict(name="j", image=image)).image == image


@pytest.mark.parametrize(
    ("image", "problem"),
    [("", "is empty"), ("  ", "is empty"), ("-v", "is not an image reference"), ("--privileged", "is not an image reference"),
     ("a b", "is not an image reference"), ("Trainer:1", "is not an image reference"), ("x:latest@sha256:zz", "is not an image reference"),
     ("x\n", "is not an image reference"), ("x:" + "t" * 200, "is not an image reference"), ("x" * 600, "is not an image reference")],
)  # fmt: skip
def test_what_no_engine_takes_as_an_image_is_refused(image: str, problem: str) -> None:
    # A leading '-' would reach podman or docker as an option of its own.
    with pytest.raises(SpecError, match=rf"^image\b.*{problem}"):
        build_spec(dict(name="j", image=image))
    with pytest.raises(SpecError, match=rf"^--worker-image\b.*{problem}"), cli_words():
        build_spec(dict(name="j", module="trainer.task", workers=1, worker_image=image))
