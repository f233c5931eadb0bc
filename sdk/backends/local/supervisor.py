"""The detached supervisor of a local job: ``python -m tfjob.backends.local.supervisor [--store PATH] JOB_ID``.

``tfjob submit --detach`` and ``Job.submit()`` record the job (PENDING) and start
this in a new session, so it outlives the command that started it and is deaf to
that terminal's Ctrl-C. It runs the job exactly like the foreground path, without
a console: task lines go to the log files only. SIGTERM (or SIGINT, SIGHUP)
cancels the job; so does ``tfjob cancel``, through the store — the one the job was
recorded in (``--store``, the submitting backend's; default the user's).
"""

from __future__ import annotations

import os
import sys
from typing import Sequence

from ...model import JobState
from .options import LocalOptions
from ...errors import TfjobError
from ...description.spec import JobSpec
from ...runtime.store import JobStore, process_start_time
from .runner import check_job, run_job


def main(argv: Sequence[str] | None = None) -> int:
    """Supervise the job whose id is the last argument (in the store ``--store PATH``, else
    the user's); 0 once its end is recorded."""
    args = list(sys.argv[1:] if argv is None else argv)
    path = None
    if len(args) == 3 and args[0] == "--store":
        path, args = args[1], args[2:]
    if len(args) != 1:
        print("usage: python -m tfjob.backends.local.supervisor [--store PATH] JOB_ID", file=sys.stderr)
        return 2
    with JobStore(path) as store:
        record = store.resolve(args[0])
        store.update(record.id, supervisor_pid=os.getpid(), supervisor_start=process_start_time(os.getpid()))
        try:
            prepared = check_job(JobSpec.from_dict(record.spec), LocalOptions(**record.options))
        except TfjobError as e:
            # Checked before the job was recorded; only a changed machine gets here.
            store.set_state(record.id, JobState.FAILED, str(e))
            print(f"error: {e}", file=sys.stderr)
            return 1
        run_job(record, store, prepared, console=None, summary=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
