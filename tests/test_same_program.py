"""Task by task, the local plan starts the same program with the same arguments as the rendered
Vertex AI, AI Platform and Kubeflow requests (issue 12.1: one source of truth)."""

from __future__ import annotations

import pytest

from tfjob.model import SubmitOptions
from tfjob.runtime.engine import Engine
from tfjob.backends.local.plan import build_cluster, build_task_plans
from tfjob.cluster.dispatch import job_strategy
from tfjob.backends.aiplatform.render import render_training_input
from tfjob.backends.kubeflow.render import render_tfjob
from tfjob.backends.vertex.render import render_custom_job
from tfjob.description.request import build_spec

IMAGE = "europe-docker.pkg.dev/p/r/trainer:1"
REPLICA = {"chief": "Chief", "worker": "Worker", "ps": "PS", "evaluator": "Evaluator"}
LEGACY = {"chief": "master", "worker": "worker", "ps": "parameterServer", "evaluator": "evaluator"}


def _local(spec, dialect: str, options: SubmitOptions) -> dict[str, list[str]]:  # type: ignore[no-untyped-def]
    """What each local task starts: the bootstrap process, or (for an image) the container's
    entrypoint and arguments after the image in ``podman run``."""
    strategy = job_strategy(spec, options.strategy)
    cluster = build_cluster(spec, list(range(6000, 6000 + len(spec.tasks()))))
    plans = build_task_plans(
        spec, cluster, dialect=dialect, strategy=strategy, python="python", source_root="/src", environ={}, job_id="j",
        tf_config=options.tf_config, engine=Engine("podman", "/usr/bin/podman"),
    )  # fmt: skip
    out = {}
    for plan in plans:
        if spec.image:
            assert plan.argv[:2] == ["/usr/bin/podman", "run"], plan.argv
            entrypoint = plan.argv[plan.argv.index("--entrypoint") + 1]
            argv = plan.argv[plan.argv.index(IMAGE) + 1 :]
        else:
            entrypoint = "tfjob-bootstrap"
            argv = plan.argv[plan.argv.index("tfjob.container.bootstrap") + 1 :]
        if spec.image:
            argv.remove("--check-port")  # a local container only: a port picked on this machine may be taken
        out[plan.name] = [entrypoint, *argv]
    return out


CASES = {
    "default": SubmitOptions(),
    "parameter-server": SubmitOptions(strategy="parameter-server"),
    "tf2": SubmitOptions(tf_config="tf2"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_kubeflow_pods_start_what_the_local_tasks_start(case: str) -> None:
    options = CASES[case]
    spec = build_spec(
        dict(name="j", module="trainer.task", image=IMAGE, workers=2, ps=1, evaluators=1, job_dir="gs://b/jd", args=("--steps", "5"))
    )
    local = _local(spec, "kubeflow", options)
    manifest = render_tfjob(spec, options)
    for name, argv in local.items():
        role = name.split("-")[0]
        (container,) = manifest["spec"]["tfReplicaSpecs"][REPLICA[role]]["template"]["spec"]["containers"]
        assert [*container["command"], *container["args"]] == argv, name


@pytest.mark.parametrize("case", sorted(CASES))
def test_vertex_containers_start_what_the_local_tasks_start(case: str) -> None:
    options = CASES[case]
    spec = build_spec(
        dict(name="j", module="trainer.task", image=IMAGE, workers=2, ps=1, evaluators=1, job_dir="gs://b/jd", args=("--steps", "5"))
    )
    local = _local(spec, "vertex", options)
    pools = render_custom_job(spec, options)["jobSpec"]["workerPoolSpecs"]
    for name, argv in local.items():
        container = pools[list(REPLICA).index(name.split("-")[0])]["containerSpec"]
        assert [*container["command"], *container.get("args", [])] == argv, name


@pytest.mark.parametrize("case", sorted(CASES))
def test_ai_platform_containers_start_what_the_local_tasks_start_but_the_job_dir(case: str) -> None:
    options = CASES[case]
    spec = build_spec(
        dict(name="j", module="trainer.task", image=IMAGE, workers=2, ps=1, evaluators=1, job_dir="gs://b/jd", args=("--steps", "5"))
    )
    local = _local(spec, "ai-platform", options)
    body = render_training_input(spec, options)
    for name, argv in local.items():
        config = body[f"{LEGACY[name.split('-')[0]]}Config"]
        # AI Platform itself appends --job-dir (the request's jobDir): locally the bootstrap does.
        assert argv[-len(spec.args) - 3 : -len(spec.args) - 1] == ["--job-dir", "gs://b/jd"]
        without = argv[: -len(spec.args) - 3] + argv[-len(spec.args) - 1 :]
        assert [*config["containerCommand"], *body.get("args", [])] == without, name
        assert body["jobDir"] == "gs://b/jd"


def _local_package(spec, dialect: str, options: SubmitOptions) -> dict[str, list[str]]:  # type: ignore[no-untyped-def]
    """What each local task of a package job runs after ``python -m``: the module and its arguments."""
    strategy = job_strategy(spec, options.strategy)
    cluster = build_cluster(spec, list(range(6000, 6000 + len(spec.tasks()))))
    plans = build_task_plans(
        spec, cluster, dialect=dialect, strategy=strategy, python="python", source_root="/src", environ={}, job_id="j",
        tf_config=options.tf_config,
    )  # fmt: skip
    out = {}
    for plan in plans:
        argv = plan.argv[plan.argv.index("-m") + 1 :]
        assert "--check-port" not in argv  # the launcher checks a process task's port as it starts it
        out[plan.name] = argv
    return out


@pytest.mark.parametrize("case", sorted(CASES))
def test_vertex_package_replicas_run_the_bootstrap_as_the_local_tasks_do(case: str) -> None:
    # Every pool's entry point is the bootstrap (issue 12.1), so the job's --strategy and
    # --tf-config act on Vertex AI exactly as they do locally.
    options = CASES[case]
    spec = build_spec(
        dict(name="j", module="trainer.task", package="/src", workers=2, ps=1, evaluators=1, job_dir="gs://b/jd", args=("--steps", "5"))
    )
    local = _local_package(spec, "vertex", options)
    pools = render_custom_job(spec, options, ["gs://b/p.tar.gz"])["jobSpec"]["workerPoolSpecs"]
    for name, argv in local.items():
        package = pools[list(REPLICA).index(name.split("-")[0])]["pythonPackageSpec"]
        assert package["pythonModule"] == "tfjob.container.bootstrap"
        assert [package["pythonModule"], *package["args"]] == argv, name


@pytest.mark.parametrize("case", sorted(CASES))
def test_ai_platform_package_replicas_run_the_bootstrap_as_the_local_tasks_do(case: str) -> None:
    options = CASES[case]
    spec = build_spec(dict(name="j", module="trainer.task", package="/src", workers=2, ps=1, job_dir="gs://b/jd", args=("--steps", "5")))
    local = _local_package(spec, "ai-platform", options)
    body = render_training_input(spec, options)
    for name, argv in local.items():
        # AI Platform appends --job-dir (jobDir) to the args; locally the bootstrap appends it to the trainer's.
        i = argv.index("--job-dir")
        assert argv[i : i + 2] == ["--job-dir", "gs://b/jd"]
        assert [body["pythonModule"], *body["args"]] == argv[:i] + argv[i + 2 :], name
    assert body["jobDir"] == "gs://b/jd"
    assert body["packageUris"][-1].endswith("/packages/tfjob_bootstrap-0.1.0-py3-none-any.whl")


def test_package_pools_install_the_bootstrap_wheel_after_the_trainer() -> None:
    import hashlib

    from tfjob.container.wheel import build_bytes

    name, data = build_bytes()
    spec = build_spec(dict(name="j", module="trainer.task", package="/src", workers=1, packages=("gs://b/extra.whl",)))
    pools = render_custom_job(spec, SubmitOptions(), ["gs://b/p.tar.gz", "gs://b/extra.whl"])["jobSpec"]["workerPoolSpecs"]
    for pool in pools:
        uris = pool["pythonPackageSpec"]["packageUris"]
        assert uris == ["gs://b/p.tar.gz", "gs://b/extra.whl", f"gs://b/tfjob/packages/{hashlib.sha256(data).hexdigest()}/{name}"]
