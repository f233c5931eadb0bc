"""``tfjob tune``: hyperparameter tuning, locally with Optuna or on Vertex AI.

The job each trial runs takes every cluster option of ``tfjob submit`` (the option
definitions are ``submit``'s own, so the two commands never drift apart), plus the
study: ``--hparams FILE`` and the overrides of its counts and algorithm. Everything
after ``--`` goes to the trainer, before each trial's ``--name=value`` arguments.
"""

from __future__ import annotations

import inspect
import json
import sys
from typing import Any, Optional

import typer

from tfjob.errors import UsageError

from . import submit as submit_command
from .app import app

#: ``submit`` options that mean nothing to a study.
_NOT_FOR_TUNE = {
    "ctx", "detach", "dry_run", "output", "backend", "run_async",
    "namespace", "kubeconfig", "kube_context", "restart_policy", "cpu", "memory", "gpu", "pod_template", "clean_pod_policy",
    "backoff_limit", "ttl", "suspend", "queue", "priority_class", "min_available",
    "worker_pool_spec", "python_package_uris", "stream_logs", "command",
}  # fmt: skip


def _tune_parameters() -> list[inspect.Parameter]:
    """The study's own options (typer reads them from this signature)."""
    P = inspect.Parameter
    specs: list[tuple[str, Any, Any]] = [
        ("hparams", str, typer.Option(..., "--hparams", "--hparams-file", metavar="FILE", help="The study: a legacy hyperparameters: / trainingInput YAML, or a Vertex studySpec / HyperparameterTuningJob (YAML or JSON).")),
        ("backend", Optional[str], typer.Option(None, "--backend", help="local (Optuna, on this machine) or vertex (a HyperparameterTuningJob); default local unless a cloud project is configured.")),
        ("max_trials", Optional[int], typer.Option(None, "--max-trials", "--max-trial-count", min=1, help="Trials in all (overrides the file).")),
        ("parallel_trials", Optional[int], typer.Option(None, "--parallel-trials", "--parallel-trial-count", min=1, help="Trials at once (overrides the file; locally also bounded by the cores).")),
        ("max_failed_trials", Optional[int], typer.Option(None, "--max-failed-trials", "--max-failed-trial-count", min=0, help="Stop the study, failed, once this many trials failed (overrides the file).")),
        ("algorithm", Optional[str], typer.Option(None, "--algorithm", help="grid, random or bayesian (TPE locally); overrides the file.")),
        ("seed", Optional[int], typer.Option(None, "--seed", help="local: seed of the search, for a reproducible study.")),
        ("run_async", bool, typer.Option(False, "--async", help="vertex: return the tuning job's id once created; do not follow it.")),
        ("as_json", bool, typer.Option(False, "--json", help="Print the outcome (state, best trial, trials) as JSON on stdout.")),
        ("dry_run", bool, typer.Option(False, "--dry-run", help="Print the study (local) or the HyperparameterTuningJob body (vertex), and exit.")),
        ("output", str, typer.Option("json", "--output", "-o", help="Format of --dry-run: json or yaml.")),
    ]
    return [P(name, P.KEYWORD_ONLY, annotation=kind, default=default) for name, kind, default in specs]


def _signature() -> inspect.Signature:
    shared = inspect.signature(submit_command.submit, eval_str=True).parameters.values()
    ctx = inspect.Parameter("ctx", inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=typer.Context)
    kept = [p.replace(kind=inspect.Parameter.KEYWORD_ONLY) for p in shared if p.name not in _NOT_FOR_TUNE]
    return inspect.Signature([ctx, *kept, *_tune_parameters()])


_EXAMPLES = """\b
Examples:
  tfjob tune trainer/ -m trainer.task --hparams hparams.yaml --workers 1 -- --train-steps 200
  tfjob tune trainer/ -m trainer.task --hparams hparams.yaml --max-trials 20 --parallel-trials 4 --seed 0
  tfjob tune trainer/ -m trainer.task --hparams hparams.yaml --backend vertex --dry-run
"""


def tune(ctx: typer.Context, **options: Any) -> None:
    """Tune hyperparameters: run a study of trials, each a full job, and report the best one.

    Each trial gets its parameters as --name=value arguments, its trial id in every
    task's TF_CONFIG, its own --job-dir JOB_DIR/<trial>, and reports its metric with
    tfjob.report_metric (or cloudml-hypertune). `tfjob status STUDY` shows the trials.
    """
    from tfjob.tuning.api import Tuning, check_result

    study_options = {name: options.pop(name) for name in [p.name for p in _tune_parameters()]}
    output = study_options.pop("output")
    if output not in ("json", "yaml"):
        raise UsageError(f"--output {output!r} must be json or yaml")
    package, package_opt = options.get("package_path"), options.get("package_path_opt")
    if package and package_opt and package != package_opt:
        raise UsageError("give the trainer directory once: as PACKAGE_PATH or as --package-path")
    values = submit_command.job_keywords(options)
    user_args = ctx.meta.get(submit_command.USER_ARGS, [])
    if user_args:
        values["args"] = user_args
    if study_options["backend"] is not None:
        values["backend"] = study_options["backend"]
    tuning = Tuning(
        study_options["hparams"],
        package or package_opt,
        seed=study_options["seed"],
        max_trials=study_options["max_trials"],
        parallel_trials=study_options["parallel_trials"],
        max_failed_trials=study_options["max_failed_trials"],
        algorithm=study_options["algorithm"],
        dry_run=study_options["dry_run"] or None,
        **values,
    )
    if study_options["dry_run"]:
        typer.echo(submit_command.dump(tuning.render(), output))
        return
    if study_options["run_async"]:
        typer.echo(tuning.submit())
        return
    result = tuning.run(sys.stderr)
    if study_options["as_json"]:
        typer.echo(json.dumps(
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
        typer.echo(result.id)
    sys.stdout.flush()
    check_result(result)


tune.__signature__ = _signature()  # type: ignore[attr-defined]
app.command("tune", cls=submit_command.UserArgsCommand, epilog=_EXAMPLES, no_args_is_help=True)(tune)
