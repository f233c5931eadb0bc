"""YAML and JSON documents from outside, read within bounds: ``--config``, ``--hparams``,
``--pod-template``. A regular file (never a FIFO or a device) of at most 1 MiB, nested at
most 64 levels, parsed without a RecursionError. Low in the layers: the config readers,
the study reader and the renderers all read through it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .errors import ConfigFileError
from .limits import read_bounded_text


#: The largest ``--config`` / ``--hparams`` document read (a real one is a few KiB).
MAX_DOCUMENT_BYTES = 1024 * 1024
#: The deepest nesting of mappings and lists accepted in such a document.
MAX_DOCUMENT_DEPTH = 64


def _read_bounded(path: Path, flag: str) -> str:
    """The text of a regular file of at most :data:`MAX_DOCUMENT_BYTES`, never blocking on a FIFO."""
    return read_bounded_text(path, flag, MAX_DOCUMENT_BYTES, "a YAML or JSON file (a job or study file is a few KiB)")


def _check_depth(document: Any, path: Path) -> None:
    """Refuse nesting deeper than :data:`MAX_DOCUMENT_DEPTH` (iteratively; YAML aliases visited once)."""
    seen: set[int] = set()
    stack = [(document, 1)]
    while stack:
        value, depth = stack.pop()
        if not isinstance(value, (dict, list)) or id(value) in seen:
            continue
        if depth > MAX_DOCUMENT_DEPTH:
            raise ConfigFileError(f"{path}: nested more than {MAX_DOCUMENT_DEPTH} levels deep; a job or study file is a few levels deep")
        seen.add(id(value))
        children = value.values() if isinstance(value, dict) else value
        stack.extend((child, depth + 1) for child in children)


def _nesting_prescan(text: str) -> int:
    """The deepest bracket nesting of a JSON or flow-style YAML text (strings skipped), linear."""
    depth = deepest = 0
    quote = ""
    escaped = False
    for ch in text:
        if quote:
            if escaped:
                escaped = False
            elif ch == "\\" and quote == '"':
                escaped = True
            elif ch == quote:
                quote = ""
        elif ch in "\"'":
            quote = ch
        elif ch in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif ch in "]}":
            depth -= 1
    return deepest


def read_config_file(path: str | Path, flag: str = "--config") -> Any:
    """The document in a YAML or JSON file (``.json`` is read as JSON, anything else as YAML).

    Bounded: a regular file (never a FIFO or device) of at most
    :data:`MAX_DOCUMENT_BYTES`, nested at most :data:`MAX_DOCUMENT_DEPTH` levels.
    """
    path = Path(path)
    text = _read_bounded(path, flag)
    # Deep nesting would exhaust the parser's recursion before the depth check sees it.
    if _nesting_prescan(text) > MAX_DOCUMENT_DEPTH:
        raise ConfigFileError(f"{path}: nested more than {MAX_DOCUMENT_DEPTH} levels deep; a job or study file is a few levels deep")
    if path.suffix.lower() == ".json":
        try:
            document = json.loads(text)
        except json.JSONDecodeError as e:
            raise ConfigFileError(f"{path}: not valid JSON: {e}") from None
        except RecursionError:
            raise ConfigFileError(f"{path}: nested too deeply to read; a job or study file is a few levels deep") from None
    else:
        import yaml  # only when a config file is used

        try:
            document = yaml.safe_load(text)
        except yaml.YAMLError as e:
            where = getattr(e, "problem_mark", None)
            line = f" (line {where.line + 1})" if where is not None else ""
            problem = getattr(e, "problem", None) or str(e).splitlines()[0]
            raise ConfigFileError(f"{path}: not valid YAML{line}: {problem}") from None
        except RecursionError:
            raise ConfigFileError(f"{path}: nested too deeply to read; a job or study file is a few levels deep") from None
    _check_depth(document, path)
    return document
