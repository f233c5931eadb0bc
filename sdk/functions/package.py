"""A function and its arguments as a trainer package: pickled, with its requirements.

The package is a bare trainer directory, ``$TFJOB_HOME/functions/<digest>/``::

    requirements.txt           the distributions the function's imports come from
    tfjob_function/__init__.py
    tfjob_function/run.py      the runner (tfjob.functions.runner), stdlib and cloudpickle
    tfjob_function/function.pkl  cloudpickle of (function, args, kwargs)
    tfjob_function/_vendor/cloudpickle/  this process's cloudpickle (its sources), which the
                               runner imports: no image needs it, no index is asked for it

named by the digest of what it holds, so every backend takes it as any trainer directory
(the local backend runs it in place; Vertex AI stages its sdist under its sha256, so an
unchanged call uploads nothing; Kubernetes ships it in a ConfigMap).

What is pickled how is cloudpickle's rule: a function of an importable module goes by
reference (its module must be importable in the task), one of ``__main__`` (a script, a
notebook cell), a lambda or a closure goes by value, as its code. A module that is no
installed distribution's (a ``.py`` beside the notebook) is pickled by value too, so it
need not be shipped. Code pickled by value runs only on the interpreter's own minor version
(:mod:`tfjob.functions.interpreter` checks the image's).
"""

from __future__ import annotations

import dis
import importlib.metadata
import os
import pickletools
import sys
import types
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

from ..errors import SpecError
from .retention import functions_dir, locked

#: The package every function job runs, and its module (``--module``).
PACKAGE = "tfjob_function"
MODULE = f"{PACKAGE}.run"
PAYLOAD = "function.pkl"
REQUIREMENTS = "requirements.txt"
#: The largest pickled call shipped (a package is staged and shipped whole: pass data by URI).
MAX_PAYLOAD = 64 * 1024 * 1024
#: Where the package carries this process's cloudpickle (the runner puts it first on sys.path).
VENDOR = "_vendor"
#: The most bytes of cloudpickle's sources shipped (3.1 has 60 KB).
MAX_SHIPPED = 1024 * 1024
#: Distributions an image for TensorFlow jobs brings itself: never listed, so the image's
#: TensorFlow stays the one the tasks run (tfjob-bootstrap is tfjob inside a task).
IMAGE_PROVIDED = frozenset(
    {"tensorflow", "tensorflow-cpu", "tensorflow-gpu", "tensorflow-intel", "tf-nightly", "tf-keras", "keras", "tensorboard"}
    | {"tensorflow-io-gcs-filesystem", "tfjob", "tfjob-bootstrap", "cloudpickle"}
)
#: What cloudpickle's by-value pickles of code reference.
_BY_VALUE_MARKS = frozenset({"_make_function", "_make_skeleton_class", "_make_skeleton_enum", "_make_code", "CodeType"})
_STRING_OPS = frozenset({"SHORT_BINUNICODE", "BINUNICODE", "BINUNICODE8", "UNICODE"})
_GET_OPS = frozenset({"GET", "BINGET", "LONG_BINGET"})
_PUT_OPS = frozenset({"PUT", "BINPUT", "LONG_BINPUT"})
_MAX_CODE_OBJECTS = 10_000


@dataclass(frozen=True)
class FunctionPackage:
    """A function's package, built.

    Attributes:
        directory: the trainer directory (``$TFJOB_HOME/functions/<digest>``).
        digest: the sha256 of what it holds.
        by_value: the pickle holds code (the interpreter's minor version must match the image's).
        requirements: the lines of its ``requirements.txt``.
        found: the distributions found from the function's imports (empty when given).
        size: the pickle's size in bytes.
        cloudpickle: the version of this process's cloudpickle, shipped in the package
            (``tfjob_function/_vendor``); None when it is a requirement instead.
    """

    directory: Path
    digest: str
    by_value: bool
    requirements: tuple[str, ...]
    found: tuple[str, ...]
    size: int
    cloudpickle: str | None = None


def _normal(name: str) -> str:
    return name.lower().replace("_", "-").replace(".", "-")


def _local_top(module_name: str) -> str | None:
    """The top-level package of ``module_name`` when it is code of the caller's own (no
    installed distribution's, not the standard library's): it is pickled by value."""
    top = module_name.split(".")[0]
    if top in ("__main__", "builtins") or top in sys.stdlib_module_names or top == "tfjob":
        return None
    if top in importlib.metadata.packages_distributions():
        return None
    module = sys.modules.get(top)
    if module is None or getattr(module, "__file__", None) is None:
        return None
    return top


def pickle_call(fn: Callable[..., Any], args: Sequence[Any], kwargs: Mapping[str, Any]) -> bytes:
    """``(fn, args, kwargs)`` as cloudpickle writes it; the caller's own modules by value.

    Raises:
        SpecError: something in it cannot be pickled (naming what), or the pickle is too large.
    """
    try:
        import cloudpickle  # type: ignore[import-untyped,import-not-found,unused-ignore]
    except ImportError:
        from ..errors import BackendUnavailableError

        raise BackendUnavailableError(
            "a Python function runs as a job pickled with cloudpickle, which tfjob installs only on request: pip install 'tfjob[remote]'"
        ) from None
    local = _local_top(getattr(fn, "__module__", None) or "__main__")
    registered = False
    if local is not None:
        try:
            cloudpickle.register_pickle_by_value(sys.modules[local])
            registered = True
        except ValueError:
            pass  # registered already
    try:
        data: bytes = cloudpickle.dumps((fn, tuple(args), dict(kwargs)))
    except Exception as e:
        name = getattr(fn, "__qualname__", repr(fn))
        raise SpecError(
            f"{name}: the function or its arguments cannot be pickled ({type(e).__name__}: {e}); "
            "pass what the function needs as picklable arguments (paths, URIs, numbers) and open files, "
            "clients and locks inside it"
        ) from None
    finally:
        if registered:
            cloudpickle.unregister_pickle_by_value(sys.modules[local])  # type: ignore[index]
    if len(data) > MAX_PAYLOAD:
        raise SpecError(
            f"{getattr(fn, '__qualname__', 'the function')}: the pickled function and arguments are {len(data)} bytes, "
            f"over {MAX_PAYLOAD // (1024 * 1024)} MiB: pass large data by path or gs:// URI and read it inside the function"
        )
    return data


def pickle_facts(data: bytes) -> tuple[bool, set[str]]:
    """(whether the pickle holds code by value, the modules it references by reference),
    read opcode by opcode (nothing is unpickled)."""
    by_value = False
    modules: set[str] = set()
    memo: dict[int, Any] = {}
    stack: list[Any] = []  # the last pushed values that are text (else None)
    subimport = False
    for op, arg, _ in pickletools.genops(data):
        name = op.name
        if name in _STRING_OPS:
            stack.append(str(arg))
            if subimport:
                modules.add(str(arg))
                subimport = False
            if arg in _BY_VALUE_MARKS:
                by_value = True
        elif name in _GET_OPS:
            stack.append(memo.get(arg if isinstance(arg, int) else -1))
        elif name == "MEMOIZE":
            memo[len(memo)] = stack[-1] if stack else None
        elif name in _PUT_OPS:
            memo[arg if isinstance(arg, int) else -1] = stack[-1] if stack else None
        elif name == "STACK_GLOBAL":
            module, qualname = (stack[-2], stack[-1]) if len(stack) >= 2 else (None, None)
            stack.append(None)
            if isinstance(module, str):
                modules.add(module)
                if module.startswith("cloudpickle") and qualname in ("subimport", "dynamic_subimport"):
                    subimport = True
                if qualname in _BY_VALUE_MARKS:
                    by_value = True
        elif name == "GLOBAL":
            module, _, qualname = str(arg).partition(" ")
            modules.add(module)
            stack.append(None)
        else:
            stack.append(None)
        del stack[:-2]
    return by_value, modules


def _code_objects(fn: Any) -> Iterable[types.CodeType]:
    """The code shipped by value with ``fn``: its own, its nested functions', and that of the
    functions and classes of its module it names (as cloudpickle follows them)."""
    module = getattr(fn, "__module__", None)
    seen: set[int] = set()
    todo: list[Any] = [fn]
    while todo and len(seen) < _MAX_CODE_OBJECTS:
        item = todo.pop()
        if id(item) in seen:
            continue
        seen.add(id(item))
        if isinstance(item, types.CodeType):
            yield item
            todo.extend(c for c in item.co_consts if isinstance(c, types.CodeType))
        elif isinstance(item, types.FunctionType):
            todo.append(item.__code__)
            for cell in item.__closure__ or ():
                try:
                    todo.append(cell.cell_contents)
                except ValueError:
                    pass  # an empty cell
            for name in item.__code__.co_names:
                value = item.__globals__.get(name)
                if isinstance(value, (types.FunctionType, type)) and getattr(value, "__module__", None) == module:
                    todo.append(value)
        elif isinstance(item, type) and item.__module__ == module:
            todo.extend(v for v in vars(item).values() if isinstance(v, (types.FunctionType, staticmethod, classmethod)))
        elif isinstance(item, (staticmethod, classmethod)):
            todo.append(item.__func__)


def imported_modules(fn: Any, data: bytes) -> set[str]:
    """The top-level modules the function needs in the task: those the pickle references and
    those its code shipped by value imports."""
    _, modules = pickle_facts(data)
    for code in _code_objects(fn):
        for instruction in dis.get_instructions(code):
            if instruction.opname == "IMPORT_NAME" and isinstance(instruction.argval, str):
                modules.add(instruction.argval)
    return {m.split(".")[0] for m in modules if m}


def found_requirements(modules: Iterable[str]) -> list[str]:
    """The distributions ``modules`` come from (the standard library's and the image's own left
    out), sorted: the job's requirements when none are given."""
    owners = importlib.metadata.packages_distributions()
    out: set[str] = set()
    for top in modules:
        if top in sys.stdlib_module_names or top.startswith("_"):
            continue
        for dist in owners.get(top, ()):
            if _normal(dist) not in IMAGE_PROVIDED:
                out.add(_normal(dist))
    return sorted(out)


def cloudpickle_requirement() -> str:
    """The cloudpickle the task unpickles with: this one's version (its format is its own)."""
    return f"cloudpickle=={importlib.metadata.version('cloudpickle')}"


def shipped_cloudpickle() -> dict[str, bytes]:
    """This process's cloudpickle, as the package's files ``tfjob_function/_vendor/cloudpickle/``
    (its modules' sources, their license in them): the task unpickles with the very code that
    pickled, on any image, without a package index. Empty when it is not a directory of
    modules within :data:`MAX_SHIPPED` (then it is a requirement, pinned to this version)."""
    import cloudpickle  # type: ignore[import-untyped,import-not-found,unused-ignore]

    where = Path(str(getattr(cloudpickle, "__file__", "") or ".")).parent
    files = {f"{PACKAGE}/{VENDOR}/__init__.py": b""}
    total = 0
    for path in sorted(where.glob("*.py")):
        body = path.read_bytes()
        total += len(body)
        if total > MAX_SHIPPED:
            return {}
        files[f"{PACKAGE}/{VENDOR}/cloudpickle/{path.name}"] = body
    return files if f"{PACKAGE}/{VENDOR}/cloudpickle/__init__.py" in files else {}


def given_requirements(requirements: Any) -> list[str]:
    """``requirements=``: a requirements file's path, or the lines themselves, each checked."""
    from ..description.requirements import read_requirements

    if isinstance(requirements, (str, os.PathLike)):
        return read_requirements(requirements)
    if not isinstance(requirements, (list, tuple)) or not all(isinstance(r, str) for r in requirements):
        raise SpecError(
            field="requirements", value=requirements, problem="must be a requirements file's path or a list of requirement lines"
        )
    from packaging.requirements import InvalidRequirement, Requirement

    lines = [r.strip() for r in requirements if r.strip()]
    for line in lines:
        try:
            Requirement(line)
        except InvalidRequirement as e:
            raise SpecError(field="requirements", value=line, problem=f"is not a requirement ({e})", fix="e.g. 'pandas>=2'") from None
    return lines


def runner_source() -> bytes:
    return (Path(__file__).parent / "runner.py").read_bytes()


def build_package(data: bytes, requirements: Sequence[str], *, found: Sequence[str] = (), by_value: bool = False) -> FunctionPackage:
    """The package of a pickled call, written once under its digest (an unchanged call finds it)."""
    from hashlib import sha256

    lines = list(requirements)
    shipped = shipped_cloudpickle()
    if not shipped and not any(
        _normal(line.split("=")[0].split("<")[0].split(">")[0].split("~")[0].split("[")[0].strip()) == "cloudpickle" for line in lines
    ):
        lines.insert(0, cloudpickle_requirement())
    files = {
        REQUIREMENTS: ("".join(f"{line}\n" for line in lines)).encode(),
        f"{PACKAGE}/__init__.py": b"",
        f"{PACKAGE}/run.py": runner_source(),
        f"{PACKAGE}/{PAYLOAD}": data,
        **shipped,
    }
    whole = b"".join(name.encode() + b"\0" + str(len(body)).encode() + b"\0" + body for name, body in sorted(files.items()))
    digest: str = sha256(whole).hexdigest()
    directory = functions_dir() / digest[:24]
    # Found or written under the directory's lock, and touched: a prune (.retention) keeps it.
    with locked(directory.parent, exclusive=False, wait=True):
        if (directory / PACKAGE / PAYLOAD).is_file():
            try:
                os.utime(directory)
            except OSError:
                pass  # not ours to touch (another user's); it is kept a day from when it was made
        else:
            _write_package(directory, files)
    shipped_version = importlib.metadata.version("cloudpickle") if shipped else None
    return FunctionPackage(directory, digest, by_value, tuple(lines), tuple(found), len(data), shipped_version)


def _write_package(directory: Path, files: Mapping[str, bytes]) -> None:
    """``files`` as the package directory, whole or not at all (a concurrent writer's is as good)."""
    import shutil
    import tempfile

    directory.parent.mkdir(parents=True, exist_ok=True)
    partial = Path(tempfile.mkdtemp(prefix=".partial-", dir=directory.parent))
    try:
        for name, body in files.items():
            (partial / name).parent.mkdir(parents=True, exist_ok=True)
            (partial / name).write_bytes(body)
        try:
            os.replace(partial, directory)
        except OSError:
            if not (directory / PACKAGE / PAYLOAD).is_file():
                raise
    finally:
        shutil.rmtree(partial, ignore_errors=True)
