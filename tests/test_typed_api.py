"""The typed public API: ``Job``'s explicit parameters, ``Replicas`` and the platform settings.

Every keyword the job description or a backend's options take has a typed home — a
``Job`` parameter, a ``Replicas`` field or a field of the settings class of each backend
that takes it — so an option added in today's style (``build_spec`` / ``*Options``)
without a typed home fails here. mypy on a user's snippet is in tests/test_install.py
(it runs against the installed wheel, whose ``py.typed`` makes the types visible).
"""

from __future__ import annotations

import dataclasses
import inspect
import pydoc
from pathlib import Path

import pytest

import tfjob
from tfjob._internal import job_from_keywords
from tfjob import AIPlatform, Job, JobSet, Kubernetes, Local, Replicas, TFJob, TrainJob, Vertex
from tfjob.backends import BACKENDS
from tfjob.errors import SpecError
from tfjob.job import job_keywords
from tfjob.platforms import PLATFORMS
from tfjob.description.spec import ROLES

#: Keywords a front end sets, never a user: with the reason they have no typed home.
SET_BY_THE_FRONT_END = {
    "wait": "submit() returns at once and run() waits: the method says it",
    "dry_run": "render() is the dry run; the CLI's --dry-run calls it",
    "trial": "tfjob tune sets it for each trial's job",
    "notice": "the CLI's line about why the local backend was chosen",
    "default_staging_bucket": "the configured bucket, read from the settings (staging_bucket is the explicit one)",
}
#: Keywords a backend accepts for the command line's sake but does not use.
NOT_FOR_THIS_BACKEND = {
    ("local", "stream_logs"): "local tasks always stream their logs; the flag is accepted for the Vertex AI command line",
    **{
        (b, "use_chief"): "only AI Platform's TF_CONFIG (local with dialect ai-platform, ai-platform) names a master"
        for b in ("vertex", "kubeflow", "jobset", "trainjob")
    },
}
#: Settings fields that are clients for the backend object, not job keywords.
CLIENTS = {"credentials", "api_client"}

JOB_PARAMETERS = set(inspect.signature(Job.__init__).parameters) - {"self"}
ROLE_KEYWORDS = {f"{role}_{f.name}" for role in ROLES for f in dataclasses.fields(Replicas) if f.name != "count"}
#: The CLI's --worker-cpu / --worker-memory: typed as Replicas(resources=Resources(cpu=…, memory=…)).
ROLE_KEYWORDS |= {f"{role}_{what}" for role in ROLES for what in ("cpu", "memory")}


def _settings_fields(backend: str) -> set[str]:
    classes = [cls for cls in PLATFORMS if cls.BACKEND == backend]
    assert classes, f"no settings class selects the {backend} backend"
    return set().union(*({f.name for f in dataclasses.fields(cls)} for cls in classes))


@pytest.mark.parametrize("backend", [b for b in BACKENDS if b != "vertex-tuning"])
def test_every_keyword_a_backend_takes_has_a_typed_home(backend: str) -> None:
    fields = _settings_fields(backend)
    homeless = sorted(
        key
        for key in job_keywords(backend)
        if key not in JOB_PARAMETERS | ROLE_KEYWORDS | fields
        and key not in SET_BY_THE_FRONT_END
        and (backend, key) not in NOT_FOR_THIS_BACKEND
    )
    assert not homeless, (
        f"{backend}: add these to Job's parameters, Replicas or the {backend} settings class (tfjob/platforms.py): {homeless}"
    )
    # And the other way: a settings field is something that backend takes (or one of its clients).
    strays = sorted(fields - set(job_keywords(backend)) - CLIENTS)
    assert not strays, f"{backend}'s settings declare what the backend does not take: {strays}"


def test_a_platform_only_keyword_is_no_job_parameter() -> None:
    """A setting only some backends take lives in their settings class, so passing it to
    another backend is a type error, not a run-time one."""
    only_some = set().union(*(set(job_keywords(b)) for b in BACKENDS if b != "vertex-tuning")) - set.intersection(
        *(set(job_keywords(b)) for b in BACKENDS if b != "vertex-tuning")
    )
    assert not sorted(only_some & JOB_PARAMETERS - {"backend"})


def test_help_lists_every_parameter_with_its_type() -> None:
    text = pydoc.render_doc(tfjob.Job, renderer=pydoc.plaintext)
    signature = inspect.signature(Job.__init__)
    for name, parameter in signature.parameters.items():
        if name == "self":
            continue
        assert parameter.annotation is not inspect.Parameter.empty, name
        assert f"{name}: '{parameter.annotation}'" in text, name  # in the signature help shows
        assert f"    {name} (" in text, f"{name} is not described in Job's docstring"
        assert parameter.kind in (inspect.Parameter.KEYWORD_ONLY,) or name in ("package", "module"), name
    for cls in (Replicas, *PLATFORMS):
        doc = pydoc.render_doc(cls, renderer=pydoc.plaintext)
        for f in dataclasses.fields(cls):
            if f.name != "_":
                assert (
                    f.name in (cls.__doc__ or "")
                    or cls.__bases__[0] is not tfjob.platforms.Platform
                    and f.name in (cls.__bases__[0].__doc__ or "")
                ), (cls.__name__, f.name)
                assert f"{f.name}: " in doc, (cls.__name__, f.name)


def test_typed_and_flat_keywords_build_the_same_job() -> None:
    typed = Job(
        "trainer", "trainer.task", name="same",
        chief=Replicas(machine_type="n1-highmem-8", env={"ROLE": "chief"}),
        workers=Replicas(4, machine_type="g2-standard-8", accelerator="NVIDIA_L4:1", args=["--w"]),
        ps=2, evaluators=Replicas(1, image="gcr.io/p/eval:1"),
        backend=Vertex(project="p", region="us-central1", spot=True, kms_key="projects/p/locations/us-central1/keyRings/r/cryptoKeys/k",
                       network="projects/1/global/networks/n", reserved_ip_ranges=["a", "b"], worker_boot_disk_size=200),
    )  # fmt: skip
    flat = job_from_keywords("trainer", "trainer.task", {'name': "same", 'backend': "vertex", 'project': "p", 'region': "us-central1", 'spot': True, 'kms_key': "projects/p/locations/us-central1/keyRings/r/cryptoKeys/k", 'reserved_ip_ranges': ("a", "b"), 'network': "projects/1/global/networks/n", 'chief_machine_type': "n1-highmem-8", 'chief_env': {"ROLE": "chief"}, 'workers': 4, 'worker_machine_type': "g2-standard-8", 'worker_accelerator': "type=NVIDIA_L4,count=1", 'worker_args': ["--w"], 'worker_boot_disk_size': 200, 'ps': 2, 'evaluators': 1, 'evaluator_image': "gcr.io/p/eval:1"})  # fmt: skip
    assert typed.spec == flat.spec and typed.options == flat.options and typed.backend_name == "vertex"
    assert typed.spec.pool("worker").machine.accelerator.count == 1 and typed.options.scheduling_strategy == "SPOT"  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("platform", "backend", "options"),
    [
        (Local(dialect="kubeflow", grace=2.0), "local", "LocalOptions"),
        (Vertex(project="p", region="europe-west4"), "vertex", "VertexOptions"),
        (AIPlatform(project="p", region="us-central1"), "ai-platform", "GoogleCloudOptions"),
        (Kubernetes(namespace="ml"), "kubeflow", "TFJobOptions"),
        (TFJob(namespace="ml", clean_pod_policy="All"), "kubeflow", "TFJobOptions"),
        (JobSet(namespace="ml", queue="q"), "jobset", "KubernetesOptions"),
        (TrainJob(namespace="ml"), "trainjob", "KubernetesOptions"),
    ],
)
def test_each_settings_object_selects_its_backend_and_fills_its_options(platform: object, backend: str, options: str) -> None:
    job = Job(image="gcr.io/p/t:1", module="trainer.task", workers=1, backend=platform)  # type: ignore[arg-type]
    assert job.backend_name == backend and type(job.options).__name__ == options
    for f in dataclasses.fields(platform):  # type: ignore[arg-type]
        if hasattr(job.options, f.name) and f.name not in ("project", "region"):
            assert getattr(job.options, f.name) == getattr(platform, f.name), f.name


def test_clients_in_the_settings_go_to_a_backend_object_of_their_own() -> None:
    api = object()
    job = Job(image="gcr.io/p/t:1", module="trainer.task", backend=JobSet(api_client=api, namespace="ml"))
    assert job.backend.api_client is api and job.backend.name == "jobset"
    from tfjob.backends import get_backend

    assert get_backend("jobset").api_client is None  # the registry's backend is left alone


@pytest.mark.parametrize(
    ("keywords", "message"),
    [
        ({"chief": Replicas(2)}, r"^chief=Replicas\(2, …\): the chief runs exactly 1 replica; add the others as workers$"),
        ({"backend": Vertex}, r"^backend=Vertex is the class; give its settings: backend=Vertex\(\.\.\.\)$"),
        (
            {"backend": 3},
            r"^backend=3 is not a backend: give its settings \(Local\(\.\.\.\), Vertex\(\.\.\.\), Kubernetes\(\.\.\.\)…\), a name ",
        ),
        ({"workers": "3"}, r"^workers='3' must be a whole number$"),
        ({"workers": Replicas(0)}, r"^workers=0 must be ≥ 1; leave workers out for a job without that role$"),
        ({"workers": Replicas(2, accelerator="NVIDIA_L4:x")}, r"count 'x' is not a whole number ≥ 1"),
    ],
)
def test_a_wrong_typed_value_is_one_error_naming_it(keywords: dict[str, object], message: str) -> None:
    with pytest.raises(SpecError, match=message):
        Job(image="gcr.io/p/t:1", module="trainer.task", **keywords)  # type: ignore[arg-type]


def test_a_misspelt_or_misplaced_setting_is_refused_when_run_unchecked() -> None:
    """What mypy reports (tests/test_install.py) Python refuses too, before anything is built."""
    with pytest.raises(TypeError, match=r"unexpected keyword argument 'spot'"):
        Kubernetes(namespace="ml", spot=True)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match=r"unexpected keyword argument 'namespce'"):
        Job(image="gcr.io/p/t:1", namespce="ml")  # type: ignore[call-arg]
    with pytest.raises(TypeError, match=r"takes from 1 to 3 positional arguments"):
        Job("trainer", "trainer.task", "vertex")  # type: ignore[misc]


def test_the_package_ships_its_types() -> None:
    root = Path(tfjob.__file__).parent
    assert (root / "py.typed").is_file()
    text = (Path(__file__).resolve().parents[1] / "pyproject.toml").read_text()
    assert '"tfjob" = ["py.typed"]' in text


@pytest.mark.parametrize("cls", [Job, tfjob.Tuning, Replicas, *PLATFORMS], ids=lambda c: c.__name__)
def test_no_public_constructor_takes_arbitrary_keywords(cls: type) -> None:
    """Every argument of the job model's classes is named and typed: a misspelt one
    (``Tuning(job, workerz=3)``) is a type checker's error, not a value passed on."""
    loose = [p.name for p in inspect.signature(cls).parameters.values() if p.kind in (p.VAR_KEYWORD, p.VAR_POSITIONAL)]
    assert loose == []


def test_strategy_and_tf_config_are_checked_when_the_job_is_made() -> None:
    from typing import get_args

    from tfjob.cluster.dispatch import STRATEGIES
    from tfjob.cluster.task import TF_CONFIG_MODES
    from tfjob.model import Strategy, TFConfigMode

    # The enumerations the API types are the ones the bootstrap reads.
    assert set(get_args(Strategy)) == set(STRATEGIES) and set(get_args(TFConfigMode)) == set(TF_CONFIG_MODES)
    with pytest.raises(SpecError, match=r"^strategy='paramter-server' is not known \(did you mean 'parameter-server'\?\); choose one of "):
        Job("trainer/", "trainer.task", strategy="paramter-server")  # type: ignore[arg-type]
    with pytest.raises(SpecError, match=r"^tf_config='tf3' is not known \(did you mean 'tf2'\?\); choose one of platform, tf2$"):
        Job("trainer/", "trainer.task", tf_config="tf3")  # type: ignore[arg-type]
    with pytest.raises(SpecError, match=r"^strategy=3 must be text"):
        Job("trainer/", "trainer.task", strategy=3)  # type: ignore[arg-type]
    job = Job("trainer/", "trainer.task", workers=2, ps=1, strategy="parameter-server", tf_config="tf2")
    assert (job.options.strategy, job.options.tf_config) == ("parameter-server", "tf2")


def test_a_study_takes_a_job() -> None:
    from tfjob.tuning.study import MetricSpec, ParameterSpec, StudySpec

    study = StudySpec(MetricSpec("loss", "MINIMIZE"), (ParameterSpec("lr", "DOUBLE", 0.001, 0.1),), max_trials=2)
    job = Job("trainer/", "trainer.task", workers=Replicas(2), backend=Local())
    tuning = tfjob.Tuning(job, study, max_trials=1, algorithm="random")
    assert tuning.job is job and tuning.study.max_trials == 1 and tuning.study.algorithm == "RANDOM_SEARCH"
    with pytest.raises(tfjob.UsageError, match=r"^job='trainer/' is not a Job; give the job every trial runs"):
        tfjob.Tuning("trainer/", study)  # type: ignore[arg-type]


def test_a_replica_s_boot_disk_still_works_where_it_was_given_with_a_deprecation_line() -> None:
    with pytest.warns(
        FutureWarning, match=r"Replicas\(boot_disk_type=…, boot_disk_size=…\) is deprecated: .*Vertex\(<role>_boot_disk_type=…"
    ):
        old = Job(
            "trainer",
            "trainer.task",
            name="d",
            workers=Replicas(2, boot_disk_type="pd-ssd", boot_disk_size=200),
            backend=Vertex(project="p"),
        )
    new = Job(
        "trainer",
        "trainer.task",
        name="d",
        workers=2,
        backend=Vertex(project="p", worker_boot_disk_type="pd-ssd", worker_boot_disk_size=200),
    )
    assert old.options == new.options and old.options.boot_disk("worker") == ("pd-ssd", 200)  # type: ignore[attr-defined]


@pytest.mark.parametrize("cls", [Job, tfjob.Tuning], ids=lambda c: c.__name__)
def test_no_public_method_takes_arbitrary_keywords(cls: type) -> None:
    """The flat keywords (the CLI's flags, config files) are parsed by tfjob._internal's
    job_from_keywords / tuning_from_keywords, which take them as one mapping: no public method
    of Job or Tuning takes ``**kwargs``."""
    loose = [
        f"{name}(**{p.name})"
        for name, member in inspect.getmembers(cls, callable)
        if not name.startswith("_")
        for p in inspect.signature(member).parameters.values()
        if p.kind is p.VAR_KEYWORD
    ]
    assert loose == []
    assert not hasattr(cls, "from_keywords")
