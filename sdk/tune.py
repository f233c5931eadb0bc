"""``Tuning``: a hyperparameter study to render or run, locally, on Vertex AI or on Kubernetes.

The Python twin of ``tfjob tune``::

    from tfjob import Job, Tuning

    result = Tuning(Job("trainer/", "trainer.task", workers=1), "hparams.yaml").run()
    print(result.best.params)

The job every trial runs is a :class:`tfjob.Job`, and the ``--hparams`` file may describe
it too (a legacy ``trainingInput`` or a Vertex ``trialJobSpec``): what the job says
explicitly wins over the file.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Mapping, TextIO

from .errors import JobCancelledError, JobFailedError, SpecError, UsageError, Word
from .job import Job
from .job.job import job_from_keywords
from .tuning.study import HparamsConfig, StudySpec
from .tuning.hparams import load_hparams
from .backends.base import Tuner, tuner_of
from .tuning.trials import StudyResult

if TYPE_CHECKING:
    from .runtime.store import JobStore

#: ``--algorithm`` spellings → the platform's algorithm.
ALGORITHM_NAMES = {
    "grid": "GRID_SEARCH",
    "random": "RANDOM_SEARCH",
    "bayesian": "ALGORITHM_UNSPECIFIED",
    "tpe": "ALGORITHM_UNSPECIFIED",
}


#: A study's search algorithm: tfjob's names (``grid``, ``random``, ``bayesian``, ``tpe``) or
#: the platform's (``GRID_SEARCH``, ``RANDOM_SEARCH``, ``ALGORITHM_UNSPECIFIED``).
Algorithm = Literal["grid", "random", "bayesian", "tpe", "GRID_SEARCH", "RANDOM_SEARCH", "ALGORITHM_UNSPECIFIED"]


def parse_algorithm(text: str) -> str:
    """``grid`` / ``random`` / ``bayesian`` (``tpe``) or a platform name → the platform's name."""
    key = text.strip()
    if key.lower() in ALGORITHM_NAMES:
        return ALGORITHM_NAMES[key.lower()]
    if key.upper() in ALGORITHM_NAMES.values():
        return key.upper()
    raise SpecError(field="algorithm", value=text, problem="is not known", fix="choose grid, random or bayesian (tpe locally)")


def apply_overrides(
    study: StudySpec,
    *,
    max_trials: int | None = None,
    parallel_trials: int | None = None,
    max_failed_trials: int | None = None,
    algorithm: str | None = None,
) -> StudySpec:
    """The study with the counts and algorithm given on the command line. Pure."""
    changes: dict[str, Any] = {}
    if max_trials is not None:
        changes["max_trials"] = max_trials
        if parallel_trials is None and study.parallel_trials > max_trials:
            changes["parallel_trials"] = max_trials  # fewer trials than slots: not a mistake of the user's
    if parallel_trials is not None:
        changes["parallel_trials"] = parallel_trials
    if max_failed_trials is not None:
        changes["max_failed_trials"] = max_failed_trials
    if algorithm is not None:
        changes["algorithm"] = parse_algorithm(algorithm)
    return study.replace(**changes) if changes else study


class Tuning:
    """A study of trials that each run one job.

    Args:
        job: the job every trial runs (:class:`tfjob.Job`), each with its trial's parameters
            as arguments; its backend runs the study.
        hparams: the ``--hparams`` file, or a :class:`~tfjob.tuning.study.StudySpec`.
        seed: makes a local search reproducible.
        max_trials, parallel_trials, max_failed_trials, algorithm: override the file.

    Tuning is a capability of the job's backend (:class:`tfjob.backends.base.Tuner`): the local
    backend runs each trial as a local job, searched with Optuna; the Vertex AI backend creates a
    ``HyperparameterTuningJob``.

    Raises:
        UsageError: the file or the job cannot be used; the backend cannot tune.
    """

    def __init__(
        self,
        job: Job,
        hparams: str | Path | StudySpec | HparamsConfig,
        *,
        seed: int | None = None,
        max_trials: int | None = None,
        parallel_trials: int | None = None,
        max_failed_trials: int | None = None,
        algorithm: Algorithm | None = None,
    ) -> None:
        if not isinstance(job, Job):
            raise UsageError(field="job", value=job, problem="is not a Job", fix="give the job every trial runs: Tuning(Job(...), hparams)")
        config = _hparams_config(hparams)
        if config.job:
            _one_cluster(config, job._given.config)
            job = job._over(config.job)
        self._start(job, config, seed, max_trials, parallel_trials, max_failed_trials, algorithm)

    def _start(
        self,
        job: Job,
        config: HparamsConfig,
        seed: int | None,
        max_trials: int | None,
        parallel_trials: int | None,
        max_failed_trials: int | None,
        algorithm: str | None,
    ) -> None:
        self.seed = seed
        self.study = apply_overrides(
            config.study,
            max_trials=max_trials,
            parallel_trials=parallel_trials,
            max_failed_trials=max_failed_trials,
            algorithm=algorithm,
        )
        self.job = job
        _tuner(self.job._unbound_backend())  # a backend that cannot tune is said here, before anything runs

    @property
    def tuner(self) -> Tuner:
        """The job's backend as a tuner, recording in the job's store."""
        return _tuner(self.job.backend)

    @property
    def backend_name(self) -> str:
        return self.job.backend_name

    def render(self, echo: Any = None) -> dict[str, Any]:
        """What would run: the backend's study (a Vertex ``HyperparameterTuningJob`` body, or the
        local study's plan and the job a trial runs)."""
        self.job.build_image(push=False)
        return _tuner(self.job._unbound_backend()).render_study(self.study, self.job.spec, self.job.options, echo=echo or _say)

    def run(self, stream: TextIO | None | str = "stderr", *, cores: int | None = None, port_picker: Any = None) -> StudyResult:
        """Run the study to its end, showing its trials on ``stream`` (default stderr); return how it ended.

        The result says FAILED or CANCELLED rather than raising; see :func:`check_result`.
        """
        if stream == "stderr":
            stream = sys.stderr
        return self.tuner.run_study(
            self.study, self.job.spec, self.job.options, stream=stream, seed=self.seed, cores=cores,  # type: ignore[arg-type]
            port_picker=port_picker, echo=_say,
        )  # fmt: skip

    def submit(self, echo: Any = None) -> str:
        """Start the study and return its id at once (a Vertex AI tuning job; a local study runs
        in this process, so it cannot be submitted)."""
        return self.tuner.submit_study(self.study, self.job.spec, self.job.options, echo=echo or _say)


def _hparams_config(hparams: str | Path | StudySpec | HparamsConfig) -> HparamsConfig:
    if isinstance(hparams, StudySpec):
        return HparamsConfig(hparams)
    if isinstance(hparams, HparamsConfig):
        return hparams
    from .backends import knobs

    return load_hparams(hparams, tuple(knobs().values()))


def tuning_from_keywords(
    hparams: str | Path | StudySpec | HparamsConfig,
    package: str | None = None,
    module: str | None = None,
    keywords: Mapping[str, Any] | None = None,
    *,
    seed: int | None = None,
    max_trials: int | None = None,
    parallel_trials: int | None = None,
    max_failed_trials: int | None = None,
    algorithm: str | None = None,
    store: JobStore | None = None,
) -> Tuning:
    """A study whose trials' job is given as flat keywords (:func:`tfjob.job.job.job_from_keywords`),
    as ``tfjob tune``'s flags name them (internal: a program uses ``Tuning(Job(...), hparams)``)."""
    config = _hparams_config(hparams)
    given = {k: v for k, v in (keywords or {}).items() if v is not None}
    _one_cluster(config, given.get("config"))
    job = job_from_keywords(package, module, given, store=store, under=config.job)
    tuning = Tuning.__new__(Tuning)
    tuning._start(job, config, seed, max_trials, parallel_trials, max_failed_trials, algorithm)
    return tuning


def _one_cluster(config: HparamsConfig, job_config: Any) -> None:
    """An hparams file that describes the trials' cluster and a ``--config`` file too: refused."""
    if config.job and job_config is not None:
        raise UsageError(
            problem=f"{config.source} describes the trials' cluster and so does {{config}} {job_config}", fix="keep one of them"
        )


def _tuner(backend: Any) -> Tuner:
    """The backend's tuning capability; a backend without one is a UsageError naming those that have it."""
    tuner = tuner_of(backend)
    if tuner is not None:
        return tuner
    from .backends import BACKENDS, get_backend

    able = []
    for name in BACKENDS:
        other = tuner_of(get_backend(name))
        if other is not None:
            able.append(f"{name} ({other.study_search})" if other.study_search else name)
    raise UsageError(
        field="backend", value=Word(backend.name), problem="cannot tune", fix=f"tfjob tune runs on {{backend}} {' or '.join(able)}"
    )


def check_result(result: StudyResult) -> StudyResult:
    """The result if the study SUCCEEDED (or was only submitted); raise otherwise.

    Raises:
        JobFailedError: the study failed (too many failed trials, none reported the metric).
        JobCancelledError: it was cancelled.
    """
    from .model import JobState

    if result.state is JobState.CANCELLED:
        raise JobCancelledError(f"study {result.id} was cancelled: {result.message}")
    if result.state in (JobState.FAILED, JobState.LOST):
        raise JobFailedError(
            f"study {result.id} FAILED: {result.message}", job_id=result.id, task=result.failed_trial, log_tail=result.log_tail
        )
    return result


def _say(message: str) -> None:
    print(f"tfjob: {message}", file=sys.stderr, flush=True)
