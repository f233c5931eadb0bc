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

Excluded by default: version-control and cache directories, virtualenvs, ``*.pyc``,
and anything that looks like a secret (``.env``, ``*.pem``, ``*.key``, ``id_rsa*``,
``.netrc``, JSON files with a ``private_key`` field); those are listed in
:attr:`BuiltPackage.excluded_secrets` for the caller to warn about. ``.gcloudignore``
and ``.tfjobignore`` (gitignore syntax) add rules of the user's.
"""

from __future__ import annotations

import contextlib
import fnmatch
import gzip
import hashlib
import io
import json
import os
import shutil
import stat
import sys
import tarfile
import warnings
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from .errors import PackagingError
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
_SECRET_NAMES = (
    ".env", ".env.*", "*.pem", "*.key", "*.p12", "*.pfx", "id_rsa*", "id_dsa*",
    "id_ecdsa*", "id_ed25519*", ".netrc", "_netrc", ".pgpass", "credentials.db",
)  # fmt: skip
# A JSON file bigger than this is scanned for the key name only, not parsed.
_MAX_JSON_PARSE = 5 * 1024 * 1024


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
    """

    path: Path
    sha256: str
    name: str
    version: str
    size: int
    files: tuple[str, ...]
    excluded_secrets: tuple[str, ...] = ()

    @property
    def filename(self) -> str:
        return self.path.name


# -- what goes in -----------------------------------------------------------------------
def looks_like_secret(path: Path) -> bool:
    """True for key files, credentials and ``.env`` files (by name, or a JSON key file)."""
    name = path.name
    if any(fnmatch.fnmatchcase(name, pattern) for pattern in _SECRET_NAMES):
        return True
    if name.lower().endswith(".json"):
        try:
            data = path.read_bytes()
        except OSError:
            return False
        if b'"private_key"' not in data:
            return False
        if len(data) > _MAX_JSON_PARSE:
            return True
        try:
            parsed = json.loads(data)
        except ValueError:
            return True  # it names a private key and cannot be read: keep it out
        return isinstance(parsed, dict) and "private_key" in parsed
    return False


def read_ignore_rules(source: Path) -> list[IgnoreRule]:
    """The rules of ``.gcloudignore`` then ``.tfjobignore`` in ``source`` (``#!include:`` honoured)."""

    def include(name: str) -> str | None:
        target = (source / name).resolve()
        if source.resolve() not in target.parents or not target.is_file():
            return None
        return target.read_text(errors="replace")

    rules: list[IgnoreRule] = []
    for name in IGNORE_FILES:
        path = source / name
        if path.is_file():
            rules.extend(parse_ignore(path.read_text(errors="replace"), include))
    return rules


def collect_files(source: Path, rules: list[IgnoreRule] | None = None) -> tuple[list[str], list[str]]:
    """The files of ``source`` to package, and the secret-looking ones left out.

    Returns:
        (files, secrets): relative ``/``-separated paths, sorted.
    """
    rules = read_ignore_rules(source) if rules is None else rules
    files: list[str] = []
    secrets: list[str] = []
    for dirpath, dirnames, filenames in os.walk(source):
        here = Path(dirpath)
        rel_dir = here.relative_to(source).as_posix()
        rel_dir = "" if rel_dir == "." else rel_dir + "/"
        keep = []
        for d in sorted(dirnames):
            full = here / d
            if d in _SKIP_DIRS or d.endswith(".egg-info") or full.is_symlink():
                continue
            if (full / "pyvenv.cfg").is_file():  # a virtualenv, whatever its name
                continue
            if is_ignored(rel_dir + d, True, rules):
                continue
            keep.append(d)
        dirnames[:] = keep
        for f in sorted(filenames):
            full = here / f
            rel = rel_dir + f
            if any(fnmatch.fnmatchcase(f, p) for p in _SKIP_FILES) or not full.is_file():
                continue
            if is_ignored(rel, False, rules):
                continue
            if looks_like_secret(full):
                secrets.append(rel)
                continue
            files.append(rel)
    return sorted(files), sorted(secrets)


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
    """Write ``(name, data, executable)`` entries as a canonical ``.tar.gz``; return its sha256."""
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name, data, executable in sorted(entries, key=lambda e: e[0]):
            tar.addfile(_member(name, len(data), executable), io.BytesIO(data))
    buf = io.BytesIO()
    # mtime=0 and no file name in the gzip header: the bytes depend on the content only.
    with gzip.GzipFile(filename="", mode="wb", fileobj=buf, compresslevel=9, mtime=0) as gz:
        gz.write(raw.getvalue())
    data = buf.getvalue()
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".part")
    tmp.write_bytes(data)
    os.replace(tmp, out)
    return hashlib.sha256(data).hexdigest()


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


def _setup_py(name: str, package_data: dict[str, list[str]]) -> str:
    data = json.dumps(package_data, sort_keys=True, indent=4)
    return (
        "# Generated by tfjob for a trainer package without setup.py or pyproject.toml.\n"
        "from setuptools import find_packages, setup\n\n"
        f"setup(\n    name={name!r},\n    version={BARE_VERSION!r},\n"
        f"    packages=find_packages(),\n    package_data={data},\n    include_package_data=True,\n)\n"
    )


def _pkg_info(name: str) -> str:
    return f"Metadata-Version: 2.1\nName: {name}\nVersion: {BARE_VERSION}\nSummary: Trainer package {name}, built by tfjob\n"


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


def _build_bare(source: Path, root: Path, name: str, out_dir: Path) -> BuiltPackage:
    """Minimal sdist around ``root``: the package dir (``source`` itself or below it)."""
    files, secrets = collect_files(source)
    # A bare package directory becomes the top-level package of the sdist.
    prefix = f"{name}/" if root == source else ""
    members = {prefix + f: f for f in files}
    packages = {str(Path(m).parent.as_posix()) for m in members if m.endswith("__init__.py")}
    top = f"{_safe_name(name)}-{BARE_VERSION}"
    entries: list[tuple[str, bytes, bool]] = [
        (f"{top}/PKG-INFO", _pkg_info(name).encode(), False),
        (f"{top}/setup.py", _setup_py(name, _package_data(list(members), packages)).encode(), False),
    ]
    for member, rel in members.items():
        full = source / rel
        entries.append((f"{top}/{member}", full.read_bytes(), bool(full.stat().st_mode & stat.S_IXUSR)))
    return _finish(entries, out_dir, f"{top}.tar.gz", name, BARE_VERSION, secrets)


def _build_project(source: Path, out_dir: Path) -> BuiltPackage:
    """PEP 517 sdist of a project, built from a filtered copy of it."""
    try:
        import build
        import pyproject_hooks
    except ImportError as e:  # pragma: no cover - build is a runtime dependency
        raise PackagingError("building a project with pyproject.toml/setup.py needs the `build` package: pip install build") from e

    files, secrets = collect_files(source)
    rules = read_ignore_rules(source)
    with contextlib.ExitStack() as stack:
        tmp = stack.enter_context(tempfile.TemporaryDirectory(prefix="tfjob-build-"))
        copy = Path(tmp) / "src"
        for rel in files:
            target = copy / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source / rel, target)
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
    kept = []
    for member, data, executable in entries:
        rel = member.split("/", 1)[1] if "/" in member else member
        if is_excluded(rel, rules) or _secret_by_name(rel):
            continue
        kept.append((member, data, executable))
    return _finish(kept, out_dir, built.name, name, version, secrets)


def _secret_by_name(rel: str) -> bool:
    name = rel.rsplit("/", 1)[-1]
    return any(fnmatch.fnmatchcase(name, pattern) for pattern in _SECRET_NAMES)


def _finish(
    entries: list[tuple[str, bytes, bool]], out_dir: Path, filename: str, name: str, version: str, secrets: list[str]
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
        excluded_secrets=tuple(secrets),
    )


def _module_exists(base: Path, module: str) -> bool:
    rel = Path(*module.split("."))
    return (base / rel.with_suffix(".py")).is_file() or (base / rel / "__init__.py").is_file()


def build_sdist(source_dir: str | os.PathLike[str], out_dir: str | os.PathLike[str] | None = None, *, module: str | None = None) -> BuiltPackage:
    """Build the trainer in ``source_dir`` into a canonical sdist.

    Args:
        source_dir: a project (``pyproject.toml``/``setup.py``), a package directory
            (with ``__init__.py``), or a directory holding the module's package.
        out_dir: where to write; default ``$TFJOB_HOME/build``. The file lands in a
            sub-directory named after its digest.
        module: the trainer module (``trainer.task``); checked to exist in the package.

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
    top = module.split(".")[0] if module else None

    if (source / "pyproject.toml").is_file() or (source / "setup.py").is_file():
        if module and not any(_module_exists(base, module) for base in (source, source / "src")):
            raise PackagingError(
                f"--module-name {module}: no {module.replace('.', '/')}.py in project {source}; "
                "give the module's dotted path from the project root (or its src/ directory)"
            )
        return _build_project(source, out)

    if (source / "__init__.py").is_file():
        name = source.name
        if top is not None and top != name:
            raise PackagingError(
                f"--module-name {module}: the package directory {source} is the package {name!r}, "
                f"so the module must start with {name}. (e.g. {name}.task)"
            )
        if module and not _module_exists(source.parent, module):
            raise PackagingError(
                f"--module-name {module}: no {module.replace('.', '/')}.py in {source.parent}; "
                "check the module name or add the file"
            )
        return _build_bare(source, source, name, out)

    if top is not None and (source / top / "__init__.py").is_file():
        if not _module_exists(source, module or ""):
            raise PackagingError(
                f"--module-name {module}: no {(module or '').replace('.', '/')}.py in {source}; "
                "check the module name or add the file"
            )
        return _build_bare(source, source / top, top, out)

    hint = f" and no {top}/__init__.py" if top else ""
    raise PackagingError(
        f"{source} has no __init__.py{hint}: it is not a Python package; add an empty __init__.py "
        "(or a setup.py / pyproject.toml) to the trainer directory"
    )


def stage_name(package: BuiltPackage) -> str:
    """``<sha256>/<file>``: where the package goes under a staging prefix."""
    return f"{package.sha256}/{package.filename}"
