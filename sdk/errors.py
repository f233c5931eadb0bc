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

A :class:`UsageError` (a :class:`SpecError`, a :class:`PackagingError`…) carries the field (the knob's name, ``workers``), the value given, the
problem and the fix, and words itself for the face that reads it
(:meth:`TfjobError.worded`): the Python API names the field as its keyword
(``workers=0 must be ≥ 1; …``, which is ``str(error)``), the CLI as its flag
(``--workers 0 must be ≥ 1; …``), a :class:`ConfigFileError` as the file and its key
(``job.yaml: workerPoolSpecs[1].replicaCount 0 must be ≥ 1``). Other knobs a problem or a
fix mentions are written ``{workers}`` (or ``{backend=kubeflow}``) in it and worded alike.
A message given as plain text stays as it is.
"""

from __future__ import annotations

# Not `from typing import …`: every task's bootstrap imports this module, and typing costs
# it ~3 ms of start-up (Any is only named in annotations).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Callable


class TfjobError(Exception):
    """Base of every error tfjob raises on purpose."""

    exit_code: int = 1

    def worded(self, face: str = "api", flag: "Callable[[str, Any], str] | None" = None) -> str:
        """The message as the front end ``face`` says it: ``api`` (keywords, ``str(error)``),
        ``cli`` (flags, spelt by ``flag``; by default ``--`` + the name with ``-``). An error
        whose message is plain text says it to every face."""
        return str(self)


class _Nothing:
    """No value given (a value of None is shown, this is not)."""

    def __repr__(self) -> str:
        return "NOTHING"


#: The ``value`` of an error that shows none.
NOTHING: "Any" = _Nothing()

#: How much of a value a message shows (a value is input from outside: bounded).
SHOWN = 100


def shown(value: object) -> str:
    """``value`` as a message shows it: its repr, cut to :data:`SHOWN` characters."""
    text = repr(value)
    return text if len(text) <= SHOWN else text[: SHOWN - 1] + "…"


class Word(str):
    """A value tfjob writes in a template (``{backend=kubeflow}``): bare on the command line
    (``--backend kubeflow``), quoted as a keyword's (``backend='kubeflow'``)."""


def _plain(value: str) -> object:
    """A value written in a template (``{backend=kubeflow}``, ``{workers=0}``) as a value."""
    if value in ("True", "False", "None"):
        return {"True": True, "False": False, "None": None}[value]
    try:
        return int(value)
    except ValueError:
        return Word(value)


def flag_words(name: str, value: object = NOTHING, flag: str | None = None) -> str:
    """The command line's words for knob ``name`` given ``value``: ``--name-with-dashes VALUE``
    (or ``flag VALUE``); ``--spot`` for True, ``--no-chief`` for False."""
    flag = flag or "--" + name.replace("_", "-")
    if value is NOTHING or value is True:
        return flag
    if value is False:
        return "--no-" + flag[2:]
    return f"{flag} {value if isinstance(value, (int, Word)) else shown(value)}"


def keyword_words(name: str, value: object = NOTHING) -> str:
    """The Python API's words for knob ``name`` given ``value``: ``name`` or ``name=VALUE``."""
    return name if value is NOTHING else f"{name}={shown(value)}"


def _is_name(text: str) -> bool:
    return bool(text) and text.replace("_", "a").isalnum() and text.isascii() and not text[0].isdigit() and text.islower()


def subject_of(label: str) -> "dict[str, str]":
    """The keywords that make ``label`` an error's subject: ``{"field": label}`` for a knob's
    name (``timeout``), else ``{"what": label}`` for text (``maxTrials``, ``the ignore file``)."""
    return {"field": label} if _is_name(label) else {"what": label}


def fill(template: str, spell: "Callable[[str, Any], str]") -> str:
    """``template`` with each ``{name}`` / ``{name=value}`` spelt by ``spell``; other braces
    (``{'key': 'value'}``) are left as they are."""
    out, pos = [], 0
    while True:
        start = template.find("{", pos)
        end = template.find("}", start + 1) if start >= 0 else -1
        if start < 0 or end < 0:
            out.append(template[pos:])
            return "".join(out)
        name, eq, value = template[start + 1 : end].partition("=")
        if _is_name(name):
            out += [template[pos:start], spell(name, _plain(value) if eq else NOTHING)]
        else:
            out.append(template[pos : end + 1])
        pos = end + 1


class UsageError(TfjobError):
    """The user's input is wrong; nothing was started.

    ``UsageError("plain text")`` says that text to every face. With parts, it words itself
    for the face that reads it (:meth:`worded`)::

        SpecError(field="workers", value=0, problem="must be ≥ 1", fix="leave {workers} out for a job without workers")
        # API: "workers=0 must be ≥ 1; leave workers out for a job without workers"
        # CLI: "--workers 0 must be ≥ 1; leave --workers out for a job without workers"

    Attributes:
        field: the knob's name (``workers``, ``kms_key``), or None.
        value: what was given (:data:`NOTHING`: none is shown).
        problem: what is wrong, after the field and value (a ``:`` or ``,`` at its start
            follows them directly); ``{name}`` in it names another knob.
        fix: what to do instead (after ``; ``), with ``{name}`` likewise.
        what: the subject without a field (``machine type``), when the check does not
            know the knob (its caller names it: :meth:`for_field`).
    """

    exit_code = 2
    #: How the Python API names a knob for this error, when the caller said it otherwise than
    #: by its keyword (:class:`tfjob.Job`: a ``Replicas`` value's field); None: by its keyword.
    keyword_spelling: "Callable[[str, Any], str] | None" = None

    def __init__(
        self, message: str = "", *, field: str | None = None, value: object = NOTHING, problem: str = "", fix: str = "",
        what: str | None = None,
    ) -> None:  # fmt: skip
        self.field = field
        self.value = value
        self.problem = problem
        self.fix = fix
        self.what = what
        if message and (problem or field or what or fix):
            raise TypeError(f"{type(self).__name__} takes a message in one piece or in parts (problem=…), not both")
        super().__init__(self.worded() if self._parts() else message)

    def _parts(self) -> bool:
        """Whether the error words itself from parts (else its message is plain text)."""
        return bool(self.problem or self.field or self.what)

    def __str__(self) -> str:
        return self.worded() if self._parts() else super().__str__()

    def _subject(self, spell: "Callable[[str, Any], str]") -> str:
        if self.field:
            return spell(self.field, self.value)
        if self.what:
            return self.what if self.value is NOTHING else f"{self.what} {shown(self.value)}"
        return ""

    def for_field(self, field: str) -> "UsageError":
        """This error as said of knob ``field`` (raise it ``from None``): a check that does not
        know which knob its value came from (a machine type, an accelerator, a duration)
        names what it checked (``what="machine type"``); its caller knows the knob."""
        if self.field or not (self.problem or self.what):
            return self
        return type(self)(field=field, value=self.value, problem=self.problem, fix=self.fix)

    def worded(self, face: str = "api", flag: "Callable[[str, Any], str] | None" = None) -> str:
        """The message in ``face``'s words: ``api`` spells knobs as keywords (``workers=0``),
        ``cli`` as flags, with ``flag`` (``tfjob.backends.flag_words``: the declared spellings;
        by default :func:`flag_words`)."""
        if not self._parts():
            return super().worded(face, flag)
        spell = (flag or flag_words) if face == "cli" else (self.keyword_spelling or keyword_words)
        text = self._subject(spell)
        problem = fill(self.problem, spell)
        if problem:
            text += problem if not text or problem[0] in ":,;" else " " + problem
        if self.fix:
            text += "; " + fill(self.fix, spell)
        return text

    def spelt(self, keyword: "Callable[[str, Any], str]") -> "UsageError":
        """This error with its knobs named by ``keyword`` to the Python API (``str(error)``); to re-raise."""
        if self._parts() and self.keyword_spelling is None:
            self.keyword_spelling = keyword
            self.args = (self.worded(),)
        return self


class SpecError(UsageError, ValueError):
    """A job description that cannot run (bad count, machine, tier, name…)."""


class ConfigFileError(SpecError):
    """A configuration file (``--config``, ``--hparams``) that cannot be used.

    Names the file and the key (``job.yaml: trainingInput.workerCount``) to every face, then
    the value, the problem and the fix as :class:`SpecError` does.

    Attributes:
        file: the file's name as the user gave it.
        key: the key's path in it (``trainingInput.masterConfig.acceleratorConfig.count``).
    """

    def __init__(
        self, message: str = "", *, file: str | None = None, key: str | None = None, value: object = NOTHING, problem: str = "",
        fix: str = "", field: str | None = None, what: str | None = None,
    ) -> None:  # fmt: skip
        self.file = file
        self.key = key
        super().__init__(message, field=field, value=value, problem=problem, fix=fix, what=what)

    def _parts(self) -> bool:
        return bool(self.problem or self.field or self.what or self.file or self.key)

    def _subject(self, spell: "Callable[[str, Any], str]") -> str:
        where = ": ".join(part for part in (self.file, self.key) if part)
        if not where:
            return super()._subject(spell)
        return where if self.value is NOTHING else f"{where} {shown(self.value)}"

    @classmethod
    def at(cls, file: str, key: str, error: UsageError) -> "ConfigFileError":
        """``error``, raised while checking ``key`` of ``file``, as naming the file and key
        instead of a knob (``job.yaml: workerCount 0 must be ≥ 1``): its value, problem and
        fix kept; a subject that is no knob stays after the key (``job.yaml: masterType:
        machine type 'x' is not known``)."""
        if error.field:
            return cls(file=file, key=key, value=error.value, problem=error.problem, fix=error.fix)
        if error.problem or error.what:
            subject = error._subject(keyword_words)
            problem = fill(error.problem, lambda name, value: "{" + name + ("" if value is NOTHING else f"={value}") + "}")
            joined = subject + (problem if not subject or problem[:1] in ":,;" else " " + problem)
            return cls(file=file, key=key, problem=": " + joined, fix=error.fix)
        return cls(file=file, key=key, problem=": " + str(error))


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


class CapacityError(BackendError):
    """The platform refused the job for want of quota or machines, not for a mistake in it.

    Retrying the same request does not cure it (rate limiting is retried, and is not this):
    a resource quota (``capacity.kind == "quota"``) must be raised, a stockout
    (``"stockout"``) waits for machines; either may be met by another region or machine
    (``--region A,B``: the next one is tried as another attempt of the job).

    Attributes:
        capacity: what it was (a :class:`tfjob.results.capacity.Capacity`): kind, quota metric, region, limit.
        region: the region the request went to.
    """

    def __init__(self, message: str, *, capacity: Any, region: str | None = None) -> None:
        super().__init__(message)
        self.capacity = capacity
        self.region = region


class ImageBuildError(TfjobError):
    """The engine could not build or push the image (names the step or the registry)."""


class BackendUnavailableError(BackendError):
    """The client library a backend needs is not installed."""

    exit_code = 2


#: The extras of the tfjob distribution (pyproject.toml), and what each brings.
EXTRAS = {
    "vertex": "the Google Cloud client libraries",
    "kubernetes": "the Kubernetes client library",
    "billing": "the Cloud Billing client library",
}


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


class LocalFileError(TfjobError):
    """A file tfjob writes on this machine (a report, a plot, a download) could not be written
    (a full disk, a read-only directory): what was written so far is said."""
