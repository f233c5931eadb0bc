"""The reliability suite's bookkeeping (a pytest plugin, registered by conftest.py).

Tests marked ``@pytest.mark.reliability`` — property tests of every parser of outside
input, and fault injection into local clusters and the Vertex AI path — take the
session-wide :class:`Reliability` recorder as the ``reliability`` fixture and tell it
what they did:

- ``reliability.tried()`` once per input a property test fed to a parser;
- ``reliability.fault(kind)`` for each fault injected (a SIGKILL, a 503, a lost answer…);
- ``reliability.watch(processes)`` for processes a job started beyond its recorded tasks;
- ``reliability.expect_recorded(ids)`` with the jobs a (fake) service created.

After the body of every reliability test, and before any fixture cleans up, the plugin
settles the test: every process of every job in the test's job store (and every
watched one) must be gone within a few seconds — one still alive is an **orphan** (it
is killed, counted, and fails the test); every job must have reached a terminal state
— a job still recorded as queued, pending or running (one ``tfjob list`` would show as
running forever), or created by a service but missing from the store, is **lost**. A
job whose launcher died, which ``tfjob list`` shows as LOST, *is* accounted for: that
is the system telling the truth, not losing the job.

Every test that takes the recorder (marked or not) also fails when a traceback was seen
in what its commands printed (``reliability.output``) or a secret in a package it
inspected (``reliability.packaged``) while it ran: these are counted, and never allowed.

At the end of the session one line sums it up::

    reliability: 71043 inputs tried, 43 faults injected, 0 jobs lost, 0 orphans, 0 secrets packaged, 0 tracebacks

and the run fails if any of the last four is not 0 (whichever test counted it failed too).
"""

from __future__ import annotations

import os
import signal
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Iterator

import pytest

#: How long processes get to disappear after a test (SIGKILL and reaping are asynchronous; a
#: loaded machine is slow at both). Only a process still there waits it out.
SETTLE_SECONDS = 30.0

Process = tuple[int, "int | None"]


@dataclass
class Reliability:
    """Counts for the summary line, and what the current test asked to be checked."""

    inputs: int = 0
    faults: int = 0
    lost: int = 0
    orphans: int = 0
    #: Secret files or link targets found inside a package tfjob built.
    secrets_packaged: int = 0
    #: Python tracebacks seen in what a command printed.
    tracebacks: int = 0
    tests: int = 0
    kinds: Counter[str] = field(default_factory=Counter)
    #: How long processes get to disappear after a test.
    settle_seconds: float = SETTLE_SECONDS
    _watched: list[Process] = field(default_factory=list)
    _created: list[tuple[str, str]] = field(default_factory=list)

    def tried(self, n: int = 1) -> None:
        """``n`` more inputs were fed to a parser."""
        self.inputs += n

    def fault(self, kind: str, n: int = 1) -> None:
        """``n`` faults of ``kind`` were injected (``"ps SIGKILL"``, ``"503"``…)."""
        self.faults += n
        self.kinds[kind] += n

    def packaged(self, leaks: int) -> None:
        """A package was inspected and ``leaks`` secrets (or link targets) were found in it."""
        self.secrets_packaged += leaks

    def output(self, text: str) -> str:
        """Count the tracebacks in a command's output; return the text (for asserting on)."""
        self.tracebacks += text.count("Traceback (most recent call last)")
        return text

    def watch(self, processes: Iterable[Process]) -> None:
        """(pid, start time) pairs that must be gone once the test's jobs have ended."""
        self._watched.extend(processes)

    def expect_recorded(self, job_ids: Iterable[str], backend: str = "vertex") -> None:
        """Jobs a service created: each must be in the job store (else it runs unseen: lost)."""
        self._created.extend((job_id, backend) for job_id in job_ids)

    def unallowed(self) -> tuple[int, int]:
        """(secrets packaged, tracebacks) so far: what no test may add to."""
        return self.secrets_packaged, self.tracebacks

    def unallowed_since(self, before: tuple[int, int]) -> list[str]:
        """What was counted since :meth:`unallowed` returned ``before``, as problems."""
        secrets, tracebacks = (now - then for now, then in zip(self.unallowed(), before))
        problems = []
        if secrets:
            problems.append(f"{secrets} secret(s) or link target(s) went into a package")
        if tracebacks:
            problems.append(f"{tracebacks} Python traceback(s) in what a command printed")
        return problems

    def failed(self) -> bool:
        """True if the session counted anything that fails a run (a lost job, an orphan, a
        packaged secret, a traceback)."""
        return bool(self.lost or self.orphans or self.secrets_packaged or self.tracebacks)

    def line(self) -> str:
        """The summary line."""
        return (
            f"reliability: {self.inputs} inputs tried, {self.faults} faults injected, "
            f"{self.lost} jobs lost, {self.orphans} orphans, "
            f"{self.secrets_packaged} secrets packaged, {self.tracebacks} tracebacks"
        )

    # -- settling a test -----------------------------------------------------------------
    def settle(self) -> list[str]:
        """Check the finished test's jobs and processes; count and return what is wrong."""
        from tfjob.runtime.store import JobStore, process_alive, process_start_time

        problems: list[str] = []
        processes = list(self._watched)
        created, self._watched, self._created = list(self._created), [], []
        store_file = _store_file()
        records: list[Any] = []
        if store_file is not None:
            with JobStore() as store:
                records = store.list()
                for record in records:
                    processes.extend((t.pid, t.proc_start) for t in store.tasks(record.id) if t.pid)
                    if record.supervisor_pid and record.supervisor_pid != os.getpid():
                        processes.append((record.supervisor_pid, record.supervisor_start))
        # What is ending gets a moment (SIGKILL and reaping are asynchronous); nothing is killed yet.
        from tfjob.backends.local.contain import job_processes

        deadline = time.monotonic() + self.settle_seconds
        # Every process whose environment carries a finished job's id, whatever its group or parent.
        ended = [r.id for r in records if r.state.is_terminal]
        processes.extend((pid, process_start_time(pid)) for job_id in ended for pid in job_processes(job_id))
        alive = [p for p in dict.fromkeys(processes) if process_alive(*p)]
        while alive and time.monotonic() < deadline:
            time.sleep(0.02)
            alive = [p for p in alive if process_alive(*p)]
        # Lost: not ended, and no dead supervisor to explain it (`tfjob list` would show it LOST).
        if records:
            with JobStore() as store:
                for record in records:
                    now = store.get(record.id) or record
                    if now.state.is_terminal:
                        continue
                    supervisor = now.supervisor_pid
                    if supervisor and supervisor != os.getpid() and not process_alive(supervisor, now.supervisor_start):
                        continue
                    self.lost += 1
                    problems.append(f"job {record.id} ({record.backend}) was left {now.state.value}")
        if alive:
            self.orphans += len(alive)
            problems.append(f"{len(alive)} process(es) outlived their job: pids {[p for p, _ in alive]}")
        for pid, start in alive:
            if start is not None:  # only a process proven to be the one recorded
                _kill(pid)
        known = {r.id for r in records}
        for job_id, backend in created:
            if job_id not in known:
                self.lost += 1
                problems.append(f"{backend} job {job_id} was created but is not in the job store")
        return problems


def _store_file() -> Path | None:
    """The running test's job store, if the test ever opened one."""
    from tfjob.runtime.settings import tfjob_home

    path = tfjob_home() / "jobs.db"
    return path if path.is_file() else None


def _kill(pid: int) -> None:
    # Leave nothing running behind a failed test: the process, and its group if it leads one.
    for kill in (lambda: os.killpg(pid, signal.SIGKILL), lambda: os.kill(pid, signal.SIGKILL)):
        try:
            kill()
        except (ProcessLookupError, PermissionError, OSError):
            pass


RECORDER = Reliability()


@pytest.fixture(scope="session")
def reliability() -> Reliability:
    """The session's :class:`Reliability` recorder (session-scoped: fine inside @given tests)."""
    return RECORDER


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    """After a reliability test's body, before its fixtures clean up: settle it; and fail
    any test that takes the recorder if a traceback or a packaged secret was counted."""
    marked = item.get_closest_marker("reliability") is not None
    if not marked and "reliability" not in getattr(item, "fixturenames", ()):
        return (yield)
    RECORDER.tests += marked
    before = RECORDER.unallowed()
    try:
        result = yield
    except BaseException:
        if marked:
            RECORDER.settle()  # still counted; the test's own failure is the one to show
        raise
    problems = RECORDER.settle() if marked else []
    problems += RECORDER.unallowed_since(before)
    if problems:
        raise AssertionError("reliability: " + "; ".join(problems))
    return result


_COUNTS = ("inputs", "faults", "lost", "orphans", "secrets_packaged", "tracebacks", "tests")


def pytest_sessionfinish(session: pytest.Session) -> None:
    """In a worker of a side-by-side run (``pytest -n``): hand the counts to the controller.
    In the controller (or a run without workers): a lost job, an orphan, a packaged secret
    or a traceback fails the run, whatever the tests' own results were."""
    out = getattr(session.config, "workeroutput", None)
    if out is not None:
        out["reliability"] = {**{name: getattr(RECORDER, name) for name in _COUNTS}, "kinds": dict(RECORDER.kinds)}
    elif RECORDER.failed() and session.exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


@pytest.hookimpl(optionalhook=True)  # an xdist hook
def pytest_testnodedown(node: Any, error: Any) -> None:
    """In the controller of a side-by-side run: add up what each worker counted."""
    counts = getattr(node, "workeroutput", {}).get("reliability")
    if counts:
        for name in _COUNTS:
            setattr(RECORDER, name, getattr(RECORDER, name) + int(counts[name]))
        RECORDER.kinds.update(counts["kinds"])


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """One line, when any reliability test ran (or anything was counted); said as a failure
    when the counts fail the run."""
    if RECORDER.tests or RECORDER.failed():
        terminalreporter.write_line(RECORDER.line() + (" — the run fails on these" if RECORDER.failed() else ""), red=RECORDER.failed())
