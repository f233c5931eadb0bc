"""What starting the CLI costs: ``tfjob --help`` against two baselines of the same run.

* ``python -c pass``: the interpreter alone (target: ``tfjob --help`` ≤ 8× it);
* ``python -c "import google.cloud.aiplatform"``: what a user of the Vertex AI SDK
  pays before doing anything (target: ``tfjob --help`` ≥ 10× faster).

    .venv/bin/python bench/cli_start.py [--runs 5] [--quick] [--json FILE]
"""

from __future__ import annotations

import sys

from common import BIN, PYTHON, Figure, Run, Target, clean_env, command, remember, rounds, section_main

SECTION = "cli"
AIPLATFORM = "import google.cloud.aiplatform"
TARGET_RATIO = 8.0
TARGET_SPEEDUP = 10.0


def aiplatform_import() -> Run:
    """The run importing the Vertex AI SDK (the baseline the Vertex section shares)."""
    return command([PYTHON, "-c", "import google.cloud.aiplatform"], env=clean_env())


def measure(runs: int, quick: bool = False) -> list[Figure]:
    """``tfjob --help``, ``python -c pass`` and the Vertex SDK import, interleaved."""
    env = clean_env()
    samples = rounds(
        {
            "tfjob --help": command([BIN / "tfjob", "--help"], env=env),
            "python -c pass": command([PYTHON, "-c", "pass"], env=env),
            AIPLATFORM: aiplatform_import(),
        },
        runs,
        warmup=0 if quick else 1,
    )
    remember(samples[AIPLATFORM], runs)
    cli = samples["tfjob --help"]
    return [
        Figure("cli.help_vs_python", SECTION, "tfjob --help", cli, samples["python -c pass"], Target("ratio-max", TARGET_RATIO)),
        Figure("cli.help_vs_aiplatform", SECTION, "tfjob --help", cli, samples[AIPLATFORM], Target("speedup-min", TARGET_SPEEDUP)),
    ]


if __name__ == "__main__":
    sys.exit(section_main(measure, __doc__))
