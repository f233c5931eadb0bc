"""A Python function as a distributed job (``tfjob.remote``); see ``docs/functions.md``.

:mod:`.function` (the decorator, the function and its handle), :mod:`.package` (the pickled
call as a trainer package, its requirements), :mod:`.interpreter` (the tasks' Python, checked
for code pickled by value), :mod:`.result` (the outcome read back), :mod:`.runner` (what the
tasks run: stdlib and cloudpickle, copied into every package).
"""

from __future__ import annotations

from ..lazy import lazy_names

_LAZY = {
    "remote": "tfjob.functions.function",
    "RemoteFunction": "tfjob.functions.function",
    "FunctionHandle": "tfjob.functions.function",
    "RemoteTraceback": "tfjob.functions.result",
}

TYPE_CHECKING = False
if TYPE_CHECKING:
    from .function import FunctionHandle as FunctionHandle, RemoteFunction as RemoteFunction, remote as remote
    from .result import RemoteTraceback as RemoteTraceback

__getattr__, _NAMES = lazy_names(__name__, _LAZY)
__all__ = sorted(_NAMES)
