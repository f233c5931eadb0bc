"""tfjob's dataclasses share one ``__repr__`` (:class:`tfjob.shown.Shown`) instead of compiling
one each at import: it must print what ``@dataclass`` would, for every one of them."""

from __future__ import annotations

import dataclasses
import importlib
import pkgutil
from typing import Any

import pytest

import tfjob


def _tfjob_dataclasses() -> list[type]:
    found: dict[str, type] = {}
    for info in pkgutil.walk_packages(tfjob.__path__, "tfjob."):
        if info.name.startswith(("tfjob.cli", "tfjob.container", "tfjob.__main__")) or info.name.endswith("__main__"):
            continue
        module = importlib.import_module(info.name)
        for value in vars(module).values():
            if isinstance(value, type) and dataclasses.is_dataclass(value) and value.__module__ == info.name:
                found[f"{value.__module__}.{value.__qualname__}"] = value
    return [found[k] for k in sorted(found)]


DATACLASSES = _tfjob_dataclasses()


def _as_dataclass_writes_it(cls: type) -> type:
    """The same fields in a class ``@dataclass`` makes with its own generated ``__repr__``."""
    fields = [
        (f.name, f.type, dataclasses.field(default=f.default, default_factory=f.default_factory, repr=f.repr))
        for f in dataclasses.fields(cls)
    ]
    twin = dataclasses.make_dataclass(cls.__name__, fields, repr=True, eq=False)
    twin.__qualname__ = cls.__qualname__
    return twin


def test_every_tfjob_dataclass_shares_the_one_repr() -> None:
    assert len(DATACLASSES) > 60
    generated = [f"{c.__module__}.{c.__qualname__}" for c in DATACLASSES if c.__repr__.__code__.co_filename == "<string>"]
    assert generated == []  # compiled by @dataclass: the class lacks repr=False
    plain = [f"{c.__module__}.{c.__qualname__}" for c in DATACLASSES if c.__repr__ is object.__repr__]
    assert plain == []  # no repr at all: the class lacks the Shown base


def _sample(f: dataclasses.Field[Any], i: int) -> Any:
    if f.default is not dataclasses.MISSING:
        return f.default
    if f.default_factory is not dataclasses.MISSING:
        return f.default_factory()
    return [f"value {i}", {"k": i}, (i, None)][i % 3]


@pytest.mark.parametrize("cls", DATACLASSES, ids=lambda c: f"{c.__module__}.{c.__qualname__}")
def test_the_shared_repr_prints_what_dataclass_would(cls: type) -> None:
    values = {f.name: _sample(f, i) for i, f in enumerate(dataclasses.fields(cls))}
    obj = object.__new__(cls)
    for name, value in values.items():
        object.__setattr__(obj, name, value)  # as made, without __post_init__'s checks
    twin = object.__new__(_as_dataclass_writes_it(cls))
    for name, value in values.items():
        object.__setattr__(twin, name, value)
    assert repr(obj) == repr(twin)


def test_a_value_that_holds_itself_is_shown_once() -> None:
    from tfjob.model import TaskStatus

    fields = dataclasses.fields(TaskStatus)
    task = object.__new__(TaskStatus)
    for f in fields:
        object.__setattr__(task, f.name, None)
    object.__setattr__(task, fields[0].name, [task])
    rest = "".join(f", {f.name}=None" for f in fields[1:] if f.repr)
    assert repr(task) == f"TaskStatus({fields[0].name}=[...]{rest})"
