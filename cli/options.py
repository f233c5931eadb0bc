"""The CLI's options, made from the knobs' declarations and named after what they set.

Each knob is declared once (:mod:`tfjob.description.knobs`, and each backend's options in its folder);
this module turns every declaration into a click option. Every option of ``submit`` / ``render`` that describes the job is named after the
:class:`tfjob.Job` keyword it sets (``--module-name`` is ``module``, ``--display-name``
``name``, ``--context`` ``context``…), so a command hands them to ``Job`` as they come, and
``tune`` takes the same definitions (less :data:`NOT_FOR_TUNE`) instead of copying them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator

import click

from .flags import knobs
from .numbers import ASCII_FLOAT, ASCII_INT

if TYPE_CHECKING:
    from tfjob._internal import Knob

__all__ = ["knobs", "option_of", "knob_params", "KnobCommand", "JOB_OPTIONS", "SUBMIT_OPTIONS", "apply", "keyword_of"]


def option_of(knob: Knob) -> Callable[[Any], Any]:
    """The click option of a knob: its flags, its kind, its help with the backends that take it."""
    kind = knob.kind
    extra: dict[str, Any] = {}
    if kind == "int":
        extra["type"] = ASCII_INT
    elif kind == "float":
        extra["type"] = ASCII_FLOAT
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

    _given: list[click.Parameter]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._knob_slot: tuple[int, bool] | None = getattr(self.callback, "__tfjob_knobs__", None)

    @property
    def given_params(self) -> list[click.Parameter]:
        """The parameters declared with the command, without the knobs' options."""
        return self._given

    @property
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
    params: list[click.Parameter] = probe.__click_params__  # type: ignore[attr-defined]
    name = params.pop().name
    assert name is not None  # (an option declared by a decorator has one)
    return name


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
