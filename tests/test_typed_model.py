"""The typed job model end to end (issue 35): the knobs declare where each value lands, the
CLI's flat keywords and ``Job(...)``'s typed values become the same :class:`JobRequest`, and a
config file is laid over it in typed form."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from tfjob import Job, Replicas, Resources, Vertex
from tfjob.backends import knobs, options_type
from tfjob.description.replicas import ROLES, Accelerator
from tfjob.description.request import PLACES, JobRequest
from tfjob.description.shape import RoleRequest, Shape
from tfjob.job.keywords import lands, sort_given, typed_given
from tfjob.runtime.settings import Settings


def _fields(cls: type) -> set[str]:
    return {f.name for f in dataclasses.fields(cls)}


def _resolves(path: str) -> bool:
    """Whether ``path`` names a field of the typed model."""
    part, _, rest = path.partition(".")
    if part not in PLACES:
        return False
    if part == "config":
        return rest == ""
    if part == "job":
        return rest in _fields(JobRequest) - {"shape"}
    if part == "shape":
        return rest in _fields(Shape) - {"roles"}
    if part == "settings":
        return rest in _fields(Settings) - {"sources"}
    if part == "options":
        return any(rest in _fields(options_type(b)) for b in ("local", "vertex", "kubeflow", "jobset", "trainjob", "ai-platform"))
    head, _, sub = rest.partition(".")
    if head == "resources" and sub:
        return sub in _fields(Resources)
    return rest in _fields(RoleRequest)


def test_every_knob_says_where_in_the_typed_model_it_lands() -> None:
    wrong = {k.name: k.lands for k in knobs().values() if not _resolves(k.lands)}
    assert not wrong, f"knobs whose `lands` names no field of the typed model: {wrong}"
    # And the keywords with no flag of their own too.
    wrong = {name: path for name, path in lands().items() if not _resolves(path)}
    assert not wrong


def test_a_role_knob_lands_in_its_role_and_a_platform_knob_in_the_options() -> None:
    table = lands()
    for role in ROLES:
        assert table[f"{role}_machine_type"] == f"{role}.machine_type"
        assert table[f"{role}_cpu"] == f"{role}.resources.cpu"
    assert (table["workers"], table["scale_tier"], table["kms_key"], table["project"], table["config"]) == (
        "worker.count",
        "shape.scale_tier",
        "options.kms_key",
        "settings.project",
        "config",
    )


def test_the_cli_keywords_and_the_typed_values_make_the_same_request() -> None:
    flat = sort_given(
        {
            "workers": 3,
            "worker_machine_type": "n2-standard-8",
            "worker_accelerator": "NVIDIA_L4:1,NVIDIA_TESLA_T4:1",
            "ps": 2,
            "evaluator_cpu": "2",
            "evaluator_memory": "8Gi",
            "evaluators": 1,
            "chief_image": "gcr.io/p/chief:1",
            "module": "trainer.task",
            "args": ["--steps", "5"],
        }
    )
    typed = typed_given(
        {"module": "trainer.task", "args": ["--steps", "5"]},
        Replicas(image="gcr.io/p/chief:1"),
        Replicas(3, machine_type="n2-standard-8", accelerator="NVIDIA_L4:1,NVIDIA_TESLA_T4:1"),
        2,
        Replicas(1, resources=Resources(cpu="2", memory="8Gi")),
    )
    assert flat.request == typed.request
    assert flat.fallbacks == typed.fallbacks == ("worker_accelerator=NVIDIA_TESLA_T4:1",)
    worker = typed.request.role("worker")
    assert (worker.count, worker.machine_type, worker.accelerator) == (3, "n2-standard-8", Accelerator("NVIDIA_L4", 1))
    assert typed.request.role("evaluator").resources == Resources(cpu="2", memory="8Gi")


def test_replicas_are_not_turned_into_flat_keywords() -> None:
    """A Replicas value becomes its role's request as it is: there is no `<role>_<field>` form of it."""
    assert not hasattr(Replicas, "keywords")
    job = Job("gs://b/t.tar.gz", "trainer.task", workers=Replicas(2, env={"A": "1"}), backend=Vertex(project="p", region="us-central1"))
    assert job._given.request.role("worker") == RoleRequest(count=2, env={"A": "1"})
    assert job.spec.env_for("worker") == {"A": "1"}


def test_a_config_file_is_laid_under_the_typed_job(tmp_path: Path) -> None:
    config = tmp_path / "job.json"
    config.write_text(
        json.dumps(
            {
                "trainingInput": {
                    "scaleTier": "CUSTOM",
                    "masterType": "n1-standard-8",
                    "workerType": "n1-highmem-8",
                    "workerCount": 4,
                    "workerConfig": {"acceleratorConfig": {"type": "NVIDIA_TESLA_T4", "count": 1}},
                    "args": ["--from-file"],
                }
            }
        )
    )
    job = Job("gs://b/t.tar.gz", "trainer.task", workers=Replicas(2), config=config, backend=Vertex(project="p", region="us-central1"))
    worker = job.spec.pool("worker")
    assert worker is not None
    # The typed count wins; what it leaves unsaid (the machine, the accelerator) comes from the file.
    assert (worker.replicas, worker.machine.type, worker.machine.accelerator) == (2, "n1-highmem-8", Accelerator("NVIDIA_TESLA_T4", 1))
    assert job.spec.args == ("--from-file",)


def test_poll_interval_given_to_job_reaches_its_options() -> None:
    job = Job("gs://b/t.tar.gz", "trainer.task", poll_interval=7.5, backend=Vertex(project="p", region="us-central1"))
    assert job.options.poll_interval == 7.5


@pytest.mark.parametrize(
    ("keywords", "knob", "words"),
    [
        ({"workers": 2, "worker_cpu": "x"}, "worker_cpu", "CPUs"),
        ({"workers": 2, "worker_accelerator": "NVIDIA_L4:x"}, "worker_accelerator", "count"),
        ({"scale_tier": "STANDARD_9"}, "scale_tier", "not a scale tier"),
    ],
)
def test_a_bad_value_is_named_by_its_knob_where_it_lands(keywords: dict[str, object], knob: str, words: str) -> None:
    from tfjob.errors import SpecError

    with pytest.raises(SpecError, match=words) as caught:
        sort_given({"module": "trainer.task", **keywords})
    assert caught.value.field == knob


def test_a_role_s_env_and_the_chief_of_the_wrong_kind_are_named() -> None:
    from tfjob.errors import SpecError

    with pytest.raises(SpecError, match="must be a mapping") as caught:
        Job("gs://b/t.tar.gz", "trainer.task", workers=Replicas(2, env=["A=1"]))  # type: ignore[arg-type]
    assert str(caught.value).startswith("workers=Replicas(…, env=['A=1'])")
    with pytest.raises(SpecError, match="must be True, False"):
        Job("gs://b/t.tar.gz", "trainer.task", chief="no")  # type: ignore[arg-type]
