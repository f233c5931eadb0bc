"""A local HTTP server that speaks the Vertex AI REST API for hyperparameter tuning jobs.

The real client library talks to it through ``api_endpoint="http://127.0.0.1:PORT"``:

- ``POST /v1/projects/P/locations/R/hyperparameterTuningJobs`` — the body is parsed
  strictly into ``aiplatform_v1.types.HyperparameterTuningJob`` (an unknown field is a
  400, as the service answers);
- ``GET …/hyperparameterTuningJobs/ID`` — each read moves the study one step: it
  starts RUNNING, then each read ends one trial and starts the next (up to
  ``parallelTrialCount`` active), with parameters drawn from the studySpec and the
  metric from :attr:`FakeTuning.objective`; trials in :attr:`FakeTuning.infeasible`
  end INFEASIBLE; once ``maxFailedTrialCount`` trials are infeasible the job FAILS,
  once ``maxTrialCount`` have ended it SUCCEEDS;
- ``GET …/hyperparameterTuningJobs?filter=labels.K="V"`` — listing, filtered by label;
- ``POST …/hyperparameterTuningJobs/ID:cancel`` — CANCELLING, then CANCELLED;
- ``POST /v2/entries:list`` — Cloud Logging entries of :meth:`FakeTuning.add_log`, by
  (trial custom) job id.

Faults are queued with :meth:`FakeTuning.fail`: an HTTP status, or ``"lost"`` (the job
is created, then the connection is reset before the answer).
"""

from __future__ import annotations

import json
import math
import re
import threading
from typing import Any, Callable
from urllib.parse import parse_qs, urlparse

from .server import JsonHandler, LocalServer
from .vertex_api import _now, log_entry, use_as_google

_JOBS = re.compile(r"^/v1/projects/([^/]+)/locations/([^/]+)/hyperparameterTuningJobs$")
_JOB = re.compile(r"^/v1/projects/([^/]+)/locations/([^/]+)/hyperparameterTuningJobs/([^/:]+)(:cancel)?$")
_TERMINAL = {"JOB_STATE_SUCCEEDED", "JOB_STATE_FAILED", "JOB_STATE_CANCELLED"}


def toy_loss(params: dict[str, Any]) -> float:
    """The toy trainer's loss (lowest at learning_rate 0.01 with adam)."""
    return (math.log10(float(params.get("learning_rate", 0.01))) + 2) ** 2 + (0.0 if params.get("optimizer") == "adam" else 1.0)


def _draw(spec: dict[str, Any], k: int) -> Any:
    """The k-th value of a parameter: spread over its range (log-spaced on a log scale)."""
    fractions = (0.5, 0.1, 0.9, 0.3, 0.7, 0.2, 0.8, 0.4, 0.6, 0.0, 1.0)
    f = fractions[k % len(fractions)]
    if "doubleValueSpec" in spec:
        lo, hi = spec["doubleValueSpec"]["minValue"], spec["doubleValueSpec"]["maxValue"]
        if spec.get("scaleType") == "UNIT_LOG_SCALE":
            return math.exp(math.log(lo) + f * (math.log(hi) - math.log(lo)))
        return lo + f * (hi - lo)
    if "integerValueSpec" in spec:
        lo, hi = int(spec["integerValueSpec"]["minValue"]), int(spec["integerValueSpec"]["maxValue"])
        return float(round(lo + f * (hi - lo)))  # google.protobuf.Value numbers are doubles
    values = (spec.get("categoricalValueSpec") or spec.get("discreteValueSpec"))["values"]
    return values[k % len(values)]


class FakeTuning(LocalServer):
    """The server's state; start it with :meth:`start` (or as a context manager)."""

    use_as_google = use_as_google

    def __init__(self, projects: tuple[str, ...] = ("p",)) -> None:
        super().__init__()
        self.projects = set(projects)
        self.jobs: dict[str, dict[str, Any]] = {}
        self.objective: Callable[[dict[str, Any]], float] = toy_loss
        self.infeasible: set[str] = set()
        self.requests: list[tuple[str, str, Any]] = []
        self.faults: list[tuple[str, int | str]] = []
        self.logs: list[dict[str, Any]] = []
        self.lock = threading.Lock()
        self._next_id = 4000000000000000000

    def fail(self, pattern: str, status: int | str) -> None:
        """Queue a fault for the next request whose ``METHOD path`` matches ``pattern``."""
        self.faults.append((pattern, status))

    def add_log(self, job_id: str, task_name: str, text: str, second: float) -> None:
        """A log entry of (custom) job ``job_id``'s task ``workerpool0-0``…"""
        with self.lock:
            self.logs.append(log_entry(job_id, task_name, text, second, f"t{len(self.logs):06d}"))

    def created_bodies(self) -> list[dict[str, Any]]:
        return [body for method, path, body in self.requests if method == "POST" and _JOBS.match(path)]

    # -- behaviour ---------------------------------------------------------------------
    def create(self, project: str, region: str, body: dict[str, Any]) -> dict[str, Any]:
        with self.lock:
            self._next_id += 1
            job_id = str(self._next_id)
            job = {
                **body,
                "name": f"projects/{project}/locations/{region}/hyperparameterTuningJobs/{job_id}",
                "state": "JOB_STATE_PENDING",
                "createTime": _now(),
                "updateTime": _now(),
            }
            self.jobs[job_id] = job
            return dict(job)

    def advance(self, job_id: str) -> dict[str, Any]:
        with self.lock:
            job = self.jobs[job_id]
            if job["state"] == "JOB_STATE_CANCELLING":
                job["state"] = "JOB_STATE_CANCELLED"
                for trial in job.get("trials", []):
                    if trial["state"] == "ACTIVE":
                        trial.update(state="INFEASIBLE", infeasibleReason="the tuning job was cancelled", endTime=_now(90))
            elif job["state"] == "JOB_STATE_PENDING":
                job.update(state="JOB_STATE_RUNNING", startTime=_now(5), trials=[])
            elif job["state"] == "JOB_STATE_RUNNING":
                self._step(job)
            if job["state"] in _TERMINAL and "endTime" not in job:
                job["endTime"] = _now(120)
            return json.loads(json.dumps(job))

    def _step(self, job: dict[str, Any]) -> None:
        trials = job["trials"]
        active = [t for t in trials if t["state"] == "ACTIVE"]
        if active:  # one trial ends per read
            trial = active[0]
            trial["endTime"] = _now(10 * int(trial["id"]) + 9)
            if trial["id"] in self.infeasible:
                trial.update(
                    state="INFEASIBLE",
                    infeasibleReason=f"The replica workerpool0-0 of trial {trial['id']} exited with a non-zero status of 3.",
                )
            else:
                params = {p["parameterId"]: p["value"] for p in trial["parameters"]}
                trial.update(
                    state="SUCCEEDED",
                    finalMeasurement={
                        "stepCount": "1",
                        "metrics": [{"metricId": job["studySpec"]["metrics"][0]["metricId"], "value": self.objective(params)}],
                    },
                )
        failed = sum(t["state"] == "INFEASIBLE" for t in trials)
        if job.get("maxFailedTrialCount") and failed >= job["maxFailedTrialCount"]:
            job["state"] = "JOB_STATE_FAILED"
            job["error"] = {
                "code": 9,
                "message": f"{failed} of {len(trials)} trials failed; the job reached maxFailedTrialCount {job['maxFailedTrialCount']}.",
            }
            return
        while len([t for t in trials if t["state"] == "ACTIVE"]) < job["parallelTrialCount"] and len(trials) < job["maxTrialCount"]:
            k = len(trials)
            n = str(k + 1)
            trials.append(
                {
                    "id": n,
                    "state": "ACTIVE",
                    "parameters": [{"parameterId": p["parameterId"], "value": _draw(p, k)} for p in job["studySpec"]["parameters"]],
                    "startTime": _now(10 * (k + 1)),
                    "customJob": job["name"].replace(f"hyperparameterTuningJobs/{job['name'].rsplit('/', 1)[-1]}", f"customJobs/{900 + k}"),
                }
            )
        if not any(t["state"] == "ACTIVE" for t in trials) and len(trials) >= job["maxTrialCount"]:
            job["state"] = "JOB_STATE_SUCCEEDED"


class _Handler(JsonHandler):
    state: FakeTuning

    def _fault(self, key: str) -> int | str | None:
        with self.state.lock:
            for i, (pattern, status) in enumerate(self.state.faults):
                if re.search(pattern, key):
                    return self.state.faults.pop(i)[1]
        return None

    def _handle(self, method: str) -> None:
        url = urlparse(self.path)
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        if url.path == "/token" and method == "POST":  # an OAuth2 token endpoint (a form body)
            return self._reply(200, {"access_token": "ya29.fake-tuning-token", "expires_in": 3600, "token_type": "Bearer"})
        body = json.loads(raw) if raw else None
        self.state.requests.append((method, url.path, body))
        fault = self._fault(f"{method} {url.path}")
        if isinstance(fault, int):
            grpc = {400: "INVALID_ARGUMENT", 403: "PERMISSION_DENIED", 429: "RESOURCE_EXHAUSTED", 503: "UNAVAILABLE"}.get(fault, "INTERNAL")
            return self._error(fault, "injected", grpc)
        if url.path == "/v2/entries:list" and method == "POST":
            job = re.search(r'resource\.labels\.job_id="([^"]+)"', (body or {}).get("filter", ""))
            with self.state.lock:
                entries = [e for e in self.state.logs if not job or e["resource"]["labels"]["job_id"] == job.group(1)]
            if (body or {}).get("orderBy", "").endswith("desc"):
                entries = entries[::-1]
            return self._reply(200, {"entries": entries})
        m = _JOBS.match(url.path)
        if m:
            project, region = m.groups()
            if project not in self.state.projects:
                return self._error(404, f"Project '{project}' not found or permission denied.", "NOT_FOUND")
            if method == "POST":
                return self._create(project, region, body or {}, lost=fault == "lost")
            return self._list(project, region, parse_qs(url.query))
        m = _JOB.match(url.path)
        if m:
            project, region, job_id, cancel = m.groups()
            if job_id not in self.state.jobs:
                return self._error(404, f"HyperparameterTuningJob {job_id} does not exist.", "NOT_FOUND")
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

        message = aiplatform_v1.types.HyperparameterTuningJob()._pb
        try:  # strictly, as the service: an unknown or misspelt field is refused
            json_format.ParseDict(body, message)
        except json_format.ParseError as e:
            return self._error(400, f"Invalid JSON payload received. {e}", "INVALID_ARGUMENT")
        # The client may send enums as numbers; the service answers with their names.
        job = self.state.create(project, region, json_format.MessageToDict(message))
        if lost:
            return self._reset()
        self._reply(200, job)

    def _list(self, project: str, region: str, query: dict[str, list[str]]) -> None:
        filter_ = query.get("filter", [""])[0]
        prefix = f"projects/{project}/locations/{region}/"
        label = re.match(r'^labels\.([\w-]+)\s*=\s*"([^"]*)"$', filter_)
        has = re.match(r"^labels\.([\w-]+):\*$", filter_)
        jobs = [
            j for j in self.state.jobs.values()
            if j["name"].startswith(prefix)
            and (not label or j.get("labels", {}).get(label.group(1)) == label.group(2))
            and (not has or has.group(1) in j.get("labels", {}))
        ]  # fmt: skip
        self._reply(200, {"hyperparameterTuningJobs": jobs})


FakeTuning.handler = _Handler
