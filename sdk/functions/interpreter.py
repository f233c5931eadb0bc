"""The Python a job's tasks unpickle with, known before submitting: code pickled by value
(a notebook's function, a lambda) runs only on the caller's minor version.

Known from: this interpreter, or the local backend's ``python=`` (asked); an image whose
name says its Python (Vertex AI's prebuilt ``tf-cpu.2-17.py310``, ``python:3.11-slim``,
``…-py311``); tfjob's base image (``tfjob:VERSION``: TensorFlow's image of
``container/Dockerfile``, Python 3.11); a Vertex AI package job without an image runs the
prebuilt image tfjob renders for it (Python 3.10). Anything else is not known, and a by-value function is
refused with the ways out.
"""

from __future__ import annotations

import re
import subprocess
import sys
from typing import Any

from ..errors import SpecError

#: tfjob's base image (container/Dockerfile: FROM tensorflow/tensorflow:2.18.0, whose Python is 3.11).
TFJOB_BASE_PYTHON = (3, 11)
#: Vertex AI's prebuilt TensorFlow training images, which a package job without an image runs on
#: (``tfjob.backends.vertex.render.prebuilt_image``: ``tf-cpu.2-17.py310``; a test holds the two equal).
VERTEX_PREBUILT_PYTHON = (3, 10)
_IN_NAME = re.compile(r"(?:^|[^a-z0-9])py(?:thon)?[-_:]?3[._]?(\d{1,2})(?![0-9])", re.I)
_TFJOB_BASE = re.compile(r"(?:^|/)tfjob:\d+\.\d+\.\d+(?:-gpu)?(?:@sha256:[0-9a-f]{64})?\Z")


def image_python(image: str) -> tuple[int, int] | None:
    """The Python (major, minor) of ``image`` when its reference says it, else None."""
    if _TFJOB_BASE.search(image):
        return TFJOB_BASE_PYTHON
    found = _IN_NAME.findall(image.rsplit("@", 1)[0])
    return (3, int(found[-1])) if found else None


def interpreter_python(python: str) -> tuple[int, int] | None:
    """The version of the interpreter at ``python``, asked (None if it does not answer)."""
    try:
        out = subprocess.run(
            [python, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"], capture_output=True, text=True, timeout=60
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    major, _, minor = out.partition(".")
    return (int(major), int(minor)) if major.isdigit() and minor.isdigit() else None


def task_pythons(backend: str, spec: Any, options: Any) -> list[tuple[str, tuple[int, int] | None]]:
    """``(where, version)`` for each interpreter the job's tasks run (version None: not known)."""
    images = sorted({spec.image_for(role) for role, _ in spec.tasks() if spec.image_for(role)})
    if backend == "vertex" and not images:
        executor = getattr(options, "executor_image", None)
        if not executor:
            return [("Vertex AI's prebuilt TensorFlow image (executor_image not given)", VERTEX_PREBUILT_PYTHON)]
        images = [executor]
    if images:
        return [(f"image {image}", image_python(image)) for image in images]
    if backend == "local":
        python = getattr(options, "python", None)
        if python:
            return [(f"python={python}", interpreter_python(str(python)))]
        return [("this interpreter", (sys.version_info[0], sys.version_info[1]))]
    return [(f"the {backend} backend's image", None)]


def check_python(backend: str, spec: Any, options: Any, *, what: str) -> None:
    """Refuse, in one line, a by-value function for tasks whose Python is not this one's."""
    mine = (sys.version_info[0], sys.version_info[1])
    for where, version in task_pythons(backend, spec, options):
        if version == mine:
            continue
        said = f"runs Python {version[0]}.{version[1]}" if version is not None else "runs a Python tfjob does not know"
        raise SpecError(
            f"{what} is pickled by value (its code), which only Python {mine[0]}.{mine[1]} (this one) can load, "
            f"and {where} {said}: give an image with Python {mine[0]}.{mine[1]} whose name says so "
            f"(e.g. …-py3{mine[1]}, python:{mine[0]}.{mine[1]}-slim, or build one: tfjob build --base-image python:{mine[0]}.{mine[1]}-slim), "
            "or define the function in a module installed in the image (pickled by reference)"
        )
