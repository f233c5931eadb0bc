"""What a job leaves behind, as small typed values: its outputs, its metrics and, when it
failed, a diagnosis. At the bottom of the layers (stdlib only, nothing of tfjob), so the
backends, :class:`tfjob.JobHandle`, the CLI and a pipeline component share one shape.

Every value has ``to_dict()`` (JSON-able, what ``--json`` prints); the field names are a
contract: ``tfjob status --json`` carries ``diagnoses``, ``tfjob outputs --json`` a
:class:`JobOutputs`, ``tfjob metrics --json`` a :class:`JobMetrics`.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass(frozen=True)
class Diagnosis:
    """Why a task failed (or a job hangs), recognised in what it printed, and the fix.

    Attributes:
        code: a stable name of the cause (``tf2-master``, ``job-dir-required``,
            ``batch-not-divisible``, ``ps-waits-for-evaluator``, ``port-in-use``,
            ``out-of-memory``, ``missing-module``, ``image-pull``).
        task: the task it concerns (``chief-0``), when known.
        cause: what happened, in one sentence.
        fix: what to do about it.
        evidence: the line it was recognised in (bounded).
        certain: False when it is inferred rather than read (a SIGKILL with no kernel record).
    """

    code: str
    task: str | None
    cause: str
    fix: str
    evidence: str = ""
    certain: bool = True

    def __str__(self) -> str:
        return f"{self.cause} — fix: {self.fix}"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class OutputFile:
    """One file a job wrote under its output directory.

    Attributes:
        path: relative to :attr:`JobOutputs.root` (``/``-separated).
        size: bytes.
        modified: seconds since the epoch, when known.
        kind: ``saved_model``, ``checkpoint``, ``tensorboard``, ``metrics`` or ``other``.
    """

    path: str
    size: int
    modified: float | None
    kind: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class JobOutputs:
    """What a job wrote under its job dir (``--job-dir`` / Vertex AI's ``baseOutputDirectory``).

    Attributes:
        job_id: the job's id.
        root: the directory read (a local path or ``gs://bucket/prefix``); None if the job has none.
        files: every file under it (bounded), sorted by path.
        model_uri: the SavedModel directory (full path or URI) a serving step loads, if any:
            the newest directory holding a ``saved_model.pb``.
        checkpoint_uri: the newest checkpoint prefix (``…/ckpt-3``), if any.
        tensorboard_uri: the directory holding the TensorBoard event files, if any.
        reachable: False when the directory cannot be read from here (a path inside a
            Kubernetes cluster); ``note`` then says why.
        truncated: True when more files exist than were listed.
        note: a sentence for the user (empty when all is well).
    """

    job_id: str
    root: str | None
    files: list[OutputFile] = field(default_factory=list)
    model_uri: str | None = None
    checkpoint_uri: str | None = None
    tensorboard_uri: str | None = None
    reachable: bool = True
    truncated: bool = False
    note: str = ""

    @property
    def total_size(self) -> int:
        return sum(f.size for f in self.files)

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["total_size"] = self.total_size
        return out


@dataclass(frozen=True)
class ScalarPoint:
    """One logged value of a scalar."""

    step: int
    wall_time: float
    value: float


@dataclass
class JobMetrics:
    """The scalars a job logged for TensorBoard, per run (``train``, ``validation``…).

    Attributes:
        job_id: the job's id.
        log_dir: the directory read (local path or ``gs://``); None if the job has none.
        series: run → tag → points in step order (``series["train"]["epoch_loss"]``).
        note: a sentence for the user when nothing could be read, or only part.
    """

    job_id: str
    log_dir: str | None
    series: dict[str, dict[str, list[ScalarPoint]]] = field(default_factory=dict)
    note: str = ""

    @property
    def final(self) -> dict[str, dict[str, float]]:
        """run → tag → the last value logged (highest step, then latest)."""
        return {run: {tag: points[-1].value for tag, points in sorted(tags.items()) if points} for run, tags in sorted(self.series.items())}

    def flat(self) -> dict[str, float]:
        """The final values as one flat mapping, ``run/tag`` → value (for a pipeline's metrics)."""
        return {f"{run}/{tag}": value for run, tags in self.final.items() for tag, value in tags.items()}

    def to_dict(self) -> dict[str, Any]:
        return {
            "job_id": self.job_id,
            "log_dir": self.log_dir,
            "final": self.final,
            "series": {
                run: {tag: [[p.step, p.wall_time, p.value] for p in points] for tag, points in tags.items()}
                for run, tags in self.series.items()
            },
            "note": self.note,
        }


def json_text(data: Any, indent: int | None = 2) -> str:
    """``data`` as JSON any reader takes: a number that is not finite (a diverged loss: NaN,
    ±Infinity, which ``json.dumps`` writes as words no JSON parser reads) becomes ``null``."""
    import json
    import math

    def finite(value: Any) -> Any:
        if isinstance(value, float):
            return value if math.isfinite(value) else None
        if isinstance(value, dict):
            return {k: finite(v) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [finite(v) for v in value]
        return value

    return json.dumps(finite(data), indent=indent, allow_nan=False, default=str)
