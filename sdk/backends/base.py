"""The backend protocol (the job model it speaks is :mod:`tfjob.model`, its one home).

A backend renders a :class:`~tfjob.description.spec.JobSpec` into its native request (a pure
function), submits it and answers for a job id: ``status``, ``logs``, ``cancel`` and
``list``. Each backend maps its native states to :class:`JobState` in one pure function.

What must be the same on every backend — waiting with a timeout, following a job after
submit, Ctrl-C, cancelling a job that has already ended — is
:class:`tfjob.runtime.lifecycle.Lifecycle`, which every backend object derives from;
``tests/test_contract.py`` runs the same tests over every backend.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, ClassVar, Iterator, Protocol, TextIO, TypeVar, runtime_checkable

from ..description.knobs import PYTHON_VERSION, RUNTIME_VERSION, Knob, knob
from ..model import SubmitOptions as _SubmitOptions  # the job model's home is tfjob.model (not named here)

if TYPE_CHECKING:
    from ..description.spec import JobSpec  # (a type only: the CLI reads the options' declarations without the spec's cost)
    from ..model import JobStatus, SubmitOptions
    from ..runtime.store import JobStore
    from ..tuning.study import StudySpec
    from ..tuning.trials import StudyResult

B = TypeVar("B", bound="Backend")

__all__ = ["Backend", "GoogleCloudOptions", "Tuner", "tuner_of"]


@dataclass(kw_only=True, init=False, repr=False, eq=False)  # declarations only: what derives from it is made
class GoogleCloudKnobs:
    """Where a Google Cloud job goes: the knobs Vertex AI and legacy AI Platform both take,
    declared once for their options (:class:`GoogleCloudOptions`) and their settings
    (:class:`tfjob.Vertex`, :class:`tfjob.AIPlatform`)."""

    #: The Google Cloud project.
    project: str | None = knob(
        "Google Cloud project (default: TFJOB_PROJECT, GOOGLE_CLOUD_PROJECT, gcloud's, the config file's).", lands="settings.project"
    )
    #: The region.
    region: str | None = knob(
        "Google Cloud region, e.g. us-central1 (default: TFJOB_REGION, gcloud's ai/region, the config file's); on Vertex AI "
        "A,B tries each in turn after a quota refusal or a stockout.",
        config="trainingInput.region",
        lands="settings.region",
    )
    #: ``gs://BUCKET[/PATH]`` for the trainer's packages (``--staging-bucket``).
    staging_bucket: str | None = knob(
        "gs://BUCKET[/PATH] for the trainer's packages (default: the --job-dir bucket, then the configured one).",
        lands="settings.staging_bucket",
    )
    #: The VPC network to peer with (``projects/N/global/networks/NET``).
    network: str | None = knob("VPC network to peer with (projects/N/global/networks/NAME).", config="network")
    #: Interactive shell access to the tasks.
    enable_web_access: bool = knob(
        "Interactive shell into the tasks.",
        default=False,
        kind="switch",
        flags=("--enable-web-access/--no-enable-web-access",),
        config="enableWebAccess",
    )


@dataclass
class GoogleCloudOptions(_SubmitOptions, GoogleCloudKnobs):
    """Where a Google Cloud job goes (:class:`GoogleCloudKnobs`): what Vertex AI and legacy AI Platform both take."""

    #: The bucket from the environment or $TFJOB_HOME/config.yaml, used after the --job-dir bucket.
    default_staging_bucket: str | None = None

    #: What both services render of the job description: the legacy runtime it names.
    SPEC_KNOBS: ClassVar[tuple[Knob, ...]] = (RUNTIME_VERSION, PYTHON_VERSION)
    SPEC_KEYWORDS: ClassVar[frozenset[str]] = frozenset(k.name for k in SPEC_KNOBS)


@runtime_checkable
class Backend(Protocol):
    """What every backend module provides (as module-level functions or an object)."""

    name: str

    @property
    def store(self) -> JobStore:
        """The job store the backend records its jobs in (given, else the user's)."""

    def with_store(self: B, store: JobStore) -> B:
        """The same backend recording in ``store``."""

    def render(self, spec: JobSpec, options: SubmitOptions) -> dict[str, Any]:
        """The request the backend would send for ``spec``: no credentials, no network, no job
        started. A trainer directory is built into its sdist (from the build cache when
        unchanged) where the request names the package's digest (Vertex AI, a Kubernetes
        ConfigMap); the local render shows a placeholder instead."""

    def submit(self, spec: JobSpec, options: SubmitOptions) -> str:
        """Start the job; return its id."""

    def run(self, spec: JobSpec, options: SubmitOptions) -> str:
        """Start the job and follow it to its end; return its id whatever the outcome."""

    def status(self, job_id: str) -> JobStatus:
        """The job's current status."""

    def watch(self, job_id: str) -> JobStatus:
        """The job's status for one who follows it to its end: :meth:`status`, and a job that goes
        on after its attempt ended (a Vertex AI failover) gets its next attempt."""

    def logs(self, job_id: str, task: str | None = None, follow: bool = False, tail: int | None = None) -> Iterator[str]:
        """The job's log lines, each prefixed ``[worker-1]``; follow until the job ends."""

    def cancel(self, job_id: str) -> None:
        """Ask the job to stop."""

    def list(self, limit: int | None = None) -> list[JobStatus]:
        """Known jobs, newest first."""


@runtime_checkable
class Tuner(Protocol):
    """A capability a backend may offer: running a hyperparameter study whose trials are jobs of
    that backend (:class:`tfjob.Tuning` asks the job's backend for it; ``tfjob tune`` on a backend
    without it is one line, exit 2). The local backend searches with Optuna, each trial a local
    job; the Vertex AI backend creates a ``HyperparameterTuningJob``; the Kubernetes backends
    render a Katib ``Experiment`` or run each trial as a job of theirs, searched with Optuna.
    """

    #: What proposes the trials, as a user reads it ("Optuna"); "" for the platform's own search.
    study_search: str

    def render_study(self, study: StudySpec, spec: JobSpec, options: SubmitOptions, *, echo: Callable[[str], None]) -> dict[str, Any]:
        """What the study would run (no credentials, nothing started)."""

    def run_study(
        self,
        study: StudySpec,
        spec: JobSpec,
        options: SubmitOptions,
        *,
        stream: TextIO | None,
        seed: int | None,
        cores: int | None,
        port_picker: Any,
        echo: Callable[[str], None],
    ) -> StudyResult:
        """Run the study to its end (or submit it, without ``options.wait``), its trials shown on ``stream``."""

    def submit_study(self, study: StudySpec, spec: JobSpec, options: SubmitOptions, *, echo: Callable[[str], None]) -> str:
        """Start the study and return its id at once (UsageError where a study runs in this process)."""


def tuner_of(backend: object) -> Tuner | None:
    """``backend`` as a :class:`Tuner`, or None when it cannot tune."""
    return backend if isinstance(backend, Tuner) else None
