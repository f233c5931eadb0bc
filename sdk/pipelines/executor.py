"""The step's entry point: KFP's executor (``kfp.dsl.executor_main``), quiet unless asked.

KFP's executor logs the whole executor input as indented JSON before it calls the
component (about 200 lines a step, in the step's log and in ``kfp.local``'s output). The
tfjob step's log is the job's ``[task]`` lines: this runs the same executor with that one
record left out, unless ``TFJOB_KFP_VERBOSE=1`` (or KFP's own logs are asked for by a
logging configuration of the caller's). Nothing else changes: the same arguments, the same
exit status, every other record.

    python3 -m tfjob.pipelines.executor kfp.dsl.executor_main --component_module_path FILE --executor_input JSON …

(The executor's module is named in the command, as KFP's local runner looks for it there.)
"""

from __future__ import annotations

import logging
import os
import runpy
import sys

#: What the executor logs first: the executor input, as JSON.
NOISY_PREFIX = "Got executor_input:"
#: KFP's executor, run as ``python -m`` runs it.
KFP_EXECUTOR = "kfp.dsl.executor_main"


class _WithoutExecutorInput(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith(NOISY_PREFIX)


def main() -> None:
    if sys.argv[1:2] == [KFP_EXECUTOR]:
        del sys.argv[1]
    if os.environ.get("TFJOB_KFP_VERBOSE", "") in ("", "0"):
        logging.getLogger().addFilter(_WithoutExecutorInput())
    runpy.run_module(KFP_EXECUTOR, run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
