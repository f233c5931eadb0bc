"""A local HTTP server that speaks the Vertex AI REST API for custom jobs, and Cloud Logging's entries:list.

The real client libraries talk to it through ``api_endpoint="http://127.0.0.1:PORT"``:

- ``POST /v1/projects/P/locations/R/customJobs`` — the body is parsed strictly into
  ``aiplatform_v1.types.CustomJob`` (an unknown field is a 400, as the service does);
- ``GET …/customJobs/ID`` — each read after the first moves the job one step along :attr:`FakeVertex.script`
  (QUEUED → PENDING → RUNNING → SUCCEEDED by default; a FAILED end carries
  :attr:`FakeVertex.failure_message`);
- ``GET …/customJobs?filter=…&pageSize=…&pageToken=…`` — filters ``labels.K="V"``,
  ``labels.K:*`` and ``display_name="N"``, paged;
- ``POST …/customJobs/ID:cancel`` — CANCELLING, then CANCELLED on the next read;
- ``POST /token`` — an OAuth2 token endpoint handing out :attr:`FakeVertex.token`
  (for application-default credentials whose ``token_uri`` points here);
- ``POST /v2/entries:list`` — the entries of :meth:`FakeVertex.add_log`, filtered by
  job id, task name and ``timestamp>=``.

Faults are queued with :meth:`FakeVertex.fail`: an HTTP status with a JSON error, a
connection reset, or ``"lost"`` (the job is created, then the connection is reset
before the answer, as when a response is lost on the way back).
"""

from __future__ import annotations

import functools
import json
import re
import threading
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Iterator
from urllib.parse import parse_qs, urlparse

from .server import JsonHandler, LocalServer

_JOBS = re.compile(r"^/v1/projects/([^/]+)/locations/([^/]+)/customJobs$")
_JOB = re.compile(r"^/v1/projects/([^/]+)/locations/([^/]+)/customJobs/([^/:]+)(:cancel)?$")
_TERMINAL = {"JOB_STATE_SUCCEEDED", "JOB_STATE_FAILED", "JOB_STATE_CANCELLED"}
DEFAULT_SCRIPT = ("JOB_STATE_QUEUED", "JOB_STATE_PENDING", "JOB_STATE_RUNNING", "JOB_STATE_SUCCEEDED")


def _now(offset: float = 0.0) -> str:
    return (datetime(2026, 1, 2, 3, 4, 5, tzinfo=timezone.utc) + timedelta(seconds=offset)).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def log_entry(job_id: str, task_name: str, text: str, second: float, insert_id: str) -> dict[str, Any]:
    """A Cloud Logging entry of a Vertex AI job's task (resource ``ml_job``), ``second`` s after the epoch of the fakes."""
    return {
        "logName": "projects/p/logs/workerpool",
        "resource": {"type": "ml_job", "labels": {"job_id": job_id, "task_name": task_name, "project_id": "p"}},
        "textPayload": text,
        "timestamp": _now(second),
        "insertId": insert_id,
    }


@dataclass
class Fault:
    """One queued fault: for requests whose ``METHOD path`` matches ``pattern``."""

    pattern: str
    status: int | str
    message: str = "injected"
    details: list[dict[str, Any]] = field(default_factory=list)
    reason: str | None = None
    metadata: dict[str, str] = field(default_factory=dict)


@functools.lru_cache(maxsize=1)
def _private_key() -> str:
    """One RSA key per test process (generating one takes ~50 ms)."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()).decode()


def write_service_account(path: Path, token_uri: str, project: str = "p") -> Path:
    """A service-account key file whose token endpoint is ``token_uri`` (a stand-in): with
    ``GOOGLE_APPLICATION_CREDENTIALS`` naming it, the real google-auth code path runs."""
    path.write_text(json.dumps({
        "type": "service_account", "project_id": project, "private_key_id": "k1", "private_key": _private_key(),
        "client_email": f"trainer@{project}.iam.gserviceaccount.com", "client_id": "1", "token_uri": token_uri,
    }))  # fmt: skip
    return path


def shell_env(server: Any, directory: Path, project: str = "p", poll_interval: str = "0.02") -> dict[str, str]:
    """What a user's shell (a README's, a guide's) reaches ``server`` by: its endpoint as
    ``TFJOB_API_ENDPOINT``, application-default credentials whose token endpoint is the server's
    (the key file in ``directory``), a short ``poll_interval`` setting."""
    key = write_service_account(directory / "adc.json", f"{server.endpoint}/token", project)
    return {"TFJOB_API_ENDPOINT": server.endpoint, "GOOGLE_APPLICATION_CREDENTIALS": str(key), "TFJOB_POLL_INTERVAL": poll_interval}


def use_as_google(server: Any, monkeypatch: Any, directory: Path, poll_interval: str = "0.02") -> None:
    """Point tfjob at ``server`` as a user would: application-default credentials (a service-account
    key whose token endpoint is the server's ``/token``) and a short ``poll_interval`` setting."""
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(write_service_account(directory / "adc.json", f"{server.endpoint}/token")))
    monkeypatch.setenv("TFJOB_POLL_INTERVAL", poll_interval)


def vertex_fixture(monkeypatch: Any, directory: Path) -> Iterator[FakeVertex]:
    """Body of a pytest fixture: a started :class:`FakeVertex` that tfjob reaches as Google
    (:func:`use_as_google`, its key file in ``directory``)."""
    with FakeVertex() as server:
        server.use_as_google(monkeypatch, directory)
        yield server


class FakeVertex(LocalServer):
    """The server's state; start it with :meth:`start` (or as a context manager)."""

    def __init__(self, projects: tuple[str, ...] = ("p",)) -> None:
        super().__init__()
        self.projects = set(projects)
        self.jobs: dict[str, dict[str, Any]] = {}
        self.steps: dict[str, int] = {}
        self.read_once: set[str] = set()
        self.script: tuple[str, ...] = DEFAULT_SCRIPT
        self.failure_message = "The replica workerpool1-0 exited with a non-zero status of 1."
        self.requests: list[tuple[str, str, Any]] = []
        self.faults: list[Fault] = []
        self.logs: list[dict[str, Any]] = []
        self.lock = threading.Lock()
        #: The access token ``POST /token`` hands out (an OAuth2 token endpoint stand-in).
        self.token = "ya29.fake-access-token-for-tests-only"
        #: Authorization headers received, in order.
        self.authorizations: list[str] = []
        self._next_id = 7000000000000000000
        #: Scripted ends of the next jobs created, in order: ``(states, error)`` — the job goes
        #: through ``states`` and, when it ends FAILED, carries ``error`` (``{"code", "message"}``).
        self.next_jobs: list[tuple[tuple[str, ...], dict[str, Any] | None]] = []
        self.job_scripts: dict[str, tuple[tuple[str, ...], dict[str, Any] | None]] = {}

    # -- control ---------------------------------------------------------------------
    use_as_google = use_as_google

    def fail(self, pattern: str, status: int | str, message: str = "injected", **kw: Any) -> None:
        """Queue a fault for the next request matching ``pattern`` (a regex on ``METHOD path``)."""
        self.faults.append(Fault(pattern, status, message, **kw))

    def add_log(self, job_id: str, task_name: str, text: str, second: float) -> None:
        with self.lock:
            self.logs.append(log_entry(job_id, task_name, text, second, f"e{len(self.logs):06d}"))

    def created_bodies(self) -> list[dict[str, Any]]:
        return [body for method, path, body in self.requests if method == "POST" and _JOBS.match(path)]

    # -- behaviour -------------------------------------------------------------------
    def create(self, project: str, region: str, body: dict[str, Any]) -> dict[str, Any]:
        with self.lock:
            self._next_id += 1
            job_id = str(self._next_id)
            if self.next_jobs:
                self.job_scripts[job_id] = self.next_jobs.pop(0)
            script = self.job_scripts.get(job_id, (self.script, None))[0]
            job = {
                **body,
                "name": f"projects/{project}/locations/{region}/customJobs/{job_id}",
                "state": script[0],
                "createTime": _now(),
                "updateTime": _now(),
            }
            self.jobs[job_id] = job
            self.steps[job_id] = 0
            return job

    def advance(self, job_id: str) -> dict[str, Any]:
        with self.lock:
            job = self.jobs[job_id]
            if job_id not in self.read_once:
                # The first read finds the job as it was created (QUEUED), as on the service.
                self.read_once.add(job_id)
            elif job["state"] == "JOB_STATE_CANCELLING":
                job["state"] = "JOB_STATE_CANCELLED"
            elif job["state"] not in _TERMINAL:
                script = self.job_scripts.get(job_id, (self.script, None))[0]
                self.steps[job_id] = min(self.steps[job_id] + 1, len(script) - 1)
                job["state"] = script[self.steps[job_id]]
                if job["state"] == "JOB_STATE_RUNNING" and "startTime" not in job:
                    job["startTime"] = _now(5)
            if job["state"] in _TERMINAL and "endTime" not in job:
                job["endTime"] = _now(60)
                if job["state"] == "JOB_STATE_FAILED":
                    job["error"] = self.job_scripts.get(job_id, ((), None))[1] or {"code": 3, "message": self.failure_message}
            return dict(job)


def _matches(job: dict[str, Any], filter_: str) -> bool:
    for clause in [c.strip() for c in re.split(r"\s+AND\s+", filter_) if c.strip()]:
        m = re.match(r'^labels\.([\w-]+)\s*=\s*"([^"]*)"$', clause)
        if m:
            if job.get("labels", {}).get(m.group(1)) != m.group(2):
                return False
            continue
        m = re.match(r"^labels\.([\w-]+):\*$", clause)
        if m:
            if m.group(1) not in job.get("labels", {}):
                return False
            continue
        m = re.match(r'^display_name\s*=\s*"([^"]*)"$', clause)
        if m:
            if job.get("displayName") != m.group(1):
                return False
            continue
        raise ValueError(f"unsupported filter clause {clause!r}")
    return True


class _Handler(JsonHandler):
    state: FakeVertex

    def do_PATCH(self) -> None:
        self._handle("PATCH")

    def _fault(self, key: str) -> Fault | None:
        with self.state.lock:
            for i, fault in enumerate(self.state.faults):
                if re.search(fault.pattern, key):
                    return self.state.faults.pop(i)
        return None

    # -- dispatch --------------------------------------------------------------------
    def _handle(self, method: str) -> None:
        url = urlparse(self.path)
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw) if raw else None
        except ValueError:  # the token endpoint takes a form
            body = raw.decode(errors="replace")
        if url.path == "/token" and method == "POST":
            return self._reply(200, {"access_token": self.state.token, "expires_in": 3600, "token_type": "Bearer"})
        self.state.requests.append((method, url.path, body))
        self.state.authorizations.append(self.headers.get("Authorization", ""))
        fault = self._fault(f"{method} {url.path}")
        if fault is not None and fault.status != "lost":
            if fault.status == "reset":
                return self._reset()
            details = list(fault.details)
            if fault.reason:
                details.append(
                    {
                        "@type": "type.googleapis.com/google.rpc.ErrorInfo",
                        "reason": fault.reason,
                        "domain": "googleapis.com",
                        "metadata": fault.metadata,
                    }
                )
            grpc = {
                400: "INVALID_ARGUMENT",
                401: "UNAUTHENTICATED",
                403: "PERMISSION_DENIED",
                404: "NOT_FOUND",
                429: "RESOURCE_EXHAUSTED",
                503: "UNAVAILABLE",
            }.get(int(fault.status), "INTERNAL")
            # "{authorization}" echoes the request's credentials, as a careless proxy might.
            message = fault.message.replace("{authorization}", self.headers.get("Authorization", ""))
            return self._error(int(fault.status), message, grpc, details)
        if url.path == "/v2/entries:list" and method == "POST":
            return self._entries(body or {})
        from .vertex_models import handle as models_handle  # the Model Registry and metadata contexts

        if models_handle(self, method, url.path, url.query, body):
            return None
        m = _JOBS.match(url.path)
        if m:
            project, region = m.groups()
            if project not in self.state.projects:
                return self._error(404, f"Project '{project}' not found or permission denied.", "NOT_FOUND")
            if method == "POST":
                return self._create(project, region, body or {}, lost=fault is not None)
            return self._list(project, region, parse_qs(url.query))
        m = _JOB.match(url.path)
        if m:
            project, region, job_id, cancel = m.groups()
            if job_id not in self.state.jobs:
                return self._error(404, f"CustomJob projects/{project}/locations/{region}/customJobs/{job_id} does not exist.", "NOT_FOUND")
            if cancel and method == "POST":
                with self.state.lock:
                    job = self.state.jobs[job_id]
                    if job["state"] not in _TERMINAL:
                        job["state"] = "JOB_STATE_CANCELLING"
                return self._reply(200, {})
            if method == "GET":
                return self._reply(200, self.state.advance(job_id))
        self._error(404, f"no route for {method} {url.path}", "NOT_FOUND")

    def _create(self, project: str, region: str, body: dict[str, Any], lost: bool) -> None:
        from google.cloud import aiplatform_v1
        from google.protobuf import json_format

        try:  # strictly, as the service: an unknown or misspelt field is refused
            json_format.ParseDict(body, aiplatform_v1.types.CustomJob()._pb)
        except json_format.ParseError as e:
            return self._error(400, f"Invalid JSON payload received. {e}", "INVALID_ARGUMENT")
        job = self.state.create(project, region, body)
        if lost:
            return self._reset()
        self._reply(200, job)

    def _list(self, project: str, region: str, query: dict[str, list[str]]) -> None:
        filter_ = query.get("filter", [""])[0]
        size = int(query.get("pageSize", ["100"])[0] or 100)
        start = int(query.get("pageToken", ["0"])[0] or 0)
        prefix = f"projects/{project}/locations/{region}/"
        try:
            jobs = [j for j in self.state.jobs.values() if j["name"].startswith(prefix) and _matches(j, filter_)]
        except ValueError as e:
            return self._error(400, str(e), "INVALID_ARGUMENT")
        page = jobs[start : start + size]
        out: dict[str, Any] = {"customJobs": page}
        if start + size < len(jobs):
            out["nextPageToken"] = str(start + size)
        self._reply(200, out)

    def _entries(self, body: dict[str, Any]) -> None:
        filter_ = body.get("filter", "")
        job = re.search(r'resource\.labels\.job_id="([^"]+)"', filter_)
        task = re.search(r'resource\.labels\.task_name="([^"]+)"', filter_)
        since = re.search(r'timestamp>="([^"]+)"', filter_)
        with self.state.lock:
            entries = [
                e for e in self.state.logs
                if (not job or e["resource"]["labels"]["job_id"] == job.group(1))
                and (not task or e["resource"]["labels"]["task_name"] == task.group(1))
                and (not since or e["timestamp"] >= since.group(1))
            ]  # fmt: skip
        if body.get("orderBy", "").endswith("desc"):
            entries = entries[::-1]
        size = int(body.get("pageSize") or 1000)
        start = int(body.get("pageToken") or 0)
        out: dict[str, Any] = {"entries": entries[start : start + size]}
        if start + size < len(entries):
            out["nextPageToken"] = str(start + size)
        self._reply(200, out)


FakeVertex.handler = _Handler
