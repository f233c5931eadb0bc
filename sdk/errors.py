"""The one exception tree of tfjob.

Every error tfjob raises on purpose is a :class:`TfjobError`; the CLI catches it in
one place, prints ``error: <message>`` on stderr and exits with ``exit_code``:
2 for a mistake of the user's (fix the input and try again), 1 for a failure at run
time (the job, the service or the machine).

::

    TfjobError (exit 1)
    ├── UsageError (exit 2)                  the input is wrong; nothing was started
    │   ├── SpecError (+ValueError)          a job description that cannot run
    │   │   └── ConfigFileError              a --config / --hparams file that cannot be read
    │   ├── ClusterConfigError (+ValueError) TF_CONFIG / CLUSTER_SPEC that cannot be parsed
    │   ├── PackagingError                   a trainer directory that cannot be packaged
    │   └── JobNotFoundError (+LookupError)  no job with that id
    ├── BackendError                         a backend (service, cluster, launcher) failed
    │   ├── AuthError                        missing or expired credentials, no permission
    │   ├── SubmissionUncertainError         a create's answer was lost and could not be checked
    │   ├── BackendUnavailableError          the backend's client library is missing
    │   └── RegistryError                    an image registry refused the login or cannot be reached
    │                                        (tfjob.images.registry)
    ├── ImageBuildError                      the engine could not build or push an image (tfjob.images.build)
    ├── JobFailedError                       the job ran and failed (names the task)
    ├── JobCancelledError (exit 130)         the job was cancelled
    └── JobTimeoutError (+TimeoutError)      waiting ran out of time

Messages name the field, the value and the fix — as flags (``--workers 0``) for the
CLI; a :class:`tfjob.Job` raises them in its own words (``workers=0``) and keeps the
flag wording in ``cli_message``, which the CLI prints.
"""

from __future__ import annotations

# Not `from typing import …`: every task's bootstrap imports this module, and typing costs
# it ~3 ms of start-up (Any is only named in annotations).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


class TfjobError(Exception):
    """Base of every error tfjob raises on purpose."""

    exit_code: int = 1
    #: The message as the CLI says it (flags), when the exception's own text is the API's.
    cli_message: str | None = None


class UsageError(TfjobError):
    """The user's input is wrong; nothing was started."""

    exit_code = 2


class SpecError(UsageError, ValueError):
    """A job description that cannot run (bad count, machine, tier, name…)."""


class ConfigFileError(SpecError):
    """A configuration file (``--config``, ``--hparams``) that cannot be used."""


class ClusterConfigError(UsageError, ValueError):
    """A ``TF_CONFIG`` / ``CLUSTER_SPEC`` value that cannot be parsed."""


class PackagingError(UsageError):
    """A trainer directory that cannot be packaged."""


class StoreError(TfjobError):
    """The job store (``$TFJOB_HOME/jobs.db``) cannot be opened, read or written."""


class JobNotFoundError(UsageError, LookupError):
    """No job with the given id is known."""


class BackendError(TfjobError):
    """A backend (cloud service, Kubernetes API, local launcher) failed."""


class AuthError(BackendError):
    """Credentials are missing or expired, or a permission is lacking."""


class SubmissionUncertainError(BackendError):
    """The service may have created the job, but its answer was lost and a look-up failed.

    Resubmitting could start a second job; the job is recorded as pending under
    ``pending_id`` and ``tfjob status`` resolves it once the service answers.

    Attributes:
        submission_id: the label value the job carries if it was created.
        pending_id: the job store id the submission is recorded under.
    """

    def __init__(self, message: str, *, submission_id: str, pending_id: str | None = None) -> None:
        super().__init__(message)
        self.submission_id = submission_id
        self.pending_id = pending_id


class BackendUnavailableError(BackendError):
    """The client library a backend needs is not installed."""

    exit_code = 2


#: The extras of the tfjob distribution (pyproject.toml), and what each brings.
EXTRAS = {"vertex": "the Google Cloud client libraries", "kubernetes": "the Kubernetes client library"}


def missing_extra(extra: str, backend: str, error: ImportError) -> BackendUnavailableError:
    """The one line a backend's missing client library is: what is missing and the pip
    command that installs it (raise it ``from`` the ImportError)."""
    missing = f" ({error.name} is missing)" if getattr(error, "name", None) else ""
    return BackendUnavailableError(
        f"the {backend} backend needs {EXTRAS[extra]}{missing}, which tfjob installs only on request: pip install 'tfjob[{extra}]'"
    )


class JobFailedError(TfjobError):
    """The job ran and failed.

    Attributes:
        job_id: the job's id.
        task: the task that failed first (``worker-1``), when known.
        exit_code_of_task: the failing task's exit code, when known.
        log_tail: the last lines of the failing task's log.
        diagnoses: why it failed and the fix, when tfjob recognised it
            (:class:`tfjob.results.Diagnosis`; also said in the message).
    """

    def __init__(
        self,
        message: str,
        *,
        job_id: str | None = None,
        task: str | None = None,
        exit_code_of_task: int | None = None,
        log_tail: str = "",
        diagnoses: "list[Any] | None" = None,
    ) -> None:
        super().__init__(message)
        self.job_id = job_id
        self.task = task
        self.exit_code_of_task = exit_code_of_task
        self.log_tail = log_tail
        self.diagnoses = list(diagnoses or [])


class JobCancelledError(TfjobError):
    """The job was cancelled before it finished (exit 130, as for Ctrl-C)."""

    exit_code = 130


class JobTimeoutError(TfjobError, TimeoutError):
    """Waiting for a job (or a task) ran out of time."""
