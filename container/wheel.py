"""The ``tfjob-bootstrap`` wheel: the bootstrap alone, built without a build backend.

One distribution of the bootstrap serves every backend: the base image installs it
(``container/Dockerfile`` runs ``python container/wheel.py /wheels``), and a Vertex AI or
AI Platform package job stages it next to the trainer's sdist so that every replica
starts ``python -m tfjob.container.bootstrap`` exactly as a local task does.

The wheel holds the modules the bootstrap imports (all standard library) and
:mod:`tfjob.hypertune`, which trainers call to report a tuning metric. It is built
from this installation's own files with fixed timestamps and file order, so the same
tfjob always gives the same bytes: the sha256 names where it is staged, and an
unchanged tfjob uploads nothing. No pip, setuptools or network is needed to build it,
and installing it needs none of them either (no build step, no dependencies).
"""

from __future__ import annotations

import base64
from hashlib import sha256
import io
import os
import re
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Sequence


#: The distribution's name (``pip show tfjob-bootstrap``).
DIST_NAME = "tfjob-bootstrap"
#: The module every replica runs (``python -m``; Vertex AI's ``pythonModule``).
BOOTSTRAP_MODULE = "tfjob.container.bootstrap"
#: The files of the ``tfjob`` package the wheel carries, relative to the package.
#: Everything the bootstrap imports, at start-up or later; a test runs the bootstrap
#: from the wheel alone to keep this list whole.
FILES: tuple[str, ...] = (
    "__init__.py",
    "_version.py",
    "errors.py",
    "hypertune.py",
    "lazy.py",
    "cluster/__init__.py",
    "cluster/current.py",
    "cluster/dispatch.py",
    "cluster/jobset.py",
    "cluster/render.py",
    "cluster/spec.py",
    "cluster/task.py",
    "container/__init__.py",
    "container/bootstrap.py",
    "container/packages.py",
)
_EPOCH = (1980, 1, 1, 0, 0, 0)  # the earliest time a zip entry can carry


def _package_dirs() -> tuple[str, str]:
    """Where the ``tfjob`` package's files and ``tfjob.container``'s files are.

    Installed, both are ``…/tfjob`` (``container`` is a sub-folder); in the source tree
    (an editable install, or ``python container/wheel.py``) they are ``sdk/`` and ``container/``.
    """
    here = os.path.dirname(os.path.abspath(__file__))
    parent = os.path.dirname(here)
    source = os.path.join(parent, "sdk")
    if os.path.basename(here) == "container" and os.path.isfile(os.path.join(source, "errors.py")):
        return source, here
    return parent, here


def version() -> str:
    """tfjob's version, read from ``tfjob/_version.py`` (nothing is imported)."""
    root, _ = _package_dirs()
    with open(os.path.join(root, "_version.py"), encoding="utf-8") as f:
        m = re.search(r'^__version__ = "([^"]+)"', f.read(), re.MULTILINE)
    if not m:
        raise RuntimeError("tfjob/_version.py has no __version__")
    return m.group(1)


def wheel_name(ver: str | None = None) -> str:
    """``tfjob_bootstrap-<version>-py3-none-any.whl``."""
    return f"{DIST_NAME.replace('-', '_')}-{ver or version()}-py3-none-any.whl"


def _record_hash(data: bytes) -> str:
    digest = base64.urlsafe_b64encode(sha256(data).digest()).rstrip(b"=").decode()
    return f"sha256={digest}"


def _members(ver: str) -> list[tuple[str, bytes]]:
    root, container = _package_dirs()
    members: list[tuple[str, bytes]] = []
    for rel in FILES:
        base = container if rel.startswith("container/") else root
        path = os.path.join(base, rel[len("container/") :] if rel.startswith("container/") else rel)
        with open(path, "rb") as f:
            members.append((f"tfjob/{rel}", f.read()))
    info = f"{DIST_NAME.replace('-', '_')}-{ver}.dist-info"
    metadata = (
        "Metadata-Version: 2.1\n"
        f"Name: {DIST_NAME}\n"
        f"Version: {ver}\n"
        "Summary: The tfjob in-container bootstrap: reads TF_CONFIG / CLUSTER_SPEC and starts the task's role\n"
        "License: Apache-2.0\n"
        "Requires-Python: >=3.9\n"
    )
    members += [
        (f"{info}/METADATA", metadata.encode()),
        (f"{info}/WHEEL", b"Wheel-Version: 1.0\nGenerator: tfjob\nRoot-Is-Purelib: true\nTag: py3-none-any\n"),
        (f"{info}/entry_points.txt", f"[console_scripts]\ntfjob-bootstrap = {BOOTSTRAP_MODULE}:main\n".encode()),
        (f"{info}/top_level.txt", b"tfjob\n"),
    ]
    record = "".join(f"{name},{_record_hash(data)},{len(data)}\n" for name, data in members)
    members.append((f"{info}/RECORD", (record + f"{info}/RECORD,,\n").encode()))
    return members


def build_bytes() -> tuple[str, bytes]:
    """The wheel's file name and bytes (the same bytes for the same tfjob)."""
    import zipfile  # only when the bytes are made (build() reuses a wheel already written)

    ver = version()
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in _members(ver):
            entry = zipfile.ZipInfo(name, date_time=_EPOCH)
            entry.external_attr = 0o644 << 16
            entry.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(entry, data, compresslevel=9)
    return wheel_name(ver), buffer.getvalue()


def build(directory: str) -> str:
    """Write the wheel into ``directory`` (created if missing) and return its path.

    An existing file with the same bytes is left as it is, and one written from the same
    sources (their digest is kept beside it, ``NAME.sources``) is not even made again.
    """
    ver = version()
    path = os.path.join(directory, wheel_name(ver))
    sources = _sources_digest(ver)
    try:
        with open(path + ".sources", encoding="ascii") as f:
            if f.read() == _stamp(path, sources):  # same sources, and the wheel untouched since
                return path
    except OSError:
        pass
    name, data = build_bytes()
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, name)
    try:
        with open(path, "rb") as f:
            if f.read() == data:
                _write_sources(path, sources)
                return path
    except OSError:
        pass
    partial = f"{path}.{os.getpid()}.partial"
    with open(partial, "wb") as f:
        f.write(data)
    os.replace(partial, path)
    _write_sources(path, sources)
    return path


def _sources_digest(ver: str) -> str:
    """A digest of what the wheel is made of: the version and every carried file's bytes."""
    root, container = _package_dirs()
    digest = sha256(f"{DIST_NAME} {ver}\n".encode())
    for rel in FILES:
        base = container if rel.startswith("container/") else root
        with open(os.path.join(base, rel[len("container/") :] if rel.startswith("container/") else rel), "rb") as f:
            digest.update(sha256(f.read()).digest())
    return digest.hexdigest()


def _stamp(path: str, sources: str) -> str:
    """The sources' digest and the wheel file's size and change time (OSError: no wheel)."""
    st = os.stat(path)
    return f"{sources} {st.st_size} {st.st_mtime_ns} {st.st_ino}"


def _write_sources(path: str, sources: str) -> None:
    partial = f"{path}.sources.{os.getpid()}.partial"
    try:
        stamp = _stamp(path, sources)
        with open(partial, "w", encoding="ascii") as f:
            f.write(stamp)
        os.replace(partial, path + ".sources")
    except OSError:
        pass  # the next build makes the bytes again: slower, never wrong


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 1 or args[0].startswith("-"):
        print("usage: python container/wheel.py DIRECTORY  (writes the tfjob-bootstrap wheel there)", file=sys.stderr)
        return 2
    print(build(args[0]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
