"""How outside text is shown on a terminal: made inert (:func:`inert`)."""

from __future__ import annotations


def inert(text: str) -> str:
    """``text`` as a terminal may show it: control characters (ESC of an ANSI or OSC
    sequence, BEL, newline, carriage return), bidi overrides (U+202E) and other characters
    that are not printable written as escapes (``\\x1b``, ``\\u202e``), so what an engine,
    a file name or a user's value holds cannot recolour, retitle or reorder a terminal, nor
    forge a line; a tab stays."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() or c == "\t" else repr(c)[1:-1] for c in text)
