"""tfjob: package, submit and run distributed TensorFlow training jobs.

``from tfjob import Job`` is the Python entry point; see :class:`tfjob.job.Job`.
The names here are the public API — the CLI (``tfjob.cli``) uses nothing else
(``tests/test_layers.py``). Names are loaded on first use, so importing :mod:`tfjob` (which
the in-container bootstrap does) costs nothing beyond the standard library.
"""

from __future__ import annotations

from ._version import __version__ as __version__
from .lazy import lazy_names

_LAZY = {
    # The job: what to run, its handle, the jobs known.
    "Job": "tfjob.job",
    "JobHandle": "tfjob.job",
    "get_job": "tfjob.job",
    "list_jobs": "tfjob.job",
    # A Python function as a job.
    "remote": "tfjob.job",
    "JobStore": "tfjob.runtime.store",
    # The job model (tfjob.model is its one home; these are the same objects).
    "JobState": "tfjob.model",
    "JobStatus": "tfjob.model",
    "TaskStatus": "tfjob.model",
    "format_duration": "tfjob.model",
    "render_tasks": "tfjob.model",
    # What a job is made of, and the typed values users write.
    "JobSpec": "tfjob.description.spec",
    "ScaleTier": "tfjob.description.spec",
    "parse_duration": "tfjob.description.spec",
    "parse_key_values": "tfjob.description.spec",
    "check_image": "tfjob.description.spec",
    "pool_spec_keywords": "tfjob.config.pool_flags",
    "Replicas": "tfjob.platforms",
    "Resources": "tfjob.description.spec",
    "Local": "tfjob.platforms",
    "Vertex": "tfjob.platforms",
    "AIPlatform": "tfjob.platforms",
    "Kubernetes": "tfjob.platforms",
    "TFJob": "tfjob.platforms",
    "JobSet": "tfjob.platforms",
    "TrainJob": "tfjob.platforms",
    "Knob": "tfjob.description.knobs",
    "job_knobs": "tfjob.backends:knobs",
    "flag_words": "tfjob.backends:flag_words",
    "load_settings": "tfjob.runtime.settings",
    "read_config_file": "tfjob.config.files",
    "machine_catalog": "tfjob.description.catalog:build_catalog",
    # Inside a task.
    "ClusterSpec": "tfjob.cluster",
    "TaskInfo": "tfjob.cluster",
    "report_metric": "tfjob.hypertune",
    "task": "tfjob.cluster.current",
    "cluster_resolver": "tfjob.cluster.current",
    # Tuning.
    "Tuning": "tfjob.tune",
    "check_study_result": "tfjob.tune:check_result",
    "StudySpec": "tfjob.tuning.study",
    "StudyResult": "tfjob.tuning.trials",
    "render_study_status": "tfjob.tuning.trials",
    # After the job: why it failed, what it left.
    "Diagnosis": "tfjob.results",
    "explain": "tfjob.results.diagnosis",
    "estimated_cost": "tfjob.pricing:ran_cost",
    "human_size": "tfjob.after.outputs",
    "render_metrics": "tfjob.after.metrics:render_final",
    "metrics_figure": "tfjob.after.metrics",
    "study_figure": "tfjob.after.metrics",
    "save_figure": "tfjob.after.metrics",
    # Images, trainer templates, migration.
    "build_image": "tfjob.images",
    "BuildProgress": "tfjob.images:Progress",
    "cloud_build_target": "tfjob.images.cloudbuild:check_target",
    "list_templates": "tfjob.scaffold",
    "get_template": "tfjob.scaffold",
    "init_template": "tfjob.scaffold",
    "import_tfjob": "tfjob.config.migrate",
    # Errors: one tree (tfjob.errors), every one a TfjobError.
    **{
        name: "tfjob.errors"
        for name in (
            "TfjobError",
            "UsageError",
            "SpecError",
            "ConfigFileError",
            "ClusterConfigError",
            "PackagingError",
            "StoreError",
            "JobNotFoundError",
            "BackendError",
            "AuthError",
            "SubmissionUncertainError",
            "CapacityError",
            "BackendUnavailableError",
            "JobFailedError",
            "JobCancelledError",
            "JobTimeoutError",
            "LocalFileError",
        )
    },
}

# What a type checker reads (the names above are loaded on first use at run time).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from .backends import flag_words as flag_words, knobs as job_knobs  # noqa: F401 - public under this name
    from .description.catalog import build_catalog as machine_catalog  # noqa: F401 - public under this name
    from .cluster import ClusterSpec as ClusterSpec, TaskInfo as TaskInfo
    from .cluster.current import cluster_resolver as cluster_resolver, task as task
    from .results.diagnosis import explain as explain
    from .pricing import ran_cost as estimated_cost  # noqa: F401 - public under this name
    from .config.files import read_config_file as read_config_file
    from .errors import AuthError as AuthError, BackendError as BackendError, BackendUnavailableError as BackendUnavailableError
    from .errors import ClusterConfigError as ClusterConfigError, ConfigFileError as ConfigFileError
    from .errors import JobCancelledError as JobCancelledError, JobFailedError as JobFailedError
    from .errors import JobNotFoundError as JobNotFoundError, JobTimeoutError as JobTimeoutError, PackagingError as PackagingError
    from .errors import SpecError as SpecError, StoreError as StoreError, SubmissionUncertainError as SubmissionUncertainError
    from .errors import LocalFileError as LocalFileError, TfjobError as TfjobError, UsageError as UsageError
    from .errors import CapacityError as CapacityError
    from .hypertune import report_metric as report_metric
    from .images import Progress as BuildProgress, build_image as build_image  # noqa: F401 - public under this name
    from .images.cloudbuild import check_target as cloud_build_target  # noqa: F401 - public under this name
    from .job import Job as Job, JobHandle as JobHandle, get_job as get_job, list_jobs as list_jobs, remote as remote
    from .description.knobs import Knob as Knob
    from .after.metrics import metrics_figure as metrics_figure, render_final as render_metrics, save_figure as save_figure  # noqa: F401 - public under this name
    from .after.metrics import study_figure as study_figure
    from .config.migrate import import_tfjob as import_tfjob
    from .model import JobState as JobState, JobStatus as JobStatus, TaskStatus as TaskStatus
    from .model import format_duration as format_duration, render_tasks as render_tasks
    from .after.outputs import human_size as human_size
    from .platforms import AIPlatform as AIPlatform, JobSet as JobSet, Kubernetes as Kubernetes, Local as Local
    from .platforms import Replicas as Replicas, TFJob as TFJob, TrainJob as TrainJob, Vertex as Vertex
    from .config.pool_flags import pool_spec_keywords as pool_spec_keywords
    from .results import Diagnosis as Diagnosis
    from .scaffold import get_template as get_template, init_template as init_template, list_templates as list_templates
    from .runtime.settings import load_settings as load_settings
    from .description.spec import JobSpec as JobSpec, Resources as Resources, ScaleTier as ScaleTier, check_image as check_image
    from .description.spec import parse_duration as parse_duration, parse_key_values as parse_key_values
    from .runtime.store import JobStore as JobStore
    from .tuning.study import StudySpec as StudySpec
    from .tune import Tuning as Tuning, check_result as check_study_result  # noqa: F401 - public under this name
    from .tuning.trials import StudyResult as StudyResult, render_study_status as render_study_status

__getattr__, _NAMES = lazy_names(__name__, _LAZY)
__all__ = sorted([*_NAMES, "__version__"])


def __dir__() -> list[str]:
    return __all__
