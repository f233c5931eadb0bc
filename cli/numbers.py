"""Click types for numbers written in ASCII digits (issue 36).

Python's ``int`` and ``float`` — and so click's INT, FLOAT and IntRange — also read other
scripts' digits: ``--max-restarts ٥`` (Arabic-Indic five) as 5, ``--tail ５`` (fullwidth) as 5.
No config file, platform or log spells a number so; these types take ASCII digits only and
say the rest in click's one line.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

if TYPE_CHECKING:
    # click 8.5's ParamType is generic (value, input); 8.2's, which pyproject allows, cannot be
    # subscripted at run time.
    _NumberParam = click.ParamType[int | float, Any]
else:
    _NumberParam = click.ParamType


class AsciiNumber(_NumberParam):
    """A whole or decimal number in ASCII digits: Python's ``int`` and ``float`` (click's
    INT and FLOAT) also read other scripts' digits — ``--max-restarts ٥`` as 5 —, which no
    config file, platform or log spells a number in."""

    def __init__(self, whole: bool) -> None:
        self.whole = whole
        self.name = "integer" if whole else "float"  # click's names for INT and FLOAT

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> int | float:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return value
        text = str(value).strip()
        if not text.isascii():
            self.fail(f"{text[:40]!r} is not a number written in ASCII digits (0-9)", param, ctx)
        if len(text) > 40:
            self.fail(f"{text[:40]!r}… is longer than any number tfjob takes", param, ctx)
        try:
            return int(text) if self.whole else float(text)
        except ValueError:
            self.fail(f"{text!r} is not a valid {self.name}.", param, ctx)  # click's own words


ASCII_INT = AsciiNumber(whole=True)
ASCII_FLOAT = AsciiNumber(whole=False)


class AsciiIntRange(click.IntRange):
    """click's IntRange, in ASCII digits only."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, str) and not value.strip().isascii():
            self.fail(f"{value.strip()[:40]!r} is not a number written in ASCII digits (0-9)", param, ctx)
        return super().convert(value, param, ctx)
