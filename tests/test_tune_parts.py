"""The pure parts of tuning: metric files, the search's encodings, parallelism, the trials table."""

from __future__ import annotations

import json
import math
import os
import statistics
from pathlib import Path

import pytest

from helpers import cli_words

from tfjob.hypertune import render_metric_line
from tfjob.description.request import build_spec
from tfjob.tuning.study import MetricSpec, ParameterSpec, StudySpec
from tfjob.tune import apply_overrides, parse_algorithm
from tfjob.backends.local.tuning import build_trial_spec, plan_parallelism
from tfjob.tuning.metrics import fetch_trial_metric, parse_trial_metric
from tfjob.tuning.search import Search, decode_value, plan_trial_count
from tfjob.tuning.trials import TableLayout, Trial, best_trial, render_best, render_study_status, render_trials_table

LR = ParameterSpec("learning_rate", "DOUBLE", 1e-4, 1e-1, scale="UNIT_LOG_SCALE")
OPT = ParameterSpec("optimizer", "CATEGORICAL", values=("adam", "sgd"))


def _study(*params: ParameterSpec, **kw: object) -> StudySpec:
    return StudySpec(MetricSpec("loss", "MINIMIZE"), params or (LR, OPT), **kw)  # type: ignore[arg-type]


# -- metric files ------------------------------------------------------------------------------
def test_last_report_of_the_tag_counts_by_default() -> None:
    text = "\n".join(
        [
            render_metric_line("loss", 0.9, 10, "1", 1.0),
            render_metric_line("accuracy", 0.5, 10, "1", 1.0),
            render_metric_line("loss", 0.4, 20, "1", 2.0),
            render_metric_line("loss", 0.6, 30, "1", 3.0),
            '{"loss": "0.1", "glo',  # cut short by a crash
        ]
    )
    last = parse_trial_metric(text, "loss", maximize=False)
    assert (last.value, last.step, last.reports, last.tags) == (0.6, 30, 3, ("loss", "accuracy"))
    best = parse_trial_metric(text, "loss", maximize=False, best=True)
    assert (best.value, best.step) == (0.4, 20)
    assert parse_trial_metric(text, "loss", maximize=True, best=True).value == 0.9


def test_the_legacy_metric_tag_shape_is_read() -> None:
    text = "\n".join(
        [
            json.dumps({"hyperparameterMetricTag": "auc", "auc": 0.71, "global_step": 5}),
            json.dumps({"hyperparameterMetricTag": "auc", "value": "0.75", "trial": "2"}),
        ]
    )
    reading = parse_trial_metric(text, "auc", maximize=True)
    assert (reading.value, reading.reports, reading.step) == (0.75, 2, None)


def test_a_missing_metric_says_which_tags_were_seen(tmp_path: Path) -> None:
    text = render_metric_line("acc", 0.5, 1, "1", 1.0) + "\n" + json.dumps({"loss": "nan", "global_step": "1"})
    reading = parse_trial_metric(text, "loss", maximize=False)
    assert reading.value is None and reading.tags == ("acc", "loss")
    assert fetch_trial_metric(tmp_path / "none.metrics", "loss", False).value is None


def test_a_metrics_file_is_read_from_its_end_within_bounds(tmp_path: Path) -> None:
    from tfjob.hypertune import MAX_METRIC_FILE_BYTES

    # A trainer that wrote its own file, far larger than the bound: the last reports count.
    path = tmp_path / "big.metrics"
    filler = render_metric_line("loss", 9.0, 1, "1", 1.0) + "\n"
    with path.open("w") as f:
        f.write(filler * (3 * MAX_METRIC_FILE_BYTES // len(filler)))
        f.write(render_metric_line("loss", 0.25, 99, "1", 2.0) + "\n")
    reading = fetch_trial_metric(path, "loss", maximize=False)
    assert (reading.value, reading.step) == (0.25, 99)
    assert reading.reports < 2 * MAX_METRIC_FILE_BYTES // len(filler)
    # A FIFO is never waited on: nothing reported.
    fifo = tmp_path / "fifo.metrics"
    os.mkfifo(fifo)
    assert fetch_trial_metric(fifo, "loss", False).value is None


# -- the search ---------------------------------------------------------------------------------
def test_encodings_keep_what_the_scale_means() -> None:
    reverse = ParameterSpec("momentum", "DOUBLE", 0.5, 0.999, scale="UNIT_REVERSE_LOG_SCALE")
    assert decode_value(reverse, 0.5) == pytest.approx(0.999)
    assert decode_value(reverse, 0.999) == pytest.approx(0.5)
    batch = ParameterSpec("batch", "DISCRETE", values=(16, 64, 32))
    assert [decode_value(batch, i) for i in range(3)] == [16.0, 32.0, 64.0]
    layers = ParameterSpec("layers", "INTEGER", 1, 8, scale="UNIT_REVERSE_LOG_SCALE")
    assert decode_value(layers, 1) == 8 and isinstance(decode_value(layers, 3), int)


def test_random_search_draws_inside_the_ranges_with_the_scales() -> None:
    reverse = ParameterSpec("momentum", "DOUBLE", 0.01, 1.0, scale="UNIT_REVERSE_LOG_SCALE")
    layers = ParameterSpec("layers", "INTEGER", 1, 64, scale="UNIT_LOG_SCALE")
    batch = ParameterSpec("batch", "DISCRETE", values=(16, 32, 64))
    search = Search(_study(LR, OPT, reverse, layers, batch, max_trials=400, algorithm="RANDOM_SEARCH"), seed=1)
    draws = [search.ask()[1] for _ in range(400)]
    lrs = [d["learning_rate"] for d in draws]
    assert all(1e-4 <= x <= 1e-1 for x in lrs)
    # Log scale: as many draws in each decade, so the median sits near the geometric middle.
    assert 10**-3.3 < statistics.median(lrs) < 10**-2.2
    moms = [d["momentum"] for d in draws]
    assert all(0.01 <= m <= 1.0 for m in moms)
    assert statistics.median(moms) > 0.8  # reverse log: crowded toward the top
    assert all(isinstance(d["layers"], int) and 1 <= d["layers"] <= 64 for d in draws)
    assert statistics.median(d["layers"] for d in draws) < 16
    assert {d["batch"] for d in draws} == {16.0, 32.0, 64.0}
    assert {d["optimizer"] for d in draws} == {"adam", "sgd"}


def test_tpe_learns_toward_the_optimum() -> None:
    study = _study(max_trials=40)
    search = Search(study, seed=3)
    losses = []
    for _ in range(40):
        number, values = search.ask()
        loss = (math.log10(values["learning_rate"]) + 2) ** 2 + (0 if values["optimizer"] == "adam" else 1)
        search.tell(number, loss)
        losses.append(loss)
    # After the random start-up third, TPE proposes better points than the start-up did on average.
    assert statistics.mean(losses[-10:]) < statistics.mean(losses[:13])
    assert min(losses) < 0.05


def test_grid_search_covers_the_grid_once_and_stops() -> None:
    study = _study(ParameterSpec("layers", "INTEGER", 1, 3), OPT, max_trials=10, algorithm="GRID_SEARCH")
    count, note = plan_trial_count(study)
    assert count == 6 and note is not None and "grid has 6 points" in note
    search = Search(study, seed=0)
    asked = [search.ask() for _ in range(2)]  # two in flight at once get different points
    points = [tuple(v.values()) for _, v in asked]
    for number, _ in asked:
        search.tell(number, 1.0)
    for _ in range(4):
        number, values = search.ask()
        points.append(tuple(values.values()))
        search.tell(number, None)
    assert sorted(points) == sorted((n, o) for n in (1, 2, 3) for o in ("adam", "sgd"))


def test_algorithm_names_and_overrides() -> None:
    assert [parse_algorithm(a) for a in ("grid", "Random", "tpe", "bayesian", "GRID_SEARCH")] == [
        "GRID_SEARCH", "RANDOM_SEARCH", "ALGORITHM_UNSPECIFIED", "ALGORITHM_UNSPECIFIED", "GRID_SEARCH",
    ]  # fmt: skip
    # The Python API's words (a keyword), and the CLI's (its flag), for the one mistake.
    with pytest.raises(ValueError, match=r"^algorithm='annealing' is not known; choose grid, random or bayesian"):
        parse_algorithm("annealing")
    with pytest.raises(ValueError, match=r"^--algorithm 'annealing' is not known; choose grid, random or bayesian"), cli_words():
        parse_algorithm("annealing")
    study = _study(max_trials=8, parallel_trials=4)
    assert apply_overrides(study, max_trials=2).parallel_trials == 2
    changed = apply_overrides(study, parallel_trials=1, max_failed_trials=2, algorithm="random")
    assert (changed.parallel_trials, changed.max_failed_trials, changed.algorithm) == (1, 2, "RANDOM_SEARCH")
    with pytest.raises(ValueError, match=r"maxParallelTrials 4 is more than maxTrials 3"):
        apply_overrides(study, max_trials=3, parallel_trials=4)


# -- local plan --------------------------------------------------------------------------------------
def test_parallel_trials_fit_in_the_cores() -> None:
    study = _study(max_trials=8, parallel_trials=4)
    assert plan_parallelism(study, tasks_per_trial=1, cores=8) == (4, None)
    fits, note = plan_parallelism(study, tasks_per_trial=3, cores=8)
    assert fits == 2 and note is not None and "each trial runs 3 tasks and this machine has 8 cores" in note
    assert plan_parallelism(study, tasks_per_trial=5, cores=2)[0] == 1


def test_trial_job_gets_its_arguments_and_metric_file(tmp_path: Path) -> None:
    spec = build_spec(dict(name="toy-20261122-153000", module="toy.task", workers=1, args=["--epochs", "2"], env={"A": "1"}))
    trial = Trial("3", {"learning_rate": 0.01, "optimizer": "adam"})
    out = build_trial_spec(spec, _study(), trial, tmp_path / "m")
    assert out.name == "toy-trial-3"
    assert out.args == ("--epochs", "2", "--learning_rate=0.01", "--optimizer=adam")
    assert out.env == {"A": "1", "CLOUD_ML_HP_METRIC_FILE": str(tmp_path / "m")}
    assert out.pools == spec.pools


# -- the table -----------------------------------------------------------------------------------------
def test_trials_table_and_best() -> None:
    study = _study(max_trials=4, parallel_trials=2, max_failed_trials=2)
    trials = [
        Trial("1", {"learning_rate": 0.0123456789, "optimizer": "adam"}, "SUCCEEDED", 0.25, job_id="toy-trial-1-aaaaaa"),
        Trial("2", {"learning_rate": 0.001, "optimizer": "sgd"}, "FAILED", message="task chief-0 exited with code 3"),
        Trial("3", {"learning_rate": 0.02, "optimizer": "adam"}, "SUCCEEDED", 0.1, job_id="toy-trial-3-bbbbbb"),
        Trial("4", {"learning_rate": 0.05, "optimizer": "adam"}, "RUNNING", job_id="toy-trial-4-cccccc"),
    ]
    best = best_trial(trials, maximize=False)
    assert best is trials[2]
    assert best_trial(trials, maximize=True) is trials[0]
    lines = render_trials_table(TableLayout.of(study), trials, best).splitlines()
    assert lines[0].split() == ["TRIAL", "STATE", "LOSS", "learning_rate", "optimizer", "JOB", "/", "MESSAGE"]
    assert lines[1].split() == ["1", "SUCCEEDED", "0.25", "0.0123457", "adam", "toy-trial-1-aaaaaa"]
    assert lines[2].split()[:5] == ["2", "FAILED", "-", "0.001", "sgd"] and lines[2].endswith("task chief-0 exited with code 3")
    assert lines[3].startswith("*3")
    assert render_best(study, best) == "best trial 3: loss=0.1 (MINIMIZE) --learning_rate=0.02 --optimizer=adam"
    status = render_study_status({"study": study.to_dict(), "trials": [t.to_dict() for t in trials]}).splitlines()
    assert status[0] == "4 of 4 trials, 2 succeeded, 1 failed of 2 allowed; 2 at a time; goal MINIMIZE loss"
    assert status[-1] == render_best(study, best)


def test_the_live_view_redraws_on_a_terminal_and_prints_news_elsewhere() -> None:
    import io

    from tfjob.tuning.view import TrialsView

    study = _study(max_trials=2, parallel_trials=2)
    running = [
        Trial("1", {"learning_rate": 0.01, "optimizer": "adam"}, "RUNNING"),
        Trial("2", {"learning_rate": 0.1, "optimizer": "sgd"}, "QUEUED"),
    ]
    done = [
        Trial("1", running[0].params, "SUCCEEDED", 0.0),
        Trial("2", running[1].params, "FAILED", message="task chief-0 exited with code 3"),
    ]

    tty = io.StringIO()
    live = TrialsView(study, tty, live=True)
    live.update(running)
    live.update(done)
    live.finish(done, "study s SUCCEEDED")
    text = tty.getvalue()
    assert text.count("\033[3F\033[J") == 2  # the 3-line table was drawn over, twice
    assert text.endswith("study s SUCCEEDED\n") and "*1" in text

    log = io.StringIO()
    plain = TrialsView(study, log, live=False)
    plain.update(running)
    plain.update(running)  # nothing new: nothing printed
    plain.update(done)
    assert log.getvalue().splitlines() == [
        "trial 1 RUNNING  learning_rate=0.01 optimizer=adam",
        "trial 1 SUCCEEDED loss=0  learning_rate=0.01 optimizer=adam",
        "trial 2 FAILED  learning_rate=0.1 optimizer=sgd  (task chief-0 exited with code 3)",
    ]
    quiet = io.StringIO()
    TrialsView(study, quiet, quiet=True).update(done)
    assert quiet.getvalue() == ""


def test_tuning_is_a_capability_a_backend_offers_not_a_branch_on_its_name() -> None:
    import tfjob
    from tfjob.backends import BACKENDS, get_backend
    from tfjob.backends.base import tuner_of
    from tfjob.tuning.trials import StudyResult

    assert sorted(name for name in BACKENDS if tuner_of(get_backend(name)) is not None) == [
        "jobset",
        "kubeflow",
        "local",
        "trainjob",
        "vertex",
    ]
    front = (Path(__file__).resolve().parents[1] / "sdk" / "tune.py").read_text()
    assert "backend_name ==" not in front and "backends.local" not in front and "backends.vertex" not in front
    # The study's result is the shared model every tuning backend returns, public as tfjob.StudyResult.
    assert tfjob.StudyResult is StudyResult and StudyResult.__module__ == "tfjob.tuning.trials"
