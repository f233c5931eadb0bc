"""A trainer's dependencies: ``requirements.txt`` (or ``--requirements FILE``).

A bare trainer directory (no ``pyproject.toml``/``setup.py``) may carry a
``requirements.txt``, as gcloud and SageMaker users write one. tfjob honours it on every
backend: the generated sdist declares the requirements (``install_requires``), so
Vertex AI's ``pip install`` of the package installs them, as does the bootstrap's
``--package`` in a container; locally the tasks run in an interpreter tfjob does not
install into, so the requirements are checked against it before anything starts, and an
unmet one is one error line with the fix. A project declares its dependencies itself
(``pyproject.toml``/``setup.py``): its build decides, and ``--requirements`` is refused.

Only what a package can declare is accepted: PEP 508 requirement lines (``name[extra]
>= 1.0; marker``, ``name @ URL``), comments and blank lines. pip options (``-r``, ``-e``,
``--index-url``, ``--hash``…) have no place in a package's metadata and are refused by line.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Sequence

from ..errors import SpecError, UsageError, subject_of

#: The file looked for in a bare trainer directory.
REQUIREMENTS_FILE = "requirements.txt"
#: Bounds of what is read from outside: a requirements file is small.
MAX_BYTES = 256 * 1024
MAX_REQUIREMENTS = 1000


def read_requirements(path: str | os.PathLike[str], field: str = "requirements") -> list[str]:
    """The requirement lines of ``path``, each checked as PEP 508.

    Raises:
        UsageError: the file is missing, not a regular file, too large, or a line is not
            a requirement a package can declare (naming the file and the line).
    """
    from packaging.requirements import InvalidRequirement, Requirement

    from .limits import read_bounded_text

    file = Path(path).expanduser()
    text = read_bounded_text(file, field, MAX_BYTES, "a requirements file (one package per line)", follow_links=False)
    out: list[str] = []
    logical = ""
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.split(" #", 1)[0].strip() if not raw.lstrip().startswith("#") else ""
        if line.endswith("\\"):
            logical += line[:-1] + " "
            continue
        line, logical = (logical + line).strip(), ""
        if not line:
            continue
        where = f"{path}:{number}"
        if line.startswith("-"):
            raise UsageError(
                f"{where}: {line.split()[0]} is a pip option, which a package cannot declare; "
                "list the requirements themselves (one PEP 508 line each)"
            )
        try:
            requirement = Requirement(line)
        except InvalidRequirement as e:
            raise UsageError(f"{where}: {line!r} is not a requirement ({e})") from None
        _check_marker(requirement, where)
        out.append(line)
        if len(out) > MAX_REQUIREMENTS:
            raise SpecError(**subject_of(field), value=str(path), problem=f"lists more than {MAX_REQUIREMENTS} requirements")
    return out


def _check_marker(requirement: object, where: str) -> None:
    """A marker that cannot be evaluated (``os_name ~= "posix"``: ``~=`` compares versions,
    and pip would fail on it everywhere) is refused by line, with what to write instead."""
    from packaging.markers import UndefinedComparison, UndefinedEnvironmentName

    marker = getattr(requirement, "marker", None)
    if marker is None:
        return
    try:
        marker.evaluate()
    except (UndefinedComparison, UndefinedEnvironmentName, ValueError, TypeError) as e:
        raise UsageError(
            f"{where}: the marker '{marker}' cannot be evaluated ({' '.join(str(e).split())}); "
            "~=, <, <=, >, >= compare versions (python_version, platform_release); compare names "
            "(os_name, sys_platform) with == or !="
        ) from None


def trainer_requirements(package: str | None, explicit: str | None, project: bool) -> list[str]:
    """The requirements of a trainer directory: ``explicit`` (``--requirements``), else its
    ``requirements.txt``; none for a project (its build declares them) or an archive.

    Raises:
        UsageError: ``--requirements`` given for a project or without a trainer directory.
    """
    if explicit is not None:
        if project:
            raise SpecError(
                field="requirements",
                problem="is for a bare trainer directory: a project declares its dependencies in "
                "pyproject.toml (dependencies) or setup.py (install_requires)",
            )
        if not package or package.startswith("gs://") or Path(package).expanduser().is_file():
            raise SpecError(field="requirements", problem="needs a trainer directory to package (PACKAGE_PATH)")
        return read_requirements(explicit)
    if not package or project or package.startswith("gs://"):
        return []
    found = Path(package).expanduser() / REQUIREMENTS_FILE
    if found.is_file() and not found.is_symlink():
        return read_requirements(found, field=str(Path(package) / REQUIREMENTS_FILE))
    return []


def unmet_here(requirements: Sequence[str]) -> list[tuple[str, str | None]]:
    """The requirements this interpreter does not satisfy, each with its installed version
    (None: not installed); a requirement whose marker excludes this interpreter is met."""
    from importlib import metadata

    from packaging.requirements import Requirement

    unmet: list[tuple[str, str | None]] = []
    for line in requirements:
        req = Requirement(line)
        if req.marker is not None and not req.marker.evaluate():
            continue
        try:
            version = metadata.version(req.name)
        except metadata.PackageNotFoundError:
            unmet.append((line, None))
            continue
        if not req.specifier.contains(version, prereleases=True):
            unmet.append((line, version))
    return unmet


def unmet_requirements(requirements: Sequence[str], python: str | None = None) -> list[tuple[str, str | None]]:
    """:func:`unmet_here`, asked of ``python`` (default: this interpreter)."""
    import subprocess

    if not requirements:
        return []
    if python is None or os.path.realpath(python) == os.path.realpath(sys.executable):
        return unmet_here(requirements)
    script = (
        "import json, sys; from tfjob.description.requirements import unmet_here; print(json.dumps(unmet_here(json.loads(sys.argv[1]))))"
    )
    try:
        done = subprocess.run([python, "-c", script, json.dumps(list(requirements))], capture_output=True, text=True, timeout=60)
        return [(line, version) for line, version in json.loads(done.stdout)] if done.returncode == 0 else []
    except (subprocess.TimeoutExpired, ValueError):
        return []  # an interpreter that cannot say: the task's own import error will


def check_requirements_met(requirements: Sequence[str], python: str, source: str) -> None:
    """Refuse to start a local job whose interpreter lacks a requirement (one line, the fix).

    Raises:
        UsageError: naming the first unmet requirement and how many others.
    """
    unmet = unmet_requirements(requirements, python)
    if not unmet:
        return
    line, version = unmet[0]
    what = "is not installed" if version is None else f"is not met (installed: {version})"
    more = f" (and {len(unmet) - 1} more)" if len(unmet) > 1 else ""
    raise UsageError(
        problem=f"{source}: {line} {what} in {python}{more}; the local tasks run in that interpreter",
        fix=f"pip install -r {source} there, or give {{python}} an interpreter that has them",
    )


_DIST_INFOS: dict[tuple[str, int], dict[str, str]] = {}


def _dist_infos(site: str) -> dict[str, str]:
    """name → version of every ``NAME-VERSION.dist-info`` directory in ``site``, listed once
    while the directory is unchanged (a dry run asks for four distributions, most of them in
    one site-packages; an install or removal changes its time)."""
    try:
        key = (site, os.stat(site).st_mtime_ns)
    except OSError:
        return {}
    found = _DIST_INFOS.get(key)
    if found is None:
        found = {}
        try:
            with os.scandir(site) as entries:
                for entry in entries:
                    if entry.name.endswith(".dist-info") and "-" in entry.name:
                        name, version = entry.name[: -len(".dist-info")].split("-", 1)
                        found.setdefault(name.lower().replace(".", "_"), version)
        except OSError:
            pass
        _DIST_INFOS[key] = found
    return found


def installed_version(dist: str, module: str | None = None, *, fallback: bool = True) -> str | None:
    """The version of the installed distribution ``dist`` (None: not installed).

    Read from the ``NAME-VERSION.dist-info`` directory beside the importable ``module`` (by
    default the distribution's own name) — neither the module nor :mod:`importlib.metadata`
    is imported, which cost a dry run more than its own work; :mod:`importlib.metadata`
    answers only when no such directory is found there (and ``fallback``).
    """
    import importlib.util

    wanted = dist.lower().replace("-", "_").replace(".", "_")  # as a dist-info directory spells it
    try:
        spec = importlib.util.find_spec(module or dist.replace("-", "_"))
    except (ImportError, ValueError):
        spec = None
    if spec is not None and spec.origin:
        origin = Path(spec.origin)
        site = origin.parent.parent if spec.submodule_search_locations is not None else origin.parent
        version = _dist_infos(str(site)).get(wanted)
        if version is not None:
            return version
    if not fallback:
        return None
    from importlib import metadata

    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None
