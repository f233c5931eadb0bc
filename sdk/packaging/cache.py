"""The build cache: an unchanged project reuses its sdist without running its build backend.

Keyed by a digest of exactly what the build backend would see (:func:`tree_key`); kept under
``$TFJOB_HOME/build-cache``, at most :data:`CACHE_ENTRIES` entries (the least recently used go
first). A damaged entry is built again; a cache that cannot be written is skipped.
"""

from __future__ import annotations

import json
from hashlib import sha256
import os
import sys
from pathlib import Path

from .archive import BuiltPackage
from .tree import Collected, is_executable, read_member

#: How many project builds the cache keeps (the least recently used go first).
CACHE_ENTRIES = 32
_CACHE_FORMAT = "1"


def cache_dir() -> Path:
    """Where the cache lives (``$TFJOB_HOME/build-cache``)."""
    from ..runtime.settings import tfjob_home

    return tfjob_home() / "build-cache"


def tree_key(found: Collected, include_secrets: bool) -> str:
    """A digest of exactly what the build backend would see: every packaged file's path,
    mode and bytes (the build config, pyproject.toml/setup.py/setup.cfg, among them), the
    rules' outcome, the Python and build-backend versions (the interpreter builds it)."""
    digest = sha256()  # fed one digest per file: small
    digest.update(f"tfjob-build-cache {_CACHE_FORMAT} {sys.version_info[:3]} {include_secrets}\n".encode())
    for rel in found.files:
        real = found.sources[rel]
        data = read_member(real)
        executable = is_executable(real)
        digest.update(f"{rel}\0{len(data)}\0{executable}\0".encode())
        digest.update(sha256(data).digest())
    from ..description.requirements import installed_version  # read from their dist-info names: importlib.metadata costs more

    digest.update(f"setuptools {installed_version('setuptools')} build {installed_version('build')}".encode())
    hexdigest: str = digest.hexdigest()
    return hexdigest


def cache_get(key: str, out_dir: Path, found: Collected) -> BuiltPackage | None:
    """The cached sdist for ``key``, copied into ``out_dir``, or None (a miss or a damaged entry)."""
    entry = cache_dir() / key
    try:
        meta = json.loads((entry / "meta.json").read_text())
        archive = entry / meta["filename"]
        data = archive.read_bytes()
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if sha256(data).hexdigest() != meta.get("sha256"):
        return None  # damaged: build again
    final = out_dir / meta["sha256"][:16] / meta["filename"]
    if not final.is_file():
        final.parent.mkdir(parents=True, exist_ok=True)
        tmp = final.with_name(final.name + ".part")
        tmp.write_bytes(data)
        os.replace(tmp, final)
    os.utime(entry)  # recently used
    return BuiltPackage(
        path=final,
        sha256=meta["sha256"],
        name=meta["name"],
        version=meta["version"],
        size=len(data),
        files=tuple(meta["files"]),
        excluded_secrets=tuple(found.secrets),
        warnings=tuple(found.warnings()),
        cached=True,
    )


def cache_put(key: str, built_package: BuiltPackage) -> None:
    """Keep the sdist for the next unchanged submit; a cache that cannot be written is skipped."""
    import shutil
    import tempfile

    root = cache_dir()
    entry = root / key
    try:
        tmp = Path(tempfile.mkdtemp(prefix=".tmp-", dir=_ensure(root)))
        shutil.copyfile(built_package.path, tmp / built_package.filename)
        meta = {
            "filename": built_package.filename, "sha256": built_package.sha256, "name": built_package.name,
            "version": built_package.version, "files": list(built_package.files),
        }  # fmt: skip
        (tmp / "meta.json").write_text(json.dumps(meta))
        if entry.exists():
            shutil.rmtree(tmp, ignore_errors=True)
        else:
            os.replace(tmp, entry)
        entries = sorted((p for p in root.iterdir() if not p.name.startswith(".")), key=lambda p: p.stat().st_mtime)
        for old in entries[:-CACHE_ENTRIES]:
            shutil.rmtree(old, ignore_errors=True)
    except OSError:
        return


def _ensure(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    return path
