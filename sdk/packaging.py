"""Trainer directory → source distribution, byte-identical for identical input.

:func:`build_sdist` is what the Vertex backend stages and what the local backend's
``--install`` mode pip-installs. Two kinds of trainer directory:

- a **project** (``pyproject.toml`` or ``setup.py``): built with its own PEP 517
  backend through the ``build`` library, from a filtered copy of the directory (so
  the build never sees an excluded file and never writes into the user's tree);
- a **bare package** (a directory with ``__init__.py``, or a directory holding the
  module's top-level package): a minimal sdist is generated around it, as gcloud
  does — ``PKG-INFO``, a ``setup.py`` that finds the packages, and the files.

Either way the archive is then written again in a canonical form: entries sorted,
fixed mtime, uid/gid 0, no user names, normalized modes, gzip without timestamp
or file name. So the same sources give the same bytes and the same sha256, and a
second submit of unchanged code stages nothing.

Excluded by default (:func:`collect_files` has the rules): version-control and cache
directories, virtualenvs, ``*.pyc``; symbolic links that leave the trainer directory,
dangle or name a directory (never followed; an in-tree link to a file is packaged as
that file); FIFOs, sockets and devices (never opened); and anything that looks like a
credential, by name (case-insensitive: ``.env``/``*.env``, ``*.pem``, ``*.key*``,
``id_rsa*``, anything under ``.ssh/``, ``.aws/credentials``, ``.docker/config.json``,
``kubeconfig``, ``.git-credentials``, ``.pypirc``, ``.npmrc``, ADC files…) or by the
first 64 KiB of its content (private-key PEM blocks, Google service-account and user
credentials however nested or escaped, OAuth refresh-token/client-secret pairs, AWS
key pairs, registry ``auths``). Each left-out file is named in
:attr:`BuiltPackage.warnings`. ``.gcloudignore`` and ``.tfjobignore`` (gitignore
syntax) add rules of the user's; a ``!pattern`` line there (or ``--include-secrets``)
keeps a credential-looking file on purpose.
"""

from __future__ import annotations

import contextlib
import fnmatch
import gzip
import hashlib
import io
import json
import os
import re
import shutil
import stat
import sys
import tarfile
import warnings
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

from .errors import PackagingError
from .limits import read_bounded_text
from .spec import BUILT_PACKAGE_SUFFIXES, module_exists
from .ignorefile import IgnoreRule, is_excluded, is_ignored, parse_ignore

#: Every member of the archive gets this mtime (1980-01-01, the earliest a zip takes).
FIXED_MTIME = 315532800
#: The version given to a bare package, as gcloud does.
BARE_VERSION = "0.0.0"
#: Ignore files read from the trainer directory, in this order.
IGNORE_FILES = (".gcloudignore", ".tfjobignore")

_SKIP_DIRS = {
    ".git", ".hg", ".svn", "__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache",
    ".tox", ".nox", ".ipynb_checkpoints", ".idea", ".vscode", ".eggs", "node_modules",
}  # fmt: skip
_SKIP_FILES = ("*.pyc", "*.pyo", "*.pyd.tmp", ".DS_Store", "*.swp", *IGNORE_FILES)


def check_built_package(given: str) -> Path:
    """The path of one ``--packages`` entry, checked: an existing regular file pip installs.

    Raises:
        PackagingError: missing, not a regular file, or not a built package's name.
    """
    path = Path(given).expanduser()
    if not path.is_file():
        problem = "is not a regular file" if path.exists() else "does not exist"
        raise PackagingError(f"--packages {given!r} {problem}; give built .tar.gz or .whl files")
    if not path.name.endswith(BUILT_PACKAGE_SUFFIXES):
        raise PackagingError(f"--packages {given!r} is not a .tar.gz, .tgz, .zip or .whl package")
    return path


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


# -- secrets ------------------------------------------------------------------------------
# File names that hold credentials, matched case-insensitively against the file name.
_SECRET_NAMES = (
    ".env", ".env.*", "*.env", "*.pem", "*.pem.*", "*.key", "*.key.*", "*.p12", "*.pfx", "*.jks",
    "*.keystore", "id_rsa*", "id_dsa*", "id_ecdsa*", "id_ed25519*", ".netrc", "_netrc", ".pgpass",
    "credentials.db", "application_default_credentials.json", ".git-credentials", ".pypirc",
    ".npmrc", ".yarnrc", "kubeconfig", "kubeconfig.*", "*.kubeconfig", ".htpasswd",
)  # fmt: skip
# Relative paths (their last components) that hold credentials, matched case-insensitively.
_SECRET_PATHS = (
    ".aws/credentials", ".aws/config", ".docker/config.json", ".kube/config",
    ".config/gcloud/*", ".gnupg/*",
)  # fmt: skip
# Any file in one of these directories is a secret (private keys under .ssh/, whatever their name).
_SECRET_DIRS = (".ssh", ".gnupg")
#: Bytes read from the start of a file to judge it by content; the rest is never read.
SECRET_SCAN_BYTES = 64 * 1024

_PEM_PRIVATE = re.compile(rb"-----BEGIN ([A-Z0-9]+ )*PRIVATE KEY( BLOCK)?-----")
_JSON_ESCAPE = re.compile(r"\\u([0-9a-fA-F]{4})")


def _key(name: str) -> str:
    # A key as JSON or YAML writes it: quoted or bare, followed by a colon (or = in INI files).
    return r"""(?:^|[\s{,\[])["']?""" + name + r"""["']?\s*[:=]"""


_CREDENTIAL_RULES: tuple[tuple[str, tuple[re.Pattern[str], ...]], ...] = tuple(
    (reason, tuple(re.compile(p, re.IGNORECASE | re.MULTILINE) for p in patterns))
    for reason, patterns in (
        ("a Google service-account or user credential",
         (_key("type") + r"""\s*["']?(service_account|authorized_user|external_account|impersonated_service_account)\b""",)),
        ("a private key field", (_key("private_key") + r"""\s*(["'][^"'\s]|[|>]|-----)""",)),
        ("an OAuth refresh token with its client secret", (_key("refresh_token"), _key("client_secret"))),
        ("an AWS access key pair", (_key("aws_access_key_id"), _key("aws_secret_access_key"))),
        ("container registry credentials", (_key("auths") + r"""\s*\{""", _key("auth") + r"""\s*["']""")),
    )
)  # fmt: skip


def _secret_by_name(rel: str) -> bool:
    """Whether the path (relative, ``/``-separated) names a credential file."""
    lowered = rel.lower()
    parts = lowered.split("/")
    if any(p in _SECRET_DIRS for p in parts[:-1]):
        return True
    name = parts[-1]
    if any(fnmatch.fnmatchcase(name, pattern) for pattern in _SECRET_NAMES):
        return True
    return any(fnmatch.fnmatchcase(lowered, p) or fnmatch.fnmatchcase(lowered, "*/" + p) for p in _SECRET_PATHS)


def secret_in_content(head: bytes, *, python_source: bool = False) -> str | None:
    """Why the first bytes of a file look like a credential, or None.

    ``head`` is at most :data:`SECRET_SCAN_BYTES` long. A private-key PEM block is
    a secret in any file; the structured rules (credential documents, token pairs,
    AWS pairs, registry auths) are not applied to Python sources, whose dict
    literals would match them without holding a credential.
    """
    if _PEM_PRIVATE.search(head):
        return "a private key (PEM)"
    if python_source or b"\0" in head:
        return None
    text = head.decode("utf-8", errors="replace")
    if "\\u" in text:  # JSON may spell any character as an escape: judge what it means
        text = _JSON_ESCAPE.sub(lambda m: chr(int(m.group(1), 16)), text)
    for reason, patterns in _CREDENTIAL_RULES:
        if all(p.search(text) for p in patterns):
            return reason
    return None


def looks_like_secret(path: Path) -> bool:
    """True for a credential file, judged by its name and by its first bytes."""
    return secret_reason(path, path.name) is not None


def secret_reason(path: Path, rel: str) -> str | None:
    """Why the regular file ``path`` (``rel`` in the trainer) looks like a secret, or None."""
    if _secret_by_name(rel):
        return "its name"
    try:
        with open(path, "rb") as f:
            head = f.read(SECRET_SCAN_BYTES)
    except OSError:
        return None
    return secret_in_content(head, python_source=rel.endswith(".py"))


# -- what goes in -----------------------------------------------------------------------
def read_ignore_rules(source: Path) -> list[IgnoreRule]:
    """The rules of ``.gcloudignore`` then ``.tfjobignore`` in ``source`` (``#!include:`` honoured)."""

    def include(name: str) -> str | None:
        target = (source / name).resolve()
        if source.resolve() not in target.parents or not target.is_file():
            return None
        return _read_ignore_file(target)

    rules: list[IgnoreRule] = []
    for name in IGNORE_FILES:
        path = source / name
        if path.is_file():
            rules.extend(parse_ignore(_read_ignore_file(path), include))
    return rules


#: The largest ignore file read (``.gcloudignore``, ``.tfjobignore``, an included ``.gitignore``).
MAX_IGNORE_FILE_BYTES = 1024 * 1024


def _read_ignore_file(path: Path) -> str:
    return read_bounded_text(
        path, "the ignore file", MAX_IGNORE_FILE_BYTES, "an ignore file (one pattern per line)", errors="replace"
    )


@dataclass(frozen=True)
class Collected:
    """What a walk of the trainer directory found.

    Attributes:
        files: the files to package (relative ``/``-separated paths, sorted).
        sources: for each of ``files``, the real file to read (an in-tree link's target).
        secrets: files left out because they look like credentials.
        links: links left out, each ``"path -> target (why)"``: a link that leaves the
            trainer directory, dangles, loops, or points at a directory is never followed.
        special: FIFOs, sockets and devices (never read).
        kept_secrets: credential-looking files packaged on purpose (``--include-secrets``
            or a ``!pattern`` line).
    """

    files: list[str]
    sources: dict[str, Path]
    secrets: list[str]
    links: list[str]
    special: list[str]
    kept_secrets: list[str] = field(default_factory=list)

    def warnings(self) -> list[str]:
        """One line per kind of file left out, naming each file."""
        out = []
        if self.secrets:
            out.append(
                "left out of the package because they look like secrets: " + ", ".join(self.secrets)
                + " (to package one on purpose: --include-secrets, or a '!PATH' line in .tfjobignore)"
            )
        if self.kept_secrets:
            out.append("packaged although they look like secrets (kept on purpose): " + ", ".join(self.kept_secrets))
        if self.links:
            out.append("left out of the package, symbolic links are not followed out of the trainer directory: " + ", ".join(self.links))
        if self.special:
            out.append("left out of the package, not regular files: " + ", ".join(self.special))
        return out


def _kept_on_purpose(rel: str, rules: list[IgnoreRule]) -> bool:
    """A ``!pattern`` line of the user's names this path: they want it packaged."""
    return any(rule.negate and not rule.dir_only and rule.regex.match(rel) for rule in rules)


def _link_target(full: Path, root: Path) -> tuple[Path | None, str]:
    """The in-tree regular file a link resolves to, or None and why it is left out."""
    try:
        shown = os.readlink(full)
    except OSError:
        shown = "?"
    try:
        target = full.resolve(strict=True)
    except (OSError, RuntimeError):
        return None, f"{shown} (dangles)"
    if target != root and root not in target.parents:
        return None, f"{shown} (outside the trainer directory)"
    try:
        mode = target.lstat().st_mode
    except OSError:
        return None, f"{shown} (unreadable)"
    if stat.S_ISDIR(mode):
        return None, f"{shown} (a directory)"
    if not stat.S_ISREG(mode):
        return None, f"{shown} (not a regular file)"
    return target, shown


#: The most a trainer package holds: it is code (and small assets), not data.
MAX_PACKAGE_FILES = 50_000
MAX_PACKAGE_BYTES = 512 * 1024 * 1024


def _human(size: int) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if size >= scale:
            return f"{size / scale:.1f} {unit}"
    return f"{size} B"


def _too_big(source: Path, files: int, size: int, by_top: dict[str, int]) -> PackagingError:
    largest = sorted(by_top.items(), key=lambda kv: -kv[1])[:3]
    shown = ", ".join(f"{name} {_human(n)}" for name, n in largest)
    what = f"more than {MAX_PACKAGE_FILES:,} files" if files > MAX_PACKAGE_FILES else f"more than {_human(MAX_PACKAGE_BYTES)}"
    return PackagingError(
        f"trainer directory {str(source)!r} has {what} to package (largest: {shown}); a trainer package is code: "
        "leave data out with a .tfjobignore line (e.g. data/) and read it from Cloud Storage or the job dir"
    )


def collect_files(source: Path, rules: list[IgnoreRule] | None = None, *, include_secrets: bool = False) -> Collected:
    """Walk ``source`` and decide, file by file, what is packaged.

    The rules, in order: cache, VCS and virtualenv directories and the ignore files'
    patterns are skipped; a symbolic link is packaged as its file only when it
    resolves to a regular file inside ``source`` (links that leave the directory,
    dangle or point at directories are never followed); FIFOs, sockets and devices
    are never opened; a file that looks like a credential (by name, or by its first
    :data:`SECRET_SCAN_BYTES` bytes) is left out unless ``include_secrets`` or a
    ``!pattern`` line of the user's ignore files names it.
    """
    source = Path(source)
    root = source.resolve()
    rules = read_ignore_rules(source) if rules is None else rules
    files: list[str] = []
    sources: dict[str, Path] = {}
    secrets: list[str] = []
    links: list[str] = []
    special: list[str] = []
    kept_secrets: list[str] = []
    total = 0
    by_top: dict[str, int] = {}
    for dirpath, dirnames, filenames in os.walk(source):  # os.walk never descends into links
        here = Path(dirpath)
        rel_dir = here.relative_to(source).as_posix()
        rel_dir = "" if rel_dir == "." else rel_dir + "/"
        keep = []
        for d in sorted(dirnames):
            full = here / d
            if d in _SKIP_DIRS or d.endswith(".egg-info"):
                continue
            if is_ignored(rel_dir + d, True, rules):
                continue
            if full.is_symlink():
                _, why = _link_target(full, root)
                links.append(f"{rel_dir + d} -> {why if '(' in why else why + ' (a directory)'}")
                continue
            if (full / "pyvenv.cfg").is_file():  # a virtualenv, whatever its name
                continue
            keep.append(d)
        dirnames[:] = keep
        for f in sorted(filenames):
            full = here / f
            rel = rel_dir + f
            if any(fnmatch.fnmatchcase(f, p) for p in _SKIP_FILES) or is_ignored(rel, False, rules):
                continue
            try:
                info = full.lstat()
            except OSError:
                continue
            mode = info.st_mode
            real = full
            if stat.S_ISLNK(mode):
                target, why = _link_target(full, root)
                if target is None:
                    links.append(f"{rel} -> {why}")
                    continue
                real = target
            elif not stat.S_ISREG(mode):
                special.append(rel)
                continue
            # A link is judged by its own name and by its target's name and content.
            target_rel = real.relative_to(root).as_posix() if real is not full else rel
            if secret_reason(real, rel) or (target_rel != rel and _secret_by_name(target_rel)):
                if not include_secrets and not _kept_on_purpose(rel, rules):
                    secrets.append(rel)
                    continue
                kept_secrets.append(rel)
            files.append(rel)
            sources[rel] = real
            size = info.st_size if real is full else real.stat().st_size
            total += size
            top = rel.split("/", 1)[0] + ("/" if "/" in rel else "")
            by_top[top] = by_top.get(top, 0) + size
            if total > MAX_PACKAGE_BYTES or len(files) > MAX_PACKAGE_FILES:
                raise _too_big(source, len(files), total, by_top)
    return Collected(sorted(files), sources, sorted(secrets), sorted(links), sorted(special), sorted(kept_secrets))


def read_member(path: Path) -> bytes:
    """The bytes of a file chosen by :func:`collect_files`, refusing anything but a regular file.

    Opened without following a last-component link and checked after opening, so a
    file swapped for a link or a FIFO between the walk and the read is never read.
    """
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(path, flags)
    except OSError as e:
        raise PackagingError(f"{path}: cannot read it for the package: {e.strerror or e}") from e
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
            raise PackagingError(f"{path}: changed into something other than a regular file while packaging; submit again")
        return f.read()


# -- the canonical archive --------------------------------------------------------------
def _member(name: str, size: int, executable: bool) -> tarfile.TarInfo:
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
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".part")
    with open(tmp, "wb") as f:
        # mtime=0 and no file name in the gzip header: the bytes depend on the content only.
        with gzip.GzipFile(filename="", mode="wb", fileobj=f, compresslevel=9, mtime=0) as gz:
            with tarfile.open(fileobj=gz, mode="w", format=tarfile.PAX_FORMAT) as tar:
                for name, data, executable in sorted(entries, key=lambda e: e[0]):
                    tar.addfile(_member(name, len(data), executable), io.BytesIO(data))
    digest = hashlib.sha256()
    with open(tmp, "rb") as f:
        while chunk := f.read(1 << 20):
            digest.update(chunk)
    os.replace(tmp, out)
    return digest.hexdigest()


def _read_tar(path: Path) -> Iterator[tuple[str, bytes, bool]]:
    with tarfile.open(path, "r:*") as tar:
        for m in tar.getmembers():
            if m.isfile():
                f = tar.extractfile(m)
                assert f is not None
                yield m.name, f.read(), bool(m.mode & 0o111)


# -- the two ways in --------------------------------------------------------------------
def _safe_name(name: str) -> str:
    return "".join(c if c.isalnum() or c == "." else "_" for c in name) or "trainer"


def _setup_py(name: str, package_data: dict[str, list[str]], requirements: list[str]) -> str:
    data = json.dumps(package_data, sort_keys=True, indent=4)
    requires = f"    install_requires={json.dumps(requirements)},\n" if requirements else ""
    return (
        "# Generated by tfjob for a trainer package without setup.py or pyproject.toml.\n"
        "from setuptools import find_packages, setup\n\n"
        f"setup(\n    name={name!r},\n    version={BARE_VERSION!r},\n"
        f"    packages=find_packages(),\n    package_data={data},\n    include_package_data=True,\n{requires})\n"
    )


def _pkg_info(name: str, requirements: list[str]) -> str:
    requires = "".join(f"Requires-Dist: {line}\n" for line in requirements)
    return (
        f"Metadata-Version: 2.1\nName: {name}\nVersion: {BARE_VERSION}\nSummary: Trainer package {name}, built by tfjob\n"
        f"{requires}"
    )


def _package_data(files: list[str], packages: set[str]) -> dict[str, list[str]]:
    """Non-Python files, each attached to the deepest package above it (so pip installs them)."""
    out: dict[str, list[str]] = {}
    for rel in files:
        if rel.endswith(".py"):
            continue
        parts = rel.split("/")
        for depth in range(len(parts) - 1, 0, -1):
            pkg = "/".join(parts[:depth])
            if pkg in packages:
                out.setdefault(pkg.replace("/", "."), []).append("/".join(parts[depth:]))
                break
    return {k: sorted(v) for k, v in sorted(out.items())}


def _build_bare(
    source: Path, root: Path, name: str, out_dir: Path, include_secrets: bool, requirements: list[str]
) -> BuiltPackage:
    """Minimal sdist around ``root``: the package dir (``source`` itself or below it)."""
    found = collect_files(source, include_secrets=include_secrets)
    files = found.files
    # A bare package directory becomes the top-level package of the sdist.
    prefix = f"{name}/" if root == source else ""
    members = {prefix + f: f for f in files}
    packages = {str(Path(m).parent.as_posix()) for m in members if m.endswith("__init__.py")}
    top = f"{_safe_name(name)}-{BARE_VERSION}"
    entries: list[tuple[str, bytes, bool]] = [
        (f"{top}/PKG-INFO", _pkg_info(name, requirements).encode(), False),
        (f"{top}/setup.py", _setup_py(name, _package_data(list(members), packages), requirements).encode(), False),
    ]
    for member, rel in members.items():
        real = found.sources[rel]
        entries.append((f"{top}/{member}", read_member(real), bool(real.stat().st_mode & stat.S_IXUSR)))
    return _finish(entries, out_dir, f"{top}.tar.gz", name, BARE_VERSION, found)


def _build_project(source: Path, out_dir: Path, include_secrets: bool) -> BuiltPackage:
    """PEP 517 sdist of a project, built from a filtered copy of it."""
    try:
        import build
        import pyproject_hooks
    except ImportError as e:  # pragma: no cover - build is a runtime dependency
        raise PackagingError("building a project with pyproject.toml/setup.py needs the `build` package: pip install build") from e

    rules = read_ignore_rules(source)
    found = collect_files(source, rules, include_secrets=include_secrets)
    key = _tree_key(found, include_secrets)
    hit = _cache_get(key, out_dir, found)
    if hit is not None:
        return hit
    built_package = _build_project_now(source, out_dir, rules, found)
    _cache_put(key, built_package)
    return built_package


# -- the build cache -------------------------------------------------------------------------
#: How many project builds the cache keeps (the least recently used go first).
CACHE_ENTRIES = 32
_CACHE_FORMAT = "1"


def _cache_dir() -> Path:
    from .settings import tfjob_home

    return tfjob_home() / "build-cache"


def _tree_key(found: Collected, include_secrets: bool) -> str:
    """A digest of exactly what the build backend would see: every packaged file's path,
    mode and bytes (the build config, pyproject.toml/setup.py/setup.cfg, among them), the
    rules' outcome, the Python and build-backend versions (the interpreter builds it)."""
    digest = hashlib.sha256()
    digest.update(f"tfjob-build-cache {_CACHE_FORMAT} {sys.version_info[:3]} {include_secrets}\n".encode())
    for rel in found.files:
        real = found.sources[rel]
        data = read_member(real)
        executable = bool(real.stat().st_mode & stat.S_IXUSR)
        digest.update(f"{rel}\0{len(data)}\0{executable}\0".encode())
        digest.update(hashlib.sha256(data).digest())
    try:
        from importlib import metadata

        digest.update(f"setuptools {metadata.version('setuptools')} build {metadata.version('build')}".encode())
    except Exception:  # noqa: BLE001 - a version that cannot be read just keys as unknown
        digest.update(b"unknown backend versions")
    return digest.hexdigest()


def _cache_get(key: str, out_dir: Path, found: Collected) -> BuiltPackage | None:
    entry = _cache_dir() / key
    try:
        meta = json.loads((entry / "meta.json").read_text())
        archive = entry / meta["filename"]
        data = archive.read_bytes()
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if hashlib.sha256(data).hexdigest() != meta.get("sha256"):
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


def _cache_put(key: str, built_package: BuiltPackage) -> None:
    """Keep the sdist for the next unchanged submit; a cache that cannot be written is skipped."""
    root = _cache_dir()
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


def _build_project_now(source: Path, out_dir: Path, rules: list[IgnoreRule], found: Collected) -> BuiltPackage:
    """Run the project's PEP 517 backend on a filtered copy of it."""
    import build
    import pyproject_hooks

    with contextlib.ExitStack() as stack:
        tmp = stack.enter_context(tempfile.TemporaryDirectory(prefix="tfjob-build-"))
        copy = Path(tmp) / "src"
        for rel in found.files:
            real = found.sources[rel]
            target = copy / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(read_member(real))
            os.chmod(target, 0o755 if real.stat().st_mode & stat.S_IXUSR else 0o644)
        dist = Path(tmp) / "dist"
        try:
            # `build` re-raises the backend's warnings (setuptools' "beta" notes…) in this
            # process; they are noise to someone submitting a job, so they stay quiet.
            stack.enter_context(warnings.catch_warnings())
            warnings.simplefilter("ignore")
            builder = build.ProjectBuilder(copy, python_executable=sys.executable, runner=pyproject_hooks.quiet_subprocess_runner)
            if builder.check_dependencies("sdist"):
                # The backend is not installed here: build in an isolated environment.
                from build.env import DefaultIsolatedEnv

                with DefaultIsolatedEnv() as env:
                    isolated = build.ProjectBuilder.from_isolated_env(env, copy, runner=pyproject_hooks.quiet_subprocess_runner)
                    env.install(isolated.build_system_requires)
                    env.install(isolated.get_requires_for_build("sdist"))
                    built = Path(isolated.build("sdist", dist))
            else:
                built = Path(builder.build("sdist", dist))
        except build.BuildException as e:
            raise PackagingError(f"{source}: building the sdist failed: {e}") from e
        except build.BuildBackendException as e:
            detail = getattr(e.exception, "output", b"") or b""
            tail = detail.decode(errors="replace").strip().splitlines()[-3:] if isinstance(detail, bytes) else []
            raise PackagingError(f"{source}: the project's build backend failed: {e} {' | '.join(tail)}".strip()) from e
        entries = list(_read_tar(built))
    stem = built.name[: -len(".tar.gz")] if built.name.endswith(".tar.gz") else built.stem
    name, _, version = stem.rpartition("-")
    # Whatever the backend added on its own, an ignore rule or a secret stays out.
    chosen = set(found.files)
    kept = []
    for member, data, executable in entries:
        rel = member.split("/", 1)[1] if "/" in member else member
        if rel not in chosen and (
            is_excluded(rel, rules) or _secret_by_name(rel) or secret_in_content(data[:SECRET_SCAN_BYTES], python_source=rel.endswith(".py"))
        ):
            continue
        kept.append((member, data, executable))
    return _finish(kept, out_dir, built.name, name, version, found)


def _finish(
    entries: list[tuple[str, bytes, bool]], out_dir: Path, filename: str, name: str, version: str, found: Collected
) -> BuiltPackage:
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


def build_sdist(
    source_dir: str | os.PathLike[str],
    out_dir: str | os.PathLike[str] | None = None,
    *,
    module: str | None = None,
    include_secrets: bool = False,
    requirements: str | None = None,
) -> BuiltPackage:
    """Build the trainer in ``source_dir`` into a canonical sdist.

    Args:
        source_dir: a project (``pyproject.toml``/``setup.py``), a package directory
            (with ``__init__.py``), or a directory holding the module's package.
        out_dir: where to write; default ``$TFJOB_HOME/build``. The file lands in a
            sub-directory named after its digest.
        module: the trainer module (``trainer.task``); checked to exist in the package.
        include_secrets: package files that look like credentials too (they are
            still named in :attr:`BuiltPackage.warnings`).
        requirements: a requirements file (``--requirements``) for a bare trainer; by
            default its ``requirements.txt``. The sdist declares them (``install_requires``).

    Returns:
        The built package (path, sha256, name, files, excluded secrets).

    Raises:
        PackagingError: the directory is missing, holds no Python package, or the
            module is not in it; or the project's build fails.
    """
    source = Path(source_dir).expanduser()
    if not source.exists():
        raise PackagingError(f"trainer directory {str(source_dir)!r} does not exist; pass the directory holding your trainer package")
    if not source.is_dir():
        raise PackagingError(f"trainer path {str(source_dir)!r} is not a directory; pass the directory holding your trainer package")
    source = source.resolve()
    if out_dir is None:
        from .settings import tfjob_home

        out_dir = tfjob_home() / "build"
    out = Path(out_dir)
    kind, root, name = check_trainer(source, module)
    from .requirements import trainer_requirements

    declared = trainer_requirements(str(source), requirements, project=kind == "project")
    if kind == "project":
        return _build_project(source, out, include_secrets)
    return _build_bare(source, root, name, out, include_secrets, declared)


def check_trainer(source: Path, module: str | None) -> tuple[str, Path, str]:
    """What kind of trainer directory ``source`` (resolved) is, with ``module`` checked in it.

    Returns:
        (``"project"`` or ``"bare"``, the package root, the distribution name).

    Raises:
        PackagingError: the module is not in it, or it holds no Python package.
    """
    top = module.split(".")[0] if module else None

    if (source / "pyproject.toml").is_file() or (source / "setup.py").is_file():
        if module and not any(module_exists(base, module) for base in (source, source / "src")):
            raise PackagingError(
                f"--module-name {module}: no {module.replace('.', '/')}.py in project {source}; "
                "give the module's dotted path from the project root (or its src/ directory)"
            )
        return "project", source, source.name

    if (source / "__init__.py").is_file():
        name = source.name
        if top is not None and top != name:
            raise PackagingError(
                f"--module-name {module}: the package directory {source} is the package {name!r}, "
                f"so the module must start with {name}. (e.g. {name}.task)"
            )
        if module and not module_exists(source.parent, module):
            raise PackagingError(
                f"--module-name {module}: no {module.replace('.', '/')}.py in {source.parent}; "
                "check the module name or add the file"
            )
        return "bare", source, name

    if top is not None and (source / top / "__init__.py").is_file():
        if not module_exists(source, module or ""):
            raise PackagingError(
                f"--module-name {module}: no {(module or '').replace('.', '/')}.py in {source}; "
                "check the module name or add the file"
            )
        return "bare", source / top, top

    hint = f" and no {top}/__init__.py" if top else ""
    raise PackagingError(
        f"{source} has no __init__.py{hint}: it is not a Python package; add an empty __init__.py "
        "(or a setup.py / pyproject.toml) to the trainer directory"
    )


def gather_packages(
    package: str | None,
    packages: tuple[str, ...] | list[str],
    *,
    module: str | None,
    requirements: str | None = None,
    include_secrets: bool = False,
    quiet: bool = False,
) -> tuple[list[Path], list[str]]:
    """The files a job ships into an image, in install order, and its ``gs://`` URIs.

    The trainer directory (``package``) is built into its sdist (the build cache reuses an
    unchanged one; files that look like secrets stay out, each named in a warning on
    stderr unless ``quiet``) and checked to hold ``module``; a built archive is taken as it
    is; a ``gs://`` URI is returned for the bootstrap to download. Kubernetes ships the
    files in a ConfigMap, the local backend mounts them into its containers.

    Raises:
        PackagingError: the trainer cannot be built, or ``module`` is not in it.
        UsageError: a package path that does not exist.
        SpecError: two packages share a file name (they land in one directory).
    """
    from .errors import SpecError, UsageError

    files: list[Path] = []
    uris: list[str] = []
    for i, item in enumerate(p for p in (package, *packages) if p):
        flag = "PACKAGE_PATH" if i == 0 and package else "--packages"
        if item.startswith("gs://"):
            uris.append(item)
            continue
        path = Path(item).expanduser()
        if path.is_dir():
            built = build_sdist(path, module=module if flag == "PACKAGE_PATH" else None,
                                include_secrets=include_secrets, requirements=requirements)  # fmt: skip
            if not quiet:
                for warning in built.warnings:
                    print(f"tfjob: {warning}", file=sys.stderr, flush=True)
            path = built.path
        elif not path.is_file():
            problem = "is neither a directory nor a regular file" if path.exists() else "no such file or directory"
            raise UsageError(f"{flag} {item}: {problem}; give a trainer directory, a built package or a gs:// URI")
        if any(f.name == path.name for f in files):
            raise SpecError(f"{flag} {item}: two packages are named {path.name}; rename one")
        files.append(path.resolve())
    return files, uris
