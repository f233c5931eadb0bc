"""One ``__repr__`` for every tfjob dataclass.

``@dataclass`` compiles a ``__repr__`` for each class from source as the class is made (an
f-string per field); at start-up that was half of the time the ~30 dataclasses on a submit's
path cost. tfjob's dataclasses say ``repr=False`` and derive from :class:`Shown`, whose one
``__repr__`` reads the fields as the generated one does and prints the same text:
``Machine(type='n1-standard-4', accelerator=None, count=1)``.
"""

from __future__ import annotations

import dataclasses
import threading

_showing = threading.local()


class Shown:
    """A dataclass's ``__repr__``, shared: ``Name(field=value, …)`` over its fields shown in a
    repr (``field(repr=False)`` hides one), as ``@dataclass`` writes it; an object met again
    while it is being shown is ``...``."""

    __slots__ = ()

    def __repr__(self) -> str:
        busy: set[int] = _showing.__dict__.setdefault("busy", set())
        key = id(self)
        if key in busy:
            return "..."
        busy.add(key)
        try:
            shown = ", ".join(f"{f.name}={getattr(self, f.name)!r}" for f in dataclasses.fields(self) if f.repr)  # type: ignore[arg-type]
            return f"{type(self).__qualname__}({shown})"
        finally:
            busy.discard(key)


def inert(text: str) -> str:
    """``text`` as a terminal may show it: control characters (ESC of an ANSI or OSC
    sequence, BEL, newline, carriage return), bidi overrides (U+202E) and other characters
    that are not printable written as escapes (``\\x1b``, ``\\u202e``), so what an engine,
    a file name or a user's value holds cannot recolour, retitle or reorder a terminal, nor
    forge a line; a tab stays."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() or c == "\t" else repr(c)[1:-1] for c in text)
