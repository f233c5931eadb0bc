"""What a job wrote under its job dir: listed with sizes and times, sorted into kinds (the
SavedModel, checkpoints, TensorBoard logs, metrics files), and downloaded on request.

A local path is walked (links never followed); ``gs://`` is listed through
google-cloud-storage (imported here only; ``STORAGE_EMULATOR_HOST`` points it at an
emulator as it does every Google client). A path job dir of a Kubernetes job lives on a
volume inside the cluster: said plainly, not guessed at.
"""

from __future__ import annotations

import os
import posixpath
from pathlib import Path
from typing import Any, Iterable

from .errors import BackendError, UsageError
from .results import JobOutputs, OutputFile

#: At most this many files are listed (``JobOutputs.truncated`` says when there were more).
MAX_FILES = 10_000
#: A download stops before this many bytes in all.
MAX_DOWNLOAD = 8 * 1024**3

_KUBERNETES = ("kubeflow", "jobset", "trainjob")
_CHECKPOINT_DATA = ".data-"


def split_gs(uri: str) -> tuple[str, str]:
    """``gs://bucket/a/b`` → ``("bucket", "a/b")``."""
    rest = uri[len("gs://") :]
    bucket, _, prefix = rest.partition("/")
    if not bucket:
        raise UsageError(f"{uri!r} names no bucket; write gs://BUCKET/PATH")
    return bucket, prefix.strip("/")


def storage_client(project: str | None = None, credentials: Any = None) -> Any:
    """A ``google.cloud.storage.Client`` (anonymous against an emulator)."""
    try:
        from google.cloud import storage
    except ImportError as e:  # pragma: no cover - a dependency of tfjob
        raise BackendError("google-cloud-storage is not installed: pip install google-cloud-storage") from e
    if os.environ.get("STORAGE_EMULATOR_HOST"):
        return storage.Client(project=project or "test")
    return storage.Client(project=project, credentials=credentials)


def kind_of(path: str, saved_model_dirs: Iterable[str] = ()) -> str:
    """What a file under a job dir is, from its path (``/``-separated, relative)."""
    name = posixpath.basename(path)
    if any(path == d or path.startswith(d + "/") for d in saved_model_dirs if d) or name == "saved_model.pb":
        return "saved_model"
    if "tfevents" in name:
        return "tensorboard"
    if name == "checkpoint" or name.endswith(".index") or _CHECKPOINT_DATA in name:
        return "checkpoint"
    parts = path.split("/")
    if name.endswith((".json", ".csv", ".txt")) and ("metric" in name.lower() or "eval" in parts[:-1]):
        return "metrics"
    return "other"


def classify(job_id: str, root: str, listed: list[tuple[str, int, float | None]], truncated: bool) -> JobOutputs:
    """The outputs of ``listed`` (relative path, size, modified) under ``root``. Pure."""
    saved_dirs = [posixpath.dirname(p) for p, _, _ in listed if posixpath.basename(p) == "saved_model.pb"]
    files = sorted((OutputFile(p, size, mtime, kind_of(p, saved_dirs)) for p, size, mtime in listed), key=lambda f: f.path)

    def full(rel: str) -> str:
        return root.rstrip("/") + ("/" + rel if rel else "")

    def newest(items: list[OutputFile]) -> OutputFile:
        return max(items, key=lambda f: (f.modified or 0.0, f.path))

    model = [f for f in files if posixpath.basename(f.path) == "saved_model.pb"]
    ckpts = [f for f in files if f.kind == "checkpoint" and f.path.endswith(".index")]
    events = [f for f in files if f.kind == "tensorboard"]
    tb_dir = None
    if events:
        dirs = sorted({posixpath.dirname(f.path) for f in events})
        common = posixpath.commonpath(dirs) if all(dirs) else ""
        if len(dirs) == 1 and posixpath.basename(common) in ("train", "validation", "eval", "evaluation"):
            common = posixpath.dirname(common)
        tb_dir = full(common)
    return JobOutputs(
        job_id=job_id,
        root=root,
        files=files,
        model_uri=full(posixpath.dirname(newest(model).path)) if model else None,
        checkpoint_uri=full(newest(ckpts).path[: -len(".index")]) if ckpts else None,
        tensorboard_uri=tb_dir,
        truncated=truncated,
    )


def list_local(root: str, limit: int = MAX_FILES) -> tuple[list[tuple[str, int, float | None]], bool]:
    """Files under a local directory (links not followed), at most ``limit``."""
    out: list[tuple[str, int, float | None]] = []
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        dirnames.sort()
        for name in sorted(filenames):
            path = os.path.join(dirpath, name)
            try:
                st = os.lstat(path)
            except OSError:
                continue
            if not os.path.isfile(path) or os.path.islink(path):
                continue
            if len(out) >= limit:
                return out, True
            out.append((os.path.relpath(path, root).replace(os.sep, "/"), st.st_size, st.st_mtime))
    return out, False


def list_gs(uri: str, client: Any, limit: int = MAX_FILES) -> tuple[list[tuple[str, int, float | None]], bool]:
    """Objects under a ``gs://`` prefix, at most ``limit``."""
    bucket, prefix = split_gs(uri)
    out: list[tuple[str, int, float | None]] = []
    try:
        for blob in client.list_blobs(bucket, prefix=prefix + "/" if prefix else None, max_results=limit + 1):
            if blob.name.endswith("/"):
                continue  # a "folder" placeholder
            if len(out) >= limit:
                return out, True
            rel = blob.name[len(prefix) + 1 :] if prefix else blob.name
            updated = blob.updated.timestamp() if getattr(blob, "updated", None) else None
            out.append((rel, int(blob.size or 0), updated))
    except Exception as e:  # the client's errors: NotFound, Forbidden, transport
        raise BackendError(f"could not list {uri}: {type(e).__name__}: {str(e)[:300]}") from e
    return out, False


def job_outputs(job_id: str, backend: str, job_dir: str | None, *, client: Any = None, limit: int = MAX_FILES) -> JobOutputs:
    """What job ``job_id`` (of ``backend``) wrote under ``job_dir``.

    A path job dir of a Kubernetes job is on a volume of the cluster: ``reachable`` is
    False and ``note`` says how to reach it.
    """
    if not job_dir:
        return JobOutputs(
            job_id, None, reachable=False,
            note=f"job {job_id} has no job dir (--job-dir), so tfjob does not know where it wrote its outputs",
        )  # fmt: skip
    if job_dir.startswith("gs://"):
        listed, truncated = list_gs(job_dir, client if client is not None else storage_client())
        outputs = classify(job_id, job_dir.rstrip("/"), listed, truncated)
        if not listed:
            outputs.note = f"nothing under {job_dir} yet"
        return outputs
    if "://" in job_dir:
        return JobOutputs(job_id, job_dir, reachable=False, note=f"{job_dir}: tfjob reads local paths and gs:// only")
    if backend in _KUBERNETES:
        return JobOutputs(
            job_id, job_dir, reachable=False,
            note=(
                f"the job dir {job_dir} is on a volume inside the Kubernetes cluster and cannot be read from here: "
                f"copy it out (kubectl cp NAMESPACE/POD:{job_dir} DIR, from a pod that mounts it), "
                "or give the job a gs:// --job-dir"
            ),
        )  # fmt: skip
    if not os.path.isdir(job_dir):
        return JobOutputs(
            job_id, job_dir, reachable=os.path.exists(job_dir), note=f"{job_dir} does not exist (yet): the job wrote nothing there"
        )
    listed, truncated = list_local(job_dir, limit)
    outputs = classify(job_id, os.path.abspath(job_dir), listed, truncated)
    if not listed:
        outputs.note = f"nothing under {job_dir} yet"
    return outputs


def download(outputs: JobOutputs, dest: str | Path, *, client: Any = None, limit: int = MAX_DOWNLOAD) -> list[Path]:
    """Copy every listed output into ``dest`` (its layout kept); return the files written.

    Raises:
        UsageError: the outputs cannot be reached from here, or exceed ``limit`` bytes.
    """
    if not outputs.reachable or outputs.root is None:
        raise UsageError(outputs.note or f"the outputs of job {outputs.job_id} cannot be reached from here")
    if outputs.total_size > limit:
        raise UsageError(f"the outputs of job {outputs.job_id} are {outputs.total_size} bytes, more than {limit}; copy them with gsutil/cp")
    dest = Path(dest)
    written: list[Path] = []
    bucket = None
    prefix = ""
    if outputs.root.startswith("gs://"):
        name, prefix = split_gs(outputs.root)
        bucket = (client if client is not None else storage_client()).bucket(name)
    for f in outputs.files:
        target = dest.joinpath(*f.path.split("/"))
        if ".." in f.path.split("/"):
            continue  # never write outside dest
        target.parent.mkdir(parents=True, exist_ok=True)
        if bucket is not None:
            bucket.blob(f"{prefix}/{f.path}" if prefix else f.path).download_to_filename(str(target))
        else:
            import shutil

            shutil.copyfile(os.path.join(outputs.root, *f.path.split("/")), target)
        written.append(target)
    return written


def human_size(n: int) -> str:
    """``1536`` → ``1.5 KiB``."""
    size = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{n} B"  # pragma: no cover


#: The most of a metrics file read back.
MAX_METRICS_BYTES = 1024 * 1024


def read_small_text(uri: str, client: Any = None, limit: int = MAX_METRICS_BYTES) -> str:
    """A small text file of a job dir, local or ``gs://`` (its first ``limit`` bytes); '' when it
    cannot be read (the metrics are a record, not a requirement)."""
    if not uri.startswith("gs://"):
        from .errors import TfjobError
        from .limits import read_bounded_text

        try:
            return read_bounded_text(uri, "the metrics file", limit, "a metrics JSON file", errors="replace")
        except TfjobError:
            return ""
    bucket, name = split_gs(uri)
    try:
        data: bytes = (client if client is not None else storage_client()).bucket(bucket).blob(name).download_as_bytes(end=limit - 1)
    except Exception:  # no permission, gone: the metrics are optional
        return ""
    return data.decode("utf-8", "replace")


def metrics_of_text(text: str) -> dict[str, float]:
    """The finite numbers of a metrics JSON object (``{"accuracy": 0.84, "auc": 0.86, …}``). Pure."""
    import json
    import math

    try:
        record = json.loads(text) if text.strip() else None
    except ValueError:
        return {}
    if not isinstance(record, dict):
        return {}
    return {
        str(k)[:128]: float(v) for k, v in record.items() if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
    }
