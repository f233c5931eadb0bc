"""What starting the CLI costs: ``tfjob --help`` against two baselines of the same run.

* ``python -c pass``: the interpreter alone (target: ``tfjob --help`` ≤ 3× it);
* ``python -c "import google.cloud.aiplatform"``: what a user of the Vertex AI SDK
  pays before doing anything (target: ``tfjob --help`` ≥ 10× faster).

And what parsing a ``tfjob submit`` command line costs: importing tfjob's CLI and parsing
a typical line, against click alone parsing the same line with the same ~90 option
declarations (target: ≤ 20 ms more).

    .venv/bin/python bench/cli_start.py [--runs 5] [--quick] [--json FILE]
"""

from __future__ import annotations

import json
import sys

from common import BIN, PYTHON, Figure, Run, Target, clean_env, command, remember, rounds, section_main

SECTION = "cli"
AIPLATFORM = "import google.cloud.aiplatform"
TARGET_RATIO = 3.0
TARGET_SPEEDUP = 10.0
TARGET_PARSE_S = 0.020
#: A typical submit line (parsed only: nothing runs).
SUBMIT_LINE = [
    "trainer/", "-m", "trainer.task", "--workers", "4", "--ps", "2", "--backend", "vertex", "--region", "us-central1",
    "--staging-bucket", "gs://b", "--labels", "team=ml", "--env", "A=1", "--spot", "--dry-run",
]  # fmt: skip

_TFJOB_PARSE = "import sys, json\nfrom tfjob.cli.main import app\napp.commands['submit'].make_context('submit', json.loads(sys.argv[1]))\n"
_CLICK_PARSE = """\
import json, sys
import click
kinds = {"int": click.INT, "float": click.FLOAT, "str": click.STRING}
params = [click.Argument(["package_path"], required=False)]
for d in json.loads(sys.argv[2]):
    params.append(click.Option(d["decls"], is_flag=d["flag"], multiple=d["multiple"], type=None if d["flag"] else kinds[d["type"]]))
click.Command("submit", params=params, callback=lambda **kw: None).make_context("submit", json.loads(sys.argv[1]))
"""


def option_declarations() -> list[dict[str, object]]:
    """``tfjob submit``'s options as plain click declarations (for the click-alone baseline)."""
    import click

    from tfjob.cli.main import app

    out: list[dict[str, object]] = []
    for p in app.commands["submit"].params:
        if not isinstance(p, click.Option):
            continue
        decls = [f"{a}/{b}" for a, b in zip(p.opts, p.secondary_opts)] if p.secondary_opts else list(p.opts)
        kind = {click.INT: "int", click.FLOAT: "float"}.get(p.type, "str")  # type: ignore[call-overload]
        out.append({"decls": [*decls, p.name], "flag": bool(p.is_flag), "multiple": bool(p.multiple), "type": kind})
    return out


def aiplatform_import() -> Run:
    """The run importing the Vertex AI SDK (the baseline the Vertex section shares)."""
    return command([PYTHON, "-c", "import google.cloud.aiplatform"], env=clean_env())


def measure(runs: int, quick: bool = False) -> list[Figure]:
    """``tfjob --help``, ``python -c pass`` and the Vertex SDK import, interleaved."""
    env = clean_env()
    line, decls = json.dumps(SUBMIT_LINE), json.dumps(option_declarations())
    samples = rounds(
        {
            "tfjob --help": command([BIN / "tfjob", "--help"], env=env),
            "python -c pass": command([PYTHON, "-c", "pass"], env=env),
            AIPLATFORM: aiplatform_import(),
            "tfjob parse": command([PYTHON, "-c", _TFJOB_PARSE, line], env=env),
            "click alone": command([PYTHON, "-c", _CLICK_PARSE, line, decls], env=env),
        },
        runs,
        warmup=0 if quick else 1,
    )
    remember(samples[AIPLATFORM], runs)
    cli = samples["tfjob --help"]
    return [
        Figure("cli.help_vs_python", SECTION, "tfjob --help", cli, samples["python -c pass"], Target("ratio-max", TARGET_RATIO)),
        Figure("cli.help_vs_aiplatform", SECTION, "tfjob --help", cli, samples[AIPLATFORM], Target("speedup-min", TARGET_SPEEDUP)),
        Figure(
            "cli.parse",
            SECTION,
            f"import + parse a submit line ({len(SUBMIT_LINE)} words)",
            samples["tfjob parse"],
            samples["click alone"],
            Target("overhead-max", TARGET_PARSE_S),
        ),  # fmt: skip
    ]


if __name__ == "__main__":
    sys.exit(section_main(measure, __doc__))
