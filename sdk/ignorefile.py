"""Ignore files in gitignore syntax (``.gcloudignore``, ``.tfjobignore``): pure matching.

What is honoured, as git does it:

- blank lines and ``#`` comments are skipped; ``\\#`` and ``\\!`` escape a leading
  ``#`` or ``!``; trailing spaces are dropped unless escaped with ``\\``;
- ``!pattern`` re-includes what an earlier pattern excluded (the last match wins;
  a file inside an excluded directory stays excluded, because the walk never enters it);
- ``pattern/`` matches directories only;
- a pattern with a ``/`` before its end is anchored at the directory holding the
  ignore file; one without matches a name at any depth;
- ``*`` and ``?`` never match ``/``; ``**`` matches across directories
  (``**/x``, ``x/**``, ``a/**/b``); ``[a-z]`` classes.

gcloud's ``#!include:FILE`` line (read another ignore file, e.g. ``.gitignore``) is
honoured too; :func:`parse_ignore` takes its text through the ``include`` callback
so this module stays free of I/O.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable, Sequence

_INCLUDE = "#!include:"


@dataclass(frozen=True)
class IgnoreRule:
    """One line of an ignore file.

    Attributes:
        pattern: the line as written (for messages).
        regex: matches a slash-separated path relative to the root.
        negate: a ``!`` line (re-include).
        dir_only: a ``pattern/`` line (matches directories only).
    """

    pattern: str
    regex: re.Pattern[str]
    negate: bool
    dir_only: bool


def _translate(body: str) -> str:
    """A gitignore glob (without ``!`` and trailing ``/``) → a regex over the whole path."""
    anchored = "/" in body
    body = body.lstrip("/") if anchored else body
    out: list[str] = []
    i = 0
    n = len(body)
    while i < n:
        c = body[i]
        if c == "*":
            if body.startswith("**", i):
                before_ok = i == 0 or body[i - 1] == "/"
                after = body[i + 2 : i + 3]
                if before_ok and after == "/":
                    out.append("(?:.*/)?")  # "**/" : zero or more directories
                    i += 3
                    continue
                if before_ok and i + 2 == n:
                    out.append(".*")  # trailing "/**": everything inside
                    i += 2
                    continue
            out.append("[^/]*")
        elif c == "?":
            out.append("[^/]")
        elif c == "[":
            end = body.find("]", i + 2 if body[i + 1 : i + 2] in ("!", "^") else i + 1)
            if end == -1:
                out.append(re.escape(c))
            else:
                inner = body[i + 1 : end]
                if inner[:1] in ("!", "^"):
                    inner = "^" + inner[1:]
                out.append("[" + inner.replace("\\", "\\\\") + "]")
                i = end
        elif c == "\\" and i + 1 < n:
            i += 1
            out.append(re.escape(body[i]))
        else:
            out.append(re.escape(c))
        i += 1
    prefix = "" if anchored else "(?:.*/)?"
    return "^" + prefix + "".join(out) + "$"


def parse_ignore(
    text: str,
    include: Callable[[str], str | None] | None = None,
    _depth: int = 0,
) -> list[IgnoreRule]:
    """The rules of an ignore file's text, in order.

    Args:
        text: the file's content.
        include: called with the file named by a ``#!include:FILE`` line; returns its
            text, or None when it does not exist (the line is then skipped).
    """
    rules: list[IgnoreRule] = []
    for raw in text.splitlines():
        line = raw.rstrip("\r")
        if line.startswith(_INCLUDE):
            name = line[len(_INCLUDE) :].strip()
            included = include(name) if include is not None and _depth < 5 else None
            if included:
                rules.extend(parse_ignore(included, include, _depth + 1))
            continue
        if not line.strip() or line.startswith("#"):
            continue
        # Trailing spaces are dropped unless the last one is escaped.
        stripped = line.rstrip(" ")
        if stripped.endswith("\\") and len(stripped) < len(line):
            stripped += " "
        line = stripped
        negate = line.startswith("!")
        if negate:
            line = line[1:]
        elif line.startswith("\\!") or line.startswith("\\#"):
            line = line[1:]
        dir_only = line.endswith("/") and not line.endswith("\\/")
        body = line.rstrip("/") if dir_only else line
        if not body:
            continue
        rules.append(IgnoreRule(raw.strip(), re.compile(_translate(body)), negate, dir_only))
    return rules


def is_ignored(path: str, is_dir: bool, rules: Sequence[IgnoreRule]) -> bool:
    """Whether ``path`` itself (relative, ``/``-separated) is excluded by ``rules``.

    The last matching rule wins. Directories above ``path`` are not looked at: a
    directory walk prunes excluded directories; use :func:`is_excluded` for a lone path.
    """
    ignored = False
    for rule in rules:
        if rule.dir_only and not is_dir:
            continue
        if rule.regex.match(path):
            ignored = not rule.negate
    return ignored


def is_excluded(path: str, rules: Sequence[IgnoreRule]) -> bool:
    """Whether the file ``path`` is excluded, itself or through a directory above it."""
    parts = path.split("/")
    for i in range(1, len(parts)):
        if is_ignored("/".join(parts[:i]), True, rules):
            return True
    return is_ignored(path, False, rules)
