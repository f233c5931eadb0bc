"""Restart policies and preemptions, with the platforms' meaning (pure; stdlib only).

A task that ends is started again, in place, when its restart policy says so — Kubeflow's
four policies, which every backend reads the same way:

==========  ==========================================================================
Never       never restarted: the job fails when the task fails
OnFailure   restarted when it fails (a non-zero exit code, or killed by a signal)
ExitCode    restarted when its exit code says the platform ended it: killed by a signal,
            or 128–255 (SIGTERM of a preemption is 143); 1–127 is the program's own
            error, permanent
Always      restarted whenever it ends (the chief's success still ends the job)
==========  ==========================================================================

A preemption is what a reclaimed Spot VM or an evicted pod gets: SIGTERM, a grace period
(30 s on Compute Engine and Kubernetes), then SIGKILL. ``--preempt`` schedules them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Protocol

from ..errors import UsageError, Word
from ..lazy import LazyPattern

POLICIES: tuple[str, ...] = ("Never", "OnFailure", "ExitCode", "Always")
ROLES: tuple[str, ...] = ("chief", "worker", "ps", "evaluator")
#: What a task gets when no ``--restart-policy`` is given, by the platform a local run
#: imitates (``--dialect``): what tfjob renders for Kubeflow (ExitCode); Vertex AI and AI
#: Platform restart a replica whose VM was preempted or restarted, and nothing else (a
#: trainer that fails or is killed fails the job) — Never, with preempted tasks restarted
#: (:data:`RESTARTS_PREEMPTED`); ``gcloud ai-platform local train`` restarts nothing.
PLATFORM_DEFAULTS: dict[str, str] = {"vertex": "Never", "ai-platform": "Never", "kubeflow": "ExitCode", "gcloud-local": "Never"}
#: The platforms that restart a preempted replica by themselves when no policy is given.
RESTARTS_PREEMPTED: frozenset[str] = frozenset({"vertex", "ai-platform"})
#: Restarts of tasks (all of them together, as the Kubeflow operator counts) before the job fails.
DEFAULT_BACKOFF_LIMIT = 3
#: The first restart's delay, doubled for each further restart of the same task, up to the cap
#: (the kubelet's back-off is 10 s doubling to 5 min; locally shorter by default).
DEFAULT_RESTART_DELAY = 1.0
MAX_RESTART_DELAY = 300.0
#: Seconds between SIGTERM and SIGKILL of a preemption: Compute Engine Spot/preemptible VMs
#: and Kubernetes' ``terminationGracePeriodSeconds`` both give 30.
DEFAULT_PREEMPT_GRACE = 30.0
#: Bounds of what the flags take.
MAX_PREEMPTIONS = 100
MAX_SECONDS = 7 * 24 * 3600.0


def check_policy(value: Any, flag: str = "--restart-policy") -> str:
    """A policy in its canonical spelling (any case taken)."""
    text = str(value).strip()
    for policy in POLICIES:
        if text.lower() == policy.lower():
            return policy
    raise UsageError(f"{flag} {text!r} is not a restart policy; choose one of {', '.join(POLICIES)} (ROLE=POLICY for one role)")


def parse_policies(values: Any, flag: str = "--restart-policy") -> dict[str, str]:
    """``["OnFailure", "ps=Never"]`` (or ``"Never"``, or ``{"worker": "OnFailure"}``) →
    ``{"default": "OnFailure", "ps": "Never"}``; {} for None.

    Raises:
        UsageError: an unknown policy or role, or a role given twice.
    """
    if values is None or values == () or values == []:
        return {}
    if isinstance(values, Mapping):
        items = [(str(k).strip(), v) for k, v in values.items()]
    else:
        if isinstance(values, str):
            values = [values]
        items = []
        for value in values:
            role, sep, rest = str(value).partition("=")
            items.append((role.strip(), rest) if sep else ("default", value))
    out: dict[str, str] = {}
    for role, value in items[:16]:
        if role not in (*ROLES, "default"):
            raise UsageError(
                f"{flag} {role}={value}: {role!r} is not a role; give POLICY for every role or ROLE=POLICY ({', '.join(ROLES)})"
            )
        if role in out:
            raise UsageError(f"{flag} is given twice for {'every role' if role == 'default' else role}")
        out[role] = check_policy(value, flag)
    return out


def policy_for(policies: Mapping[str, str], role: str, default: str) -> str:
    """The policy of a role: its own, else the one for every role, else ``default``."""
    return policies.get(role) or policies.get("default") or default


def retryable(exit_code: int | None, signal: int | None) -> bool:
    """True when an end looks like the platform's doing (a signal, exit 128–255), not the program's."""
    return signal is not None or (exit_code is not None and 128 <= exit_code <= 255)


def should_restart(policy: str, exit_code: int | None, signal: int | None) -> bool:
    """Does ``policy`` restart a task that ended so?"""
    failed = signal is not None or exit_code != 0
    if policy == "Always":
        return True
    if policy == "OnFailure":
        return failed
    if policy == "ExitCode":
        return retryable(exit_code, signal)
    return False


def restart_delay(base: float, restarts: int) -> float:
    """The pause before a task's ``restarts``-th restart (1 for the first): exponential, capped."""
    return min(MAX_RESTART_DELAY, max(0.0, base) * 2.0 ** max(0, min(restarts - 1, 30)))


# ASCII digits only ((?a)): `\d` would read '٥' (Arabic-Indic five) as a 5.
_DURATION = LazyPattern(r"(?a)\s*(\d{1,9}(?:\.\d{1,6})?)\s*(ms|s|m|h)?\s*\Z")


def parse_seconds(text: Any, flag: str) -> float:
    """``30s``, ``1.5m``, ``500ms``, ``2h`` or a plain number of seconds."""
    if isinstance(text, bool):
        raise UsageError(f"{flag} {text!r} is not a duration (e.g. 30s, 2m)")
    if isinstance(text, (int, float)):
        seconds = float(text)
    else:
        m = _DURATION.match(str(text)[:40])
        if not m:
            raise UsageError(f"{flag} {str(text)[:40]!r} is not a duration (e.g. 30s, 500ms, 2m)")
        seconds = float(m.group(1)) * {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, None: 1.0}[m.group(2)]
    if not 0 <= seconds <= MAX_SECONDS:
        raise UsageError(f"{flag} {text!r}: give 0 to {MAX_SECONDS:g} seconds")
    return seconds


@dataclass(frozen=True)
class Preemption:
    """One preemption to deliver: ``task`` (``worker-1``; for a random one, the role to pick
    from or ``*``) at ``at`` seconds after the job's tasks started. ``every``: a random
    preemption, again and again, ``at`` seconds apart on average."""

    task: str
    at: float
    every: bool = False


_TASK = LazyPattern(r"(?a)(chief|worker|ps|evaluator)-\d{1,6}\Z")


def parse_preemptions(values: Any, flag: str = "--preempt") -> list[Preemption]:
    """``["worker-1@30s", "random@2m", "random:worker@1m"]`` → preemptions.

    ``TASK@TIME``: preempt that task once, TIME after the tasks started. ``random@MEAN``:
    preempt a task picked at random, at random times MEAN apart on average, until the job
    ends (``random:ROLE@MEAN`` picks from one role); ``--preempt-seed`` makes it repeatable.
    """
    if values is None:
        return []
    if isinstance(values, str):
        values = [values]
    values = list(values)
    if len(values) > MAX_PREEMPTIONS:
        raise UsageError(f"{flag} is given {len(values)} times; at most {MAX_PREEMPTIONS}")
    out = []
    for value in values:
        text = str(value).strip()
        task, sep, when = text.partition("@")
        task = task.strip().lower()
        if not sep:
            raise UsageError(f"{flag} {text[:60]!r}: say when, as TASK@TIME (worker-1@30s) or random@MEAN (random@2m)")
        if task == "random" or task.startswith("random:"):
            role = task.partition(":")[2] or "*"
            if role not in (*ROLES, "*"):
                raise UsageError(f"{flag} {text[:60]!r}: {role!r} is not a role ({', '.join(ROLES)})")
            mean = parse_seconds(when, flag)
            if mean <= 0:
                raise UsageError(f"{flag} {text[:60]!r}: the mean time between random preemptions must be above 0")
            out.append(Preemption(role, mean, every=True))
        else:
            if task.startswith("master-"):
                task = "chief-" + task[len("master-") :]
            if not _TASK.match(task):
                raise UsageError(f"{flag} {text[:60]!r}: {task!r} is not a task (chief-0, worker-1, ps-0, evaluator-0)")
            out.append(Preemption(task, parse_seconds(when, flag)))
    return out


@dataclass(frozen=True)
class Rules:
    """What restarts a local job's tasks and the job itself, and the preemptions to rehearse."""

    policies: Mapping[str, str]
    default: str
    backoff_limit: int = DEFAULT_BACKOFF_LIMIT
    delay: float = DEFAULT_RESTART_DELAY
    max_restarts: int = 0
    preemptions: tuple[Preemption, ...] = ()
    grace: float = DEFAULT_PREEMPT_GRACE
    seed: int = 0
    #: Without a policy of its own, a preempted task is restarted (Vertex AI, AI Platform).
    restart_preempted: bool = False

    def policy(self, role: str) -> str:
        return policy_for(self.policies, role, self.default)

    def restarts(self, role: str, exit_code: int | None, signal: int | None, preempted: bool) -> tuple[bool, str]:
        """Is a task of ``role`` that ended so restarted, and by what (said in its restart line)."""
        policy = self.policy(role)
        if should_restart(policy, exit_code, signal):
            return True, f"restart policy {policy}"
        if preempted and self.restart_preempted and not (role in self.policies or "default" in self.policies):
            return True, "the platform restarts a preempted replica"
        return False, f"restart policy {policy}"


def _count(value: Any, flag: str, default: int) -> int:
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 10_000:
        raise UsageError(f"{flag} {value!r} must be a whole number from 0 to 10000")
    return value


class RestartOptions(Protocol):
    """What a local run's options say about restarts (``tfjob.backends.local.options.LocalOptions``)."""

    @property
    def dialect(self) -> str: ...
    @property
    def restart_policy(self) -> Any: ...
    @property
    def backoff_limit(self) -> int | None: ...
    @property
    def restart_delay(self) -> float | None: ...
    @property
    def max_restarts(self) -> int | None: ...
    @property
    def preempt(self) -> Any: ...
    @property
    def preempt_grace(self) -> float | None: ...
    @property
    def preempt_seed(self) -> int: ...


def build_rules(options: RestartOptions, task_names: Iterable[str] = ()) -> Rules:
    """The restart rules of a local run from its options (``restart_policy``, ``backoff_limit``,
    ``restart_delay``, ``max_restarts``, ``preempt``, ``preempt_grace``, ``preempt_seed``,
    ``dialect``), checked; ``task_names``: the job's tasks, which ``--preempt`` must name.

    Raises:
        UsageError: one line naming the flag and the fix.
    """
    names = set(task_names)
    preemptions = tuple(parse_preemptions(options.preempt))
    for p in preemptions:
        if names and not p.every and p.task not in names:
            raise UsageError(
                field="preempt", value=Word(f"{p.task}@…"), problem=f": the job has no task {p.task} (it has {', '.join(sorted(names))})"
            )
        if names and p.every and p.task != "*" and not any(n.startswith(p.task + "-") for n in names):
            raise UsageError(field="preempt", value=Word(f"random:{p.task}@…"), problem=f": the job has no {p.task} task")
    policies = parse_policies(options.restart_policy)
    for role in policies:
        # As --preempt: a policy for a role the job lacks is a mistake, not a no-op.
        if names and role != "default" and not any(n.startswith(role + "-") for n in names):
            raise UsageError(
                field="restart_policy",
                value=Word(f"{role}={policies[role]}"),
                problem=f": the job has no {role} task (it has {', '.join(sorted(names)[:8])}{' …' if len(names) > 8 else ''})",
            )
    delay = options.restart_delay
    grace = options.preempt_grace
    seed = options.preempt_seed or 0
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2**63:
        raise UsageError(field="preempt_seed", value=seed, problem="must be a whole number from 0 to 2**63-1")
    return Rules(
        policies=policies,
        default=PLATFORM_DEFAULTS.get(str(options.dialect), "ExitCode"),
        backoff_limit=_count(options.backoff_limit, "--backoff-limit", DEFAULT_BACKOFF_LIMIT),
        delay=DEFAULT_RESTART_DELAY if delay is None else min(parse_seconds(delay, "--restart-delay"), MAX_RESTART_DELAY),
        max_restarts=_count(options.max_restarts or 0, "--max-restarts", 0),
        preemptions=preemptions,
        grace=DEFAULT_PREEMPT_GRACE if grace is None else parse_seconds(grace, "--preempt-grace"),
        seed=seed,
        restart_preempted=str(options.dialect) in RESTARTS_PREEMPTED,
    )
