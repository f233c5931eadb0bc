"""Logs of a local job: prefixes, per-task files, colours, the summary table, reading back."""

from __future__ import annotations

import io
import os
from pathlib import Path

from tfjob.backends.local.logs import (
    JOB_LOG,
    MAX_LINE,
    LogRouter,
    SummaryRow,
    format_duration,
    read_lines,
    read_tail,
    render_summary,
    use_colour,
)


def test_lines_are_prefixed_as_on_every_backend_and_kept_per_task(tmp_path: Path) -> None:
    console = io.StringIO()
    router = LogRouter(tmp_path, console, colour=False)
    chief = router.open_task("chief-0", "chief")
    worker = router.open_task("worker-10", "worker")
    assert router.feed(chief, b"step 1\nstep") == ["step 1"]
    assert router.feed(worker, b"w\n") == ["w"]
    assert router.feed(chief, b" 2\n") == ["step 2"]
    assert router.feed(chief, b"no newline at exit", final=True) == ["no newline at exit"]
    router.note("restarting")
    router.note("only in the file", console=False)
    chief.close()
    worker.close()
    router.close()
    assert console.getvalue().splitlines() == [
        "[chief-0] step 1",
        "[worker-10] w",
        "[chief-0] step 2",
        "[chief-0] no newline at exit",
        "[tfjob] restarting",
    ]
    assert (tmp_path / "chief-0.log").read_bytes() == b"step 1\nstep 2\nno newline at exit"
    assert (tmp_path / JOB_LOG).read_text().splitlines()[-1] == "[tfjob] only in the file"


def test_a_line_without_end_is_cut_rather_than_held_forever(tmp_path: Path) -> None:
    router = LogRouter(tmp_path, None, colour=False)
    task = router.open_task("chief-0", "chief")
    lines = router.feed(task, b"x" * (MAX_LINE + 10))
    assert len(lines) == 1 and len(lines[0]) == MAX_LINE + 10
    assert router.feed(task, b"\xff\xfe bad bytes\n") == ["\ufffd\ufffd bad bytes"]
    task.close()
    router.close()


def test_colours_only_on_a_terminal(tmp_path: Path) -> None:
    assert not use_colour(io.StringIO(), {})
    assert not use_colour(None, {})
    master, slave = os.openpty()
    with open(slave, "w", closefd=True) as tty:
        assert use_colour(tty, {})
        assert not use_colour(tty, {"NO_COLOR": "1"})
        assert not use_colour(tty, {"TERM": "dumb"})
    os.close(master)
    console = io.StringIO()
    router = LogRouter(tmp_path, console, colour=True)
    task = router.open_task("ps-0", "ps")
    router.feed(task, b"serving\n")
    task.close()
    router.close()
    assert console.getvalue() == "\033[35m[ps-0]\033[0m serving\n"
    assert (tmp_path / JOB_LOG).read_text() == "[ps-0] serving\n"  # files never get colours


def test_summary_table() -> None:
    rows = [
        SummaryRow("chief-0", "SUCCEEDED", 0, None, 12.04),
        SummaryRow("worker-1", "FAILED", 3, None, 0.5),
        SummaryRow("ps-0", "STOPPED", None, 9, 185.0),
        SummaryRow("ps-1", "RUNNING", None, None, None),
    ]
    assert render_summary(rows).splitlines() == [
        "TASK      STATE      EXIT     DURATION",
        "chief-0   SUCCEEDED  0        12.0s",
        "worker-1  FAILED     3        0.5s",
        "ps-0      STOPPED    SIGKILL  3m05s",
        "ps-1      RUNNING    -        -",
    ]
    assert format_duration(7500) == "2h05m"


def test_tail_reads_only_the_end(tmp_path: Path) -> None:
    path = tmp_path / "big.log"
    path.write_text("".join(f"line {i}\n" for i in range(5000)))
    assert read_tail(path, 3, block=64) == ["line 4997", "line 4998", "line 4999"]
    assert read_tail(path, 0) == []
    assert read_tail(tmp_path / "missing.log", 5) == []


def test_reading_back_a_log_is_bounded_whatever_its_lines(tmp_path: Path) -> None:
    from tfjob.backends.local.logs import MAX_LINE, MAX_TAIL_BYTES

    # A task that printed 20 MiB without a newline, then one line.
    path = tmp_path / "worker-0.log"
    path.write_bytes(b"x" * (20 * 1024 * 1024) + b"\ndone\n")
    tail = read_tail(path, 2)
    assert tail[-1] == "done" and tail[0].startswith("\u2026x")
    assert sum(len(line) for line in tail) <= MAX_TAIL_BYTES + 8
    # Reading it whole hands the long line over in bounded pieces, then the last line.
    pieces = list(read_lines(path))
    assert pieces[-1] == "done" and "".join(pieces[:-1]) == "x" * (20 * 1024 * 1024)
    assert max(len(piece) for piece in pieces) <= 1024 * 1024 + MAX_LINE


def test_following_reads_what_is_appended_until_the_writer_is_done(tmp_path: Path) -> None:
    path = tmp_path / "job.log"
    path.write_text("a\nb\n")
    writes = iter([b"c\npart", b"ial\n", b""])
    done = []

    def sleep(seconds: float) -> None:
        # Each pause of the follower is when the "writer" appends its next chunk.
        chunk = next(writes, None)
        if chunk is None or chunk == b"":
            done.append(True)
        if chunk:
            with open(path, "ab") as f:
                f.write(chunk)

    def is_done() -> bool:
        return bool(done)

    lines = list(read_lines(path, prefix="> ", tail=1, follow=True, is_done=is_done, poll_interval=0.0, sleep=sleep))
    assert lines == ["> b", "> c", "> partial"]


def test_reading_without_follow_and_a_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "t.log"
    path.write_text("one\ntwo")
    assert list(read_lines(path)) == ["one", "two"]
    assert list(read_lines(tmp_path / "none.log")) == []


def test_the_container_engines_own_noise_is_not_the_tasks(tmp_path: Path) -> None:
    """podman prints "forwarding signal 15 … no such container" into a task's output when
    teardown's SIGTERM arrives after the container ended: kept out of every log; a line of
    the task's that merely mentions it stays, and a partial line waits for its end."""
    from tfjob.runtime.engine import ENGINE_NOISE

    cid = "f8fe64b82db7acf60c760d7ca2111ddda63c4bc1c2dc383011eabec4240668ed"
    noise = (
        f'time="2026-11-25T09:41:16Z" level=error msg="forwarding signal 15 to container {cid}: '
        f'container {cid} does not exist in database: no such container"'
    ).encode()
    console = io.StringIO()
    router = LogRouter(tmp_path, console, colour=False)
    task = router.open_task("worker-0", "worker", ENGINE_NOISE)
    assert router.feed(task, b"step 1\nforwarding signal 15 is what podman says\npart") == [
        "step 1",
        "forwarding signal 15 is what podman says",
    ]
    assert router.feed(task, b"ial\n" + noise + b"\n") == ["partial"]
    assert router.feed(task, b"last words", final=True) == ["last words"]
    task.close()
    router.close()
    assert (tmp_path / "worker-0.log").read_bytes() == b"step 1\nforwarding signal 15 is what podman says\npartial\nlast words"
    assert "no such container" not in console.getvalue() and "no such container" not in (tmp_path / JOB_LOG).read_text()
    plain = LogRouter(tmp_path / "p", None, colour=False).open_task("chief-0", "chief")  # processes: nothing is dropped
    assert plain.split(noise + b"\n") == [noise]
    plain.close()
