"""YAML and JSON documents from outside, read within bounds: ``--config``, ``--hparams``,
``--pod-template``, ``$TFJOB_HOME/config.yaml`` and every kubeconfig, all through
:func:`read_config_file`. Low in the layers: the config readers, the study reader, the
renderers, the settings and the Kubernetes client read through it.

A document is bounded four ways, each refused in one line naming the file:

- **its file**: a regular file (never a FIFO or a device) of at most 1 MiB (a kubeconfig
  16 MiB), UTF-8;
- **its nesting**: at most 64 levels, counted as the document expands (an alias placed
  deeper than its anchor nests deeper), parsed without a RecursionError;
- **its expanded size**: YAML aliases (``*a``) and merge keys (``<<: *a``) repeat what
  they name, so 500 bytes of nested aliases expand to gigabytes once a renderer or a
  serialiser walks them. The size a document has once every alias is written out is
  counted (each shared value once, so counting is linear in the file) and refused beyond
  :data:`EXPANSION` times the file's own bound; a document that contains itself (an alias
  inside its own anchor) is refused too. No document without aliases comes near the bound.
- **its numbers**: an integer of more than :data:`MAX_INTEGER_DIGITS` digits (Python's
  own limit for turning one into text, and far beyond any field's) is refused before it is
  computed (YAML's base-60 integers ``1:2:3…`` take quadratic time to compute).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..errors import ConfigFileError
from ..description.limits import read_bounded_text


#: The largest ``--config`` / ``--hparams`` / ``--pod-template`` document read (a real one is a few KiB).
MAX_DOCUMENT_BYTES = 1024 * 1024
#: The deepest nesting of mappings and lists accepted in such a document (as expanded).
MAX_DOCUMENT_DEPTH = 64
#: A document may expand (through YAML aliases) to this many times its file's bound, counted
#: as written-out text: 4 MiB for a 1 MiB document (without aliases, at most about twice its file).
EXPANSION = 4
#: The most keys YAML merge keys (``<<``) may copy into the mappings of one document.
MAX_MERGED_KEYS = 10_000
#: The longest integer taken (Python's ``sys.get_int_max_str_digits()`` default).
MAX_INTEGER_DIGITS = 4300
_INTEGER_CEILING = 10**MAX_INTEGER_DIGITS


def _read_bounded(path: Path, field: str, max_bytes: int, what: str) -> str:
    """The text of a regular file of at most ``max_bytes``, never blocking on a FIFO."""
    return read_bounded_text(path, field, max_bytes, what)


def _too_deep(where: str) -> ConfigFileError:
    return ConfigFileError(f"{where}: nested more than {MAX_DOCUMENT_DEPTH} levels deep; a job or study file is a few levels deep")


def _scalar_size(value: Any) -> int:
    """About how many characters ``value`` takes written out as JSON or YAML."""
    if isinstance(value, (str, bytes, bytearray)):
        return len(value) + 2
    if value is None or isinstance(value, bool):
        return 5
    if isinstance(value, int):
        return value.bit_length() * 31 // 100 + 2  # decimal digits, and a sign
    if isinstance(value, float):
        return 24
    return 32  # a date, a timestamp


def check_expanded(document: Any, where: str, max_size: int) -> int:
    """The size of ``document`` with every YAML alias written out, about its JSON text in
    characters; refuses it (one line starting with ``where``) when that is more than
    ``max_size``, when it nests deeper than :data:`MAX_DOCUMENT_DEPTH` as expanded, or when
    it contains itself. Linear in the parsed document: a shared value is measured once.

    Raises:
        ConfigFileError: the document contains itself, nests too deep, or expands too far.
    """
    measured: dict[int, tuple[int, int]] = {}  # id → (expanded size, expanded height)
    inside: set[int] = set()

    def visit(value: Any, depth: int) -> tuple[int, int]:
        if isinstance(value, dict):
            children: Any = [item for pair in value.items() for item in pair]
        elif isinstance(value, (list, tuple, set, frozenset)):
            children = value
        else:
            return _scalar_size(value), 0
        key = id(value)
        if key in inside:
            raise ConfigFileError(
                f"{where}: a YAML alias (*name) inside its own anchor (&name) makes the document contain itself; "
                "write the value out instead"
            )
        known = measured.get(key)
        if known is None:
            if depth > MAX_DOCUMENT_DEPTH:
                raise _too_deep(where)
            inside.add(key)
            size, height = 2, 1
            for child in children:
                child_size, child_height = visit(child, depth + 1)
                size += child_size + 1
                height = max(height, child_height + 1)
                if size > max_size:
                    break  # said below, naming the bound
            inside.discard(key)
            known = measured[key] = (size, height)
        size, height = known
        if depth + height - 1 > MAX_DOCUMENT_DEPTH:
            raise _too_deep(where)
        if size > max_size:
            raise ConfigFileError(
                f"{where}: its YAML aliases (*name) or merge keys (<<) expand it to more than "
                f"{_amount(max_size)} ({EXPANSION} times the largest such file); write it out with fewer aliases"
            )
        return known

    return visit(document, 1)[0]


def _amount(size: int) -> str:
    return f"{size // (1024 * 1024)} MiB" if size >= 1024 * 1024 else f"{size // 1024} KiB"


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


class _DocumentError(Exception):
    """Raised by the loader below; said as ``where: message``."""


def _long_integer(text: str, line: int | None = None) -> _DocumentError:
    at = f" (line {line})" if line is not None else ""
    return _DocumentError(f"an integer of more than {MAX_INTEGER_DIGITS} digits{at} ({text[:20]}…); no setting takes one")


_LOADER: Any = None


def _loader() -> Any:
    """``yaml.SafeLoader`` with integers bounded before they are computed and merge keys counted."""
    global _LOADER
    if _LOADER is not None:
        return _LOADER
    import yaml  # only when a YAML document is read

    class BoundedLoader(yaml.SafeLoader):  # type: ignore[misc]
        merged = 0

        def construct_yaml_int(self, node: Any) -> int:
            text = str(node.value)
            # Each character adds at most a digit (hex, octal and base-60 parts a little more,
            # hence the value check too); a longer text is refused before it is computed.
            if len(text) > MAX_INTEGER_DIGITS:
                raise _long_integer(text, node.start_mark.line + 1)
            value: int = super().construct_yaml_int(node)
            if abs(value) >= _INTEGER_CEILING:
                raise _long_integer(text, node.start_mark.line + 1)
            return value

        def flatten_mapping(self, node: Any) -> None:
            merges = sum(1 for key, _ in node.value if key.tag == "tag:yaml.org,2002:merge")
            before = len(node.value) - merges
            super().flatten_mapping(node)
            self.merged += max(0, len(node.value) - before)
            if self.merged > MAX_MERGED_KEYS:
                raise _DocumentError(f"its YAML merge keys (<<) copy more than {MAX_MERGED_KEYS} keys; write it out with fewer merges")

    BoundedLoader.add_constructor("tag:yaml.org,2002:int", BoundedLoader.construct_yaml_int)
    _LOADER = BoundedLoader
    return _LOADER


def _json_integer(text: str) -> int:
    if len(text) > MAX_INTEGER_DIGITS + 1:
        raise _long_integer(text)
    return int(text)


def parse_document(text: str, where: str, *, as_json: bool = False, max_size: int = EXPANSION * MAX_DOCUMENT_BYTES) -> Any:
    """The document in ``text`` (JSON, or YAML), bounded as this module says.

    Raises:
        ConfigFileError: ``where: …`` in one line (not valid, too deep, expands too far,
            contains itself, holds too long an integer).
    """
    # Deep nesting would exhaust the parser's recursion before the depth check sees it.
    if _nesting_prescan(text) > MAX_DOCUMENT_DEPTH:
        raise _too_deep(where)
    try:
        if as_json:
            try:
                document = json.loads(text, parse_int=_json_integer)
            except json.JSONDecodeError as e:
                raise ConfigFileError(f"{where}: not valid JSON: {e}") from None
        else:
            import yaml  # only when a YAML document is read

            try:
                document = yaml.load(text, Loader=_loader())  # noqa: S506 - a SafeLoader, bounded
            except yaml.YAMLError as e:
                mark = getattr(e, "problem_mark", None)
                line = f" (line {mark.line + 1})" if mark is not None else ""
                problem = getattr(e, "problem", None) or str(e).splitlines()[0]
                raise ConfigFileError(f"{where}: not valid YAML{line}: {problem}") from None
    except ConfigFileError:
        raise
    except _DocumentError as e:
        raise ConfigFileError(f"{where}: {e}") from None
    except RecursionError:
        raise ConfigFileError(f"{where}: nested too deeply to read; a job or study file is a few levels deep") from None
    except ValueError as e:  # what a constructor of the parser raises on a value it cannot take
        raise ConfigFileError(f"{where}: cannot read a value: {' '.join(str(e).split())[:200]}") from None
    check_expanded(document, where, max_size)
    return document


def read_config_file(
    path: str | Path,
    field: str = "config",
    *,
    max_bytes: int = MAX_DOCUMENT_BYTES,
    what: str = "a YAML or JSON file (a job or study file is a few KiB)",
    where: str | None = None,
    as_json: bool | None = None,
) -> Any:
    """The document in a YAML or JSON file (``.json`` is read as JSON, anything else as YAML).

    Bounded: a regular file (never a FIFO or device) of at most ``max_bytes``
    (:data:`MAX_DOCUMENT_BYTES`), nested at most :data:`MAX_DOCUMENT_DEPTH` levels,
    expanding to at most :data:`EXPANSION` × ``max_bytes``, never containing itself.
    Errors start with ``where`` (the path).
    """
    path = Path(path)
    text = _read_bounded(path, field, max_bytes, what)
    json_file = path.suffix.lower() == ".json" if as_json is None else as_json
    return parse_document(text, str(path) if where is None else where, as_json=json_file, max_size=EXPANSION * max_bytes)
