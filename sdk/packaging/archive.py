"""The canonical archive: the same files give the same bytes, and what a built package is.

Entries sorted, a fixed mtime, uid/gid 0, no user names, modes normalized to ``0755``/``0644``,
gzip without timestamp or file name: so the same sources give the same bytes and the same
sha256 (a second submit of unchanged code stages nothing). A built archive lands in a
directory named after its digest (:func:`finish`), so different builds never collide.
"""

from __future__ import annotations

import os
from hashlib import sha256
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Iterator

from .tree import Collected

if TYPE_CHECKING:
    import tarfile

#: Every member of the archive gets this mtime (1980-01-01, the earliest a zip takes).
FIXED_MTIME = 315532800


@dataclass(frozen=True)
class BuiltPackage:
    """A built trainer sdist.

    Attributes:
        path: the ``.tar.gz`` file.
        sha256: hex digest of its bytes (it names the staged object).
        name: the distribution name (``trainer``).
        version: the distribution version.
        size: bytes.
        files: the archive's members, in order.
        excluded_secrets: files left out because they look like secrets (relative paths).
        warnings: one line per kind of file left out (secrets, links, special files),
            naming each; the caller shows them.
    """

    path: Path
    sha256: str
    name: str
    version: str
    size: int
    files: tuple[str, ...]
    excluded_secrets: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()
    #: True when the sdist came from the build cache (the tree had not changed).
    cached: bool = False

    @property
    def filename(self) -> str:
        return self.path.name


def _member(name: str, size: int, executable: bool) -> "tarfile.TarInfo":
    import tarfile

    info = tarfile.TarInfo(name)
    info.size = size
    info.mtime = FIXED_MTIME
    info.mode = 0o755 if executable else 0o644
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    return info


def write_canonical_tar(entries: list[tuple[str, bytes, bool]], out: Path) -> str:
    """Write ``(name, data, executable)`` entries as a canonical ``.tar.gz``; return its sha256.

    The archive streams through gzip to disk (no second copy of the files in memory);
    the bytes depend on the content only, however they are written.
    """
    import gzip  # tarfile and gzip only when an archive is written (a cache hit writes none)
    import io
    import tarfile

    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".part")
    with open(tmp, "wb") as f:
        # mtime=0 and no file name in the gzip header: the bytes depend on the content only.
        with gzip.GzipFile(filename="", mode="wb", fileobj=f, compresslevel=9, mtime=0) as gz:
            with tarfile.open(fileobj=gz, mode="w", format=tarfile.PAX_FORMAT) as tar:
                for name, data, executable in sorted(entries, key=lambda e: e[0]):
                    tar.addfile(_member(name, len(data), executable), io.BytesIO(data))
    digest = sha256()
    with open(tmp, "rb") as f:
        while chunk := f.read(1 << 20):
            digest.update(chunk)
    os.replace(tmp, out)
    hexdigest: str = digest.hexdigest()
    return hexdigest


def read_tar(path: Path) -> Iterator[tuple[str, bytes, bool]]:
    """The regular members of an archive: ``(name, data, executable)``."""
    import tarfile

    with tarfile.open(path, "r:*") as tar:
        for m in tar.getmembers():
            if m.isfile():
                f = tar.extractfile(m)
                assert f is not None
                yield m.name, f.read(), bool(m.mode & 0o111)


def finish(entries: list[tuple[str, bytes, bool]], out_dir: Path, filename: str, name: str, version: str, found: Collected) -> BuiltPackage:
    """Write the canonical archive of ``entries`` into ``out_dir/<digest>/filename``."""
    staging = out_dir / ".partial"
    sha = write_canonical_tar(entries, staging / filename)
    # Content-addressed: the same sources land on the same path, different ones never collide.
    final = out_dir / sha[:16] / filename
    final.parent.mkdir(parents=True, exist_ok=True)
    os.replace(staging / filename, final)
    return BuiltPackage(
        path=final,
        sha256=sha,
        name=name,
        version=version,
        size=final.stat().st_size,
        files=tuple(sorted(e[0] for e in entries)),
        excluded_secrets=tuple(found.secrets),
        warnings=tuple(found.warnings()),
    )
