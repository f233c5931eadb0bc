"""The CLI's options, made from the knobs' declarations and named after what they set.

Each knob is declared once (:mod:`tfjob.knobs`, and each backend's options in its folder);
this module turns every declaration into a click option. Every option of ``submit`` / ``render`` that describes the job is named after the
:class:`tfjob.Job` keyword it sets (``--module-name`` is ``module``, ``--display-name``
``name``, ``--context`` ``context``…), so a command hands them to ``Job`` as they come, and
``tune`` takes the same definitions (less :data:`NOT_FOR_TUNE`) instead of copying them.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable, Iterator

import click


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
#: The most a cached table may hold (the real one is ~40 KiB).
_CACHE_BYTES = 1 << 20


def knobs() -> dict[str, Flag]:
    """Every knob's flag (:func:`tfjob.job_knobs`), read when a command first needs its options.

    Reading the declarations imports every backend's options module (their dataclasses cost
    ~20 ms at each start), so the table is kept beside the compiled modules, as Python keeps
    its bytecode: ``__pycache__/knob-flags-<fingerprint>.json``, the fingerprint being the
    size and time of every module that declares knobs. A table that is missing, stale,
    unreadable or malformed is made again from the declarations; one that cannot be written
    (a read-only install) is simply not kept."""
    global _FLAGS
    if _FLAGS is None:
        cache = _cache_path()
        _FLAGS = _read_flags(cache) if cache is not None else None
        if _FLAGS is None:
            from tfjob import job_knobs

            _FLAGS = {k.name: Flag(k.name, tuple(k.flags), k.kind, k.described(), k.cli, k.tune) for k in job_knobs().values()}
            if cache is not None:
                _write_flags(cache, _FLAGS)
    return _FLAGS


def _cache_path() -> Any:
    """``__pycache__/knob-flags-<fingerprint>.json`` beside this module, None when the
    declaring modules cannot be listed."""
    import importlib.util
    import os
    import zlib

    spec = importlib.util.find_spec("tfjob")  # the package's folder (the CLI imports only its public names)
    if spec is None or not spec.submodule_search_locations:
        return None
    root = list(spec.submodule_search_locations)[0]
    seen: list[str] = []
    try:
        for top, dirs, files in os.walk(os.path.join(root, "backends")):
            dirs[:] = sorted(d for d in dirs if d != "__pycache__")
            seen += [os.path.join(top, f) for f in sorted(files) if f.endswith(".py")]
        seen += [os.path.join(root, "knobs.py"), os.path.join(root, "model.py"), __file__]
        stamp = "\n".join(f"{p} {st.st_size} {st.st_mtime_ns}" for p in seen for st in [os.stat(p)])
    except OSError:
        return None
    from pathlib import Path

    key = f"{zlib.crc32(stamp.encode()):08x}{len(stamp):x}"
    return Path(__file__).parent / "__pycache__" / f"knob-flags-{key}.json"


def _read_flags(path: Any) -> dict[str, Flag] | None:
    import json

    try:
        with open(path, "rb") as f:
            data = f.read(_CACHE_BYTES + 1)
        rows = json.loads(data) if len(data) <= _CACHE_BYTES else None
        found = {}
        for name, flags, kind, text, cli, tune in rows:
            if not (isinstance(name, str) and isinstance(kind, str) and isinstance(text, str) and isinstance(flags, list)):
                return None
            if not (all(isinstance(f, str) for f in flags) and isinstance(cli, bool) and isinstance(tune, bool)):
                return None
            found[name] = Flag(name, tuple(flags), kind, text, cli, tune)
        return found or None
    except (OSError, ValueError, TypeError):
        return None


def _write_flags(path: Any, flags: dict[str, Flag]) -> None:
    import json
    import os

    try:
        path.parent.mkdir(exist_ok=True)
        for old in path.parent.glob("knob-flags-*.json"):  # an older table, made before a change
            old.unlink(missing_ok=True)
        part = path.with_name(f"{path.name}.{os.getpid()}.part")
        part.write_text(json.dumps([f.row() for f in flags.values()]))
        os.replace(part, path)
    except OSError:
        pass


def option_of(knob: Flag) -> Callable[[Any], Any]:
    """The click option of a knob: its flags, its kind, its help with the backends that take it."""
    kind = knob.kind
    extra: dict[str, Any] = {}
    if kind == "int":
        extra["type"] = int
    elif kind == "float":
        extra["type"] = float
    elif kind == "flag":
        extra.update(is_flag=True, default=None)
    elif kind == "switch":
        extra["default"] = None
    elif kind == "list":
        extra["multiple"] = True
    return click.option(*knob.flags, knob.name, help=knob.described(), **extra)


class _KnobOptions:
    """``JOB_OPTIONS``: the options that set a :class:`tfjob.Job` keyword (the parameter's name is
    the keyword), made from every knob's declaration (:func:`tfjob.backends.knobs`) — what every
    backend takes first, then each backend's own, each flag's help naming the backends that take
    it — when a :class:`KnobCommand` is first used: ``tfjob --help`` lists the commands without
    reading a backend's declarations."""

    def __iter__(self) -> Iterator[Callable[[Any], Any]]:
        return iter([option_of(k) for k in knobs().values() if k.cli])


JOB_OPTIONS = _KnobOptions()


def knob_params(tune: bool = False) -> list[click.Parameter]:
    """The click options of every knob with a flag (for ``tfjob tune``, those declared ``tune=True``)."""

    def probe() -> None:
        pass

    for k in knobs().values():
        if k.cli and (k.tune or not tune):
            option_of(k)(probe)
    params: list[click.Parameter] = probe.__click_params__  # type: ignore[attr-defined]
    return params


class KnobCommand(click.Command):
    """A command whose knob options (``@apply(JOB_OPTIONS)``) are made on first use of its
    ``params``: parsing its line or showing its help, not listing it in ``tfjob --help``."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._knob_slot: tuple[int, bool] | None = getattr(self.callback, "__tfjob_knobs__", None)

    @property
    def given_params(self) -> list[click.Parameter]:
        """The parameters declared with the command, without the knobs' options."""
        return self._given

    @property  # type: ignore[override]
    def params(self) -> list[click.Parameter]:
        slot = self.__dict__.pop("_knob_slot", None)
        if slot is not None:
            before, tune = slot
            at = len(self._given) - before
            self._given = [*self._given[:at], *knob_params(tune), *self._given[at:]]
            self._knob_slot = None
        return self._given

    @params.setter
    def params(self, value: list[click.Parameter]) -> None:
        self._given = list(value)


#: ``submit`` / ``render`` options the command reads itself.
SUBMIT_OPTIONS: list[Callable[[Any], Any]] = [
    click.option("--package-path", "package_path_opt", help="Same as PACKAGE_PATH (gcloud spelling)."),
    click.option(
        "--worker-pool-spec",
        "worker_pool_spec",
        multiple=True,
        help="gcloud's pool syntax, once per pool in order (chief, workers, ps, evaluators): machine-type=…,replica-count=…,accelerator-type=…,container-image-uri=…,python-module=…,local-package-path=…; '' leaves a pool unused.",
    ),
    click.option(
        "--python-package-uris",
        "python_package_uris",
        multiple=True,
        help="gs:// trainer package then extra packages, already built and staged (gcloud spelling; repeat or comma-separate).",
    ),
    click.option("--async", "run_async", is_flag=True, default=False, help="Return the job id once submitted; do not wait for the end."),
    click.option("--dry-run", "dry_run", is_flag=True, default=False, help="Print the request the backend would send, and exit."),
    click.option("--output", "-o", "output", default="json", help="Format of --dry-run: json or yaml."),
]


def __getattr__(name: str) -> Any:
    if name == "NOT_FOR_TUNE":  # Job keywords that mean nothing to a study: the knobs declared tune=False
        return frozenset(k.name for k in knobs().values() if not k.tune)
    raise AttributeError(name)


def keyword_of(decorator: Callable[[Any], Any]) -> str:
    """The parameter name (the Job keyword) an option decorator declares."""

    def probe() -> None:
        pass

    decorator(probe)
    return probe.__click_params__.pop().name  # type: ignore[attr-defined]


def apply(options: Iterable[Callable[[Any], Any]], exclude: frozenset[str] = frozenset(), *, tune: bool = False) -> Callable[[Any], Any]:
    """A decorator adding ``options`` (less the ``exclude`` keywords) in their order in ``--help``.

    ``JOB_OPTIONS`` are only marked here: a :class:`KnobCommand` makes them on first use
    (``tune=True``: those a study's trials take)."""
    if options is JOB_OPTIONS:

        def mark(f: Any) -> Any:
            f.__tfjob_knobs__ = (len(getattr(f, "__click_params__", ())), tune)
            return f

        return mark
    chosen = [o for o in options if not exclude or keyword_of(o) not in exclude]

    def decorate(f: Any) -> Any:
        for option in reversed(chosen):
            f = option(f)
        return f

    return decorate
