"""The census templates' data, model and argument code, imported from a freshly initialized trainer.

Pure parts (the generator, the CSV text, argument parsing, cluster checks) run
without TensorFlow; the tf.data reader and the model run on real TensorFlow.
"""

from __future__ import annotations

import importlib
import math
import sys
from pathlib import Path
from types import ModuleType
from typing import Iterator

import pytest

from helpers import requires_tf
from tfjob.scaffold import init_template

UCI_ROWS = """\
|1x3 Cross validator
39, State-gov, 77516, Bachelors, 13, Never-married, Adm-clerical, Not-in-family, White, Male, 2174, 0, 40, United-States, <=50K

52, Self-emp-inc, 287927, HS-grad, 9, Married-civ-spouse, Exec-managerial, Wife, White, Female, 15024, 0, 40, United-States, >50K.
54, ?, 180211, Some-college, 10, Married-civ-spouse, ?, Husband, Asian-Pac-Islander, Male, 0, 0, 60, South, >50K
"""


def _import_trainer(root: Path) -> dict[str, ModuleType]:
    for name in [m for m in sys.modules if m == "trainer" or m.startswith("trainer.")]:
        del sys.modules[name]
    sys.path.insert(0, str(root))
    try:
        return {name: importlib.import_module(f"trainer.{name}") for name in ("data", "experiment", "model", "task")}
    finally:
        sys.path.remove(str(root))


@pytest.fixture
def ps_trainer(tmp_path: Path) -> Iterator[dict[str, ModuleType]]:
    """The census-ps trainer's modules, imported from a copy made by ``tfjob init``."""
    yield _import_trainer(init_template(tmp_path / "census", "census-ps"))
    for name in [m for m in sys.modules if m == "trainer" or m.startswith("trainer.")]:
        del sys.modules[name]


@pytest.fixture
def mw_trainer(tmp_path: Path) -> Iterator[dict[str, ModuleType]]:
    """The census-multiworker trainer's modules."""
    yield _import_trainer(init_template(tmp_path / "mw", "census-multiworker"))
    for name in [m for m in sys.modules if m == "trainer" or m.startswith("trainer.")]:
        del sys.modules[name]


def test_generated_rows_are_deterministic_and_census_shaped(ps_trainer: dict[str, ModuleType]) -> None:
    data = ps_trainer["data"]
    rows = data.generate_rows(2000, seed=7)
    assert rows == data.generate_rows(2000, seed=7)
    assert rows != data.generate_rows(2000, seed=8)
    assert all(len(r) == len(data.CSV_COLUMNS) == 15 for r in rows)
    columns = dict(zip(data.CSV_COLUMNS, zip(*rows)))
    for name, vocabulary in data.VOCABULARIES.items():
        assert set(columns[name]) <= set(vocabulary) | {"?"}, name
    assert all(17 <= a <= 90 for a in columns["age"])
    assert all(data.VOCABULARIES["education"].index(e) + 1 == n for e, n in zip(columns["education"], columns["education_num"]))
    positive = sum(label == ">50K" for label in columns["income_bracket"]) / len(rows)
    assert 0.15 < positive < 0.35  # like UCI Adult (24%)


def test_generated_labels_carry_a_learnable_signal(ps_trainer: dict[str, ModuleType]) -> None:
    data = ps_trainer["data"]
    rows = data.generate_rows(4000, seed=1)
    by_education = {True: [], False: []}
    for r in rows:
        by_education[r[4] >= 13].append(r[-1] == ">50K")
    graduates, others = (sum(v) / len(v) for v in (by_education[True], by_education[False]))
    assert graduates > 2 * others


def test_render_csv_uses_the_uci_layout(ps_trainer: dict[str, ModuleType]) -> None:
    data = ps_trainer["data"]
    text = data.render_csv(data.generate_rows(3, seed=0))
    lines = text.splitlines()
    assert len(lines) == 3 and text.endswith("\n")
    assert all(line.count(", ") == 14 for line in lines)
    assert not lines[0].startswith("age")


def test_trainer_arguments_and_their_checks(ps_trainer: dict[str, ModuleType]) -> None:
    experiment = ps_trainer["experiment"]
    args = experiment.parse_args(["--job-dir", "/jd", "--train-steps", "40", "--learning_rate=0.05", "--hidden-units", "16,8"])
    assert (args.job_dir, args.train_steps, args.learning_rate, args.hidden_units) == ("/jd", 40, 0.05, (16, 8))
    assert args.steps_per_checkpoint == 10 and args.eval_steps == 20 and args.train_files is None
    for bad in (["--train-steps", "0"], ["--learning-rate", "-1"], ["--hidden-units", "a,b"]):
        with pytest.raises(SystemExit, match="2"):
            experiment.parse_args(bad)


def test_job_dir_defaults_to_the_vertex_output_directory(ps_trainer: dict[str, ModuleType], monkeypatch: pytest.MonkeyPatch) -> None:
    experiment = ps_trainer["experiment"]
    monkeypatch.setenv("AIP_MODEL_DIR", "gs://b/out/model/")
    assert experiment.parse_args([]).job_dir == "gs://b/out"
    monkeypatch.delenv("AIP_MODEL_DIR")
    assert experiment.parse_args([]).job_dir == "census-output"


def test_render_metrics_records_steps_and_finite_values(ps_trainer: dict[str, ModuleType]) -> None:
    experiment = ps_trainer["experiment"]
    args = experiment.parse_args(["--train-steps", "40"])
    record = experiment.render_metrics({"loss": 0.5, "accuracy": 0.8}, global_step=40, resumed_from_step=20, args=args)
    assert record["global_step"] == 40 and record["resumed_from_step"] == 20 and record["train_steps"] == 40
    assert all(math.isfinite(record[k]) for k in ("loss", "accuracy"))


def test_ps_trainer_needs_ps_and_workers(ps_trainer: dict[str, ModuleType]) -> None:
    problem = ps_trainer["task"].cluster_problem
    assert problem({}) is None
    assert problem({"chief": ["h:1"]}) is None
    assert problem({"chief": ["h:1"], "worker": ["h:2"], "ps": ["h:3"]}) is None
    assert "needs at least one worker and one ps" in problem({"chief": ["h:1"], "worker": ["h:2", "h:3"]})


def test_multiworker_trainer_refuses_ps_and_picks_its_chief(mw_trainer: dict[str, ModuleType]) -> None:
    task = mw_trainer["task"]
    assert task.cluster_problem({"chief": ["h:1"], "worker": ["h:2"]}) is None
    assert "has 1 ps task(s): submit without --ps" in task.cluster_problem({"chief": ["h:1"], "ps": ["h:2"]})
    cluster = {"chief": ["h:1"], "worker": ["h:2"]}
    assert task.is_chief("chief", 0, cluster) and not task.is_chief("worker", 0, cluster)
    assert task.is_chief("worker", 0, {"worker": ["h:1", "h:2"]}) and not task.is_chief("worker", 1, {"worker": ["h:1", "h:2"]})
    assert task.is_chief(None, None, {})
    assert task.scratch_dir("gs://b/jd", "worker", 2) == "gs://b/jd/tmp-worker-2"


@requires_tf
def test_reader_parses_uci_files_and_skips_non_rows(ps_trainer: dict[str, ModuleType], tmp_path: Path) -> None:
    data = ps_trainer["data"]
    (tmp_path / "adult.test").write_text(UCI_ROWS)
    batches = list(data.make_dataset([str(tmp_path / "adult.*")], batch_size=10, shuffle=False, repeat=False))
    assert len(batches) == 1
    features, label = batches[0]
    assert label.numpy().tolist() == [0.0, 1.0, 1.0]
    assert features["workclass"].numpy().tolist() == [b"State-gov", b"Self-emp-inc", b"?"]
    assert features["capital_gain"].numpy().tolist() == [2174.0, 15024.0, 0.0]
    assert set(features) == set(data.CSV_COLUMNS) - {"income_bracket"}


@requires_tf
def test_reader_names_a_pattern_that_matches_nothing(ps_trainer: dict[str, ModuleType], tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match=r"no file matches '.*nothing-\*\.csv': give existing CSV files"):
        ps_trainer["data"].make_dataset([str(tmp_path / "nothing-*.csv")], batch_size=4, shuffle=False, repeat=False)


@requires_tf
def test_generated_files_are_written_once_and_read_back(ps_trainer: dict[str, ModuleType], tmp_path: Path) -> None:
    data = ps_trainer["data"]
    train, evaluation = data.ensure_generated_data(str(tmp_path / "data"), seed=3)
    assert Path(train).read_text() == data.render_csv(data.generate_rows(data.GENERATED_TRAIN_ROWS, 3))
    assert Path(evaluation).read_text() == data.render_csv(data.generate_rows(data.GENERATED_EVAL_ROWS, 4))
    before = Path(train).stat().st_mtime_ns
    assert data.ensure_generated_data(str(tmp_path / "data"), seed=3) == (train, evaluation)
    assert Path(train).stat().st_mtime_ns == before
    assert sorted(p.name for p in (tmp_path / "data").iterdir()) == ["adult.data.csv", "adult.test.csv"]
    rows = sum(int(b[1].shape[0]) for b in data.make_dataset([evaluation], 128, shuffle=False, repeat=False))
    assert rows == data.GENERATED_EVAL_ROWS


@requires_tf
def test_model_maps_raw_rows_to_probabilities(ps_trainer: dict[str, ModuleType], tmp_path: Path) -> None:
    import tensorflow as tf

    data, model = ps_trainer["data"], ps_trainer["model"]
    (tmp_path / "rows.csv").write_text(UCI_ROWS)
    features, _ = next(iter(data.make_dataset([str(tmp_path / "rows.csv")], 8, shuffle=False, repeat=False)))
    net = model.build_model(learning_rate=0.01, hidden_units=(8,))
    assert "fnlwgt" not in [i.name for i in net.inputs]
    out = net(model.to_model_inputs(features)).numpy()
    assert out.shape == (3, 1) and ((out > 0) & (out < 1)).all()
    signatures = model.serving_signatures(net)
    by_csv = signatures["predict_csv"](tf.constant([UCI_ROWS.splitlines()[1].rsplit(",", 1)[0]]))
    assert by_csv["probabilities"].numpy()[0] == pytest.approx(float(out[0, 0]), rel=1e-5)
    assert by_csv["classes"].numpy()[0] in (b">50K", b"<=50K")
