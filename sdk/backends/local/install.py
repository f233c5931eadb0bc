"""``--install``: run the trainer from its built sdist in a throw-away venv, as the cloud does.

On Vertex AI the trainer package is pip-installed into the training image; running
locally from the source directory can hide a missing file or a wrong package
layout. With ``--install`` the local backend builds the same sdist the cloud
backends stage (:func:`tfjob.packaging.build_sdist`), makes a venv next to the
job's logs, and pip-installs the sdist there without its dependencies.

The venv still sees the interpreter's own packages (TensorFlow, tfjob itself,
editable installs): a ``.pth`` file adds each of that interpreter's site
directories after the venv's own, so the installed trainer comes first.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Callable

from ...errors import BackendError, PackagingError
from ...description.spec import BUILT_PACKAGE_SUFFIXES, JobSpec

# Prints the site directories of an interpreter (a venv's own, or the system's).
_SITE_DIRS = (
    "import json, site\n"
    "dirs = list(site.getsitepackages())\n"
    "if site.ENABLE_USER_SITE: dirs.append(site.getusersitepackages())\n"
    "print(json.dumps(dirs))"
)


def render_site_pth(site_dirs: list[str]) -> str:
    """The ``.pth`` line that adds ``site_dirs`` (with their own .pth files) to a venv. Pure."""
    return "import site; " + "; ".join(f"site.addsitedir({d!r})" for d in site_dirs) + "\n"


def _run(cmd: list[str], log: Path, what: str) -> str:
    done = subprocess.run(cmd, capture_output=True, text=True)
    with open(log, "a") as f:
        f.write(f"$ {' '.join(cmd)}\n{done.stdout}{done.stderr}\n")
    if done.returncode != 0:
        tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-5:])
        raise BackendError(f"--install: {what} failed (exit {done.returncode}; see {log}): {tail}")
    return done.stdout


def install_trainer(
    spec: JobSpec, python: str, work_dir: Path, *, include_secrets: bool = False, note: Callable[[str], None] | None = None
) -> str:
    """Build and install the trainer in a new venv under ``work_dir``; return the venv's python.

    Args:
        spec: the job (its ``package`` is a trainer directory or a built archive).
        python: the interpreter the venv is made from.
        work_dir: created; holds the sdist, the venv and ``install.log``.
        include_secrets: package credential-looking files too.
        note: called with each packaging warning (files left out, and why).

    Raises:
        PackagingError: the trainer directory cannot be built.
        BackendError: the venv or pip failed (the message ends with pip's last lines).
    """
    from ...packaging import build_sdist

    work_dir.mkdir(parents=True, exist_ok=True)
    log = work_dir / "install.log"
    package = spec.package or "."
    if package.endswith(BUILT_PACKAGE_SUFFIXES):
        archive = Path(package).expanduser().resolve()
        if not archive.is_file():
            raise PackagingError(f"package {package!r} does not exist")
    else:
        built = build_sdist(package, work_dir / "dist", module=spec.module, include_secrets=include_secrets, requirements=spec.requirements)
        for line in built.warnings:
            if note is not None:
                note(line)
        archive = built.path
    venv = work_dir / "venv"
    shutil.rmtree(venv, ignore_errors=True)
    _run([python, "-m", "venv", "--without-pip", str(venv)], log, "creating the venv")
    venv_python = str(venv / "bin" / "python")
    parent_dirs = json.loads(_run([python, "-c", _SITE_DIRS], log, "reading the interpreter's site directories"))
    own_dirs = json.loads(_run([venv_python, "-c", _SITE_DIRS], log, "reading the venv's site directories"))
    Path(own_dirs[0], "_tfjob_parent_site.pth").write_text(render_site_pth(parent_dirs))
    _run(
        [
            python, "-m", "pip", "--python", venv_python, "install",
            "--no-deps", "--no-index", "--no-build-isolation", "--disable-pip-version-check", "--quiet",
            str(archive), *(str(Path(p).expanduser().resolve()) for p in spec.packages),
        ],
        log,
        f"pip install {' '.join([archive.name, *(Path(p).name for p in spec.packages)])}",
    )  # fmt: skip
    return venv_python


def remove_venv(work_dir: Path) -> None:
    """Throw the venv away (the sdist and install.log stay with the job's logs)."""
    shutil.rmtree(work_dir / "venv", ignore_errors=True)
