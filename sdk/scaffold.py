"""Trainer templates: list them, and copy one into a new directory (``tfjob init``).

A template is a directory of package data under :mod:`tfjob.templates` with a
``template.json`` manifest (not copied)::

    {"summary": "one line for `tfjob init --list`", "base": "census-ps",
     "run": "tfjob submit {dir} --module-name trainer.task --workers 2 --ps 1 ..."}

``base`` names a template whose files are copied first; the template's own files
are laid over them (census-multiworker replaces census-ps's ``trainer/task.py``, for
instance), so shared trainer code exists once. ``{{name}}`` in any file is replaced
by the trainer's distribution name. ``run`` is the command ``tfjob init`` suggests next.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING

from .errors import UsageError
from .description.machines import did_you_mean

if TYPE_CHECKING:
    import sys

    if sys.version_info >= (3, 11):
        from importlib.resources.abc import Traversable
    else:
        from importlib.abc import Traversable

#: The template ``tfjob init`` uses when none is named.
DEFAULT_TEMPLATE = "census-ps"
MANIFEST = "template.json"
#: What a template directory may hold that is never copied.
_SKIPPED = re.compile(r"(^|/)(__pycache__|\.pytest_cache)(/|$)|\.py[co]$|(^|/)\.DS_Store$")
#: PEP 508 distribution names.
_VALID_NAME = re.compile(r"^[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?\Z")


@dataclass(frozen=True)
class Template:
    """A template's manifest.

    Attributes:
        name: the directory name, e.g. ``census-ps``.
        summary: one line saying what it trains and how.
        base: the template it extends, if any.
        run: the command to run the new trainer, ``{dir}`` standing for its directory.
    """

    name: str
    summary: str
    base: str | None = None
    run: str = ""


def _root() -> Traversable:
    return resources.files("tfjob.templates")


def _read_manifest(directory: Traversable) -> Template:
    try:
        raw = json.loads(directory.joinpath(MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise UsageError(f"template {directory.name!r} has no readable {MANIFEST}: {e}") from e
    return Template(
        name=directory.name,
        summary=str(raw.get("summary", "")).strip(),
        base=raw.get("base"),
        run=str(raw.get("run", "")),
    )


def available_templates() -> dict[str, Template]:
    """Every template shipped with tfjob, by name."""
    found = {}
    for entry in _root().iterdir():
        if entry.is_dir() and entry.joinpath(MANIFEST).is_file():
            found[entry.name] = _read_manifest(entry)
    return dict(sorted(found.items()))


def list_templates() -> list[tuple[str, str]]:
    """``(name, one-line summary)`` of every template, sorted by name."""
    return [(t.name, t.summary) for t in available_templates().values()]


def get_template(name: str) -> Template:
    """The template called ``name``.

    Raises:
        UsageError: no such template; the message lists the ones there are.
    """
    templates = available_templates()
    if name not in templates:
        raise UsageError(
            f"--template {name!r} is not a template{did_you_mean(name, list(templates))}; "
            f"choose one of: {', '.join(templates)} (`tfjob init --list` describes them)"
        )
    return templates[name]


def build_package_name(dirname: str) -> str:
    """A distribution name derived from a directory name: ``My Trainer`` → ``my-trainer``."""
    name = re.sub(r"[^a-z0-9]+", "-", dirname.lower()).strip("-")
    return name if name and name[0].isalpha() else f"trainer-{name}".strip("-")


def render_text(text: str, name: str) -> str:
    """``text`` with each ``{{name}}`` placeholder filled."""
    return text.replace("{{name}}", name)


def _walk(directory: Traversable, prefix: str = "") -> dict[str, bytes]:
    files: dict[str, bytes] = {}
    for entry in directory.iterdir():
        rel = f"{prefix}{entry.name}"
        if _SKIPPED.search(rel) or (not prefix and entry.name == MANIFEST):
            continue
        if entry.is_dir():
            files.update(_walk(entry, rel + "/"))
        else:
            files[rel] = entry.read_bytes()
    return files


def template_files(template: str, name: str) -> dict[str, bytes]:
    """The files ``tfjob init`` writes for ``template``: relative path → content, placeholders filled.

    Raises:
        UsageError: an unknown template, or a ``base`` chain that loops.
    """
    chain: list[Template] = []
    current: str | None = template
    while current is not None:
        if any(t.name == current for t in chain):
            raise UsageError(f"template {template!r} extends itself through {current!r}: fix its {MANIFEST}")
        chain.append(get_template(current))
        current = chain[-1].base
    files: dict[str, bytes] = {}
    for t in reversed(chain):  # the base first, each extension laid over it
        files.update(_walk(_root().joinpath(t.name)))
    rendered = {}
    for rel, content in sorted(files.items()):
        try:
            rendered[rel] = render_text(content.decode("utf-8"), name).encode("utf-8")
        except UnicodeDecodeError:
            rendered[rel] = content
    return rendered


def init_template(
    dest: str | Path,
    template: str = DEFAULT_TEMPLATE,
    *,
    force: bool = False,
    package_name: str | None = None,
) -> Path:
    """Copy ``template`` into the directory ``dest`` and return its absolute path.

    Args:
        dest: the directory to create (it may exist if empty).
        template: a name from :func:`list_templates`.
        force: write into a non-empty ``dest``, overwriting files of the same names
            (other files are left alone).
        package_name: the trainer's distribution name in ``pyproject.toml``;
            default: derived from the directory name.

    Raises:
        UsageError: an unknown template, an invalid name, ``dest`` is a file, or
            ``dest`` is not empty and ``force`` is false.
    """
    if not str(dest).strip():
        raise UsageError("the directory to create cannot be empty: tfjob init DIR [--template NAME]")
    path = Path(dest).expanduser()
    name = package_name if package_name is not None else build_package_name(path.resolve().name)
    if not _VALID_NAME.match(name):
        raise UsageError(
            f"--name {name!r} is not a valid distribution name: use letters, digits, '-', '_' and '.', "
            "starting and ending with a letter or digit (e.g. census-trainer)"
        )
    files = template_files(template, name)
    if path.exists() and not path.is_dir():
        raise UsageError(f"{str(path)!r} is a file, not a directory: give a new directory for the trainer")
    if path.is_dir() and any(path.iterdir()) and not force:
        raise UsageError(
            f"{str(path)!r} is not empty: give a new or empty directory, or pass --force to write "
            f"the template into it (its files of the same names are overwritten)"
        )
    for rel in files:
        # --force writes into an existing tree: never through a link in it, to somewhere else.
        parts = Path(rel).parts
        for depth in range(1, len(parts) + 1):
            inside = path.joinpath(*parts[:depth])
            if inside.is_symlink():
                raise UsageError(
                    f"{str(inside)!r} is a symbolic link: tfjob init writes only inside {str(path)!r}; "
                    "remove the link or choose another directory"
                )
    for rel, content in files.items():
        target = path / rel
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(content)
        except OSError as e:
            raise UsageError(f"cannot write {str(target)!r}: {e.strerror or e}; give a directory you can write") from None
    return path.resolve()
