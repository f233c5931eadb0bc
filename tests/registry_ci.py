"""A real image registry on 127.0.0.1 for the image build tests: Debian's ``docker-registry``
(the CNCF Distribution registry), installed under CI=true as root like podman
(:mod:`podman_ci`), run with a config file of its own on a free port, its storage in a
temporary directory, its access log (one line per HTTP request) in a file the tests read to
count what a push sent. ``auth="refuse"`` starts one behind htpasswd with no user whose
password anyone knows: every login is refused.
"""

from __future__ import annotations

import re
import shutil
import socket
import subprocess
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

PACKAGE = "docker-registry"
EXE = "docker-registry"
_REQUEST = re.compile(r'"(GET|HEAD|POST|PUT|PATCH|DELETE) (\S+) HTTP/[\d.]+" (\d{3}) (\d+|-)')


def missing() -> bool:
    return shutil.which(EXE) is None


def install() -> str:
    """``apt-get install`` the registry (as root): "" on success, else what apt said."""
    from helpers import apt_install

    return apt_install(PACKAGE, timeout=600)


def ensure() -> None:
    """The registry installed (under CI as root, when it is missing), or a skip (a failure
    under CI) saying why."""
    import os

    from helpers import in_ci, need_in_ci

    said = ""
    if missing() and in_ci() and os.geteuid() == 0:
        said = install()
    need_in_ci(not missing(), f"needs {EXE} (apt-get install {PACKAGE}) {said}".strip())


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Registry:
    """A running registry: ``host`` (``127.0.0.1:PORT``) and its access log."""

    host: str
    log: Path
    process: subprocess.Popen[bytes]

    def requests(self) -> list[tuple[str, str, int]]:
        """Every request the registry has answered so far: (method, path, status)."""
        found = []
        for line in self.log.read_text(errors="replace").splitlines():
            m = _REQUEST.search(line)
            if m:
                found.append((m.group(1), m.group(2), int(m.group(3))))
        return found

    def uploads(self, since: int = 0) -> list[tuple[str, str, int]]:
        """The requests (after the first ``since``) that upload a blob or write a manifest."""
        return [r for r in self.requests()[since:] if r[0] in ("POST", "PATCH", "PUT")]

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def start(root: Path, *, auth: str | None = None) -> Registry:
    """Start a registry with its storage and log under ``root`` (made here)."""
    root.mkdir(parents=True, exist_ok=True)
    port = free_port()
    auth_block = ""
    if auth == "refuse":
        # A user whose hash matches no password: every login is refused.
        (root / "htpasswd").write_text("tfjob:$2y$05$" + "x" * 53 + "\n")
        auth_block = f"auth:\n  htpasswd:\n    realm: tfjob-test\n    path: {root / 'htpasswd'}\n"
    config = root / "config.yml"
    config.write_text(
        "version: 0.1\n"
        "log:\n  level: warn\n  formatter: text\n  accesslog:\n    disabled: false\n"
        f"storage:\n  filesystem:\n    rootdirectory: {root / 'storage'}\n  delete:\n    enabled: true\n"
        f"http:\n  addr: 127.0.0.1:{port}\n  secret: tfjob-test-only\n" + auth_block
    )
    log = root / "access.log"
    out = open(log, "wb")
    process = subprocess.Popen([EXE, "serve", str(config)], stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    out.close()
    registry = Registry(f"127.0.0.1:{port}", log, process)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(f"{EXE} exited: {log.read_text()[-2000:]}")
        try:
            urllib.request.urlopen(f"http://{registry.host}/v2/", timeout=2).close()
            return registry
        except urllib.error.HTTPError:
            return registry  # 401 from an htpasswd registry: it is up
        except OSError:
            time.sleep(0.1)
    registry.stop()
    raise AssertionError(f"{EXE} did not answer on {registry.host}: {log.read_text()[-2000:]}")
