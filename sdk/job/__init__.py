"""The job API: what to run and the handle of what was submitted.

- :mod:`.job` — :class:`Job`: the description, ``render()``, ``submit()``, ``run()``.
- :mod:`.handle` — :class:`JobHandle` (status, wait, logs, cancel, outputs…), :func:`get_job`,
  :func:`list_jobs`, and a function job's :class:`FunctionHandle`.
- :mod:`.function` — :func:`remote`: a Python function as a job.
- :mod:`.keywords` — the flat keywords a job is made from (the CLI's flags, config files).
"""

from __future__ import annotations

from .binding import bind_store as bind_store
from .handle import FunctionHandle as FunctionHandle, JobHandle as JobHandle
from .handle import get_job as get_job, list_jobs as list_jobs
from .job import Job as Job
from .keywords import check_backend_keywords as check_backend_keywords, job_keywords as job_keywords
from .function import remote as remote

__all__ = ["FunctionHandle", "Job", "JobHandle", "bind_store", "check_backend_keywords", "get_job", "job_keywords", "list_jobs", "remote"]
