"""What each task of a local cluster is given (pure), and how the trainer is found."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import cli_words, need_in_ci

from tfjob.backends.local.options import LocalOptions
from tfjob.backends.local.backend import LocalBackend
from tfjob.cluster.task import parse_cluster_spec, parse_tf_config
from tfjob.errors import SpecError, UsageError
from tfjob.backends.local.plan import (
    base_environment,
    build_cluster,
    build_task_plans,
    check_dialect,
    find_source_root,
    platform_variables,
    render_job_info,
)
from tfjob.cluster.dispatch import job_strategy
from tfjob.backends.local.ports import ephemeral_range, pick_ports, pick_range, port_is_free, port_taken
from tfjob.description.request import build_spec


def _spec(**kw: object):
    values = {"name": "probe-job", "module": "trainer.task", "package": "/src", "workers": 4, "ps": 2}
    values.update(kw)
    return build_spec(values)


def _plans(spec, dialect: str, environ: dict[str, str] | None = None, **kw: object):
    ports = list(range(5000, 5000 + len(spec.tasks())))
    return build_task_plans(
        spec,
        build_cluster(spec, ports),
        dialect=dialect,
        strategy="parameter-server",
        python="/usr/bin/python3",
        source_root="/src",
        environ=environ or {},
        job_id="probe-abc123",
        **kw,
    )


def test_cluster_gives_each_task_its_own_loopback_port() -> None:
    spec = _spec(evaluators=1)
    cluster = build_cluster(spec, [7000, 7001, 7002, 7003, 7004, 7005, 7006, 7007])
    assert cluster == {
        "chief": ["127.0.0.1:7000"],
        "worker": ["127.0.0.1:7001", "127.0.0.1:7002", "127.0.0.1:7003", "127.0.0.1:7004"],
        "ps": ["127.0.0.1:7005", "127.0.0.1:7006"],
        "evaluator": ["127.0.0.1:7007"],
    }
    with pytest.raises(ValueError, match="8 tasks need 8 ports, got 2"):
        build_cluster(spec, [1, 2])


@pytest.mark.parametrize(
    ("dialect", "use_chief", "primary"),
    [("vertex", None, "chief"), ("ai-platform", None, "master"), ("ai-platform", True, "chief"), ("kubeflow", None, "chief")],
)
def test_every_task_gets_its_own_tf_config_in_the_dialect(dialect: str, use_chief: bool | None, primary: str) -> None:
    spec = _spec(use_chief=use_chief)
    plans = _plans(spec, dialect)
    assert [p.name for p in plans] == ["chief-0", "worker-0", "worker-1", "worker-2", "worker-3", "ps-0", "ps-1"]
    seen = set()
    for plan in plans:
        raw = json.loads(plan.env["TF_CONFIG"])
        assert primary in raw["cluster"] and raw["cluster"]["worker"] == [f"127.0.0.1:{p}" for p in range(5001, 5005)]
        info = parse_tf_config(plan.env["TF_CONFIG"])
        assert (info.role, info.index) == (plan.role, plan.index)
        assert info.cluster.task_address(plan.role, plan.index) == plan.address
        seen.add((raw["task"]["type"], raw["task"]["index"]))
    assert len(seen) == 7
    chief = json.loads(plans[0].env["TF_CONFIG"])
    assert chief["task"] == {"type": primary, "index": 0}


def test_vertex_tasks_also_get_cluster_spec_and_the_job_dirs() -> None:
    plans = _plans(_spec(job_dir="/out"), "vertex")
    worker = next(p for p in plans if p.name == "worker-2")
    spec = json.loads(worker.env["CLUSTER_SPEC"])
    assert spec["task"] == {"type": "workerpool1", "index": 2}
    assert spec["job"]["workerPoolSpecs"][2]["replicaCount"] == "2"
    assert parse_cluster_spec(worker.env["CLUSTER_SPEC"]).role == "worker"
    assert worker.env["AIP_MODEL_DIR"] == "/out/model/"
    assert "--job-dir" not in worker.argv  # Vertex AI passes no --job-dir (AIP_MODEL_DIR instead)
    legacy = _plans(_spec(job_dir="/out"), "ai-platform")[1]
    assert legacy.argv[-3:] == ["--job-dir", "/out", "--"]  # AI Platform does


def test_the_bootstrap_command_carries_module_strategy_and_user_args() -> None:
    plan = _plans(_spec(args=("--steps", "5")), "kubeflow")[0]
    assert plan.argv == [
        "/usr/bin/python3", "-m", "tfjob.container.bootstrap", "--module", "trainer.task",
        "--strategy", "parameter-server", "--", "--steps", "5",
    ]  # fmt: skip
    assert plan.cwd == "/src"
    assert plan.env["PYTHONPATH"] == "/src"
    assert plan.env["PYTHONUNBUFFERED"] == "1" and plan.env["TFJOB_JOB_ID"] == "probe-abc123"
    assert plan.port == 5000


def test_inherited_cluster_variables_never_leak_into_a_task() -> None:
    environ = {"TF_CONFIG": '{"task": {"type": "worker"}}', "AIP_MODEL_DIR": "gs://x", "PATH": "/bin", "PYTHONPATH": "/lib"}
    plan = _plans(_spec(env={"MY_FLAG": "1"}), "kubeflow", environ)[1]
    assert "AIP_MODEL_DIR" not in plan.env and json.loads(plan.env["TF_CONFIG"])["task"]["index"] == 0
    assert plan.env["PATH"] == "/bin" and plan.env["MY_FLAG"] == "1"
    assert plan.env["PYTHONPATH"] == "/src:/lib"
    assert base_environment(environ) == {"PATH": "/bin", "PYTHONPATH": "/lib"}
    assert set(platform_variables(plan.env)) == {"TF_CONFIG"}


def test_job_info_per_dialect() -> None:
    spec = _spec(args=("--a",), job_dir="/out")
    assert render_job_info(spec, "kubeflow") is None
    assert render_job_info(spec, "gcloud-local") == {"job_name": "trainer.task", "args": ["--a"]}
    legacy = render_job_info(spec, "ai-platform")
    assert legacy is not None and legacy["worker_count"] == "4" and legacy["parameter_server_count"] == "2"
    # The job as tfjob submits it: the bootstrap is the module, the trainer's in its args.
    assert legacy["python_module"] == "tfjob.container.bootstrap" and legacy["job_dir"] == "/out"
    assert legacy["args"] == ["--module", "trainer.task", "--", "--a"]
    vertex = render_job_info(_spec(workers=None, ps=None, evaluators=1), "vertex", "module", "tf2")
    assert vertex is not None and [bool(p) for p in vertex["workerPoolSpecs"]] == [True, False, False, True]  # type: ignore[union-attr]
    package = vertex["workerPoolSpecs"][3]["pythonPackageSpec"]  # type: ignore[index]
    assert package["pythonModule"] == "tfjob.container.bootstrap"
    assert package["args"] == ["--module", "trainer.task", "--tf-config", "tf2", "--"]


def test_dialect_and_strategy_are_checked() -> None:
    assert check_dialect("ai-platform") == "ai-platform"
    with pytest.raises(SpecError, match="--dialect 'vertx' is not known.*vertex"), cli_words():
        check_dialect("vertx")
    assert job_strategy(_spec(), None) == "module"  # the default: every task runs the module
    assert job_strategy(_spec(), "auto") == "parameter-server"
    assert job_strategy(_spec(ps=None), "auto") == "module"
    assert job_strategy(_spec(), "multi-worker") == "module"
    with pytest.raises(UsageError, match="--strategy 'ps' is not known"), cli_words():
        job_strategy(_spec(), "ps")
    with pytest.raises(UsageError, match="parameter-server .* needs --workers ≥ 1 and --ps ≥ 1"), cli_words():
        job_strategy(_spec(ps=None), "parameter-server")


def test_render_shows_each_task_without_starting_anything() -> None:
    spec = _spec(workers=1, ps=1)
    rendered = LocalBackend().render(spec, LocalOptions(dialect="ai-platform"))
    assert rendered["strategy"] == "module"
    assert [t["name"] for t in rendered["tasks"]] == ["chief-0", "worker-0", "ps-0"]
    assert rendered["tasks"][0]["address"] == "127.0.0.1:27182"
    assert json.loads(rendered["tasks"][0]["env"]["TF_CONFIG"])["task"]["type"] == "master"


# -- the trainer's directory -----------------------------------------------------------------
def _tree(root: Path, *files: str) -> Path:
    for f in files:
        (root / f).parent.mkdir(parents=True, exist_ok=True)
        (root / f).write_text("")
    return root


def test_source_root_is_the_project_or_the_package_parent(tmp_path: Path) -> None:
    project = _tree(tmp_path / "proj", "trainer/__init__.py", "trainer/task.py")
    assert find_source_root(str(project), "trainer.task") == str(project)
    # gcloud's --package-path names the package itself.
    assert find_source_root(str(project / "trainer"), "trainer.task") == str(project)
    src = _tree(tmp_path / "srcproj", "pyproject.toml", "src/trainer/__init__.py", "src/trainer/task.py")
    assert find_source_root(str(src), "trainer.task") == str(src / "src")
    single = _tree(tmp_path / "single", "train.py")
    assert find_source_root(str(single), "train") == str(single)


def test_a_trainer_that_is_not_there_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="trainer directory .*missing.* does not exist"):
        find_source_root(str(tmp_path / "missing"), "trainer.task")
    other = _tree(tmp_path / "other", "model/__init__.py")
    with pytest.raises(UsageError, match="module 'trainer.task' is not in trainer directory.*expected trainer/"):
        find_source_root(str(other), "trainer.task")
    with pytest.raises(UsageError, match="Cloud Storage"):
        find_source_root("gs://bucket/trainer.tar.gz", "trainer.task")


def test_picked_ports_are_distinct_and_free() -> None:
    ports = pick_ports(41)
    assert len(set(ports)) == 41
    assert all(port_is_free(p) for p in ports)


def test_picked_ports_stay_out_of_the_range_outgoing_connections_draw_from() -> None:
    # Any process's connect() takes its source port from the ephemeral range: a task's port
    # there could be gone before the task listens (seconds later, after importing TensorFlow).
    span = pick_range(ephemeral_range())
    need_in_ci(span is not None, f"no room outside this machine's ephemeral range {ephemeral_range()}")
    assert span is not None
    first, last = ephemeral_range()  # type: ignore[misc]
    ports = pick_ports(200)
    assert all(span[0] <= p < span[1] and not first <= p <= last for p in ports)


def test_the_pick_range_is_below_the_ephemeral_range_else_above_else_the_kernel_s(tmp_path: Path) -> None:
    ranges = tmp_path / "ip_local_port_range"
    ranges.write_text("32768\t60999\n")
    assert ephemeral_range(str(ranges)) == (32768, 60999)
    assert pick_range((32768, 60999)) == (16384, 32768)
    assert pick_range((6000, 60000)) == (1024, 6000)  # what room there is below
    assert pick_range((2000, 40000)) == (40001, 56385)  # too little room below
    assert pick_range((1024, 65000)) is None  # none either side: bind to port 0
    assert pick_range(None) is None
    for text in ("", "nope", "60999 32768", "80 90000"):
        ranges.write_text(text)
        assert ephemeral_range(str(ranges)) is None
    assert ephemeral_range(str(tmp_path / "missing")) is None


def test_a_span_with_no_free_port_falls_back_to_the_kernel_s_choice() -> None:
    import socket

    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        held = holder.getsockname()[1]
        [port] = pick_ports(1, span=(held, held + 1))
        assert port != held and port_is_free(port)


def test_a_port_someone_listens_on_is_taken() -> None:
    import socket

    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        assert port_taken(port)
    assert not port_taken(port)  # closed: free again (a listener leaves no TIME_WAIT)


def test_tensorflow_info_lines_are_off_unless_the_user_asks_for_them() -> None:
    quiet = _plans(_spec(), "vertex")[0]
    assert quiet.env["TF_CPP_MIN_LOG_LEVEL"] == "1"
    inherited = _plans(_spec(), "vertex", {"TF_CPP_MIN_LOG_LEVEL": "0"})[0]
    assert inherited.env["TF_CPP_MIN_LOG_LEVEL"] == "0"
    asked = _plans(_spec(env={"TF_CPP_MIN_LOG_LEVEL": "3"}), "vertex")[0]
    assert asked.env["TF_CPP_MIN_LOG_LEVEL"] == "3"


def test_shipped_packages_are_mounted_read_only_and_installed_first() -> None:
    from tfjob.runtime.engine import Engine

    spec = _spec(image="localhost/tfjob:1", workers=1, ps=1)
    plans = _plans(
        spec, "vertex", engine=Engine("podman", "podman"), shipped=["/build/ab/trainer-0.0.0.tar.gz", "/x/extra-1.0-py3-none-any.whl"]
    )
    for plan in plans:
        argv = plan.argv
        assert "/build/ab/trainer-0.0.0.tar.gz:/tfjob/packages/trainer-0.0.0.tar.gz:ro" in argv
        image_at = argv.index("localhost/tfjob:1")
        assert argv[image_at + 1 : image_at + 6] == [
            "--package", "/tfjob/packages/trainer-0.0.0.tar.gz", "--package", "/tfjob/packages/extra-1.0-py3-none-any.whl", "--check-port",
        ]  # fmt: skip


def test_a_path_with_a_colon_is_not_mounted_into_containers() -> None:
    # '-v /out:/etc:/out:/etc:U' would not be the job dir podman mounts: refused in one line.
    from tfjob.runtime.engine import Engine

    engine = Engine("podman", "podman")
    with pytest.raises(SpecError, match=r"^--job-dir '/tmp/out:/etc' holds ':'.*choose a path without ':'$"):
        _plans(_spec(image="localhost/tfjob:1", workers=1, ps=1, job_dir="/tmp/out:/etc"), "vertex", engine=engine)
    with pytest.raises(SpecError, match=r"^a package '/b:/x/t-0.tar.gz' holds ':'"):
        _plans(_spec(image="localhost/tfjob:1", workers=1, ps=1), "vertex", engine=engine, shipped=["/b:/x/t-0.tar.gz"])
    # Processes mount nothing: the same job dir is fine without --image.
    assert _plans(_spec(workers=1, ps=1, job_dir="/tmp/out:/etc"), "vertex")


def test_render_shows_the_package_a_container_run_mounts(tmp_path: Path) -> None:
    (tmp_path / "trainer").mkdir()
    (tmp_path / "trainer" / "__init__.py").write_text("")  # a package, as its sdist needs (a run builds it)
    (tmp_path / "trainer" / "task.py").write_text("")
    spec = build_spec(dict(name="j", module="trainer.task", package=str(tmp_path), image="localhost/tfjob:1", workers=1))
    for task in LocalBackend().render(spec, LocalOptions())["tasks"]:
        argv = task["argv"]
        assert f"{tmp_path}/<sdist>:/tfjob/packages/<sdist>:ro" in argv
        assert argv[argv.index("localhost/tfjob:1") + 1 : argv.index("localhost/tfjob:1") + 3] == ["--package", "/tfjob/packages/<sdist>"]
