"""A study as an Optuna search: which values the next trial tries.

The platform's algorithms map to Optuna samplers: ``RANDOM_SEARCH`` → random,
``GRID_SEARCH`` → grid, ``ALGORITHM_UNSPECIFIED`` (the platforms' Bayesian
optimization) → TPE, which learns from the trials that ended and, with a "constant
liar", does not propose the same point to trials running in parallel.

Parameters are searched in an encoded space that keeps what the scale means:
``UNIT_LOG_SCALE`` searches the logarithm; ``UNIT_REVERSE_LOG_SCALE`` searches
``min + max - x`` on a log scale, so points crowd toward the top of the range; a
DISCRETE parameter is searched by the index of its (ordered) values, so TPE sees
that 32 lies between 16 and 64. Optuna is imported only when a search is built.
"""

from __future__ import annotations

import warnings
from typing import Any

from ..errors import BackendUnavailableError
from .study import ParameterSpec, StudySpec

#: The platform's algorithm → what runs locally.
LOCAL_ALGORITHMS = {"ALGORITHM_UNSPECIFIED": "tpe", "RANDOM_SEARCH": "random", "GRID_SEARCH": "grid"}


def local_algorithm(study: StudySpec) -> str:
    """``tpe``, ``random`` or ``grid``: the sampler a local study uses."""
    return LOCAL_ALGORITHMS[study.algorithm]


def plan_trial_count(study: StudySpec) -> tuple[int, str | None]:
    """How many trials a local study runs, and a note when it is fewer than asked.

    Grid search stops when the grid is exhausted: a trial more would repeat a point.
    """
    if study.algorithm != "GRID_SEARCH":
        return study.max_trials, None
    size = study.grid_size()
    if size < study.max_trials:
        return size, f"the grid has {size} points, so the study runs {size} trials, not maxTrials {study.max_trials}"
    return study.max_trials, None


def _optuna() -> Any:
    try:
        import optuna
    except ImportError as e:
        raise BackendUnavailableError(
            "local tuning needs Optuna, which is not installed; pip install 'tfjob[tune]' (or --backend vertex)"
        ) from e
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    return optuna


def _distribution(optuna: Any, p: ParameterSpec) -> Any:
    dists = optuna.distributions
    if p.type == "CATEGORICAL":
        return dists.CategoricalDistribution(list(p.values))
    if p.type == "DISCRETE":
        return dists.IntDistribution(0, len(p.values) - 1)
    log = p.scale in ("UNIT_LOG_SCALE", "UNIT_REVERSE_LOG_SCALE")
    if p.type == "INTEGER":
        return dists.IntDistribution(int(p.min_value), int(p.max_value), log=log)  # type: ignore[arg-type]
    return dists.FloatDistribution(float(p.min_value), float(p.max_value), log=log)  # type: ignore[arg-type]


def decode_value(p: ParameterSpec, encoded: Any) -> Any:
    """The parameter's value from its searched (encoded) value. Pure."""
    if p.type == "DISCRETE":
        return p.values[int(encoded)]
    if p.scale == "UNIT_REVERSE_LOG_SCALE":
        assert p.min_value is not None and p.max_value is not None
        value = p.min_value + p.max_value - encoded
        # Floating-point error must not step outside the range the user gave.
        value = min(max(value, p.min_value), p.max_value)
        return int(round(value)) if p.type == "INTEGER" else float(value)
    if p.type == "INTEGER":
        return int(encoded)
    if p.type == "DOUBLE":
        return float(encoded)
    return encoded


def _grid_values(p: ParameterSpec) -> list[Any]:
    # The grid in the encoded space (DISCRETE: indices), holding every value once.
    if p.type == "DISCRETE":
        return list(range(len(p.values)))
    return p.grid()


def build_sampler(study: StudySpec, seed: int | None = None) -> Any:
    """The Optuna sampler for the study's algorithm."""
    optuna = _optuna()
    algorithm = local_algorithm(study)
    if algorithm == "random":
        return optuna.samplers.RandomSampler(seed=seed)
    if algorithm == "grid":

        class _Grid(optuna.samplers.GridSampler):  # type: ignore[misc, name-defined]
            # Optuna's grid stops an optimize() loop when exhausted; our loop asks
            # for no more trials than points (plan_trial_count), so there is none to stop.
            def after_trial(self, *args: Any, **kwargs: Any) -> None:
                return None

        return _Grid({p.name: _grid_values(p) for p in study.parameters}, seed=seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # constant_liar is flagged experimental in some versions
        return optuna.samplers.TPESampler(
            seed=seed,
            # Learn after a third of the trials (Optuna's default of 10 random ones
            # would make a short study all random).
            n_startup_trials=max(1, min(10, study.max_trials // 3)),
            constant_liar=True,
        )


class Search:
    """Proposes the values of each trial and learns from the outcomes.

    Args:
        study: the study.
        seed: makes the proposals reproducible.
    """

    def __init__(self, study: StudySpec, seed: int | None = None) -> None:
        optuna = _optuna()
        self.study = study
        self.algorithm = local_algorithm(study)
        self._optuna = optuna
        self._search = optuna.create_study(
            direction="maximize" if study.metric.maximize else "minimize",
            sampler=build_sampler(study, seed),
        )
        self._distributions = {p.name: _distribution(optuna, p) for p in study.parameters}
        self._asked: dict[int, Any] = {}

    def ask(self) -> tuple[int, dict[str, Any]]:
        """Propose a trial: (its number in the search, parameter name → value)."""
        trial = self._search.ask(self._distributions)
        self._asked[trial.number] = trial
        values = {p.name: decode_value(p, trial.params[p.name]) for p in self.study.parameters}
        return trial.number, values

    def tell(self, number: int, value: float | None) -> None:
        """Report how a proposed trial ended: its metric, or None when it failed."""
        trial = self._asked.pop(number)
        if value is None:
            self._search.tell(trial, state=self._optuna.trial.TrialState.FAIL)
        else:
            self._search.tell(trial, float(value))
