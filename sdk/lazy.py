"""Names of a package loaded on first use (PEP 562), so importing the package stays cheap.

``tfjob`` itself (which the in-container bootstrap imports) and each backend folder
(``from tfjob.backends.vertex import VertexBackend``) name what they offer this way.
Stdlib only, and nothing imported until a name is asked for.
"""

from __future__ import annotations

# Not `from typing import …`: importing typing costs the bootstrap ~3 ms.
TYPE_CHECKING = False
if TYPE_CHECKING:
    import re
    from typing import Any, Callable


def lazy_names(package: str, where: dict[str, str]) -> tuple[Callable[[str], Any], list[str]]:
    """The ``__getattr__`` and ``__all__`` of ``package``, whose name N is ``N`` of the module
    ``where[N]`` (absolute, or relative to ``package``), imported when N is first asked for;
    ``"module:other"`` names ``other`` of that module N."""

    def __getattr__(name: str) -> Any:
        module = where.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        import importlib
        import sys

        module, _, attribute = module.partition(":")
        value = getattr(importlib.import_module(module, package), attribute or name)
        setattr(sys.modules[package], name, value)  # asked once
        return value

    return __getattr__, sorted(where)


class LazyPattern:
    """A regular expression compiled the first time it is used (``.match``, ``.search``…):
    a module of many patterns imports without compiling any, and a run pays only for those
    it uses (``tfjob.description.spec``'s name and resource checks, the secret scanner's rules)."""

    __slots__ = ("source", "flags", "compiled")

    def __init__(self, source: str, flags: int = 0) -> None:
        self.source, self.flags = source, flags
        self.compiled: re.Pattern[str] | None = None

    def __getattr__(self, name: str) -> Any:
        compiled = self.compiled
        if compiled is None:
            import re

            compiled = self.compiled = re.compile(self.source, self.flags)
        return getattr(compiled, name)

    def __repr__(self) -> str:
        return f"LazyPattern({self.source!r})"
