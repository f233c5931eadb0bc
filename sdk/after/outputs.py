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
from typing import Any, BinaryIO, Callable, Iterable

from ..errors import BackendError, LocalFileError, UsageError
from ..results import JobOutputs, OutputFile

#: At most this many files are listed (``JobOutputs.truncated`` says when there were more).
MAX_FILES = 10_000
#: At most this many directories are looked into when a local job dir is listed.
MAX_DIRS = 100_000
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
    if credentials is None:
        # Found here, so that none found is one line naming how to get them (AuthError),
        # not google-auth's DefaultCredentialsError traceback.
        from ..backends.vertex.auth import resolve_credentials

        credentials = resolve_credentials(None)
    try:
        return storage.Client(project=project, credentials=credentials)
    except Exception as e:  # google-auth's and the client's: no project, a bad credential
        raise BackendError(f"could not make a Cloud Storage client: {type(e).__name__}: {str(e)[:300]}") from e


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


def walk_files(root: str, max_dirs: int = MAX_DIRS, cut: list[bool] | None = None) -> Iterable[tuple[str, str]]:
    """(directory, file name) of every regular file under ``root`` (links not followed), in
    sorted order, directory by directory; at most ``max_dirs`` directories are looked into
    (``cut`` gets True appended when more were left). Without recursion: a tree 1,400
    levels deep is walked as any other."""
    stack = [root]
    seen = 0
    while stack:
        if seen >= max_dirs:
            if cut is not None:
                cut.append(True)
            return
        here = stack.pop()
        seen += 1
        try:
            with os.scandir(here) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError:
            continue
        dirs = []
        for entry in entries:
            try:
                if entry.is_dir(follow_symlinks=False):
                    dirs.append(entry.path)
                elif entry.is_file(follow_symlinks=False):
                    yield here, entry.name
            except OSError:
                continue
        stack.extend(reversed(dirs))


def list_local(root: str, limit: int = MAX_FILES) -> tuple[list[tuple[str, int, float | None]], bool]:
    """Files under a local directory (links not followed), at most ``limit``."""
    out: list[tuple[str, int, float | None]] = []
    cut: list[bool] = []
    for dirpath, name in walk_files(root, cut=cut):
        path = os.path.join(dirpath, name)
        try:
            st = os.lstat(path)
        except OSError:
            continue
        if len(out) >= limit:
            return out, True
        out.append((os.path.relpath(path, root).replace(os.sep, "/"), st.st_size, st.st_mtime))
    return out, bool(cut)


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


def check_output_path(path: str, field: str, *, directory: bool = False, inside: str | None = None) -> Path:
    """Refuse, before anything is read or written, a place that cannot take what a command
    writes: a file (``directory=False``: a report, a plot) needs an existing directory and
    must not be a directory, a device (``/dev/null``, ``/dev/full``) or a FIFO; a directory
    (a download) must be one or not exist yet, and not be ``inside`` (the job dir itself).

    Raises:
        UsageError: naming ``field`` (the option), the path and the fix.
    """
    import stat

    if not path:
        raise UsageError(f"{field} '' names no {'directory' if directory else 'file'}; give a path")
    if "\0" in path:
        raise UsageError(f"{field} {path!r}: a path cannot hold a NUL character")
    target = Path(path)
    try:
        mode = target.stat().st_mode
    except FileNotFoundError:
        mode = None
    except OSError as e:
        raise UsageError(f"{field} {path}: cannot use it: {e.strerror or e}") from None
    if directory:
        if mode is not None and not stat.S_ISDIR(mode):
            raise UsageError(f"{field} {path} is a file, not a directory; give a directory to copy the outputs into")
        if inside is not None and "://" not in inside:
            here, root = os.path.realpath(path), os.path.realpath(inside)
            if here == root or here.startswith(root.rstrip(os.sep) + os.sep):
                raise UsageError(f"{field} {path} is the job dir {inside} (or inside it); give a directory outside it")
        return target
    if mode is not None and stat.S_ISDIR(mode):
        raise UsageError(f"{field} {path} is a directory; give a file name in it")
    if mode is not None and not stat.S_ISREG(mode):
        raise UsageError(f"{field} {path} is not a regular file (a device or a pipe); give a file name")
    parent = target.parent
    if not parent.is_dir():
        raise UsageError(f"{field} {path}: the directory {parent} does not exist; create it first")
    return target


def file_mode(target: "str | os.PathLike[str]") -> int:
    """The permissions a file written in place of ``target`` gets: those of the file it
    replaces, else what the umask leaves of 0666 (a temporary file starts at 0600)."""
    try:
        return os.stat(target).st_mode & 0o7777
    except OSError:
        mask = os.umask(0)
        os.umask(mask)
        return 0o666 & ~mask


def write_text_file(path: str | Path, text: str) -> None:
    """Write ``text`` to ``path`` (UTF-8), in one go; nothing is left half written.

    Raises:
        LocalFileError: the file could not be written (a full disk, a read-only directory).
    """
    write_file(path, lambda f: f.write(text.encode("utf-8")))


def write_file(path: str | Path, write: Callable[[BinaryIO], object]) -> None:
    """Write ``path`` with ``write`` (given the open file), in one go: into a temporary file
    beside it, with the mode the file has (or would get), then renamed over it.

    Raises:
        LocalFileError: the file could not be written (a full disk, a read-only directory).
    """
    import tempfile

    target = Path(path)
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
        try:
            os.fchmod(fd, file_mode(target))
            with os.fdopen(fd, "wb") as f:
                write(f)
            os.replace(tmp, target)
        except BaseException:
            os.unlink(tmp)
            raise
    except OSError as e:
        raise LocalFileError(f"could not write {path}: {e.strerror or e}") from None


def download(
    outputs: JobOutputs, dest: "str | os.PathLike[str]", *, client: Any = None, limit: int = MAX_DOWNLOAD, notes: list[str] | None = None
) -> list[Path]:
    """Copy every listed output into ``dest`` (its layout kept); return the files written.

    What is not copied is said in ``notes``: a ``gs://`` object whose name is also the folder
    of others (``x`` and ``x/y``: a file and a directory cannot share a path here), a name
    that would leave ``dest``, and the files beyond the listing's :data:`MAX_FILES`.

    Raises:
        UsageError: the outputs cannot be reached from here, exceed ``limit`` bytes, or
            ``dest`` is a file or the job dir itself.
        LocalFileError: a file could not be written (what was written so far is said).
    """
    if not outputs.reachable or outputs.root is None:
        raise UsageError(outputs.note or f"the outputs of job {outputs.job_id} cannot be reached from here")
    if outputs.total_size > limit:
        raise UsageError(f"the outputs of job {outputs.job_id} are {outputs.total_size} bytes, more than {limit}; copy them with gsutil/cp")
    dest = check_output_path(os.fspath(dest), "--download", directory=True, inside=outputs.root)
    notes = notes if notes is not None else []
    folders = {posixpath.dirname(f.path) for f in outputs.files}
    folders = {d for f in folders for d in _parents(f)}
    written: list[Path] = []
    bucket = None
    prefix = ""
    if outputs.root.startswith("gs://"):
        name, prefix = split_gs(outputs.root)
        bucket = (client if client is not None else storage_client()).bucket(name)
    left_out: list[str] = []
    for f in outputs.files:
        parts = f.path.split("/")
        if any(p in ("", ".", "..") for p in parts) or f.path in folders:
            left_out.append(f.path)  # outside dest, or a file where other outputs need a directory
            continue
        target = dest.joinpath(*parts)
        try:
            _make_dirs(target.parent)
            if bucket is not None:
                bucket.blob(f"{prefix}/{f.path}" if prefix else f.path).download_to_filename(str(target))
            else:
                import shutil

                shutil.copyfile(os.path.join(outputs.root, *parts), target)
        except OSError as e:
            raise LocalFileError(
                f"could not write {target}: {e.strerror or e} ({len(written)} of {len(outputs.files)} files were copied into {dest})"
            ) from None
        written.append(target)
    if left_out:
        notes.append(
            f"{len(left_out)} not copied (a name that is also a folder of other outputs, or one that would leave {dest}): "
            + ", ".join(left_out[:5])
            + (" …" if len(left_out) > 5 else "")
        )
    if outputs.truncated:
        notes.append(
            f"only the first {len(outputs.files)} files were listed and copied: there are more under {outputs.root}; copy them with gsutil/cp"
        )
    return written


def _make_dirs(path: Path) -> None:
    """``mkdir -p`` level by level (``os.makedirs`` recurses once per level: a tree 1,400
    levels deep would end in a RecursionError)."""
    missing = []
    while not path.is_dir():
        missing.append(path)
        if path.parent == path:
            break
        path = path.parent
    for folder in reversed(missing):
        try:
            os.mkdir(folder)
        except FileExistsError:
            if not folder.is_dir():
                raise


def _parents(path: str) -> list[str]:
    """``a/b/c`` → ``["a/b/c", "a/b", "a"]`` (``""`` → ``[]``)."""
    out = []
    while path:
        out.append(path)
        path = posixpath.dirname(path)
    return out


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
        from ..errors import TfjobError
        from ..description.limits import read_bounded_text

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
