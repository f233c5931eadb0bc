"""What the command line (:mod:`tfjob.cli`) is built on beyond the public API: internal, with no
promise of stability. The CLI imports from :mod:`tfjob` (the public API) and from here, nothing
else (``tests/test_layers.py``); a program uses :mod:`tfjob`, or a name's own module.
Names are loaded on first use, as :mod:`tfjob`'s are.
"""

from __future__ import annotations

from .lazy import lazy_names

_LAZY = {
    "metrics_figure": "tfjob.after.metrics",
    "save_figure": "tfjob.after.metrics",
    "study_figure": "tfjob.after.metrics",
    "render_metrics": "tfjob.after.metrics:render_final",
    "human_size": "tfjob.after.outputs",
    "flag_words": "tfjob.backends:flag_words",
    "job_knobs": "tfjob.backends:knobs",
    "ClusterSpec": "tfjob.cluster",
    "TaskInfo": "tfjob.cluster",
    "read_config_file": "tfjob.config.files",
    "import_tfjob": "tfjob.config.migrate",
    "pool_spec_keywords": "tfjob.config.pool_flags",
    "machine_catalog": "tfjob.description.catalog:build_catalog",
    "Knob": "tfjob.description.knobs",
    "JobSpec": "tfjob.description.spec",
    "ScaleTier": "tfjob.description.spec",
    "check_image": "tfjob.description.spec",
    "parse_duration": "tfjob.description.spec",
    "parse_key_values": "tfjob.description.spec",
    "AuthError": "tfjob.errors",
    "BackendUnavailableError": "tfjob.errors",
    "ClusterConfigError": "tfjob.errors",
    "ConfigFileError": "tfjob.errors",
    "LocalFileError": "tfjob.errors",
    "PackagingError": "tfjob.errors",
    "StoreError": "tfjob.errors",
    "SubmissionUncertainError": "tfjob.errors",
    "cloud_build_target": "tfjob.images.cloudbuild:check_target",
    "BuildProgress": "tfjob.images:Progress",
    "TaskStatus": "tfjob.model",
    "format_duration": "tfjob.model",
    "render_tasks": "tfjob.model",
    "estimated_cost": "tfjob.pricing:ran_cost",
    "Diagnosis": "tfjob.results",
    "explain": "tfjob.results.diagnosis",
    "load_settings": "tfjob.runtime.settings",
    "JobStore": "tfjob.runtime.store",
    "prune_jobs": "tfjob.job.removal:prune",
    "job_from_keywords": "tfjob.job.job",
    "tuning_from_keywords": "tfjob.tune",
    "get_template": "tfjob.scaffold",
    "init_template": "tfjob.scaffold",
    "list_templates": "tfjob.scaffold",
    "check_study_result": "tfjob.tune:check_result",
    "StudySpec": "tfjob.tuning.study",
    "render_study_status": "tfjob.tuning.trials",
    "json_text": "tfjob.results",
    "inert": "tfjob.shown",
    "check_output_path": "tfjob.after.outputs",
    "write_text_file": "tfjob.after.outputs",
}

TYPE_CHECKING = False
if TYPE_CHECKING:
    from .backends import flag_words as flag_words, knobs as _job_knobs
    from .description.catalog import build_catalog as _machine_catalog
    from .cluster import ClusterSpec as ClusterSpec, TaskInfo as TaskInfo
    from .results.diagnosis import explain as explain
    from .pricing import ran_cost as _estimated_cost
    from .config.files import read_config_file as read_config_file
    from .errors import AuthError as AuthError, BackendUnavailableError as BackendUnavailableError
    from .errors import ClusterConfigError as ClusterConfigError, ConfigFileError as ConfigFileError
    from .errors import PackagingError as PackagingError
    from .errors import StoreError as StoreError, SubmissionUncertainError as SubmissionUncertainError
    from .errors import LocalFileError as LocalFileError
    from .images import Progress as _BuildProgress
    from .images.cloudbuild import check_target as _cloud_build_target
    from .description.knobs import Knob as Knob
    from .after.metrics import metrics_figure as metrics_figure, render_final as _render_metrics, save_figure as save_figure
    from .after.metrics import study_figure as study_figure
    from .config.migrate import import_tfjob as import_tfjob
    from .model import TaskStatus as TaskStatus
    from .model import format_duration as format_duration, render_tasks as render_tasks
    from .after.outputs import human_size as human_size
    from .config.pool_flags import pool_spec_keywords as pool_spec_keywords
    from .results import Diagnosis as Diagnosis
    from .job.job import job_from_keywords as job_from_keywords
    from .tune import tuning_from_keywords as tuning_from_keywords
    from .scaffold import get_template as get_template, init_template as init_template, list_templates as list_templates
    from .runtime.settings import load_settings as load_settings
    from .description.spec import JobSpec as JobSpec, ScaleTier as ScaleTier, check_image as check_image
    from .description.spec import parse_duration as parse_duration, parse_key_values as parse_key_values
    from .runtime.store import JobStore as JobStore
    from .job.removal import prune as _prune_jobs
    from .tuning.study import StudySpec as StudySpec
    from .tune import check_result as _check_study_result
    from .tuning.trials import render_study_status as render_study_status
    from .after.outputs import check_output_path as check_output_path, write_text_file as write_text_file
    from .results import json_text as json_text
    from .shown import inert as inert

    # The names public under another name than their home's: to a type checker an
    # `import a as b` exports nothing (strict mypy), an assignment does.
    BuildProgress = _BuildProgress
    check_study_result = _check_study_result
    cloud_build_target = _cloud_build_target
    estimated_cost = _estimated_cost
    job_knobs = _job_knobs
    machine_catalog = _machine_catalog
    prune_jobs = _prune_jobs
    render_metrics = _render_metrics

__getattr__, _NAMES = lazy_names(__name__, _LAZY)
__all__ = _NAMES
