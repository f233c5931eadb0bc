"""A Python function as a distributed job (``tfjob.remote``, whose API is in :mod:`tfjob.job`);
see ``docs/functions.md``. Nothing here imports :mod:`tfjob.job`.

:mod:`.function` (the function as a job, given the API's way of making jobs), :mod:`.package` (the pickled
call as a trainer package, its requirements), :mod:`.interpreter` (the tasks' Python, checked
for code pickled by value), :mod:`.result` (the outcome read back), :mod:`.runner` (what the
tasks run: stdlib and cloudpickle, copied into every package).
"""

from __future__ import annotations

from ..lazy import lazy_names

_LAZY = {
    "RemoteFunction": "tfjob.functions.function",
    "RemoteTraceback": "tfjob.functions.result",
}

TYPE_CHECKING = False
if TYPE_CHECKING:
    from .function import RemoteFunction as RemoteFunction
    from .result import RemoteTraceback as RemoteTraceback

__getattr__, _NAMES = lazy_names(__name__, _LAZY)
__all__ = sorted(_NAMES)
