"""The CLI's options, made from the knobs' declarations and named after what they set.

Each knob is declared once (:mod:`tfjob.knobs`, and each backend's options in its folder);
this module turns every declaration into a click option. Every option of ``submit`` / ``render`` that describes the job is named after the
:class:`tfjob.Job` keyword it sets (``--module-name`` is ``module``, ``--display-name``
``name``, ``--context`` ``context``…), so a command hands them to ``Job`` as they come, and
``tune`` takes the same definitions (less :data:`NOT_FOR_TUNE`) instead of copying them.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable

import click

from tfjob import Knob
from tfjob import job_knobs as knobs

def option_of(knob: Knob) -> Callable[[Any], Any]:
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


#: Options that set a :class:`tfjob.Job` keyword (the parameter's name is the keyword), made
#: from every knob's declaration (:func:`tfjob.backends.knobs`): what every backend takes first,
#: then each backend's own, each flag's help naming the backends that take it.
JOB_OPTIONS: list[Callable[[Any], Any]] = [option_of(k) for k in knobs().values() if k.cli]

#: ``submit`` / ``render`` options the command reads itself.
SUBMIT_OPTIONS: list[Callable[[Any], Any]] = [
    click.option('--package-path', 'package_path_opt', help='Same as PACKAGE_PATH (gcloud spelling).'),
    click.option('--worker-pool-spec', 'worker_pool_spec', multiple=True, help="gcloud's pool syntax, once per pool in order (chief, workers, ps, evaluators): machine-type=…,replica-count=…,accelerator-type=…,container-image-uri=…,python-module=…,local-package-path=…; '' leaves a pool unused."),
    click.option('--python-package-uris', 'python_package_uris', multiple=True, help='gs:// trainer package then extra packages, already built and staged (gcloud spelling; repeat or comma-separate).'),
    click.option('--async', 'run_async', is_flag=True, default=False, help='Return the job id once submitted; do not wait for the end.'),
    click.option('--dry-run', 'dry_run', is_flag=True, default=False, help='Print the request the backend would send, and exit.'),
    click.option('--output', '-o', 'output', default='json', help='Format of --dry-run: json or yaml.'),
]

#: Job keywords that mean nothing to a study (``tfjob tune``): the knobs declared ``tune=False``.
NOT_FOR_TUNE = frozenset(k.name for k in knobs().values() if not k.tune)


def keyword_of(decorator: Callable[[Any], Any]) -> str:
    """The parameter name (the Job keyword) an option decorator declares."""

    def probe() -> None:
        pass

    decorator(probe)
    return probe.__click_params__.pop().name  # type: ignore[attr-defined]


def apply(options: Iterable[Callable[[Any], Any]], exclude: frozenset[str] = frozenset()) -> Callable[[Any], Any]:
    """A decorator adding ``options`` (less the ``exclude`` keywords) in their order in ``--help``."""
    chosen = [o for o in options if not exclude or keyword_of(o) not in exclude]

    def decorate(f: Any) -> Any:
        for option in reversed(chosen):
            f = option(f)
        return f

    return decorate
