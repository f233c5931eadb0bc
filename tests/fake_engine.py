"""A fake container engine: a script named ``podman`` or ``docker`` that tfjob runs as its
engine (``--container-engine PATH``), behaving as ``$FAKE_ENGINE_MODE`` says — hung, noisy,
without its daemon, dying on Ctrl-C as the real ones do — and leaving a trace in
``$FAKE_ENGINE_DIR``: ``calls`` (one argv a line, as JSON) and ``pids`` (every engine
process and the ``sleep`` it started, so a test can check that none outlives tfjob).

Modes (comma-separated): ``inspect-hang``, ``inspect-endless`` (an answer that never ends),
``no-daemon`` (docker's words for a daemon not there), ``build-hang`` (steps, then nothing,
its output left open), ``build-line`` (one line of ``$FAKE_ENGINE_LINE_MB`` MiB, then a
failure), ``build-escapes`` (terminal control sequences in its output, then success),
``build-step-only`` (a step line, then exit 1 without a reason), ``build-slow`` (steps, then
a long sleep: for Ctrl-C and SIGTERM), ``push-hang``. Otherwise: no image is in the store,
``build`` succeeds (writing ``--iidfile``), ``tag`` and ``push`` succeed.
"""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path

SCRIPT = r"""
import json, os, signal, subprocess, sys, time
trace = os.environ["FAKE_ENGINE_DIR"]
modes = set(os.environ.get("FAKE_ENGINE_MODE", "").split(","))
args = sys.argv[1:]
with open(os.path.join(trace, "calls"), "a") as f:
    f.write(json.dumps(args) + "\n")
with open(os.path.join(trace, "pids"), "a") as f:
    f.write(f"{os.getpid()}\n")

def out(text):
    sys.stdout.write(text)
    sys.stdout.flush()

def sleeper(seconds):
    # A process of the engine's own (podman's conmon, buildah's RUN): it must go too.
    child = subprocess.Popen(["sleep", str(seconds)])
    with open(os.path.join(trace, "pids"), "a") as f:
        f.write(f"{child.pid}\n")
    with open(os.path.join(trace, "started"), "a") as f:
        f.write(" ".join(args[:2]) + "\n")
    child.wait()

# Ctrl-C kills the real engines at once, with a failure of their own.
signal.signal(signal.SIGINT, lambda *_: (sys.stderr.write("Error: interrupted\n"), os._exit(1)))
if "no-daemon" in modes:
    sys.stderr.write("Cannot connect to the Docker daemon at unix:///var/run/docker.sock. Is the docker daemon running?\n")
    sys.exit(1)
if args[:2] == ["image", "inspect"]:
    if "inspect-hang" in modes:
        sleeper(3600)
    if "inspect-endless" in modes:
        block = "[" + " " * (1 << 20)
        while True:
            out(block)
            block = " " * (1 << 20)
    sys.stderr.write(f"Error: {args[2]}: image not known\n")
    sys.exit(125)
if args[:1] == ["images"]:
    sys.exit(0)
if args[:1] == ["tag"]:
    sys.exit(0)
if args[:1] == ["build"]:
    iid = args[args.index("--iidfile") + 1]
    if "build-step-only" in modes:
        out("STEP 1/1: FROM scratch\n")
        sys.exit(1)
    if "build-line" in modes:
        out("STEP 1/2: FROM scratch\n")
        chunk = "x" * (1 << 20)
        for _ in range(int(os.environ.get("FAKE_ENGINE_LINE_MB", "64"))):
            out(chunk)
        out("\nError: building at STEP \"RUN noisy\": while running runtime: exit status 3\n")
        sys.exit(1)
    if "build-escapes" in modes:
        out("STEP 1/2: FROM scratch\n")
        out("STEP 2/2: RUN printf '\x1b]0;owned\x07\x1b[31mred\u202e'\n")
        out("\x1b]8;;http://example.invalid/\x07link\x1b]8;;\x07\n")
        with open(iid, "w") as f:
            f.write("sha256:" + "a" * 64)
        sys.exit(0)
    out("STEP 1/2: FROM scratch\n")
    out("STEP 2/2: RUN sleep 3600\n")
    if "build-hang" in modes:
        sleeper(3600)
    if "build-slow" in modes:
        sleeper(3600)
    with open(iid, "w") as f:
        f.write("sha256:" + "a" * 64)
    sys.exit(0)
if args[:1] == ["push"]:
    out("Copying blob 0123456789ab\n")
    if "push-hang" in modes:
        sleeper(3600)
    if "--digestfile" in args:
        with open(args[args.index("--digestfile") + 1], "w") as f:
            f.write("sha256:" + "b" * 64)
    sys.exit(0)
sys.exit(0)
"""


def install(root: Path, name: str = "podman") -> Path:
    """Write the fake engine as ``root/fake-engine/name``; return its path."""
    folder = root / "fake-engine"
    folder.mkdir(parents=True, exist_ok=True)
    exe = folder / name
    exe.write_text(f"#!{sys.executable}\n{SCRIPT}")
    exe.chmod(exe.stat().st_mode | stat.S_IXUSR)
    return exe


def pids(trace: Path) -> list[int]:
    path = trace / "pids"
    return [int(line) for line in path.read_text().split()] if path.exists() else []


def alive(pid: int) -> bool:
    """Whether ``pid`` is a live process (a zombie is not: it has ended, unreaped)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False


def calls(trace: Path) -> list[list[str]]:
    import json

    path = trace / "calls"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def survivors(trace: Path) -> list[int]:
    return [pid for pid in pids(trace) if alive(pid)]


def cleanup(trace: Path) -> None:
    """End what a failed test left running: the fake engines and their sleeps, never a
    process that took a recorded pid since."""
    import signal

    for pid in survivors(trace):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmd = f.read()
            if cmd.startswith(b"sleep\0") or b"/fake-engine/" in cmd:
                os.kill(pid, signal.SIGKILL)
        except (FileNotFoundError, ProcessLookupError):
            pass
