"""What of a trainer directory may be shipped: one walk, the same for every carrier.

:func:`collect_files` decides, file by file, what leaves the machine — into an sdist (Vertex
AI, ``--install``), a Kubernetes ConfigMap (the sdist again) or a container build context
(:func:`copy_shippable`) — so every carrier ships the same filtered tree:

- cache, VCS and virtualenv directories, ``*.pyc`` and the ignore files' patterns
  (``.gcloudignore``, ``.tfjobignore``; gitignore syntax, :mod:`tfjob.packaging.ignore`)
  stay out;
- a symbolic link is shipped as its file only when it resolves to a regular file inside
  the directory; links that leave it, dangle, loop or name a directory are never followed;
- a hard link to a file that has a name outside the directory (more links than names in the
  tree) is left out, as a link out would be;
- FIFOs, sockets and devices are never opened;
- a file that looks like a credential (:mod:`tfjob.packaging.secrets`) is left out, unless
  ``include_secrets`` or an exact-name ``!path`` line keeps it; a wildcard negation
  (``!*``, ``!configs/*.json``) never does, and a line says so;
- at most :data:`MAX_PACKAGE_FILES` files and :data:`MAX_PACKAGE_BYTES` bytes.

Every file left out is named in a warning line (control characters in names escaped).
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import PackagingError
from ..description.limits import read_bounded_text
from .ignore import IgnoreRule, RuleSet, parse_ignore
from .secrets import secret_by_name, secret_reason, star_glob

#: Ignore files read from the trainer directory, in this order.
IGNORE_FILES = (".gcloudignore", ".tfjobignore")
#: The largest ignore file read (``.gcloudignore``, ``.tfjobignore``, an included ``.gitignore``).
MAX_IGNORE_FILE_BYTES = 1024 * 1024
#: The most a trainer package holds: it is code (and small assets), not data.
MAX_PACKAGE_FILES = 50_000
MAX_PACKAGE_BYTES = 512 * 1024 * 1024

_SKIP_DIRS = {
    ".git", ".hg", ".svn", "__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache",
    ".tox", ".nox", ".ipynb_checkpoints", ".idea", ".vscode", ".eggs", "node_modules",
}  # fmt: skip
_SKIP_FILES = ("*.pyc", "*.pyo", "*.pyd.tmp", ".DS_Store", "*.swp", *IGNORE_FILES)
_SKIP_GLOBS = tuple(star_glob(p) for p in _SKIP_FILES)


def shown(name: str) -> str:
    """A file name as a warning line may show it: control characters (newline, ESC, bidi
    overrides, bytes that are no UTF-8) escaped, so a name cannot forge or break a line."""
    if name.isprintable():
        return name
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in name)


def read_ignore_rules(source: Path) -> list[IgnoreRule]:
    """The rules of ``.gcloudignore`` then ``.tfjobignore`` in ``source`` (``#!include:`` honoured).

    Raises:
        ConfigFileError: an ignore file too large, or a line that is no pattern (its file and line named).
    """

    def include(name: str) -> str | None:
        target = (source / name).resolve()
        if source.resolve() not in target.parents or not target.is_file():
            return None
        return _read_ignore_file(target)

    rules: list[IgnoreRule] = []
    count = [0]
    for name in IGNORE_FILES:
        path = source / name
        if path.is_file():
            rules.extend(parse_ignore(_read_ignore_file(path), include, name=str(path), _count=count))
    return rules


def _read_ignore_file(path: Path) -> str:
    return read_bounded_text(path, "the ignore file", MAX_IGNORE_FILE_BYTES, "an ignore file (one pattern per line)", errors="replace")


@dataclass(frozen=True)
class Collected:
    """What a walk of the trainer directory found: what may be shipped, and what may not.

    Attributes:
        files: the files to ship (relative ``/``-separated paths, sorted).
        sources: for each of ``files``, the real file to read (an in-tree link's target).
        secrets: files left out because they look like credentials.
        links: links left out, each ``"path -> target (why)"``: a link that leaves the
            trainer directory, dangles, loops, or points at a directory is never followed.
        special: FIFOs, sockets and devices (never read).
        kept_secrets: credential-looking files shipped on purpose (``--include-secrets``
            or an exact-name ``!path`` line).
        hardlinks: files left out because they are hard links to a file with names outside
            the trainer directory.
        wildcard_kept: credential-looking files a wildcard negation (``!*``) matched: left out.
    """

    files: list[str]
    sources: dict[str, Path]
    secrets: list[str]
    links: list[str]
    special: list[str]
    kept_secrets: list[str] = field(default_factory=list)
    hardlinks: list[str] = field(default_factory=list)
    wildcard_kept: list[str] = field(default_factory=list)

    def warnings(self) -> list[str]:
        """One line per kind of file left out, naming each file."""

        def names(items: list[str]) -> str:
            return ", ".join(shown(i) for i in items)

        out = []
        if self.secrets:
            out.append(
                "left out of the package because they look like secrets: "
                + names(self.secrets)
                + " (to package one on purpose: --include-secrets, or a '!PATH' line naming it in .tfjobignore)"
            )
        if self.wildcard_kept:
            out.append("a wildcard '!' line does not keep a secret, name it exactly ('!PATH') to package it: " + names(self.wildcard_kept))
        if self.kept_secrets:
            out.append("packaged although they look like secrets (kept on purpose): " + names(self.kept_secrets))
        if self.links:
            out.append("left out of the package, symbolic links are not followed out of the trainer directory: " + names(self.links))
        if self.hardlinks:
            out.append(
                "left out of the package, hard links to a file that has names outside the trainer directory "
                "(copy the file in if it belongs there): " + names(self.hardlinks)
            )
        if self.special:
            out.append("left out of the package, not regular files: " + names(self.special))
        return out


def _link_target(full: Path, root: Path) -> tuple[Path | None, str]:
    """The in-tree regular file a link resolves to, or None and why it is left out."""
    try:
        target_text = os.readlink(full)
    except OSError:
        target_text = "?"
    try:
        target = full.resolve(strict=True)
    except (OSError, RuntimeError):
        return None, f"{target_text} (dangles)"
    if target != root and root not in target.parents:
        return None, f"{target_text} (outside the trainer directory)"
    try:
        mode = target.lstat().st_mode
    except OSError:
        return None, f"{target_text} (unreadable)"
    if stat.S_ISDIR(mode):
        return None, f"{target_text} (a directory)"
    if not stat.S_ISREG(mode):
        return None, f"{target_text} (not a regular file)"
    return target, target_text


def _human(size: int) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if size >= scale:
            return f"{size / scale:.1f} {unit}"
    return f"{size} B"


def _too_big(source: Path, files: int, size: int, by_top: dict[str, list[int]], limits: tuple[int, int]) -> PackagingError:
    max_files, max_bytes = limits
    by_count = files > max_files
    # Ranked by what ran over: the entries with the most files, or the most bytes.
    largest = sorted(by_top.items(), key=lambda kv: (-kv[1][0 if by_count else 1], kv[0]))[:3]
    shown_entries = ", ".join(f"{shown(name)} {n:,} file{'s' if n != 1 else ''} {_human(b)}" for name, (n, b) in largest)
    what = f"more than {max_files:,} files" if by_count else f"more than {_human(max_bytes)}"
    return PackagingError(
        f"trainer directory {str(source)!r} has {what} to package ({'most files' if by_count else 'largest'}: {shown_entries}); "
        "a trainer package is code: leave data out with a .tfjobignore line (e.g. data/) and read it from Cloud Storage or the job dir"
    )


def _walk_error(source: Path, error: OSError, where: Path | None = None) -> PackagingError:
    where = where or (Path(error.filename) if error.filename else source)
    try:
        rel = where.relative_to(source).as_posix()
    except ValueError:
        rel = str(where)
    return PackagingError(
        f"trainer directory {str(source)!r}: {shown(rel)!r} cannot be read ({error.strerror or error}); "
        f"make it readable, or leave it out with a .tfjobignore line ({shown(rel)}/)"
    )


def collect_files(
    source: Path,
    rules: "list[IgnoreRule] | RuleSet | None" = None,
    *,
    include_secrets: bool = False,
    max_files: int | None = None,
    max_bytes: int | None = None,
) -> Collected:
    """Walk ``source`` and decide, file by file, what may be shipped (the module's rules).

    Args:
        source: the trainer directory.
        rules: its ignore rules (default: read from its ignore files).
        include_secrets: ship credential-looking files too (each still named in a warning).
        max_files, max_bytes: the bounds (default :data:`MAX_PACKAGE_FILES`, :data:`MAX_PACKAGE_BYTES`).

    Raises:
        PackagingError: a directory that cannot be read, or more than the bounds.
        ConfigFileError: an ignore file that cannot be used.
    """
    source = Path(source)
    ruleset = rules if isinstance(rules, RuleSet) else RuleSet(read_ignore_rules(source) if rules is None else rules)
    walk = _Walk(
        source, source.resolve(), ruleset, include_secrets,
        (MAX_PACKAGE_FILES if max_files is None else max_files, MAX_PACKAGE_BYTES if max_bytes is None else max_bytes),
    )  # fmt: skip

    def failed(error: OSError) -> None:
        raise _walk_error(source, error)

    for dirpath, dirnames, filenames in os.walk(source, onerror=failed):  # os.walk never descends into links
        here = Path(dirpath)
        rel_dir = here.relative_to(source).as_posix()
        rel_dir = "" if rel_dir == "." else rel_dir + "/"
        dirnames[:] = [d for d in sorted(dirnames) if walk.enters(here / d, rel_dir + d)]
        for f in sorted(filenames):
            walk.consider(here / f, rel_dir + f)
    hardlinks = walk.drop_linked_outside()
    return Collected(
        sorted(walk.files), walk.sources, sorted(walk.secrets), sorted(walk.links), sorted(walk.special),
        sorted(walk.kept_secrets), sorted(hardlinks), sorted(walk.wildcard_kept),
    )  # fmt: skip


@dataclass
class _Walk:
    """A walk of the trainer directory under way: its rules and bounds, and what it found so far
    (the lists of :class:`Collected`, the names and link counts of hard-linked files, the sizes)."""

    source: Path
    root: Path
    ruleset: RuleSet
    include_secrets: bool
    limits: tuple[int, int]
    files: list[str] = field(default_factory=list)
    sources: dict[str, Path] = field(default_factory=dict)
    secrets: list[str] = field(default_factory=list)
    links: list[str] = field(default_factory=list)
    special: list[str] = field(default_factory=list)
    kept_secrets: list[str] = field(default_factory=list)
    wildcard_kept: list[str] = field(default_factory=list)
    inodes: dict[tuple[int, int], list[str]] = field(default_factory=dict)
    nlinks: dict[tuple[int, int], int] = field(default_factory=dict)
    total: int = 0
    by_top: dict[str, list[int]] = field(default_factory=dict)
    #: The file negations (``!path``): a credential-looking file one names exactly is shipped.
    negations: list[IgnoreRule] = field(init=False)

    def __post_init__(self) -> None:
        self.negations = [r for r in self.ruleset.rules if r.negate and not r.dir_only]

    def enters(self, full: Path, rel: str) -> bool:
        """True when the walk goes into directory ``full`` (``rel`` in the tree)."""
        name = full.name
        if name in _SKIP_DIRS or name.endswith(".egg-info"):
            return False
        if self.ruleset.ignored(rel, True):
            return False
        if full.is_symlink():
            _, why = _link_target(full, self.root)
            self.links.append(f"{rel} -> {why if '(' in why else why + ' (a directory)'}")
            return False
        try:
            if (full / "pyvenv.cfg").is_file():  # a virtualenv, whatever its name
                return False
        except OSError as e:
            raise _walk_error(self.source, e, full) from None
        return True

    def consider(self, full: Path, rel: str) -> None:
        """File ``full`` (``rel`` in the tree): shipped, or left out and said why."""
        if any(glob(full.name) for glob in _SKIP_GLOBS) or self.ruleset.ignored(rel, False):
            return
        try:
            info = full.lstat()
        except OSError:
            return
        mode = info.st_mode
        real = full
        if stat.S_ISLNK(mode):
            target, why = _link_target(full, self.root)
            if target is None:
                self.links.append(f"{rel} -> {why}")
                return
            real = target
            try:
                info = real.stat()
            except OSError:
                return
        elif not stat.S_ISREG(mode):
            self.special.append(rel)
            return
        # A link is judged by its own name and by its target's name and content.
        target_rel = real.relative_to(self.root).as_posix() if real is not full else rel
        if secret_reason(real, rel) or (target_rel != rel and secret_by_name(target_rel)):
            named = [r for r in self.negations if r.matches(rel)]
            if self.include_secrets or any(r.literal for r in named):
                self.kept_secrets.append(rel)
            else:
                self.secrets.append(rel)
                if named:
                    self.wildcard_kept.append(f"{rel} (by '{named[-1].pattern}')")
                return
        self.ship(rel, full, real, info)

    def ship(self, rel: str, full: Path, real: Path, info: os.stat_result) -> None:
        """``rel`` goes in (read from ``real``), counted against the bounds."""
        self.files.append(rel)
        self.sources[rel] = real
        if info.st_nlink > 1:
            key = (info.st_dev, info.st_ino)
            self.nlinks[key] = info.st_nlink
            names = self.inodes.setdefault(key, [])
            if real is full:  # an in-tree name of the file (symbolic links to it are not names)
                names.append(rel)
        size = info.st_size
        self.total += size
        top = rel.split("/", 1)[0] + ("/" if "/" in rel else "")
        entry = self.by_top.setdefault(top, [0, 0])
        entry[0] += 1
        entry[1] += size
        if self.total > self.limits[1] or len(self.files) > self.limits[0]:
            raise _too_big(self.source, len(self.files), self.total, self.by_top, self.limits)

    def drop_linked_outside(self) -> list[str]:
        """Leave out the files with more names than the tree holds, which have a name outside it
        (/etc/shadow linked in); return them."""
        hardlinks: list[str] = []
        outside = {key for key, names in self.inodes.items() if self.nlinks[key] > len(names)}
        if outside:
            kept = []
            for rel in self.files:
                real = self.sources[rel]
                try:
                    st = real.stat()
                except OSError:
                    kept.append(rel)
                    continue
                if (st.st_dev, st.st_ino) in outside:
                    hardlinks.append(rel)
                    del self.sources[rel]
                else:
                    kept.append(rel)
            self.files = kept
        return hardlinks


def read_member(path: Path) -> bytes:
    """The bytes of a file chosen by :func:`collect_files`, refusing anything but a regular file.

    Opened without following a last-component link and checked after opening, so a
    file swapped for a link or a FIFO between the walk and the read is never read.
    """
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(path, flags)
    except OSError as e:
        raise PackagingError(f"{shown(str(path))}: cannot read it for the package: {e.strerror or e}") from e
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
            raise PackagingError(f"{shown(str(path))}: changed into something other than a regular file while packaging; submit again")
        return f.read()


def is_executable(path: Path) -> bool:
    """Whether the owner may run the file (the one mode bit a package keeps)."""
    return bool(path.stat().st_mode & stat.S_IXUSR)


def copy_files(found: Collected, dest: Path) -> None:
    """Write ``found``'s files into ``dest`` as regular files (``0755`` or ``0644``)."""
    for rel in found.files:
        real = found.sources[rel]
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(read_member(real))
        os.chmod(target, 0o755 if is_executable(real) else 0o644)
    dest.mkdir(parents=True, exist_ok=True)


def copy_shippable(source: "str | os.PathLike[str]", dest: "str | os.PathLike[str]", *, include_secrets: bool = False) -> Collected:
    """Write what may be shipped of ``source`` into the directory ``dest``: the tree every
    carrier ships (a container build context; the copy a PEP 517 backend builds from).

    Only :func:`collect_files`' files are written, as regular files; links, secrets and
    ignored files never reach ``dest``. Returns the walk's result (its
    :meth:`Collected.warnings` name what was left out).

    Raises:
        PackagingError, ConfigFileError: as :func:`collect_files`.
    """
    found = collect_files(Path(source), include_secrets=include_secrets)
    copy_files(found, Path(dest))
    return found
