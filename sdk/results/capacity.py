"""Quota, rate limiting and capacity, told apart in what a platform says (pure, stdlib only).

Three things a platform answers "not now" for, each with its own cure:

- a **resource quota** (accelerators, CPUs, disks of a project in a region): retrying never
  cures it; the quota must be raised, or the job asked for elsewhere or smaller;
- **rate limiting** (a requests-per-minute quota): a later try succeeds; it is retried;
- a **stockout**: the region (or zone) has no machines of that kind free now, whatever the
  quota: another region or accelerator, Spot/Flex-start, a reservation, or later.

:func:`classify` reads a message (and an ``ErrorInfo``'s reason and metadata when the
answer carried one) from Vertex AI, AI Platform or Kubernetes (a pending pod's scheduler
message, Kueue's admission message, a ResourceQuota refusal) and returns a
:class:`Capacity`, or None when the text is about something else. :func:`capacity_diagnosis`
makes it a :class:`~tfjob.results.Diagnosis`, :func:`quota_line` the one line a refused
submission prints.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Mapping
from urllib.parse import quote

from ..lazy import LazyPattern
from . import Diagnosis

#: How much of a message is read (its start): a runaway message cannot stall a status.
MAX_TEXT = 8 * 1024

QUOTA = "quota"
RATE = "rate"
STOCKOUT = "stockout"
NO_FIT = "no-fit"
QUEUED = "queue"

# "The following quota metrics exceed quota limits: aiplatform.googleapis.com/custom_model_training_nvidia_l4_gpus"
# "Quota exceeded for aiplatform.googleapis.com/custom_model_training_cpus with base model: …"
# "Quota exceeded for quota metric 'Resource management (CRUD) requests' and limit '… per minute …'"
_METRIC = LazyPattern(r"\b((?:[a-z0-9-]+\.)+googleapis\.com/[A-Za-z0-9_./-]*[A-Za-z0-9_])")
_QUOTA_WORDS = LazyPattern(
    r"quota metrics? exceeds? quota limits?|Quota exceeded for|exceeds? (?:the )?(?:allowed maximum|quota)|RESOURCE_QUOTA_EXCEEDED"
    r"|Quota failure for project|insufficient (?:unused )?quota|exceeded quota:",
    re.I,
)
_QUOTED_METRIC = LazyPattern(r"quota metric '([^']{1,200})'(?: and limit '([^']{1,200})')?", re.I)
_RATE_WORDS = LazyPattern(r"per (?:minute|second|100 seconds|day)|requests?\b|RATE_LIMIT_EXCEEDED|rate limit", re.I)
_LIMIT = LazyPattern(r"\blimit(?:ed)?(?: of| value| is|:|=)?\s*'?(\d[\d.]*)\b|\ballowed maximum of (\d+)\b", re.I)
_REGION = LazyPattern(r"\b(?:in |region[:= ]\s*|location[:= ]\s*)([a-z]+-[a-z]+\d)\b", re.I)
# AI Platform: "Quota failure for project P. The request for 8 K80 accelerators exceeds the allowed maximum of 0 K80, …"
_LEGACY = LazyPattern(r"request for (\d+) ([A-Za-z0-9_]+) accelerators? exceeds the allowed maximum of (\d+)", re.I)
# Kubernetes: 'exceeded quota: compute, requested: requests.nvidia.com/gpu=4, used: …, limited: requests.nvidia.com/gpu=2'
_K8S_QUOTA = LazyPattern(r"exceeded quota: ([\w.-]+), requested: ([^,=]+)=[^,]*, used: [^,]*, limited: [^,=]+=(\S+)")
# Kueue: "couldn't assign flavors to pod set worker: insufficient unused quota for nvidia.com/gpu in flavor a100, 4 more needed"
_KUEUE = LazyPattern(r"insufficient (?:unused )?quota for ([\w./-]+) in flavor ([\w.-]+)", re.I)
_KUEUE_ANY = LazyPattern(r"couldn't assign flavors|Workload [^\n]{0,100}not admitted|Kueue has not admitted|QuotaReserved", re.I)
_STOCKOUT = LazyPattern(
    r"Resources are insufficient in (?:region|zone)[: ]*([a-z]+-[a-z]+\d(?:-[a-z])?)?|ZONE_RESOURCE_POOL_EXHAUSTED\w*"
    r"|does not have enough resources available to fulfill the request|resource pool exhausted|\bstockout\b"
    r"|(?:Spot|flex[- ]start|DWS)\b[^.\n]{0,80}\b(?:capacity|resources)\b[^.\n]{0,40}\b(?:unavailable|not available|insufficient|waiting)"
    r"|waiting for (?:Spot |flex-start |DWS )?(?:capacity|resources to be provisioned)",
    re.I,
)
# The scheduler: "0/3 nodes are available: 3 Insufficient nvidia.com/gpu." / "… didn't match Pod's node affinity/selector"
_NO_FIT = LazyPattern(
    r"\d+/\d+ nodes are available:[^\n]{0,400}?(?:Insufficient ([\w./-]*[\w])|didn't match Pod's node affinity/selector|had untolerated taint)"
    r"|no nodes available to schedule pods",
    re.I,
)


@dataclass(frozen=True)
class Capacity:
    """What a "not now" answer was.

    Attributes:
        kind: ``quota`` (a resource quota), ``rate`` (requests per minute: retried), ``stockout``
            (no machines free), ``no-fit`` (no node of a Kubernetes cluster fits the pod) or
            ``queue`` (Kueue does not admit the job: its queue's quota is used).
        metric: the quota metric or resource named (``aiplatform.googleapis.com/custom_model_training_nvidia_l4_gpus``,
            ``nvidia.com/gpu``), when named.
        region: the region (or zone) named, when named.
        limit: the quota's limit, when the answer gives it.
        evidence: the words it was recognised in (bounded).
    """

    kind: str
    metric: str | None = None
    region: str | None = None
    limit: str | None = None
    evidence: str = ""

    @property
    def fails_over(self) -> bool:
        """Whether another region or machine may take the job (a quota or a stockout), rather
        than the same request later (rate limiting) or another cluster's shape."""
        return self.kind in (QUOTA, STOCKOUT)


def _bounded(text: str) -> str:
    return text[:MAX_TEXT]


def _evidence(text: str, match: re.Match[str]) -> str:
    start = max(0, match.start() - 60)
    line = text[start : match.end() + 120].strip().replace("\n", " ")
    return line if len(line) <= 240 else line[:239] + "…"


def classify(text: str, *, reason: str | None = None, metadata: Mapping[str, str] | None = None) -> Capacity | None:
    """The quota, rate limit or capacity shortage ``text`` speaks of, or None.

    Args:
        text: the platform's message (an API error's, a job's ``error.message``, a pod's
            scheduling condition, Kueue's admission message).
        reason: an ``ErrorInfo`` reason (``RATE_LIMIT_EXCEEDED``, ``RESOURCE_QUOTA_EXCEEDED``…).
        metadata: an ``ErrorInfo``'s metadata (``quota_metric``, ``quota_limit``,
            ``quota_limit_value``, ``quota_location``).
    """
    text = _bounded(text or "")
    meta = {str(k): str(v)[:300] for k, v in (metadata or {}).items()}
    region_match = _REGION.search(text)
    region = meta.get("quota_location") or (region_match.group(1) if region_match else None)
    quota_words = _QUOTA_WORDS.search(text)
    metric_match = _METRIC.search(text)
    if reason == "RATE_LIMIT_EXCEEDED" or (
        reason is None and quota_words is None and metric_match is None and "RESOURCE_EXHAUSTED" in text
    ):
        return Capacity(RATE, meta.get("quota_metric"), region, meta.get("quota_limit_value"), text[:240])
    legacy = _LEGACY.search(text)
    if legacy is not None:
        return Capacity(QUOTA, f"{legacy.group(2)} accelerators", region, legacy.group(3), _evidence(text, legacy))
    k8s = _K8S_QUOTA.search(text)
    if k8s is not None:
        return Capacity(
            QUOTA, f"{k8s.group(2).strip()} (ResourceQuota {k8s.group(1)})", None, k8s.group(3).rstrip(".,"), _evidence(text, k8s)
        )
    kueue = _KUEUE.search(text) or _KUEUE_ANY.search(text)
    if kueue is not None:
        metric = f"{kueue.group(1)} in flavor {kueue.group(2)}" if kueue.re.groups else None
        return Capacity(QUEUED, metric, None, None, _evidence(text, kueue))
    if quota_words is not None or meta.get("quota_metric") or reason == "RESOURCE_QUOTA_EXCEEDED":
        quoted = _QUOTED_METRIC.search(text)
        metric = meta.get("quota_metric") or (metric_match.group(1) if metric_match else None) or (quoted.group(1) if quoted else None)
        limit_name = meta.get("quota_limit") or (quoted.group(2) if quoted and quoted.group(2) else "")
        rate = bool(_RATE_WORDS.search(limit_name)) or bool(metric and _RATE_WORDS.search(metric.rsplit("/", 1)[-1].replace("_", " ")))
        limit_match = _LIMIT.search(text)
        limit = meta.get("quota_limit_value") or (next((g for g in limit_match.groups() if g), None) if limit_match else None)
        found = quota_words or metric_match
        evidence = _evidence(text, found) if found is not None else text[:240]
        return Capacity(RATE if rate else QUOTA, metric, region, limit, evidence)
    stockout = _STOCKOUT.search(text)
    if stockout is not None:
        where = stockout.group(1) or region
        return Capacity(STOCKOUT, None, where, None, _evidence(text, stockout))
    no_fit = _NO_FIT.search(text)
    if no_fit is not None:
        return Capacity(NO_FIT, no_fit.group(1), None, None, _evidence(text, no_fit))
    return None


def quota_page(metric: str | None, project: str | None) -> str:
    """The console's quotas page, filtered on ``metric`` (where an increase is requested)."""
    url = "https://console.cloud.google.com/iam-admin/quotas"
    query = [f"project={quote(project)}"] if project else []
    if metric and "googleapis.com/" in metric:
        query.append(f"metric={quote(metric, safe='')}")
    return url + ("?" + "&".join(query) if query else "")


def _fixes(c: Capacity, backend: str, project: str | None) -> str:
    if c.kind == QUOTA and backend in ("kubeflow", "jobset", "trainjob"):
        return "ask the cluster's administrators to raise the namespace's ResourceQuota, or ask for fewer or smaller pods"
    if c.kind == QUEUED:
        return (
            "the job waits until its Kueue ClusterQueue has quota free: wait, ask for fewer accelerators, "
            "or submit to another queue (--labels kueue.x-k8s.io/queue-name=OTHER)"
        )
    if c.kind == NO_FIT:
        what = f" with free {c.metric}" if c.metric else ""
        return f"no node of the cluster fits the pod: add nodes{what} (or let the autoscaler), or ask for less per pod (--accelerator, --cpu, --memory)"
    options = "another region (--region A,B tries each in turn) or accelerator, a smaller pool, --spot, --flex-start or --reservation"
    if c.kind == STOCKOUT:
        return f"try {options}, or later"
    if backend == "aiplatform":
        page = quota_page(None, project) + " (service ml.googleapis.com)"
    else:
        page = quota_page(c.metric, project)
    return f"request an increase at {page}, or use {options}"


def describe(c: Capacity) -> str:
    """What ``c`` is, in one clause: ``the quota aiplatform.googleapis.com/… (limit 0) in us-central1 is used up``."""
    where = f" in {c.region}" if c.region else ""
    if c.kind == QUOTA:
        limit = f" (limit {c.limit})" if c.limit is not None else ""
        return f"the quota {c.metric or '(not named)'}{limit}{where} does not allow this job"
    if c.kind == RATE:
        return f"the requests are rate limited ({c.metric or 'requests per minute'})"
    if c.kind == STOCKOUT:
        return f"the machines asked for are not available{where} now (a stockout)"
    if c.kind == QUEUED:
        return f"Kueue does not admit the job{': ' + c.metric + ' is used up' if c.metric else ''}"
    return f"no node can take the pod{': not enough ' + c.metric if c.metric else ''}"


def quota_line(c: Capacity, *, backend: str = "vertex", project: str | None = None, region: str | None = None) -> str:
    """The one line a refused submission prints: what, where, the limit, the fixes."""
    if c.region is None and region:
        c = Capacity(c.kind, c.metric, region, c.limit, c.evidence)
    return f"{describe(c)}; {_fixes(c, backend, project)}"


_CODES = {QUOTA: "quota-exceeded", STOCKOUT: "capacity-stockout", NO_FIT: "no-node-fits", QUEUED: "queue-not-admitted"}


def capacity_diagnosis(
    c: Capacity, *, backend: str = "vertex", project: str | None = None, region: str | None = None, task: str | None = None
) -> Diagnosis | None:
    """``c`` as a diagnosis (None for rate limiting, which is retried, not diagnosed)."""
    code = _CODES.get(c.kind)
    if code is None:
        return None
    if c.region is None and region:
        c = Capacity(c.kind, c.metric, region, c.limit, c.evidence)
    return Diagnosis(code, task, describe(c), _fixes(c, backend, project), c.evidence)
