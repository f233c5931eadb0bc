"""Legacy AI Platform Training ``Job`` bodies: golden files, job ids, what cannot be expressed.

Golden files live in tests/golden/aiplatform/. After an intended change of the rendering,
regenerate them with ``pytest --update-golden tests/test_render_aiplatform.py`` and
review the diff.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable

import pytest
from helpers import cli_words, golden_text

from tfjob._internal import job_from_keywords
from tfjob.backends import get_backend
from tfjob.backends.base import GoogleCloudOptions
from tfjob.config.job import parse_job_config
from tfjob.errors import BackendError, SpecError
from tfjob.backends.aiplatform.render import build_job_id, format_duration, render_job, render_training_input
from tfjob.description.spec import JobSpec
from tfjob.description.request import build_spec

GOLDEN = Path(__file__).parent / "golden" / "aiplatform"


def spec(**kwargs: Any) -> JobSpec:
    kwargs.setdefault("name", "census-20260101-120000")
    kwargs.setdefault("module", "trainer.task")
    return build_spec(dict(**kwargs))


#: name → (spec, options): every shape of legacy body.
CASES: dict[str, Callable[[], tuple[JobSpec, GoogleCloudOptions]]] = {
    # The AI Platform docs' CUSTOM cluster, from an already-staged package.
    "docs_custom": lambda: (
        spec(
            scale_tier="CUSTOM",
            chief_machine_type="n1-highcpu-16",
            workers=9,
            worker_machine_type="n1-highcpu-16",
            ps=3,
            ps_machine_type="n1-highmem-8",
            evaluators=1,
            evaluator_machine_type="n1-highcpu-16",
            package="gs://census-bucket/staging/trainer-0.1.tar.gz",
            job_dir="gs://census-bucket/output",
            labels={"team": "census"},
            timeout=7200,
        ),
        GoogleCloudOptions(region="us-central1"),
    ),
    # `tfjob submit trainer/ -m trainer.task --workers 4 --ps 2`: no tier means CUSTOM with the defaults.
    "workers_ps": lambda: (
        spec(package="trainer/", workers=4, ps=2, args=["--train-steps", "1000"]),
        GoogleCloudOptions(region="us-central1", staging_bucket="census-bucket"),
    ),
    # A predefined tier is the tier alone; the local trainer is staged under the gs:// job dir.
    "standard_1": lambda: (
        spec(
            scale_tier="STANDARD_1",
            package="/home/me/census/trainer",
            job_dir="gs://census-bucket/output",
            runtime_version="2.11",
            python_version="3.7",
        ),
        GoogleCloudOptions(region="europe-west1"),
    ),
    "basic_gpu": lambda: (spec(scale_tier="BASIC_GPU", package="gs://census-bucket/t.tar.gz"), GoogleCloudOptions()),
    # Legacy GPU names and explicit accelerators, extra packages, every optional field.
    "gpus_everything": lambda: (
        spec(
            name="census gpu/v2",
            scale_tier="CUSTOM",
            chief_machine_type="complex_model_m_gpu",
            workers=2,
            worker_machine_type="standard_v100",
            worker_accelerator="type=nvidia-tesla-v100,count=2",
            ps=1,
            ps_machine_type="large_model",
            package="dist/trainer-0.2.tar.gz",
            packages=["gs://census-bucket/deps/utils-1.0.tar.gz", "wheels/extra-2.0-py3-none-any.whl"],
            args=["--verbosity", "DEBUG"],
            service_account="trainer@census-project.iam.gserviceaccount.com",
            use_chief=True,
            timeout=5400.5,
        ),
        GoogleCloudOptions(
            region="us-east1",
            staging_bucket="gs://census-bucket/",
            network="projects/12345/global/networks/default",
            enable_web_access=True,
        ),
    ),
    # A custom container job: the master's image for all, one role with its own; a Cloud TPU worker.
    "container_tpu": lambda: (
        spec(
            name="9-lives",
            module=None,
            image="gcr.io/census-project/trainer:1",
            scale_tier="CUSTOM",
            chief_machine_type="n1-standard-8",
            workers=1,
            worker_machine_type="cloud-tpu",
            worker_accelerator="type=TPU_V3,count=8",
            worker_image="gcr.io/census-project/trainer:tpu",
            args=["--epochs", "5"],
        ),
        GoogleCloudOptions(region="us-central1"),
    ),
    # One image for every task, given a module: each *Config names the image and starts the
    # module through the bootstrap; it reads back as the job's image and module.
    "container_shared_image": lambda: (
        spec(image="gcr.io/census-project/trainer:1", workers=3, ps=1, evaluators=1),
        GoogleCloudOptions(region="us-central1"),
    ),
    # Nowhere to stage a local trainer: the body keeps the path (it reads back as a --config).
    "local_package": lambda: (spec(package="trainer/", evaluators=1), GoogleCloudOptions()),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_render_matches_golden_file(case: str) -> None:
    job_spec, options = CASES[case]()
    body = render_job(job_spec, options)
    path = GOLDEN / f"{case}.json"
    text = json.dumps(body, indent=2, sort_keys=False) + "\n"
    assert text == golden_text(path, text), (
        f"{case}: the rendering differs from {path.name}; if intended, regenerate with `pytest --update-golden`"
    )


@pytest.mark.parametrize("case", sorted(CASES))
def test_every_rendered_body_reads_back_as_the_same_job(case: str) -> None:
    job_spec, options = CASES[case]()
    body = render_job(job_spec, options)
    values = parse_job_config(json.loads(json.dumps(body)), f"{case}.json").values
    for name in ("region", "network", "enable_web_access"):  # submission options, not part of the spec
        assert (values.pop(name, None) or None) == (getattr(options, name, None) or None)
    again = build_spec(dict(**values))
    assert again.pools == job_spec.pools
    assert (again.module, again.args, again.labels, again.timeout) == (job_spec.module, job_spec.args, job_spec.labels, job_spec.timeout)
    assert [again.image_for(r) for r in ("chief", "worker")] == [job_spec.image_for(r) for r in ("chief", "worker")]


def test_the_rendered_cluster_of_the_docs_example() -> None:
    job_spec, options = CASES["docs_custom"]()
    body = render_training_input(job_spec, options)
    assert body["scaleTier"] == "CUSTOM"
    assert (body["masterType"], body["workerType"], body["parameterServerType"], body["evaluatorType"]) == (
        "n1-highcpu-16",
        "n1-highcpu-16",
        "n1-highmem-8",
        "n1-highcpu-16",
    )
    assert (body["workerCount"], body["parameterServerCount"], body["evaluatorCount"]) == ("9", "3", "1")
    assert body["scheduling"] == {"maxRunningTime": "7200s"}
    assert "masterCount" not in body


def test_a_predefined_tier_renders_no_machine_types_or_counts() -> None:
    body = render_training_input(*CASES["standard_1"]())
    assert body["scaleTier"] == "STANDARD_1"
    assert not [k for k in body if k.endswith(("Type", "Count"))]


@pytest.mark.parametrize(
    ("name", "job_id"),
    [
        ("census-20260101-120000", "census_20260101_120000"),
        ("census_v2", "census_v2"),
        ("Census Model (v2)", "Census_Model__v2_"),
        ("9-lives", "job_9_lives"),
        ("_private", "job__private"),
        ("x" * 200, "x" * 128),
    ],
)
def test_job_id_is_letters_digits_underscores_starting_with_a_letter(name: str, job_id: str) -> None:
    assert build_job_id(name) == job_id


@pytest.mark.parametrize(("seconds", "text"), [(7200, "7200s"), (7200.0, "7200s"), (1.5, "1.5s"), (0.25, "0.25s")])
def test_durations_are_google_duration_strings(seconds: float, text: str) -> None:
    assert format_duration(seconds) == text


@pytest.mark.parametrize(
    ("kwargs", "flag"),
    [
        (dict(env={"A": "1"}), "--env"),
        (dict(command=["python", "t.py"], image="gcr.io/p/t:1", module=None), "--command"),
    ],
)
def test_what_the_legacy_api_cannot_express_is_refused(kwargs: dict[str, Any], flag: str) -> None:
    with (
        pytest.raises(
            SpecError, match=f"{flag} has no equivalent in legacy AI Platform Training; leave it out, or render with --backend vertex"
        ),
        cli_words(),
    ):
        render_job(spec(**kwargs), GoogleCloudOptions())


@pytest.mark.parametrize(
    ("keywords", "flag"),
    [
        ({"tensorboard": "projects/1/locations/us-central1/tensorboards/2"}, "tensorboard"),
        ({"restart_job_on_worker_restart": True}, "restart_job_on_worker_restart"),
    ],
)
def test_vertex_ais_own_knobs_are_not_the_legacy_backends(keywords: dict[str, Any], flag: str) -> None:

    with pytest.raises(SpecError, match=f"^{flag} is for the vertex backend, not ai-platform; leave it out, or choose backend='vertex'$"):
        job_from_keywords("gs://b/t.tar.gz", "trainer.task", {"backend": "ai-platform", **keywords})


def test_labels_are_left_out_when_there_are_none() -> None:
    assert set(render_job(spec(package="gs://b/t.tar.gz"), GoogleCloudOptions())) == {"jobId", "trainingInput"}
    assert render_job(spec(package="gs://b/t.tar.gz", labels={"a": "b"}), GoogleCloudOptions())["labels"] == {"a": "b"}


def test_the_backend_renders_and_explains_that_the_service_is_gone() -> None:
    backend = get_backend("ai-platform")
    job_spec, options = CASES["docs_custom"]()
    assert backend.name == "ai-platform"
    assert backend.render(job_spec, options) == render_job(job_spec, options)
    calls = {
        "submit": lambda: backend.submit(job_spec, options),
        "status": lambda: backend.status("census_1"),
        "logs": lambda: backend.logs("census_1"),
        "cancel": lambda: backend.cancel("census_1"),
        "list": lambda: backend.list(),
    }
    for what, call in calls.items():
        with pytest.raises(BackendError, match=r"legacy AI Platform Training shut down on 2025-01-31.*Use --backend vertex, its successor"):
            call()
