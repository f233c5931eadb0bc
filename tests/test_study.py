"""Studies: both platforms' ways of writing them, every validation rule, trial arguments."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from helpers import ROOT

from tfjob.errors import ConfigFileError, SpecError
from tfjob.tuning.study import (
    DEFAULT_METRIC_TAG,
    MetricSpec,
    ParameterSpec,
    StudySpec,
)
from tfjob.tuning.hparams import load_hparams, parse_hparams, parse_hparams_config

DATA = ROOT / "tests" / "data"
TUNE = DATA / "tune_trainers"

LEGACY = {
    "goal": "MAXIMIZE",
    "hyperparameterMetricTag": "accuracy",
    "maxTrials": 8,
    "maxParallelTrials": 2,
    "maxFailedTrials": 3,
    "algorithm": "RANDOM_SEARCH",
    "params": [
        {"parameterName": "learning_rate", "type": "DOUBLE", "minValue": 0.0001, "maxValue": 0.1, "scaleType": "UNIT_LOG_SCALE"},
        {"parameterName": "layers", "type": "INTEGER", "minValue": 1, "maxValue": 4, "scaleType": "UNIT_LINEAR_SCALE"},
        {"parameterName": "optimizer", "type": "CATEGORICAL", "categoricalValues": ["adam", "sgd"]},
        {"parameterName": "batch_size", "type": "DISCRETE", "discreteValues": [64, 16, 32]},
    ],
}
VERTEX = {
    "maxTrialCount": "8",  # int fields as the API's JSON may write them
    "parallelTrialCount": 2,
    "maxFailedTrialCount": 3,
    "studySpec": {
        "metrics": [{"metricId": "accuracy", "goal": "MAXIMIZE"}],
        "algorithm": "RANDOM_SEARCH",
        "parameters": [
            {"parameterId": "learning_rate", "doubleValueSpec": {"minValue": 0.0001, "maxValue": 0.1}, "scaleType": "UNIT_LOG_SCALE"},
            {"parameterId": "layers", "integerValueSpec": {"minValue": "1", "maxValue": "4"}, "scaleType": "UNIT_LINEAR_SCALE"},
            {"parameterId": "optimizer", "categoricalValueSpec": {"values": ["adam", "sgd"]}},
            {"parameterId": "batch_size", "discreteValueSpec": {"values": [64, 16, 32]}},
        ],
    },
}


def _study(data: object, source: str = "h.yaml") -> StudySpec:
    return parse_hparams_config(data, source).study


# -- the shapes -------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "doc",
    [
        LEGACY,
        {"hyperparameters": LEGACY},
        {"trainingInput": {"hyperparameters": LEGACY}},
        VERTEX,
        {k: v for k, v in VERTEX.items() if k != "studySpec"} | VERTEX["studySpec"],
    ],
    ids=["legacy-bare", "legacy-hyperparameters", "legacy-training-input", "vertex-study-spec", "vertex-bare"],
)
def test_every_shape_gives_the_same_study(doc: dict) -> None:
    study = _study(doc)
    assert study.metric == MetricSpec("accuracy", "MAXIMIZE")
    assert (study.max_trials, study.parallel_trials, study.max_failed_trials) == (8, 2, 3)
    assert study.algorithm == "RANDOM_SEARCH"
    lr, layers, optimizer, batch = study.parameters
    assert (lr.type, lr.min_value, lr.max_value, lr.scale) == ("DOUBLE", 0.0001, 0.1, "UNIT_LOG_SCALE")
    assert (layers.type, layers.min_value, layers.max_value) == ("INTEGER", 1, 4)
    assert isinstance(layers.min_value, int)
    assert optimizer.values == ("adam", "sgd") and optimizer.scale is None
    assert batch.values == (16.0, 32.0, 64.0)  # discrete values in increasing order


def test_the_files_of_both_platforms_agree() -> None:
    legacy, vertex = parse_hparams(TUNE / "toy_legacy.yaml"), parse_hparams(TUNE / "toy_vertex.yaml")
    assert legacy == vertex
    assert legacy.metric == MetricSpec("loss", "MINIMIZE")


def test_whole_jobs_bring_their_cluster_through_the_config_reader(tmp_path: Path) -> None:
    legacy = load_hparams(DATA / "configs" / "legacy_hyperparameters.yaml")
    assert legacy.dialect == "ai-platform"
    assert legacy.job == {"scale_tier": "STANDARD_1", "module": "trainer.task"}
    assert legacy.study.max_trials == 8 and legacy.study.parameters[0].name == "learning_rate"
    vertex = load_hparams(DATA / "configs" / "vertex_hptuning.yaml")
    assert vertex.dialect == "vertex"
    assert vertex.job["image"] == "gcr.io/census-project/trainer:1" and vertex.job["name"] == "census-tune"
    assert vertex.study.metric.tag == "accuracy"
    as_json = tmp_path / "study.json"
    as_json.write_text(json.dumps(VERTEX))
    assert load_hparams(as_json).study == _study(VERTEX) and load_hparams(as_json).job == {}


def test_defaults_follow_the_legacy_api() -> None:
    study = _study({"goal": "minimize", "params": [LEGACY["params"][0]]})
    assert study.metric == MetricSpec(DEFAULT_METRIC_TAG, "MINIMIZE")
    assert (study.max_trials, study.parallel_trials, study.max_failed_trials) == (1, 1, 0)
    assert study.algorithm == "ALGORITHM_UNSPECIFIED" and study.measurement == "LAST_MEASUREMENT"


def test_vertex_extras_are_kept() -> None:
    spec = dict(VERTEX["studySpec"], measurementSelectionType="BEST_MEASUREMENT", observationNoise="HIGH")
    study = _study({"studySpec": spec, "maxTrialCount": 4})
    assert study.measurement == "BEST_MEASUREMENT" and study.observation_noise == "HIGH"


def test_round_trip_through_the_job_store_form() -> None:
    study = _study(VERTEX)
    assert StudySpec.from_dict(json.loads(json.dumps(study.to_dict()))) == study


# -- errors name the file, the key, the value and the fix ----------------------------------------
def _legacy_with(**param: object) -> dict:
    base = {"parameterName": "x", "type": "DOUBLE", "minValue": 1, "maxValue": 2}
    base.update(param)
    return {"hyperparameters": {"goal": "MAXIMIZE", "params": [{k: v for k, v in base.items() if v is not None}]}}


@pytest.mark.parametrize(
    "doc, pattern",
    [
        (None, r"h\.yaml: the file is empty"),
        ([1, 2], r"expected a mapping"),
        ({"trainingInput": {"scaleTier": "BASIC"}}, r"trainingInput has no hyperparameters: section"),
        ({"foo": 1}, r"has no study; write hyperparameters:"),
        ({"hyperparameters": {"params": []}}, r"hyperparameters\.goal is missing; write goal: MAXIMIZE"),
        ({"hyperparameters": {"goal": "UP", "params": []}}, r"goal 'UP' is not MAXIMIZE or MINIMIZE"),
        ({"hyperparameters": {"goal": "MAXIMIZE"}}, r"hyperparameters\.params is missing"),
        ({"hyperparameters": {"goal": "MAXIMIZE", "params": []}}, r"no parameters to tune"),
        (
            {"hyperparameters": {"goal": "MAXIMIZE", "maxTrails": 3, "params": []}},
            r"unknown key 'hyperparameters\.maxTrails' \(did you mean 'maxTrials'\?\)",
        ),
        (_legacy_with(maxvalue=3), r"unknown key 'hyperparameters\.params\[0\]\.maxvalue' \(did you mean 'maxValue'\?\)"),
        (_legacy_with(type="FLOAT"), r"params\[0\]: parameter x: type 'FLOAT' is not known; choose one of DOUBLE"),
        (_legacy_with(maxValue=None), r"parameter x: a DOUBLE needs minValue and maxValue; maxValue is missing"),
        (_legacy_with(minValue=3, maxValue=2), r"parameter x: minValue 3\.0 must be less than maxValue 2\.0"),
        (_legacy_with(minValue="low"), r"params\[0\]\.minValue 'low' must be a number"),
        (_legacy_with(minValue=0, scaleType="UNIT_LOG_SCALE"), r"UNIT_LOG_SCALE needs minValue > 0, not 0\.0; use UNIT_LINEAR_SCALE"),
        (_legacy_with(scaleType="LOG"), r"scaleType 'LOG' is not known"),
        (_legacy_with(type="INTEGER", minValue=1.5), r"minValue 1\.5 of an INTEGER must be a whole number"),
        (_legacy_with(type="CATEGORICAL", minValue=None, maxValue=None), r"a CATEGORICAL needs a non-empty list categoricalValues"),
        (_legacy_with(categoricalValues=["a"]), r"categoricalValues belongs to a CATEGORICAL parameter, but type is DOUBLE"),
        (
            _legacy_with(type="CATEGORICAL", minValue=None, maxValue=None, categoricalValues=["a", "a"]),
            r"categoricalValues lists a more than once",
        ),
        (
            _legacy_with(type="CATEGORICAL", minValue=None, maxValue=None, categoricalValues=["a"], scaleType="UNIT_LOG_SCALE"),
            r"a CATEGORICAL has no scaleType; remove it",
        ),
        (
            _legacy_with(type="DISCRETE", minValue=None, maxValue=None, discreteValues=[1, "x"]),
            r"discrete value 'x' must be a finite number",
        ),
        (_legacy_with(parameterName="--lr"), r"parameter name '--lr' cannot be a command-line flag"),
        (
            {"hyperparameters": {"goal": "MAXIMIZE", "params": [_legacy_with()["hyperparameters"]["params"][0]] * 2}},
            r"parameter 'x' is listed more than once",
        ),
        (
            {
                "hyperparameters": {
                    "goal": "MAXIMIZE",
                    "maxTrials": 2,
                    "maxParallelTrials": 3,
                    "params": _legacy_with()["hyperparameters"]["params"],
                }
            },
            r"maxParallelTrials 3 is more than maxTrials 2",
        ),
        (
            {"hyperparameters": {"goal": "MAXIMIZE", "maxTrials": 0, "params": _legacy_with()["hyperparameters"]["params"]}},
            r"maxTrials 0 must be a whole number ≥ 1",
        ),
        (
            {"hyperparameters": {"goal": "MAXIMIZE", "maxTrials": "many", "params": []}},
            r"hyperparameters\.maxTrials 'many' must be a whole number",
        ),
        (
            {"hyperparameters": {"goal": "MAXIMIZE", "algorithm": "GRID_SEARCH", "params": _legacy_with()["hyperparameters"]["params"]}},
            r"parameter x is a DOUBLE, and GRID_SEARCH needs INTEGER, CATEGORICAL or DISCRETE",
        ),
        (
            {"hyperparameters": {"goal": "MAXIMIZE", "algorithm": "BAYES", "params": _legacy_with()["hyperparameters"]["params"]}},
            r"algorithm 'BAYES' is not known",
        ),
        (
            {"hyperparameters": {"goal": "MAXIMIZE", "resumePreviousJobId": "j1", "params": []}},
            r"resumePreviousJobId is not supported: tfjob tune starts every study afresh",
        ),
        (
            {"hyperparameters": {"goal": "MAXIMIZE", "enableTrialEarlyStopping": True, "params": []}},
            r"enableTrialEarlyStopping is not supported: tfjob tune runs every trial to its end",
        ),
    ],
)
def test_legacy_errors(doc: object, pattern: str) -> None:
    with pytest.raises(ConfigFileError, match=pattern):
        _study(doc)


def _vertex_with(param: dict | None = None, **spec: object) -> dict:
    study = {
        "metrics": [{"metricId": "a", "goal": "MAXIMIZE"}],
        "parameters": [param or {"parameterId": "x", "doubleValueSpec": {"minValue": 1, "maxValue": 2}}],
    }
    study.update(spec)
    return {"studySpec": {k: v for k, v in study.items() if v is not None}, "maxTrialCount": 2}


@pytest.mark.parametrize(
    "doc, pattern",
    [
        (_vertex_with(metrics=[]), r"studySpec\.metrics has 0 metrics; tfjob tune optimizes exactly one"),
        (_vertex_with(metrics=[{"metricId": "a", "goal": "MAXIMIZE"}, {"metricId": "b", "goal": "MINIMIZE"}]), r"has 2 metrics"),
        (_vertex_with(metrics=[{"metricId": "a"}]), r"studySpec\.metrics\[0\]\.goal is missing"),
        (_vertex_with(metrics=[{"goal": "MAXIMIZE"}]), r"studySpec\.metrics\[0\]\.metricId is missing"),
        (_vertex_with(metrics=[{"metricId": "a", "goal": "MAXIMIZE", "safetyConfig": {}}]), r"safetyConfig is not supported"),
        (_vertex_with({"parameterId": "x"}), r"parameters\[0\] needs exactly one of doubleValueSpec, .*, not none"),
        (
            _vertex_with(
                {"parameterId": "x", "doubleValueSpec": {"minValue": 1, "maxValue": 2}, "integerValueSpec": {"minValue": 1, "maxValue": 2}}
            ),
            r"not doubleValueSpec and integerValueSpec",
        ),
        (
            _vertex_with({"parameterId": "x", "doubleValueSpec": {"minValue": 1, "maxValue": 2, "defaultValue": 1.5}}),
            r"doubleValueSpec\.defaultValue is not supported: tfjob tune does not seed",
        ),
        (_vertex_with({"parameterId": "x", "discreteValueSpec": {"values": []}}), r"a DISCRETE needs a non-empty list discreteValues"),
        (_vertex_with({"parameterId": "x", "categoricalValueSpec": {"values": "adam"}}), r"values must be a list"),
        (
            _vertex_with({"parameterId": "x", "categoricalValueSpec": {"values": ["a"]}, "conditionalParameterSpecs": []}),
            r"conditionalParameterSpecs is not supported",
        ),
        (
            _vertex_with(medianAutomatedStoppingSpec={}),
            r"studySpec\.medianAutomatedStoppingSpec is not supported: tfjob tune runs every trial to its end",
        ),
        (_vertex_with(measurementSelectionType="MEAN"), r"measurementSelectionType 'MEAN' is not known"),
        (_vertex_with(observationNoise="LOUD"), r"observationNoise 'LOUD' must be LOW or HIGH"),
        ({"studySpec": _vertex_with()["studySpec"], "maxTrialCount": 2, "trialCount": 3}, r"unknown key 'trialCount'"),
        (
            {
                "trialJobSpec": {
                    "workerPoolSpecs": [
                        {"machineSpec": {"machineType": "n1-standard-4"}, "replicaCount": 1, "containerSpec": {"imageUri": "gcr.io/p/t:1"}}
                    ]
                }
            },
            r"studySpec is missing",
        ),
    ],
)
def test_vertex_errors(doc: object, pattern: str) -> None:
    with pytest.raises(ConfigFileError, match=pattern):
        _study(doc)


def test_file_errors_name_the_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigFileError, match=r"^hparams='.*nope\.yaml': no such file$"):
        load_hparams(tmp_path / "nope.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("studySpec: [unclosed\n")
    with pytest.raises(ConfigFileError, match=r"bad\.yaml: not valid YAML"):
        parse_hparams(bad)
    wrong = tmp_path / "wrong.yaml"
    wrong.write_text(yaml.safe_dump({"hyperparameters": {"goal": "MAXIMIZE", "params": [{"parameterName": "x", "type": "DOUBLE"}]}}))
    with pytest.raises(ConfigFileError, match=r"^.*wrong\.yaml: hyperparameters\.params\[0\]: parameter x: a DOUBLE needs minValue"):
        parse_hparams(wrong)


def test_programmatic_errors_are_spec_errors() -> None:
    with pytest.raises(SpecError, match=r"the study's metric tag is empty"):
        MetricSpec(" ", "MAXIMIZE")
    with pytest.raises(SpecError, match=r"a CATEGORICAL takes categoricalValues, not minValue/maxValue"):
        ParameterSpec("x", "CATEGORICAL", 1, 2)
    with pytest.raises(SpecError, match=r"a INTEGER takes minValue and maxValue, not a list of values"):
        ParameterSpec("x", "INTEGER", 1, 2, ("a",))
    with pytest.raises(SpecError, match=r"the grid has 4000000 points"):
        StudySpec(
            MetricSpec("a", "MAXIMIZE"),
            (ParameterSpec("x", "INTEGER", 1, 2000), ParameterSpec("y", "INTEGER", 1, 2000)),
            algorithm="GRID_SEARCH",
        )


# -- trial arguments -----------------------------------------------------------------------------
def test_trial_arguments_as_the_platforms_append_them() -> None:
    study = _study(LEGACY)
    args = study.render_args({"learning_rate": 0.00123, "layers": 3, "optimizer": "adam", "batch_size": 32.0})
    assert args == ["--learning_rate=0.00123", "--layers=3", "--optimizer=adam", "--batch_size=32"]
    assert study.parameter("batch_size").format_value(0.5) == "0.5"
    assert study.parameter("learning_rate").format_value(1.0) == "1.0"  # a DOUBLE stays a float
    with pytest.raises(KeyError, match="momentum"):
        study.parameter("momentum")


def test_grid_points() -> None:
    study = StudySpec(
        MetricSpec("a", "MAXIMIZE"),
        (
            ParameterSpec("layers", "INTEGER", 1, 3),
            ParameterSpec("opt", "CATEGORICAL", values=("a", "b")),
            ParameterSpec("bs", "DISCRETE", values=(8, 4)),
        ),
        max_trials=20,
        algorithm="GRID_SEARCH",
    )
    assert study.grid_size() == 12
    assert [p.grid() for p in study.parameters] == [[1, 2, 3], ["a", "b"], [4.0, 8.0]]
