"""``tfjob tune``: hyperparameter tuning, locally with Optuna, on Vertex AI, or on Kubernetes.

The job each trial runs takes every cluster option of ``tfjob submit`` (the definitions
of :mod:`tfjob.cli.options`, so the two commands never drift apart), plus the
study: ``--hparams FILE`` and the overrides of its counts and algorithm. Everything
after ``--`` goes to the trainer, before each trial's ``--name=value`` arguments.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import click

from tfjob import UsageError

from . import options as opts
from . import submit as submit_command
from .app import CONTEXT_SETTINGS, app
from .numbers import ASCII_INT, AsciiIntRange

#: The study's own options.
STUDY_OPTIONS = [
    click.option("--hparams", "--hparams-file", "hparams", required=True, metavar="FILE", help="The study: a legacy hyperparameters: / trainingInput YAML, or a Vertex studySpec / HyperparameterTuningJob (YAML or JSON)."),
    click.option("--backend", "backend", help="local (Optuna, on this machine), vertex (a HyperparameterTuningJob), or kubeflow, jobset, trainjob (a Katib Experiment where Katib is served, else trials as jobs on the cluster); default local unless a cloud project is configured."),
    click.option("--max-trials", "--max-trial-count", "max_trials", type=AsciiIntRange(min=1), help="Trials in all (overrides the file)."),
    click.option("--parallel-trials", "--parallel-trial-count", "parallel_trials", type=AsciiIntRange(min=1), help="Trials at once (overrides the file; locally also bounded by the cores)."),
    click.option("--max-failed-trials", "--max-failed-trial-count", "max_failed_trials", type=AsciiIntRange(min=0), help="Stop the study, failed, once this many trials failed (overrides the file)."),
    click.option("--algorithm", "algorithm", help="grid, random or bayesian (TPE locally); overrides the file."),
    click.option("--seed", "seed", type=ASCII_INT, help="local: seed of the search, for a reproducible study."),
    click.option("--async", "run_async", is_flag=True, default=False, help="vertex: return the tuning job's id once created, do not follow it; kubeflow, jobset, trainjob: create the Katib Experiment (a cluster with Katib)."),
    click.option("--json", "as_json", is_flag=True, default=False, help="Print the outcome (state, best trial, trials) as JSON on stdout."),
    click.option("--dry-run", "dry_run", is_flag=True, default=False, help="Print the study (local), the HyperparameterTuningJob body (vertex) or the Katib Experiment (kubeflow, jobset, trainjob), and exit."),
    click.option("--output", "-o", "output", default="json", help="Format of --dry-run: json or yaml."),
]  # fmt: skip
#: What the study reads itself; the rest are the trials' Job keywords.
_STUDY_KEYS = (
    "hparams",
    "backend",
    "max_trials",
    "parallel_trials",
    "max_failed_trials",
    "algorithm",
    "seed",
    "run_async",
    "as_json",
    "dry_run",
    "output",
)


_EXAMPLES = """\b
Examples:
  tfjob tune trainer/ -m trainer.task --hparams hparams.yaml --workers 1 -- --train-steps 200
  tfjob tune trainer/ -m trainer.task --hparams hparams.yaml --max-trials 20 --parallel-trials 4 --seed 0
  tfjob tune trainer/ -m trainer.task --hparams hparams.yaml --backend vertex --dry-run
  tfjob tune -m trainer.task --image IMAGE --hparams hparams.yaml --backend jobset --dry-run
"""


@click.command("tune", cls=submit_command.UserArgsCommand, epilog=_EXAMPLES, no_args_is_help=True, context_settings=CONTEXT_SETTINGS)
@click.argument("package_path", required=False, metavar="[PACKAGE_PATH]")
@click.option("--package-path", "package_path_opt", help="Same as PACKAGE_PATH (gcloud spelling).")
@opts.apply(opts.JOB_OPTIONS, tune=True)
@opts.apply(STUDY_OPTIONS)
@click.pass_context
def tune(ctx: click.Context, /, package_path: str | None, package_path_opt: str | None, **options: Any) -> None:
    """Tune hyperparameters: run a study of trials, each a full job, and report the best one.

    Each trial gets its parameters as --name=value arguments, its trial id in every
    task's TF_CONFIG, its own --job-dir JOB_DIR/<trial>, and reports its metric with
    tfjob.report_metric (or cloudml-hypertune). `tfjob status STUDY` shows the trials.
    """
    from tfjob._internal import tuning_from_keywords
    from tfjob._internal import check_study_result as check_result

    study_options = {name: options.pop(name) for name in _STUDY_KEYS}
    output = study_options.pop("output")
    if output not in ("json", "yaml"):
        raise UsageError(f"--output {output!r} must be json or yaml")
    package, package_opt = package_path, package_path_opt
    if package and package_opt and package != package_opt:
        raise UsageError("give the trainer directory once: as PACKAGE_PATH or as --package-path")
    values = submit_command.job_keywords(options)
    user_args = ctx.meta.get(submit_command.USER_ARGS, [])
    if user_args:
        values["args"] = user_args
    if study_options["backend"] is not None:
        values["backend"] = study_options["backend"]
    tuning = tuning_from_keywords(
        study_options["hparams"],
        package or package_opt,
        None,
        {"dry_run": study_options["dry_run"] or None, **values},
        seed=study_options["seed"],
        max_trials=study_options["max_trials"],
        parallel_trials=study_options["parallel_trials"],
        max_failed_trials=study_options["max_failed_trials"],
        algorithm=study_options["algorithm"],
    )
    if study_options["dry_run"]:
        click.echo(submit_command.dump(tuning.render(), output))
        return
    if study_options["run_async"]:
        click.echo(tuning.submit())
        return
    result = tuning.run(sys.stderr)
    if study_options["as_json"]:
        click.echo(json.dumps(
            {
                "id": result.id,
                "state": result.state.value,
                "message": result.message,
                "best": result.best.to_dict() if result.best else None,
                "trials": [t.to_dict() for t in result.trials],
            },
            indent=2,
        ))  # fmt: skip
    else:
        click.echo(result.id)
    sys.stdout.flush()
    check_result(result)


app.add_command(tune)
