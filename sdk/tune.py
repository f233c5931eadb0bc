"""``Tuning``: a hyperparameter study to render or run, locally or on Vertex AI.

The Python twin of ``tfjob tune``::

    from tfjob import Tuning

    result = Tuning("hparams.yaml", package="trainer/", module="trainer.task", workers=1).run()
    print(result.best.params)

The job every trial runs is described exactly as for :class:`tfjob.Job` (the same
keywords, the same ``--config``), and the ``--hparams`` file may describe it too
(a legacy ``trainingInput`` or a Vertex ``trialJobSpec``).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, TextIO

from .errors import JobCancelledError, JobFailedError, SpecError, UsageError
from .job import Job
from .study import HparamsConfig, StudySpec
from .tuning.hparams import load_hparams
from .backends.local.tuning import StudyResult

#: ``--algorithm`` spellings → the platform's algorithm.
ALGORITHM_NAMES = {
    "grid": "GRID_SEARCH",
    "random": "RANDOM_SEARCH",
    "bayesian": "ALGORITHM_UNSPECIFIED",
    "tpe": "ALGORITHM_UNSPECIFIED",
}
#: Where ``tfjob tune`` runs.
TUNE_BACKENDS = ("local", "vertex")


def parse_algorithm(text: str) -> str:
    """``grid`` / ``random`` / ``bayesian`` (``tpe``) or a platform name → the platform's name."""
    key = text.strip()
    if key.lower() in ALGORITHM_NAMES:
        return ALGORITHM_NAMES[key.lower()]
    if key.upper() in ALGORITHM_NAMES.values():
        return key.upper()
    raise SpecError(f"--algorithm {text!r} is not known; choose grid, random or bayesian (tpe locally)")


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
        hparams: the ``--hparams`` file, or a :class:`~tfjob.study.StudySpec`.
        package, module: the trainer (as for :class:`tfjob.Job`).
        seed: makes a local search reproducible.
        max_trials, parallel_trials, max_failed_trials, algorithm: override the file.
        **kwargs: anything :class:`tfjob.Job` takes (workers, ps, backend, dialect, …).

    Raises:
        UsageError: the file or the job cannot be used; the backend cannot tune.
    """

    def __init__(
        self,
        hparams: str | Path | StudySpec | HparamsConfig,
        package: str | None = None,
        module: str | None = None,
        *,
        seed: int | None = None,
        max_trials: int | None = None,
        parallel_trials: int | None = None,
        max_failed_trials: int | None = None,
        algorithm: str | None = None,
        **kwargs: Any,
    ) -> None:
        if isinstance(hparams, StudySpec):
            config = HparamsConfig(hparams)
        elif isinstance(hparams, HparamsConfig):
            config = hparams
        else:
            config = load_hparams(hparams)
        given = {k: v for k, v in kwargs.items() if v is not None}
        if config.job and given.get("config"):
            raise UsageError(
                f"{config.source} describes the trials' cluster and so does --config {given['config']}; keep one of them"
            )
        self.seed = seed
        self.study = apply_overrides(
            config.study,
            max_trials=max_trials,
            parallel_trials=parallel_trials,
            max_failed_trials=max_failed_trials,
            algorithm=algorithm,
        )
        self.job = Job.from_keywords(package, module, **{**config.job, **given})
        if self.job.backend_name not in TUNE_BACKENDS:
            raise UsageError(
                f"--backend {self.job.backend_name} cannot tune; tfjob tune runs on --backend local (Optuna) or vertex"
            )

    @property
    def backend_name(self) -> str:
        return self.job.backend_name

    def render(self, echo: Any = None) -> dict[str, Any]:
        """What would run: the Vertex ``HyperparameterTuningJob`` body, or the local study and trial job."""
        from .backends.vertex.render_tuning import describe_parameter, render_study_spec

        if self.backend_name == "vertex":
            from .backends.vertex.tuning import plan_tuning

            plan, body = plan_tuning(self.study, self.job.spec, self.job.options, dry_run=True)
            for note in plan.notes:
                (echo or _say)(note)
            (echo or _say)(f"dry run: would create this HyperparameterTuningJob in {plan.parent}")
            return body
        from .tuning.search import LOCAL_ALGORITHMS, plan_trial_count

        count, _ = plan_trial_count(self.study)
        return {
            "backend": "local",
            "studySpec": render_study_spec(self.study),
            "maxTrialCount": count,
            "parallelTrialCount": self.study.parallel_trials,
            "maxFailedTrialCount": self.study.max_failed_trials,
            "search": LOCAL_ALGORITHMS[self.study.algorithm],
            "trialArgs": [describe_parameter(p) for p in self.study.parameters],
            "trialJob": self.job.render(),
        }

    def run(self, stream: TextIO | None | str = "stderr", *, cores: int | None = None, port_picker: Any = None) -> StudyResult:
        """Run the study to its end, showing its trials on ``stream`` (default stderr); return how it ended.

        The result says FAILED or CANCELLED rather than raising; see :meth:`result`.
        """
        if stream == "stderr":
            stream = sys.stderr
        if self.backend_name == "vertex":
            return self._run_vertex(stream)  # type: ignore[arg-type]
        from .backends.local.tuning import LocalStudy

        study = LocalStudy(
            self.study, self.job.spec, self.job.options, seed=self.seed, cores=cores, stream=stream, port_picker=port_picker,  # type: ignore[arg-type]
            store=self.job.store,
        )
        return study.run()

    def submit(self, echo: Any = None) -> str:
        """Create the tuning job on Vertex AI and return its id at once."""
        if self.backend_name != "vertex":
            raise UsageError("a local study runs in this process to its end; drop --async (or use --backend vertex)")
        from .backends.vertex.tuning import submit_tuning

        return submit_tuning(
            self.study, self.job.spec, self.job.options, echo=echo or _say, credentials=getattr(self.job.backend, "credentials", None),
            store=self.job.store,
        )

    def _run_vertex(self, stream: TextIO | None) -> StudyResult:
        from .model import JobState
        from .tuning.trials import Trial, best_trial
        from .backends.vertex.tuning import follow_tuning
        from .tuning.view import TrialsView

        view = TrialsView(self.study, stream, quiet=self.job.options.quiet)
        job_id = self.submit()
        if not self.job.options.wait:
            return StudyResult(job_id, JobState.QUEUED, "submitted")
        final = follow_tuning(
            job_id, self.job.options, on_trials=view.update, echo=_say, credentials=getattr(self.job.backend, "credentials", None),
            store=self.job.store,
        )
        trials = [Trial.from_dict(t) for t in final.extra.get("trials", [])]
        view.finish(trials, f"tuning job {job_id} {final.state.value}: {final.message or 'no message'}")
        failed = [t for t in trials if t.failed]
        return StudyResult(
            job_id,
            final.state,
            final.message,
            trials,
            best_trial(trials, self.study.metric.maximize),
            failed_trial=f"trial-{failed[-1].id}" if failed else None,
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
