"""Every backend's declared knobs, and which backends take each keyword, kept beside the bytecode.

Reading the declarations imports every backend's options module, whose dataclasses cost a
start ~10 ms; a submit needs only the chosen backend's. So the table made from them — each
knob as :class:`tfjob.knobs.Knob` declares it, each keyword only some backends take with
those backends, and each options field's annotation — is kept as Python keeps bytecode: ``__pycache__/declared-<fingerprint>.json``
beside this module, the fingerprint being the size and time of every module that declares
knobs or options (this folder, ``knobs.py``, ``model.py``). A table that is missing, stale,
oversized, unreadable or malformed is made again from the declarations; one that cannot be
written (a read-only install) is simply not kept.
"""

from __future__ import annotations

import os
from typing import Any, Callable

#: The most a kept table may hold (the real one is ~30 KiB).
CACHE_BYTES = 1 << 20
_PREFIX = "declared-"


def load(make: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """The table: the kept one when it is current and well-formed, else ``make()`` (then kept)."""
    path = _path()
    table = _read(path) if path is not None else None
    if table is None:
        table = make()
        if path is not None:
            _write(path, table)
    return table


def _path() -> str | None:
    """``__pycache__/declared-<fingerprint>.json`` beside this module; None when the declaring
    modules cannot be listed."""
    import binascii

    here = os.path.dirname(os.path.abspath(__file__))
    root = os.path.dirname(here)
    seen: list[str] = []
    try:
        for top, dirs, files in os.walk(here):
            dirs[:] = sorted(d for d in dirs if d != "__pycache__")
            seen += [os.path.join(top, f) for f in sorted(files) if f.endswith(".py")]
        seen += [os.path.join(root, "knobs.py"), os.path.join(root, "model.py")]
        stamp = "\n".join(f"{p} {st.st_size} {st.st_mtime_ns}" for p in seen for st in [os.stat(p)])
    except OSError:
        return None
    key = f"{binascii.crc32(stamp.encode()):08x}{len(stamp):x}"
    return os.path.join(here, "__pycache__", f"{_PREFIX}{key}.json")


def _strings(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


def _knob_row(row: Any) -> bool:
    """A kept knob: [name, help, kind, flags, config, backends, tune, helps, cli]."""
    if not (isinstance(row, list) and len(row) == 9):
        return False
    name, help, kind, flags, config, backends, tune, helps, cli = row
    return (
        isinstance(name, str) and isinstance(help, str) and isinstance(kind, str) and _strings(flags)
        and (config is None or isinstance(config, str)) and _strings(backends) and isinstance(tune, bool)
        and isinstance(cli, bool) and isinstance(helps, list)
        and all(isinstance(h, list) and len(h) == 2 and _strings(h[0]) and isinstance(h[1], str) for h in helps)
    )  # fmt: skip


def _read(path: str) -> dict[str, Any] | None:
    import json

    try:
        with open(path, "rb") as f:
            data = f.read(CACHE_BYTES + 1)
        if len(data) > CACHE_BYTES:
            return None
        table = json.loads(data)
    except (OSError, ValueError):
        return None
    if not (isinstance(table, dict) and set(table) == {"knobs", "takers", "fields"}):
        return None
    knobs, takers, fields = table["knobs"], table["takers"], table["fields"]
    if not (isinstance(knobs, list) and knobs and all(_knob_row(r) for r in knobs)):
        return None
    if not (isinstance(takers, dict) and all(_strings(v) and v for v in takers.values())):
        return None
    if not (isinstance(fields, dict) and fields and all(isinstance(v, str) for v in fields.values())):
        return None
    return table


def _write(path: str, table: dict[str, Any]) -> None:
    import glob
    import json

    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        for old in glob.glob(os.path.join(os.path.dirname(path), f"{_PREFIX}*.json")):  # made before a change
            os.unlink(old)
        part = f"{path}.{os.getpid()}.part"
        with open(part, "w") as f:
            json.dump(table, f)
        os.replace(part, path)
    except OSError:
        pass
