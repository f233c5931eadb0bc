"""A pod template checked against the Kubernetes schema before anything is rendered (pure).

The installed ``kubernetes`` client carries the Kubernetes OpenAPI schema in its model
classes: each ``V1…`` class names its fields (``attribute_map``: Python name → JSON key)
and their types (``openapi_types``: ``str``, ``int``, ``bool``, ``List[V1Container]``,
``Dict[str, str]``, another class…), and which are required (a pydantic field, or in the
older generated classes a setter that refuses None). A pod
template (tfjob's pod with the user's ``--pod-template`` merged in) is walked against
``V1PodTemplateSpec`` without a cluster: a field of the wrong type, a field the schema
does not have, a required field left out, or a value no JSON document holds (a YAML
``!!set``, a date, bytes) is one error line naming the field's path
(``spec.containers[tensorflow].env``), what it must be and what it is.

Kubernetes' own leniency is kept: a resource quantity (``limits``, ``requests``,
``overhead``, ``sizeLimit``, ``divisor``) may be a number (``cpu: 2``), an int-or-string
(``port``) either, and an integer must fit the API's 64 bits.
"""

from __future__ import annotations

import math
import re
from datetime import date
from functools import lru_cache
from typing import Any, Mapping

from ...errors import SpecError
from ...description.machines import did_you_mean

#: Fields that hold a Kubernetes quantity (a string such as ``500m``, or a plain number).
QUANTITY_KEYS = frozenset({"limits", "requests", "overhead", "sizeLimit", "divisor"})
INT64 = 2**63
_LIST = re.compile(r"^(?:List\[|list\[)(.*)\]$")
_DICT = re.compile(r"^(?:Dict\[str, |dict\(str, )(.*)[\])]$")


def _models() -> Any:
    try:
        import kubernetes.client.models as models  # only when a pod template is checked
    except ImportError as e:  # the schema is the client's: without it a template cannot be checked
        from ...errors import missing_extra

        raise missing_extra("kubernetes", "Kubernetes", e) from e
    return models


def client_version() -> str:
    try:
        from importlib.metadata import version

        return f"kubernetes {version('kubernetes')} client"
    except Exception:  # noqa: BLE001 - only words in a message
        return "kubernetes client"


@lru_cache(maxsize=None)
def _fields(class_name: str) -> tuple[dict[str, str], frozenset[str]]:
    """JSON key → type of a model class, and its required JSON keys."""
    cls = getattr(_models(), class_name)
    by_key = {cls.attribute_map[attr]: kind for attr, kind in cls.openapi_types.items()}
    required: set[str] = set()
    model_fields = getattr(cls, "model_fields", None)  # a pydantic model (client 30+)
    if isinstance(model_fields, Mapping):
        required = {cls.attribute_map[name] for name, f in model_fields.items() if name in cls.attribute_map and f.is_required()}
    else:  # the older generator (kubernetes<31, which KFP pins): each required field's setter refuses None
        required = {cls.attribute_map[name] for name in cls.openapi_types if _setter_refuses_none(cls, name)}
    return by_key, frozenset(required)


def _setter_refuses_none(cls: type, name: str) -> bool:
    import inspect

    setter = getattr(getattr(cls, name, None), "fset", None)
    try:
        return setter is not None and "must not be `None`" in inspect.getsource(setter)
    except (OSError, TypeError):  # no source installed: required fields are then not checked
        return False


def _kind_of(value: Any) -> str:
    """What a value is, in a YAML writer's words."""
    if value is None:
        return "empty (null)"
    if isinstance(value, bool):
        return f"{str(value).lower()} (true/false)"
    if isinstance(value, (int, float)):
        return f"the number {value!r:.40}"
    if isinstance(value, str):
        return f"the text {value!r:.40}"
    if isinstance(value, Mapping):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, (set, frozenset)):
        return "a set (!!set)"
    if isinstance(value, tuple):
        return "a list of pairs (!!omap/!!pairs)"
    if isinstance(value, date):
        return f"a date ({value}; quote it to make it text)"
    if isinstance(value, (bytes, bytearray)):
        return "binary data (!!binary)"
    return f"a {type(value).__name__}"


def _want(kind: str) -> str:
    match = _LIST.match(kind)
    if match:
        return "a list" + (f" of {_want(match.group(1))}s" if match.group(1) in ("str", "int") else "")
    match = _DICT.match(kind)
    if match:
        return "a mapping" + (" of text (KEY: VALUE)" if match.group(1) == "str" else "")
    return {
        "str": "text",
        "int": "a whole number",
        "float": "a number",
        "bool": "true or false",
        "datetime": "a timestamp as text",
        "date": "a date as text",
        "bytes": "base64 text",
        "object": "a JSON value",
    }.get(kind, f"a mapping (a {kind.removeprefix('V1').removeprefix('Core')})")


def _json_value(value: Any) -> bool:
    """A value a JSON document can hold (what a YAML tag such as !!set or a date is not)."""
    stack = [value]
    while stack:
        item = stack.pop()
        if item is None or isinstance(item, (str, bool, int)):
            continue
        if isinstance(item, float):
            if not math.isfinite(item):
                return False
        elif isinstance(item, dict):
            if not all(isinstance(k, str) for k in item):
                return False
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
        else:
            return False
    return True


class _Problem(Exception):
    def __init__(self, path: str, message: str) -> None:
        super().__init__(f"{path or 'the template'} {message}")


def _check(value: Any, kind: str, path: str, key: str) -> None:
    match = _LIST.match(kind)
    if match:
        if not isinstance(value, list):
            raise _Problem(path, f"must be {_want(kind)}, not {_kind_of(value)}")
        for i, item in enumerate(value):
            name = item.get("name") if isinstance(item, Mapping) else None
            label = name if isinstance(name, str) and name and len(name) <= 63 else str(i)
            _check(item, match.group(1), f"{path}[{label}]", key)
        return
    match = _DICT.match(kind)
    if match:
        if not isinstance(value, Mapping):
            raise _Problem(path, f"must be {_want(kind)}, not {_kind_of(value)}")
        for k, item in value.items():
            if not isinstance(k, str):
                raise _Problem(path, f"has the key {k!r:.40}, which must be text (quote it)")
            _check(item, match.group(1), f"{path}.{k}", key)
        return
    if kind == "str":
        quantity = key in QUANTITY_KEYS and isinstance(value, (int, float)) and not isinstance(value, bool)
        if not isinstance(value, str) and not (quantity and math.isfinite(value)):
            raise _Problem(path, f"must be text, not {_kind_of(value)}" + (" (quote it)" if isinstance(value, (bool, int, float)) else ""))
        return
    if kind == "int":
        if isinstance(value, bool) or not isinstance(value, int):
            raise _Problem(path, f"must be a whole number, not {_kind_of(value)}")
        if not -INT64 <= value < INT64:
            raise _Problem(path, f"{value} is beyond what Kubernetes takes (a 64-bit integer, at most {INT64 - 1})")
        return
    if kind == "float":
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise _Problem(path, f"must be a number, not {_kind_of(value)}")
        return
    if kind == "bool":
        if not isinstance(value, bool):
            raise _Problem(path, f"must be true or false, not {_kind_of(value)}")
        return
    if kind in ("datetime", "date", "bytes"):
        if not isinstance(value, str):
            raise _Problem(path, f"must be {_want(kind)}, not {_kind_of(value)}")
        return
    if kind == "object":  # int-or-string (a port), or free JSON (managedFields)
        if not _json_value(value):
            raise _Problem(path, f"must be a JSON value, not {_kind_of(value)}")
        return
    if not hasattr(_models(), kind):  # a type this walker does not know: the API server judges
        return
    if not isinstance(value, Mapping):
        raise _Problem(path, f"must be {_want(kind)}, not {_kind_of(value)}")
    fields, required = _fields(kind)
    for k, item in value.items():
        if not isinstance(k, str) or k not in fields:
            where = f"{path}.{k}" if path else str(k)
            name = kind.removeprefix("V1").removeprefix("Core")
            raise _Problem(where, f"is not a field of a {name} in the {client_version()}'s schema{did_you_mean(str(k), list(fields))}")
        _check(item, fields[k], f"{path}.{k}" if path else k, k)
    missing = sorted(required - set(value))
    if missing:
        raise _Problem(f"{path}.{missing[0]}" if path else missing[0], "is required")


def check_pod_template(template: Mapping[str, Any], where: str) -> None:
    """Refuse a pod template (``metadata``, ``spec``) that the Kubernetes schema refuses.

    Raises:
        SpecError: ``where: PATH must be …, not …`` in one line.
    """
    try:
        _check(template, "V1PodTemplateSpec", "", "")
    except _Problem as e:
        raise SpecError(f"{where}: {e}") from None
