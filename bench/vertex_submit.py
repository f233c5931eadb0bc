"""What the Vertex AI submit path costs, against the Vertex AI SDK's import in the same run.

* ``tfjob submit --backend vertex --dry-run --workers 4 --ps 2`` on a sample trainer
  (a real CLI process: flags, spec, sdist build, request body, printed JSON);
* the import cost of the submit path (``tfjob.backends.vertex``, ``google.cloud.aiplatform_v1``
  and ``google.cloud.storage``: what a real submit loads);
* the baseline of both: ``python -c "import google.cloud.aiplatform"``, what a user of
  the Vertex AI SDK pays before doing anything (tfjob never imports that SDK).

Bytes uploaded on an unchanged re-submit are in the packaging section (sdist_build.py).

    .venv/bin/python bench/vertex_submit.py [--runs 5] [--quick] [--json FILE]
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from cli_start import AIPLATFORM, aiplatform_import
from common import BIN, PYTHON, Figure, cached, clean_env, command, remember, rounds, section_main

SECTION = "vertex"
SUBMIT_IMPORTS = "import tfjob.backends.vertex.service, tfjob.backends.vertex.client; from google.cloud import aiplatform_v1, storage"

_MODULES = {
    "__init__.py": "",
    "task.py": (
        "import argparse\n\nfrom trainer import model, util\n\n\n"
        "def main() -> None:\n"
        "    parser = argparse.ArgumentParser()\n"
        "    parser.add_argument('--epochs', type=int, default=1)\n"
        "    args = parser.parse_args()\n"
        "    util.log(f'training {model.NAME} for {args.epochs} epochs')\n\n\n"
        "if __name__ == '__main__':\n    main()\n"
    ),
    "model.py": "NAME = 'sample'\n\n\ndef build(units: int = 16) -> dict:\n    return {'units': units}\n",
    "util.py": "def log(message: str) -> None:\n    print(message, flush=True)\n",
}


def write_sample_trainer(parent: Path) -> Path:
    """A small trainer package (``trainer.task`` and two modules) under ``parent``."""
    pkg = parent / "trainer"
    pkg.mkdir(parents=True, exist_ok=True)
    for name, text in _MODULES.items():
        (pkg / name).write_text(text)
    return pkg


def measure(runs: int, quick: bool = False) -> list[Figure]:
    """The dry run and the submit path's imports, interleaved with the SDK's import."""
    warmup = 0 if quick else 1
    with tempfile.TemporaryDirectory(prefix="tfjob-bench-vertex-") as tmp:
        env = clean_env(TFJOB_HOME=str(Path(tmp) / "home"))
        trainer = write_sample_trainer(Path(tmp))
        dry_run = [BIN / "tfjob", "submit", trainer, "-m", "trainer.task", "--workers", "4", "--ps", "2",
                   "--backend", "vertex", "--dry-run"]  # fmt: skip
        items = {
            "tfjob submit --dry-run (vertex, 1+4+2)": command(dry_run, env=env),
            "import of the submit path": command([PYTHON, "-c", SUBMIT_IMPORTS], env=env),
        }
        # The SDK's import is measured once per bench run: with the CLI section if it ran.
        baseline = cached(AIPLATFORM, runs)
        if baseline is None:
            items[AIPLATFORM] = aiplatform_import()
        samples = rounds(items, runs, warmup=warmup)
    baseline = baseline or remember(samples[AIPLATFORM], runs)
    return [
        Figure(
            "vertex.dry_run",
            SECTION,
            "tfjob submit --dry-run --backend vertex (1+4+2)",
            samples["tfjob submit --dry-run (vertex, 1+4+2)"],
            baseline,
        ),
        Figure(
            "vertex.submit_imports",
            SECTION,
            "import of the submit path (tfjob.backends.vertex + aiplatform_v1 + storage)",
            samples["import of the submit path"],
            baseline,
        ),
    ]


if __name__ == "__main__":
    sys.exit(section_main(measure, __doc__))
