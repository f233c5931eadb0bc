"""What a command line needs of each knob, without click: read by :mod:`tfjob.cli.options`
(which makes click options of it) and by :mod:`tfjob.cli.fast` (``tfjob submit``'s line read
without click)."""

from __future__ import annotations

from typing import Any


class Flag:
    """What a command line needs of a knob (:class:`tfjob.Knob`): its keyword, flags, kind, help
    with the backends that take it, whether it has a flag and whether ``tfjob tune`` offers it."""

    __slots__ = ("name", "flags", "kind", "help", "cli", "tune")

    def __init__(self, name: str, flags: tuple[str, ...], kind: str, help: str, cli: bool, tune: bool) -> None:
        self.name, self.flags, self.kind, self.help, self.cli, self.tune = name, flags, kind, help, cli, tune

    def described(self) -> str:
        return self.help

    def row(self) -> list[Any]:
        return [self.name, list(self.flags), self.kind, self.help, self.cli, self.tune]


_FLAGS: dict[str, Flag] | None = None


def knobs() -> dict[str, Flag]:
    """Every knob's flag (:func:`tfjob.job_knobs`), read when a command first needs its options
    (from the declarations' table, which :mod:`tfjob.backends.declarations` keeps beside the
    bytecode, so a start imports no backend's options)."""
    global _FLAGS
    if _FLAGS is None:
        from tfjob import job_knobs

        _FLAGS = {k.name: Flag(k.name, tuple(k.flags), k.kind, k.described(), k.cli, k.tune) for k in job_knobs().values()}
    return _FLAGS
