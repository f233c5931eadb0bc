"""A reader's venv, made offline: exactly the distributions an install command names.

The README's install commands (``python3 -m venv .venv``, ``.venv/bin/pip install -e
'.[tf]'``, ``pip install -q -e '.[plots]'``…) run as written, with two stand-ins first on
PATH: ``python3 -m venv DIR`` makes a real venv (without pip) whose ``pip`` is this module,
and that ``pip install`` puts into the venv's site-packages exactly the distributions the
command asks for — tfjob and the closure of its requirements with the extras named, or a
``--no-deps`` requirement alone — linked from the venv this suite runs in (no network: the
same files, so the same versions). Anything else it is asked is an error. So a README that
uses a module its commands did not install fails as it would for a reader, and a README
that never puts the venv on PATH finds no ``tfjob``.

    python offline_venv.py venv DIR           # what the python3 stand-in runs for `-m venv DIR`
    python offline_venv.py pip VENV ARGS…     # the venv's pip
"""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
import sysconfig
from importlib import metadata
from pathlib import Path
from typing import Iterable

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

HERE = Path(__file__).resolve()
ROOT = HERE.parents[1]
#: This suite's interpreter: it reads the distributions' metadata and links their files.
SUITE_PYTHON = sys.executable
#: Where the suite's distributions are (only there: not a checkout's stray egg-info on sys.path).
SUITE_SITE = sysconfig.get_paths()["purelib"]


def distribution(name: str) -> metadata.Distribution:
    """The suite venv's installed distribution ``name``."""
    for dist in metadata.distributions(name=name, path=[SUITE_SITE]):
        return dist
    raise SystemExit(f"pip (offline stand-in): {name} is not in the suite's venv")


def closure(requirements: Iterable[Requirement]) -> dict[str, metadata.Distribution]:
    """The installed distributions ``requirements`` need, recursively (markers evaluated)."""
    found: dict[str, metadata.Distribution] = {}
    pending = [(r, frozenset(r.extras)) for r in requirements]
    seen: set[tuple[str, frozenset[str]]] = set()
    while pending:
        req, extras = pending.pop()
        name = canonicalize_name(req.name)
        if (name, extras) in seen:
            continue
        seen.add((name, extras))
        dist = distribution(req.name)
        if dist.version not in req.specifier and req.specifier:
            raise SystemExit(f"pip (offline stand-in): {req} asked, the suite's venv has {dist.version}")
        found[name] = dist
        for line in dist.requires or []:
            sub = Requirement(line)
            if sub.marker is None or any(sub.marker.evaluate({"extra": e}) for e in (extras or {""})):
                pending.append((sub, frozenset(sub.extras)))
    return found


def _site_packages(venv: Path) -> Path:
    return venv / "lib" / f"python{sys.version_info.major}.{sys.version_info.minor}" / "site-packages"


def link(dist: metadata.Distribution, venv: Path) -> None:
    """The distribution's files (those under site-packages) as links in ``venv``'s."""
    site = _site_packages(venv)
    for rel in dist.files or []:
        if rel.parts[0] == ".." or "__pycache__" in rel.parts:
            continue  # scripts and data outside site-packages; bytecode is written afresh
        source = Path(str(dist.locate_file(rel)))
        target = site / rel
        if target.exists() or not source.exists():
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        target.symlink_to(source)


def _script(venv: Path, name: str, target: str) -> None:
    module, func = target.split(":")
    path = venv / "bin" / name
    path.write_text(f"#!{venv / 'bin' / 'python'}\nimport sys\nfrom {module} import {func}\nsys.exit({func}())\n")
    path.chmod(0o755)


def pip(venv: Path, args: list[str]) -> int:
    """``pip install`` as the README's commands use it; anything else is refused."""
    if not args or args[0] != "install":
        raise SystemExit(f"pip (offline stand-in): only `pip install` is provided, not `pip {shlex.join(args)}`")
    rest = [a for a in args[1:] if a != "-q"]
    if rest == ["--upgrade", "pip"]:
        return 0  # the venv's pip is this stand-in
    editable = rest[:1] == ["-e"]
    no_deps = "--no-deps" in rest
    wanted = [a for a in rest if a not in ("-e", "--no-deps")]
    if len(wanted) != 1:
        raise SystemExit(f"pip (offline stand-in): one requirement at a time, not {shlex.join(args)}")
    (spec,) = wanted
    found = re.fullmatch(r"\.(?:\[(?P<extras>[a-z,]+)\])?", spec)
    if editable and found:
        extras = (found["extras"] or "").split(",") if found["extras"] else []
        dists = closure([Requirement("tfjob" + (f"[{','.join(extras)}]" if extras else ""))])
    elif not editable and not found:
        req = Requirement(spec)
        dists = {canonicalize_name(req.name): distribution(req.name)} if no_deps else closure([req])
        if not (dists[canonicalize_name(req.name)].version in req.specifier or not req.specifier):
            raise SystemExit(f"pip (offline stand-in): {spec} is not the suite's {dists[canonicalize_name(req.name)].version}")
    else:
        raise SystemExit(f"pip (offline stand-in): cannot install {spec!r} offline")
    for dist in dists.values():
        link(dist, venv)
        if canonicalize_name(dist.metadata["Name"]) == "tfjob":
            for entry in dist.entry_points.select(group="console_scripts"):
                _script(venv, entry.name, entry.value)
    return 0


def make_venv(venv: Path) -> int:
    """``python3 -m venv DIR``: a real venv (of this interpreter's base Python) whose pip is this module."""
    venv = venv.absolute()
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    shim = venv / "bin" / "pip"
    shim.write_text(f'#!/bin/sh\nexec {shlex.quote(SUITE_PYTHON)} {shlex.quote(str(HERE))} pip {shlex.quote(str(venv))} "$@"\n')
    shim.chmod(0o755)
    return 0


def install_stand_ins(bin_dir: Path, real_python3: str) -> Path:
    """A directory holding the ``python3`` stand-in, to put first on PATH: ``python3 -m venv
    DIR`` is :func:`make_venv`, anything else runs ``real_python3``."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    shim = bin_dir / "python3"
    shim.write_text(
        "#!/bin/sh\n"
        f'if [ "$#" -eq 3 ] && [ "$1" = -m ] && [ "$2" = venv ]; then exec {shlex.quote(SUITE_PYTHON)} {shlex.quote(str(HERE))} venv "$3"; fi\n'
        f'exec {shlex.quote(real_python3)} "$@"\n'
    )
    shim.chmod(0o755)
    return bin_dir


if __name__ == "__main__":
    if sys.argv[1] == "pip":
        sys.exit(pip(Path(sys.argv[2]), sys.argv[3:]))
    sys.exit(make_venv(Path(sys.argv[2])))
