"""A tiny Chrome DevTools Protocol client over ``--remote-debugging-pipe`` (no dependency):
headless Chromium loads a page, and the test reads its rendered text, every console message,
exception, log entry and network request, and a screenshot.

Debian's ``chromium`` package is installed here under CI as root (as podman is by
``podman_ci``); elsewhere a test without it is skipped with the reason (under CI it fails).
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


def chromium() -> str:
    """The Chromium binary, installed first under CI as root; else a skip (a failure under
    CI) that says why, with what apt said when its install failed."""
    from helpers import apt_install, in_ci, need_in_ci

    found = shutil.which("chromium") or shutil.which("chromium-browser")
    said = ""
    if found is None and in_ci() and os.geteuid() == 0:
        said = apt_install("chromium")
        found = shutil.which("chromium")
    need_in_ci(found is not None, f"needs Debian's chromium (apt-get install chromium; installed here under CI as root) {said}".strip())
    assert found is not None
    return found


@dataclass
class Loaded:
    """What the browser saw of a page."""

    text: str
    title: str
    console: list[dict[str, Any]] = field(default_factory=list)
    exceptions: list[dict[str, Any]] = field(default_factory=list)
    log: list[dict[str, Any]] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)
    screenshot: bytes = b""

    @property
    def errors(self) -> list[str]:
        """Every console error, uncaught exception and error log entry (a failed fetch…)."""
        out = [json.dumps(c.get("args"))[:300] for c in self.console if c.get("type") in ("error", "assert")]
        out += [str(e.get("exceptionDetails", {}).get("text")) for e in self.exceptions]
        out += [
            f"{e.get('entry', {}).get('source')}: {e.get('entry', {}).get('text')}"
            for e in self.log
            if e.get("entry", {}).get("level") == "error"
        ]
        return out


class _Pipe:
    def __init__(self, binary: str, profile: str) -> None:
        to_r, self._to_w = os.pipe()
        self._from_r, from_w = os.pipe()

        def wire() -> None:  # the pipe ends Chromium expects: it reads fd 3, writes fd 4
            os.dup2(to_r, 3)
            os.dup2(from_w, 4)

        args = [binary, "--headless=new", "--remote-debugging-pipe", "--no-sandbox", "--disable-gpu", "--no-first-run",
                "--no-default-browser-check", f"--user-data-dir={profile}", "--hide-scrollbars", "about:blank"]  # fmt: skip
        self.proc = subprocess.Popen(args, preexec_fn=wire, pass_fds=(3, 4), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.close(to_r)
        os.close(from_w)
        self._buffer = b""
        self._id = 0
        self.events: list[dict[str, Any]] = []

    def send(self, method: str, params: dict[str, Any] | None = None, session: str | None = None, timeout: float = 60) -> dict[str, Any]:
        self._id += 1
        message: dict[str, Any] = {"id": self._id, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        os.write(self._to_w, json.dumps(message).encode() + b"\0")
        while True:
            reply = self._next(timeout)
            if reply.get("id") == self._id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            self.events.append(reply)

    def wait_for(self, method: str, timeout: float = 60) -> dict[str, Any]:
        for event in self.events:
            if event.get("method") == method:
                return event
        while True:
            event = self._next(timeout)
            self.events.append(event)
            if event.get("method") == method:
                return event

    def _next(self, timeout: float) -> dict[str, Any]:
        import select

        deadline = time.monotonic() + timeout
        while b"\0" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self._from_r], [], [], left)[0]:
                raise TimeoutError("Chromium did not answer in time")
            chunk = os.read(self._from_r, 1 << 20)
            if not chunk:
                raise RuntimeError("Chromium closed its pipe")
            self._buffer += chunk
        head, _, self._buffer = self._buffer.partition(b"\0")
        return json.loads(head)

    def close(self) -> None:
        try:
            self.send("Browser.close", timeout=10)
        except Exception:
            pass
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        os.close(self._to_w)
        os.close(self._from_r)


def load(binary: str, page: Path, width: int = 1200) -> Loaded:
    """Load ``page`` (a local file) in headless Chromium and report what it saw."""
    with tempfile.TemporaryDirectory(prefix="tfjob-chromium-") as profile:
        pipe = _Pipe(binary, profile)
        try:
            targets = pipe.send("Target.getTargets")["targetInfos"]
            target = next(t["targetId"] for t in targets if t["type"] == "page")
            session = pipe.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
            for domain in ("Page", "Runtime", "Log", "Network"):
                pipe.send(f"{domain}.enable", session=session)
            pipe.send(
                "Emulation.setDeviceMetricsOverride",
                {"width": width, "height": 900, "deviceScaleFactor": 1, "mobile": False},
                session=session,
            )
            pipe.events.clear()
            pipe.send("Page.navigate", {"url": page.resolve().as_uri()}, session=session)
            pipe.wait_for("Page.loadEventFired")
            time.sleep(0.3)  # late console messages
            text = pipe.send("Runtime.evaluate", {"expression": "document.body.innerText", "returnByValue": True}, session=session)[
                "result"
            ]["value"]
            title = pipe.send("Runtime.evaluate", {"expression": "document.title", "returnByValue": True}, session=session)["result"][
                "value"
            ]
            height = pipe.send(
                "Runtime.evaluate", {"expression": "document.documentElement.scrollHeight", "returnByValue": True}, session=session
            )["result"]["value"]
            pipe.send(
                "Emulation.setDeviceMetricsOverride",
                {"width": width, "height": int(height), "deviceScaleFactor": 1, "mobile": False},
                session=session,
            )
            shot = pipe.send("Page.captureScreenshot", {"format": "png"}, session=session)["data"]
            events = list(pipe.events)
        finally:
            pipe.close()
    by = lambda m: [e.get("params", {}) for e in events if e.get("method") == m]  # noqa: E731
    return Loaded(
        text=text,
        title=title,
        console=by("Runtime.consoleAPICalled"),
        exceptions=by("Runtime.exceptionThrown"),
        log=by("Log.entryAdded"),
        requests=[p["request"]["url"] for p in by("Network.requestWillBeSent")],
        screenshot=base64.b64decode(shot),
    )
