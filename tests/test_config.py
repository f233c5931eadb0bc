"""--config files: legacy AI Platform trainingInput and Vertex CustomJobSpec → Job keywords → JobSpec."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from tfjob._internal import job_from_keywords
from tfjob import Job
from tfjob.backends import flag_words
from tfjob.backends.vertex.options import VertexOptions
from tfjob.config.job import JobConfig, load_job_config, parse_job_config, read_config_file
from tfjob.errors import ConfigFileError, SpecError
from tfjob.backends.aiplatform.render import render_job
from tfjob.description.spec import Accelerator, Machine, Pool, ScaleTier

CONFIGS = Path(__file__).parent / "data" / "configs"

#: The cluster of the AI Platform docs' CUSTOM example: 1 master, 9 workers, 3 ps, 1 evaluator.
DOCS_POOLS = (
    Pool("chief", 1, Machine("n1-highcpu-16")),
    Pool("worker", 9, Machine("n1-highcpu-16")),
    Pool("ps", 3, Machine("n1-highmem-8")),
    Pool("evaluator", 1, Machine("n1-highcpu-16")),
)


def write(tmp_path: Path, text: str, name: str = "config.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_docs_legacy_config_gives_the_documented_pools() -> None:
    values = load_job_config(CONFIGS / "legacy_custom.yaml")
    assert values == {
        "scale_tier": "CUSTOM",
        "chief_machine_type": "n1-highcpu-16",
        "worker_machine_type": "n1-highcpu-16",
        "workers": 9,
        "ps_machine_type": "n1-highmem-8",
        "ps": 3,
        "evaluator_machine_type": "n1-highcpu-16",
        "evaluators": 1,
    }
    job = Job(config=str(CONFIGS / "legacy_custom.yaml"), module="trainer.task", name="census")
    assert job.spec.pools == DOCS_POOLS
    assert job.spec.scale_tier is ScaleTier.CUSTOM


def test_docs_legacy_config_round_trips_through_the_legacy_render(tmp_path: Path) -> None:
    job = Job(config=str(CONFIGS / "legacy_custom.yaml"), module="trainer.task", package="gs://b/trainer-0.1.tar.gz", name="census")
    body = render_job(job.spec, VertexOptions())
    original = yaml.safe_load((CONFIGS / "legacy_custom.yaml").read_text())["trainingInput"]
    rendered = body["trainingInput"]
    # Every field of the docs' file comes back with the same value (counts as the API's int64 strings).
    assert {k: rendered[k] for k in original} == {k: str(v) if k.endswith("Count") else v for k, v in original.items()}
    again = Job(config=str(write(tmp_path, json.dumps(body), "rendered.json")))
    assert again.spec.pools == DOCS_POOLS
    assert (again.spec.module, again.spec.package, again.spec.name) == ("trainer.task", "gs://b/trainer-0.1.tar.gz", "census")


def test_vertex_custom_job_spec_of_the_same_job_gives_the_same_pools() -> None:
    legacy = Job(config=str(CONFIGS / "legacy_custom.yaml"), module="trainer.task", name="census")
    vertex = Job(config=str(CONFIGS / "vertex_custom.yaml"), name="census", backend="vertex")
    assert vertex.spec.pools == legacy.spec.pools == DOCS_POOLS
    assert vertex.spec.scale_tier is None
    assert vertex.spec.module == "trainer.task"
    assert vertex.spec.package == "gs://census-bucket/staging/trainer-0.1.tar.gz"
    assert vertex.spec.args == ("--train-steps", "1000")
    assert vertex.spec.timeout == 7200.0
    assert vertex.options.restart_job_on_worker_restart is True  # type: ignore[attr-defined]
    assert vertex.spec.job_dir == "gs://census-bucket/output"
    assert vertex.spec.service_account == "trainer@census-project.iam.gserviceaccount.com"
    assert vertex.options.executor_image == "us-docker.pkg.dev/vertex-ai/training/tf-cpu.2-17.py310:latest"
    # The same file runs locally: its Vertex AI options are not the local backend's.
    local = Job(config=str(CONFIGS / "vertex_custom.yaml"), name="census")
    assert local.backend_name == "local" and not hasattr(local.options, "executor_image") and local.spec.pools == DOCS_POOLS


def test_vertex_custom_job_with_placeholder_pools_and_containers() -> None:
    values = load_job_config(CONFIGS / "vertex_custom_job.json")
    assert values["name"] == "census-gpu"
    assert values["labels"] == {"team": "census", "stage": "dev"}
    assert values["image"] == "us-docker.pkg.dev/census-project/trainers/census:1"
    assert values["env"] == {"TF_CPP_MIN_LOG_LEVEL": "1"}
    assert "workers" not in values and "ps" not in values
    job = Job(config=str(CONFIGS / "vertex_custom_job.json"), backend="vertex")
    spec, options = job.spec, job.options
    assert spec.pools == (
        Pool("chief", 1, Machine("n1-standard-8", Accelerator("NVIDIA_TESLA_T4", 2))),
        Pool("evaluator", 1, Machine("n1-standard-4")),
    )
    assert spec.module is None and spec.args == ("--epochs", "5")
    # Vertex AI's own knobs are the Vertex options (a local run of the same file leaves them out).
    assert (options.network, options.enable_web_access) == ("projects/12345/global/networks/default", True)  # type: ignore[attr-defined]
    assert options.tensorboard == "projects/12345/locations/us-central1/tensorboards/678"  # type: ignore[attr-defined]


def test_legacy_job_from_the_api_with_every_field() -> None:
    job = Job(config=str(CONFIGS / "legacy_full.json"), backend="vertex")
    spec = job.spec
    assert spec.name == "census_gpu_v2"
    assert spec.pools == (
        Pool("chief", 1, Machine("n1-standard-16", Accelerator("NVIDIA_TESLA_T4", 4))),
        Pool("worker", 2, Machine("n1-standard-8", Accelerator("NVIDIA_TESLA_V100", 2))),
        Pool("ps", 1, Machine("n1-highmem-8")),
    )
    assert spec.package == "gs://census-bucket/staging/trainer-0.2.tar.gz"
    assert spec.packages == ("gs://census-bucket/staging/utils-1.0.tar.gz",)
    assert spec.args == ("--train-steps", "5000", "--verbosity", "DEBUG")
    assert (spec.runtime_version, spec.python_version, spec.use_chief) == ("2.11", "3.7", True)
    assert (spec.timeout, spec.job_dir, spec.labels) == (7200.0, "gs://census-bucket/output", {"team": "census"})
    assert (job.options.network, spec.service_account, job.options.enable_web_access) == (  # type: ignore[attr-defined]
        "projects/12345/global/networks/default",
        "trainer@census-project.iam.gserviceaccount.com",
        True,
    )
    # The region is a submission setting: it reaches the options, where backends read it.
    assert job.options.region == "europe-west1"


def test_legacy_container_job_with_a_cloud_tpu_worker() -> None:
    values = load_job_config(CONFIGS / "legacy_container_tpu.yaml")
    assert values["image"] == "gcr.io/census-project/trainer:tpu"
    assert values["worker_image"] == "gcr.io/census-project/trainer:tpu-worker"
    spec = Job(config=str(CONFIGS / "legacy_container_tpu.yaml")).spec
    assert spec.pool("worker") == Pool(
        "worker", 1, Machine("cloud-tpu", Accelerator("TPU_V3", 8)), "gcr.io/census-project/trainer:tpu-worker"
    )
    assert spec.image_for("chief") == "gcr.io/census-project/trainer:tpu"


def test_predefined_tier_and_no_tier(tmp_path: Path) -> None:
    spec = Job(config=str(write(tmp_path, "trainingInput: {scaleTier: standard-1, pythonModule: trainer.task}"))).spec
    assert [(p.role, p.replicas, p.machine.type) for p in spec.pools] == [
        ("chief", 1, "n1-highcpu-8"),
        ("worker", 4, "n1-highcpu-8"),
        ("ps", 3, "n1-standard-4"),
    ]
    # Machine types without a tier mean CUSTOM (AI Platform refused them under its default, BASIC).
    values = parse_job_config({"trainingInput": {"masterType": "complex_model_s"}}).values
    assert values == {"scale_tier": "CUSTOM", "chief_machine_type": "complex_model_s"}


def test_flags_override_the_file() -> None:
    job = job_from_keywords(
        None,
        None,
        {
            "config": str(CONFIGS / "legacy_full.json"),
            "workers": 5,
            "args": ["--train-steps", "10"],
            "region": "us-east1",
            "name": "override",
            "labels": {"team": "infra"},
            "backend": "ai-platform",
        },
    )
    assert job.spec.count("worker") == 5
    assert job.spec.pool("worker").machine.accelerator == Accelerator("NVIDIA_TESLA_V100", 2)
    assert job.spec.args == ("--train-steps", "10")
    assert job.options.region == "us-east1"
    assert (job.spec.name, job.spec.labels) == ("override", {"team": "infra"})


def test_tuning_sections_are_kept_for_tune_and_refused_by_submit() -> None:
    legacy = parse_job_config(read_config_file(CONFIGS / "legacy_hyperparameters.yaml"), "h.yaml")
    assert isinstance(legacy, JobConfig) and legacy.dialect == "ai-platform"
    assert legacy.tuning_key == "trainingInput.hyperparameters"
    assert legacy.tuning["hyperparameterMetricTag"] == "accuracy"
    assert legacy.values == {"scale_tier": "STANDARD_1", "module": "trainer.task"}
    vertex = parse_job_config(read_config_file(CONFIGS / "vertex_hptuning.yaml"), "t.yaml")
    assert vertex.tuning_key == "studySpec"
    assert set(vertex.tuning) == {"studySpec", "maxTrialCount", "parallelTrialCount"}
    assert vertex.values == {"chief_machine_type": "n1-standard-4", "image": "gcr.io/census-project/trainer:1", "name": "census-tune"}
    for name in ("legacy_hyperparameters.yaml", "vertex_hptuning.yaml"):
        with pytest.raises(ConfigFileError, match=r"hyperparameter tuning.*use `tfjob tune --hparams .*" + name):
            load_job_config(CONFIGS / name)


def test_vertex_yaml_under_job_spec_and_at_top_level_agree(tmp_path: Path) -> None:
    spec = yaml.safe_load((CONFIGS / "vertex_custom.yaml").read_text())
    nested = write(tmp_path, yaml.safe_dump({"displayName": "census", "jobSpec": spec}))
    assert load_job_config(nested) == {**load_job_config(CONFIGS / "vertex_custom.yaml"), "name": "census"}


BAD_CONFIGS = [
    # (file text, what the one-line message must say)
    ("trainingInput:\n  workerCont: 3\n", r"unknown key 'trainingInput.workerCont' \(did you mean 'workerCount'\?\)"),
    ("trainingInput: {}\njobid: x\n", r"unknown key 'jobid' \(did you mean 'jobId'\?\)"),
    ("scaleTier: BASIC\n", r"unknown key 'scaleTier' \(it belongs under trainingInput:\)"),
    ("foo: 1\n", r"unknown key 'foo'"),
    (
        "trainingInput:\n  masterConfig: {imageUri: x, diskConfig: {bootDiskSizeGb: 200}}\n",
        r"masterConfig.diskConfig is not supported: .*remove it",
    ),
    (
        "trainingInput:\n  masterConfig: {acceleratorConfig: {typ: NVIDIA_TESLA_T4}}\n",
        r"unknown key 'trainingInput.masterConfig.acceleratorConfig.typ' \(did you mean 'type'\?\)",
    ),
    ("trainingInput:\n  scheduling: {maxWaitTime: 60s}\n", r"trainingInput.scheduling.maxWaitTime is not supported"),
    ("trainingInput:\n  encryptionConfig: {kmsKeyName: k}\n", r"encryptionConfig is not supported"),
    ("predictionInput: {}\n", r"predictionInput is not supported: this is a batch prediction job"),
    (
        "trainingInput:\n  scaleTier: STANDARD_2\n",
        r"trainingInput.scaleTier 'STANDARD_2' is not a scale tier \(did you mean 'STANDARD_1'\?\)",
    ),
    (
        "trainingInput:\n  scaleTier: STANDARD_1\n  workerCount: 8\n",
        r"trainingInput.workerCount is set, but scaleTier STANDARD_1 fixes .* scaleTier: CUSTOM",
    ),
    (
        "trainingInput:\n  masterType: n1-standrd-4\n",
        r"trainingInput.masterType: machine type 'n1-standrd-4' is not known \(did you mean 'n1-standard-4'\?\)",
    ),
    ("trainingInput:\n  masterType: complex_modl_m\n", r"did you mean 'complex_model_m'\?"),
    (
        "trainingInput:\n  masterType: e2-standard-4\n  masterConfig: {acceleratorConfig: {type: NVIDIA_TESLA_T4, count: 1}}\n",
        r"masterType: machine type 'e2-standard-4' cannot take accelerator NVIDIA_TESLA_T4",
    ),
    (
        "trainingInput:\n  masterType: n1-standard-8\n  masterConfig: {acceleratorConfig: {type: NVIDIA_TESLA_K80, count: 1}}\n",
        r"acceleratorConfig.type: accelerator 'NVIDIA_TESLA_K80' is retired.*use NVIDIA_TESLA_T4",
    ),
    (
        "trainingInput:\n  masterConfig: {acceleratorConfig: {count: 2}}\n",
        r"acceleratorConfig.count 2 is set but .*acceleratorConfig.type is not",
    ),
    ("trainingInput:\n  workerCount: -2\n", r"trainingInput.workerCount -2 must be a whole number ≥ 0"),
    ("trainingInput:\n  workerCount: many\n", r"trainingInput.workerCount 'many' must be a whole number"),
    ("trainingInput:\n  runtimeVersion: 2.10\n", r"trainingInput.runtimeVersion 2.1 must be text; put the value in quotes"),
    ("trainingInput:\n  args: --epochs 3\n", r"trainingInput.args must be a list"),
    ("trainingInput:\n  useChiefInTfConfig: 'yes'\n", r"useChiefInTfConfig 'yes' must be true or false"),
    ("trainingInput:\n  scheduling: {maxRunningTime: forever}\n", r"maxRunningTime 'forever' is not a duration"),
    ("trainingInput: [1, 2]\n", r"trainingInput must be a mapping"),
    ("workerPoolSpecs: []\n", r"workerPoolSpecs must be a list of 1 to 4 worker pools"),
    ("workerPoolSpecs:\n  - {}\n", r"workerPoolSpecs\[0\] is empty; pool 0 is the chief"),
    (
        "workerPoolSpecs:\n  - {machineSpec: {machineType: n1-standard-4}, replicaCount: 2, containerSpec: {imageUri: i}}\n",
        r"workerPoolSpecs\[0\].replicaCount 2: pool 0 is the chief and runs exactly 1 replica",
    ),
    (
        "workerPoolSpecs:\n  - {machineSpec: {machineType: n1-standard-4}, containerSpec: {imageUri: i}}\n  - {machineSpec: {machineType: n1-standard-4}, replicaCount: 0, containerSpec: {imageUri: i}}\n",
        r"workerPoolSpecs\[1\].replicaCount 0: write the pool as \{\}",
    ),
    (
        "workerPoolSpecs:\n  - {machineSpec: {machineTyp: n1-standard-4}}\n",
        r"unknown key 'workerPoolSpecs\[0\].machineSpec.machineTyp' \(did you mean 'machineType'\?\)",
    ),
    ("workerPoolSpecs:\n  - {replicaCount: 1, containerSpec: {imageUri: i}}\n", r"workerPoolSpecs\[0\].machineSpec has no machineType"),
    (
        "workerPoolSpecs:\n  - {machineSpec: {machineType: n1-standard-4}}\n",
        r"workerPoolSpecs\[0\] has neither containerSpec nor pythonPackageSpec",
    ),
    (
        "workerPoolSpecs:\n  - {machineSpec: {machineType: n1-standard-4}, containerSpec: {imageUri: i, command: [tfjob-bootstrap, --modul, t.task]}}\n",
        r"containerSpec.command \['tfjob-bootstrap', '--modul', 't.task'\] is not supported: .*\[tfjob-bootstrap, --module, MODULE, --\]",
    ),
    (
        "workerPoolSpecs:\n  - {machineSpec: {machineType: n1-standard-4}, diskSpec: {bootDiskSizeGb: 10}, containerSpec: {imageUri: i}}\n",
        r"workerPoolSpecs\[0\].diskSpec.bootDiskSizeGb 10 must be a whole number of GB from 100 to 64000",
    ),
    (
        "workerPoolSpecs:\n  - {machineSpec: {machineType: n1-standard-4, acceleratorType: NVIDIA_TESLA_T9}, containerSpec: {imageUri: i}}\n",
        r"acceleratorType: accelerator 'NVIDIA_TESLA_T9' is not known \(did you mean 'NVIDIA_TESLA_T4'\?\)",
    ),
    (
        "workerPoolSpecs:\n  - {machineSpec: {machineType: n1-standard-4}, pythonPackageSpec: {pythonModule: a.b}}\n  - {machineSpec: {machineType: n1-standard-4}, replicaCount: 2, pythonPackageSpec: {pythonModule: a.c}}\n",
        r"workerPoolSpecs\[1\].pythonPackageSpec.pythonModule 'a.c' differs from workerPoolSpecs\[0\].pythonPackageSpec.pythonModule 'a.b'",
    ),
    (
        "workerPoolSpecs:\n  - {machineSpec: {machineType: n1-standard-4}, containerSpec: {imageUri: i}}\n  - {}\n  - {}\n  - {}\n  - {}\n",
        r"workerPoolSpecs has 5 pools; tfjob takes at most 4",
    ),
    (
        "workerPoolSpecs:\n  - {machineSpec: {machineType: n1-standard-4}, containerSpec: {imageUri: i}}\nscheduling: {strategy: SPOTT}\n",
        r"scheduling.strategy 'SPOTT' is not one of STANDARD, SPOT, FLEX_START \(did you mean 'SPOT'\?\)",
    ),
    (
        "workerPoolSpecs:\n  - {machineSpec: {machineType: n1-standard-4}, containerSpec: {imageUri: i}}\nserviceAcount: x\n",
        r"unknown key 'serviceAcount' \(did you mean 'serviceAccount'\?\)",
    ),
    (
        "jobSpec: {workerPoolSpecs: [{machineSpec: {machineType: n1-standard-4}, containerSpec: {imageUri: i}}]}\ndisplayname: x\n",
        r"unknown key 'displayname' \(did you mean 'displayName'\?\)",
    ),
    (
        "trialJobSpec: {workerPoolSpecs: [{machineSpec: {machineType: n1-standard-4}, containerSpec: {imageUri: i}}]}\nmaxTrialCont: 3\n",
        r"unknown key 'maxTrialCont' \(did you mean 'maxTrialCount'\?\)",
    ),
    ("studySpec: {}\n", r"trialJobSpec is missing"),
    ("", r"the file is empty"),
    ("- a\n- b\n", r"expected a mapping .* not list"),
    ("trainingInput: {scaleTier: [\n", r"not valid YAML \(line \d+\)"),
]


@pytest.mark.parametrize(("text", "message"), BAD_CONFIGS, ids=[f"bad{i}" for i in range(len(BAD_CONFIGS))])
def test_bad_config_names_the_file_the_key_and_the_fix(tmp_path: Path, text: str, message: str) -> None:
    path = write(tmp_path, text)
    with pytest.raises(ConfigFileError, match=message) as caught:
        load_job_config(path)
    assert str(caught.value).startswith(str(path)), "every message names the file"
    assert "\n" not in str(caught.value)


def test_bad_json_and_missing_files(tmp_path: Path) -> None:
    with pytest.raises(ConfigFileError, match=r"config.json: not valid JSON"):
        load_job_config(write(tmp_path, '{"trainingInput": ', "config.json"))
    with pytest.raises(ConfigFileError, match=r"^config='.*nowhere.yaml': no such file$"):
        load_job_config(tmp_path / "nowhere.yaml")


def test_config_errors_are_spec_errors_and_usage_errors() -> None:
    # The CLI exits 2 for them, and callers that catch ValueError catch them too.
    with pytest.raises(SpecError, match=r"unknown key 'x'"):
        parse_job_config({"x": 1}, "inline")
    with pytest.raises(ValueError, match=r"unknown key 'x'"):
        parse_job_config({"x": 1}, "inline")
    assert ConfigFileError("x").exit_code == 2


def test_cross_field_rules_are_checked_after_flags_are_merged(tmp_path: Path) -> None:
    # A file may leave out what a flag supplies: CUSTOM without masterType, completed on the command line.
    path = write(
        tmp_path, "trainingInput:\n  scaleTier: CUSTOM\n  workerType: n1-highcpu-8\n  workerCount: 2\n  pythonModule: trainer.task\n"
    )
    with pytest.raises(SpecError, match=r"^scale_tier='CUSTOM' needs chief_machine_type$") as caught:
        Job(config=str(path))
    assert caught.value.worded("cli", flag_words) == "--scale-tier CUSTOM needs --chief-machine-type"  # what the CLI prints
    assert (
        job_from_keywords(None, None, {"config": str(path), "chief_machine_type": "n1-highcpu-16"}).spec.pool("chief").machine.type
        == "n1-highcpu-16"
    )


def test_bad_labels_in_a_file_are_caught_by_the_spec(tmp_path: Path) -> None:
    path = write(tmp_path, "labels: {Team: ml}\ntrainingInput: {pythonModule: trainer.task}\n")
    assert load_job_config(path)["labels"] == {"Team": "ml"}
    with pytest.raises(SpecError, match=r"label key 'Team' is not valid"):
        Job(config=str(path))


def test_containers_started_through_the_bootstrap_give_the_module() -> None:
    command = ["tfjob-bootstrap", "--module", "trainer.task", "--"]
    legacy = {"trainingInput": {"masterType": "n1-standard-4", "masterConfig": {"imageUri": "gcr.io/p/t:1", "containerCommand": command}}}
    assert parse_job_config(legacy).values["module"] == "trainer.task"
    pool = {"machineSpec": {"machineType": "n1-standard-4"}, "containerSpec": {"imageUri": "gcr.io/p/t:1", "command": command}}
    values = parse_job_config({"workerPoolSpecs": [pool]}).values
    assert (values["module"], values["image"]) == ("trainer.task", "gcr.io/p/t:1")
    other = dict(pool, containerSpec={"imageUri": "gcr.io/p/t:1", "command": ["tfjob-bootstrap", "--module", "other.task", "--"]})
    with pytest.raises(ConfigFileError, match=r"workerPoolSpecs\[1\].containerSpec.command 'other.task' differs from"):
        parse_job_config({"workerPoolSpecs": [pool, other]})
    with pytest.raises(
        ConfigFileError, match=r"trainingInput.pythonModule 'b.c' differs from trainingInput.masterConfig.containerCommand 'trainer.task'"
    ):
        parse_job_config({"trainingInput": {**legacy["trainingInput"], "pythonModule": "b.c"}})


def test_the_job_dir_argument_tfjob_adds_on_vertex_is_not_doubled() -> None:
    package = {"packageUris": ["gs://b/t.tar.gz"], "pythonModule": "trainer.task", "args": ["--epochs", "3", "--job-dir", "gs://b/out"]}
    data = {
        "workerPoolSpecs": [{"machineSpec": {"machineType": "n1-standard-4"}, "replicaCount": "1", "pythonPackageSpec": package}],
        "baseOutputDirectory": {"outputUriPrefix": "gs://b/out"},
    }
    values = parse_job_config(data).values
    assert (values["args"], values["job_dir"]) == (["--epochs", "3"], "gs://b/out")


def test_a_flag_that_stands_for_several_keys_replaces_them_all() -> None:
    legacy_full = str(CONFIGS / "legacy_full.json")
    # A predefined tier replaces the file's whole cluster (its CUSTOM types, counts, GPUs).
    tier = job_from_keywords(None, None, {"config": legacy_full, "scale_tier": "STANDARD_1"}).spec
    assert [(p.role, p.replicas, p.machine.type, p.machine.accelerator) for p in tier.pools] == [
        ("chief", 1, "n1-highcpu-8", None),
        ("worker", 4, "n1-highcpu-8", None),
        ("ps", 3, "n1-standard-4", None),
    ]
    # --accelerator is every chief/worker/evaluator's, so it replaces the file's per-role ones.
    gpus = job_from_keywords(None, None, {"config": legacy_full, "accelerator": "type=NVIDIA_TESLA_P100,count=1"}).spec
    assert [p.machine.accelerator for p in gpus.pools] == [Accelerator("NVIDIA_TESLA_P100", 1)] * 2 + [None]
    # --image replaces per-role images too.
    image = job_from_keywords(None, None, {"config": str(CONFIGS / "legacy_container_tpu.yaml"), "image": "gcr.io/p/new:2"}).spec
    assert [image.image_for(r) for r in ("chief", "worker")] == ["gcr.io/p/new:2", "gcr.io/p/new:2"]


def test_a_request_over_a_file_is_key_by_key_otherwise() -> None:
    from tfjob.description.request import keyword_lands, sort_keywords

    lands = keyword_lands()
    file_values = {"scale_tier": "CUSTOM", "workers": 9, "worker_accelerator": Accelerator("NVIDIA_TESLA_T4", 1), "args": ["a"]}
    merged = sort_keywords({"workers": 2, "args": None, "scale_tier": "custom"}, lands).over(sort_keywords(file_values, lands))
    expected = sort_keywords({**file_values, "workers": 2}, lands)
    assert merged.request == expected.request
    assert merged.request.role("worker").count == 2 and merged.request.args == ["a"]


@pytest.mark.parametrize(
    "kwargs",
    [
        dict(package="trainer/", workers=4, ps=2, job_dir="gs://b/out", args=["--epochs", "3"], timeout=3600),
        dict(image="gcr.io/p/t:1", evaluators=1, env={"A": "1"}, chief_machine_type="n1-standard-8", accelerator="NVIDIA_TESLA_T4"),
    ],
    ids=["package", "container"],
)
def test_what_tfjob_renders_for_vertex_reads_back_as_the_same_job(kwargs: dict[str, object]) -> None:
    from tfjob.backends.vertex.render import render_custom_job

    spec = job_from_keywords(None, "trainer.task", {"name": "census", **kwargs}).spec
    body = render_custom_job(spec, VertexOptions(region="us-central1"), ["gs://b/trainer-0.1.tar.gz"])
    values = parse_job_config(json.loads(json.dumps(body)), "custom_job.json").values
    again = job_from_keywords(None, None, {**{**values, "package": spec.package, "backend": "vertex"}}).spec
    assert again.pools == spec.pools
    assert (again.module, again.args, again.env, again.job_dir, again.timeout) == (
        spec.module,
        spec.args,
        spec.env,
        spec.job_dir,
        spec.timeout,
    )
    assert [again.image_for(r) for r in ("chief", "worker", "evaluator")] == [spec.image_for(r) for r in ("chief", "worker", "evaluator")]


@pytest.mark.parametrize("given", ["", ".", "DIR"])
def test_a_directory_as_config_is_one_line(given: str, tmp_path: Path) -> None:
    # os.fdopen refuses a directory with IsADirectoryError: the check comes first, on the descriptor.
    path = str(tmp_path) if given == "DIR" else given
    with pytest.raises(ConfigFileError, match=r"is not a regular file; give a YAML or JSON file"):
        Job(config=path, module="trainer.task")
