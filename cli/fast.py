"""``tfjob submit`` read without click, when its line is plain (issue 25.7).

Importing click and building its ~110 options is a third of what an unchanged re-submit
costs over a bare interpreter. A ``submit`` line made only of the options' exact spellings
(``--flag value``, ``--flag=value``, flags, at most one ``PACKAGE_PATH``, the trainer's
arguments after ``--``) is read here from the same declarations (:mod:`tfjob.cli.flags`)
into the values click would give the command, and goes the same way
(:func:`tfjob.cli.submitting.submit_job`). Anything else — help, a short option's value
joined to it, an option given twice, a value that looks like an option, an ``int`` that is
not one, an unknown option, shell completion — is left to click, which reads and words it:
:func:`read_submit` returns ``None``. ``tests/test_cli_fast.py`` holds the two readings equal.
"""

from __future__ import annotations

import os
import sys
from typing import Any, Sequence

from .flags import knobs

#: ``submit``'s own options (:data:`tfjob.cli.options.SUBMIT_OPTIONS`): spelling → (parameter, kind).
OWN: dict[str, tuple[str, str]] = {
    "--package-path": ("package_path_opt", "text"),
    "--worker-pool-spec": ("worker_pool_spec", "list"),
    "--python-package-uris": ("python_package_uris", "list"),
    "--async": ("run_async", "on"),
    "--dry-run": ("dry_run", "on"),
    "--output": ("output", "text"),
    "-o": ("output", "text"),
}
#: What click gives those when they are not on the line.
OWN_DEFAULTS: dict[str, Any] = {
    "package_path_opt": None,
    "worker_pool_spec": (),
    "python_package_uris": (),
    "run_async": False,
    "dry_run": False,
    "output": "json",
}


def spellings() -> tuple[dict[str, tuple[str, str]], dict[str, Any]]:
    """Every spelling ``submit`` takes → (parameter, kind: text, int, float, list, on, off),
    and every parameter's value when it is not given."""
    table = dict(OWN)
    defaults: dict[str, Any] = {"package_path": None}
    for knob in knobs().values():
        if not knob.cli:
            continue
        defaults[knob.name] = () if knob.kind == "list" else None
        for decl in knob.flags:
            if knob.kind in ("flag", "switch"):
                on, _, off = decl.partition("/")
                table[on] = (knob.name, "on")
                if off:
                    table[off] = (knob.name, "off")
            else:
                table[decl] = (knob.name, knob.kind if knob.kind in ("int", "float", "list") else "text")
    defaults.update(OWN_DEFAULTS)
    return table, defaults


def read_submit(args: Sequence[str]) -> tuple[dict[str, Any], list[str]] | None:
    """``submit``'s parameters as click would give them, and the trainer's arguments (after the
    first ``--``), from the line after ``submit``; ``None`` where click must read it."""
    args = list(args)
    user_args: list[str] = []
    if "--" in args:
        i = args.index("--")
        args, user_args = args[:i], args[i + 1 :]
    table, values = spellings()
    given: set[str] = set()
    positional: list[str] = []
    i = 0
    while i < len(args):
        token = args[i]
        i += 1
        if not token.startswith("-") or token == "-":
            if token == "-":
                return None
            positional.append(token)
            continue
        spelling, eq, inline = token.partition("=") if token.startswith("--") else (token, "", "")
        if spelling not in table:
            return None
        name, kind = table[spelling]
        value: Any
        if kind in ("on", "off"):
            if eq:
                return None
            value = kind == "on"
        else:
            if eq:
                value = inline
            elif i < len(args) and not args[i].startswith("-"):
                value = args[i]
                i += 1
            else:
                return None
            if kind in ("int", "float"):
                if not value.isascii():
                    return None  # another script's digits ('٥'): click refuses them in one line
                try:
                    value = int(value) if kind == "int" else float(value)
                except ValueError:
                    return None
        if kind == "list":
            values[name] = (*values[name], value)
            continue
        if name in given:
            return None
        given.add(name)
        values[name] = value
    if len(positional) > 1:
        return None
    values["package_path"] = positional[0] if positional else None
    return values, user_args


def main(args: Sequence[str]) -> int | None:
    """Run ``tfjob submit`` from ``args`` (the line after ``tfjob``) without click, with the
    click group's handling of errors (:class:`tfjob.cli.app.OneLineErrors`); ``None`` where
    the line is click's to read."""
    if not args or args[0] != "submit" or "_TFJOB_COMPLETE" in os.environ:
        return None
    read = read_submit(args[1:])
    if read is None:
        return None
    values, user_args = read
    from tfjob import TfjobError

    from .submitting import submit_job

    try:
        submit_job(rendering=False, user_args=user_args, **values)
    except TfjobError as e:
        from tfjob import flag_words

        sys.stdout.flush()
        sys.stderr.write(f"error: {e.worded('cli', flag_words)}\n")
        return e.exit_code
    except (EOFError, KeyboardInterrupt):
        sys.stderr.write("\nerror: interrupted\n")
        return 130
    except BrokenPipeError:
        devnull = os.open(os.devnull, os.O_WRONLY)  # what is left unflushed must not fail at exit
        os.dup2(devnull, sys.stdout.fileno())
        return 1
    return 0
