"""What a command line needs of each knob, without click: read by :mod:`tfjob.cli.options`
(which makes click options of it) and by :mod:`tfjob.cli.submitting`."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tfjob._internal import Knob


def knobs() -> dict[str, Knob]:
    """Every knob (:func:`tfjob._internal.job_knobs`: its keyword, flags, kind, help with the backends
    that take it, whether it has a flag and whether ``tfjob tune`` offers it), read when a
    command first needs its options."""
    from tfjob._internal import job_knobs

    return job_knobs()
