"""The price of a job before it is submitted, and the cost of the time it ran (estimates).

A price table ships with tfjob (``vertex_prices.json`` beside this module: its date, its
source and how each figure was got are in the file; ``tools/refresh_prices.py`` writes a
new one from the Cloud Billing Catalog API). A user's own table, in the same format, is
taken with ``--price-table FILE`` or ``$TFJOB_PRICE_TABLE``.

:func:`estimate` prices a rendered Vertex AI ``CustomJob`` body pool by pool — machines,
accelerators (GPUs and TPU cores), boot disks — on-demand and Spot, in the job's region;
:func:`local_estimate` is a local job's (0, and said so). Pure: stdlib only, no network.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ..errors import UsageError

#: The table that ships with tfjob.
SHIPPED = Path(__file__).with_name("vertex_prices.json")
#: Bounds of a table read from outside.
MAX_TABLE_BYTES = 4 * 1024 * 1024
#: Vertex AI pool index → role.
ROLES = ("chief", "worker", "ps", "evaluator")
#: Vertex AI's boot disk when a pool names none.
DEFAULT_DISK = ("pd-ssd", 100)
#: Vertex AI's longest run when a job gives no timeout (7 days).
DEFAULT_TIMEOUT = 7 * 24 * 3600.0


@dataclass(frozen=True)
class PriceTable:
    """A price table: ``regions[region][machines|accelerators|disks][name] = [on_demand, spot]``."""

    date: str
    source: str
    currency: str
    regions: dict[str, Any]
    path: str


#: ``--price-table catalog``: prices read now from the Cloud Billing Catalog API.
CATALOG = "catalog"


def load_table(path: str | os.PathLike[str] | None = None, *, regions: tuple[str, ...] = ()) -> PriceTable:
    """The table at ``path``, else ``$TFJOB_PRICE_TABLE``'s, else the one tfjob ships; ``catalog``:
    one built now from the Cloud Billing Catalog API for ``regions`` (:mod:`.catalog`)."""
    given = path or os.environ.get("TFJOB_PRICE_TABLE") or None
    if given == CATALOG:
        from .catalog import fetch_table

        data = fetch_table(regions)
        return PriceTable(data["date"], data["source"], data["currency"], data["regions"], CATALOG)
    where = Path(given) if given else SHIPPED
    what = f"price table {where}"
    try:
        size = where.stat().st_size
        if size > MAX_TABLE_BYTES:
            raise UsageError(f"{what} is {size} bytes, more than {MAX_TABLE_BYTES}; give a smaller table")
        data = json.loads(where.read_text(encoding="utf-8"))
    except OSError as e:
        raise UsageError(f"{what} cannot be read ({e.strerror or e}); check --price-table / $TFJOB_PRICE_TABLE") from e
    except ValueError as e:
        raise UsageError(f"{what} is not JSON ({e}); write it as tfjob's own vertex_prices.json is written") from e
    if not isinstance(data, dict) or not isinstance(data.get("regions"), dict) or not data.get("date"):
        raise UsageError(f"{what} has no 'date' or no 'regions' object; write it as tfjob's own vertex_prices.json is written")
    return PriceTable(
        str(data["date"])[:40], str(data.get("source", "?"))[:300], str(data.get("currency", "USD"))[:8], data["regions"], str(where)
    )


@dataclass
class PoolPrice:
    """One pool's price per hour (all its replicas), on-demand and Spot; ``missing`` what the
    table has no figure for (priced as 0, and said)."""

    role: str
    replicas: int
    machine_type: str
    accelerator: str | None
    accelerator_count: int
    disk: str
    on_demand: float
    spot: float
    missing: list[str] = field(default_factory=list)

    def describe(self) -> str:
        acc = f" + {self.accelerator_count} x {self.accelerator}" if self.accelerator else ""
        return f"{self.replicas} x {self.machine_type}{acc}, {self.disk}"


@dataclass
class Estimate:
    """A job's price per hour, pool by pool, and what it costs for a time.

    Attributes:
        backend, region: where it runs.
        pools: each pool's price.
        on_demand, spot: the job's price per hour either way.
        strategy: what the job asks for (``STANDARD``, ``SPOT``, ``FLEX_START``), which
            :attr:`per_hour` follows.
        date, source, currency: the table's.
        note: a word on what is not priced (a local job, a cluster's own machines).
    """

    backend: str
    region: str | None
    pools: list[PoolPrice]
    on_demand: float
    spot: float
    strategy: str
    date: str
    source: str
    currency: str = "USD"
    note: str = ""

    @property
    def per_hour(self) -> float:
        """The price per hour of what the job asks for (Spot's with ``--spot``)."""
        return self.spot if self.strategy == "SPOT" else self.on_demand

    def cost(self, seconds: float) -> float:
        """The estimate for ``seconds`` of running."""
        return self.per_hour * max(0.0, seconds) / 3600.0

    @property
    def missing(self) -> list[str]:
        return sorted({m for p in self.pools for m in p.missing})

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["per_hour"] = round(self.per_hour, 6)
        out["estimate"] = True
        return out

    def lines(self, *, timeout: float | None = None) -> list[str]:
        """What ``--dry-run``, ``tfjob render`` and ``tfjob cost`` print."""
        if self.note and not self.pools:
            return [f"price: {self.note}"]
        chosen = {"SPOT": "Spot", "FLEX_START": "flex-start, priced on-demand"}.get(self.strategy, "on-demand")
        out = [f"price per hour (estimate; {self.currency}, {self.region}, price table of {self.date}, {self.source}):"]
        width = max(len(p.describe()) for p in self.pools) if self.pools else 0
        for p in self.pools:
            out.append(f"  {p.role:<10} {p.describe():<{width}}  {money(p.on_demand)}/h on-demand  {money(p.spot)}/h Spot")
        out.append(f"  {'total':<10} {'':<{width}}  {money(self.on_demand)}/h on-demand  {money(self.spot)}/h Spot  (this job: {chosen})")
        if timeout is not None:
            out.append(f"  for its timeout ({_hours(timeout)}): {money(self.cost(timeout))} at most")
        if self.missing:
            out.append(f"  not in the price table (priced 0): {', '.join(self.missing)}; give --price-table FILE with them")
        if self.note:
            out.append(f"  {self.note}")
        return out


def money(value: float) -> str:
    return f"${value:,.2f}" if value >= 0.995 or value == 0 else f"${value:.3f}"


def _hours(seconds: float) -> str:
    hours = seconds / 3600.0
    return f"{hours:g} h" if hours >= 1 else f"{seconds / 60:g} min"


def _figure(section: dict[str, Any], name: str) -> tuple[float, float] | None:
    entry = section.get(name) if isinstance(section, dict) else None
    if isinstance(entry, (list, tuple)) and len(entry) == 2 and all(isinstance(v, (int, float)) and v >= 0 for v in entry):
        return float(entry[0]), float(entry[1])
    if isinstance(entry, (int, float)) and entry >= 0:
        return float(entry), float(entry)
    return None


def _count(value: Any, default: int = 0) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return default


def estimate(body: dict[str, Any], *, region: str, table: PriceTable | None = None, backend: str = "vertex") -> Estimate:
    """The price per hour of a ``CustomJob`` body (``jobSpec.workerPoolSpecs``) in ``region``."""
    table = table or load_table()
    prices = table.regions.get(region)
    job_spec = body.get("jobSpec") or body
    strategy = str((job_spec.get("scheduling") or {}).get("strategy") or "STANDARD")
    if not isinstance(prices, dict):
        known = ", ".join(sorted(table.regions)) or "none"
        return Estimate(backend, region, [], 0.0, 0.0, strategy, table.date, table.source, table.currency,
                        note=f"the price table of {table.date} has no prices for {region} (it has {known}); give --price-table FILE")  # fmt: skip
    pools = []
    for index, pool in enumerate(job_spec.get("workerPoolSpecs") or []):
        replicas = _count(pool.get("replicaCount"), 0) if pool else 0
        if not pool or replicas <= 0:
            continue
        machine = pool.get("machineSpec") or {}
        machine_type = str(machine.get("machineType") or "?")
        accelerator = machine.get("acceleratorType") or None
        count = _count(machine.get("acceleratorCount"), 1) if accelerator else 0
        disk = pool.get("diskSpec") or {}
        disk_type = str(disk.get("bootDiskType") or DEFAULT_DISK[0])
        disk_gb = _count(disk.get("bootDiskSizeGb"), DEFAULT_DISK[1])
        missing: list[str] = []
        on_demand = spot = 0.0
        for section, name, times in (("machines", machine_type, 1), ("accelerators", accelerator, count), ("disks", disk_type, disk_gb)):
            if not name:
                continue
            figure = _figure(prices.get(section) or {}, str(name))
            if figure is None:
                missing.append(str(name))
                continue
            on_demand += figure[0] * times
            spot += figure[1] * times
        role = ROLES[index] if index < len(ROLES) else f"pool{index}"
        pools.append(PoolPrice(role, replicas, machine_type, accelerator, count, f"{disk_gb} GB {disk_type}",
                               on_demand * replicas, spot * replicas, missing))  # fmt: skip
    return Estimate(
        backend,
        region,
        pools,
        sum(p.on_demand for p in pools),
        sum(p.spot for p in pools),
        strategy,
        table.date,
        table.source,
        table.currency,
    )


def local_estimate(backend: str = "local") -> Estimate:
    """A job on this machine: nothing to pay a platform for, and said so."""
    return Estimate(backend, None, [], 0.0, 0.0, "STANDARD", "-", "-", note="$0.00/h: the job runs on this machine (no platform charge)")


def unpriced(backend: str, why: str) -> Estimate:
    """A backend tfjob has no prices for (a Kubernetes cluster's machines are its owner's)."""
    return Estimate(backend, None, [], 0.0, 0.0, "STANDARD", "-", "-", note=why)


def check_max_cost(est: Estimate, max_cost: float | None, timeout: float | None) -> None:
    """Refuse (one line) a job whose estimate for its timeout is over ``max_cost``."""
    if max_cost is None:
        return
    if isinstance(max_cost, bool) or not isinstance(max_cost, (int, float)) or not max_cost >= 0:
        raise UsageError(problem="{max_cost=" + repr(max_cost) + "} must be an amount of money, 0 or more")
    seconds = timeout if timeout else DEFAULT_TIMEOUT
    cost = est.cost(seconds)
    if cost > max_cost:
        said = f"its timeout {_hours(seconds)}" if timeout else f"Vertex AI's longest run, {_hours(seconds)} (no {{timeout}} given)"
        raise UsageError(
            problem=f"the job's estimate for {said} is {money(cost)} ({money(est.per_hour)}/h, price table of {est.date}), "
            f"over {{max_cost={max_cost:g}}}",
            fix="give a shorter {timeout}, fewer or smaller machines, {spot}, or a higher {max_cost}",
        )


def price_record(est: Estimate, table: str | None = None) -> dict[str, Any]:
    """What a job's record keeps of its price (``extra["price"]``), for :func:`ran_cost`; ``table``
    the file it came from (None: the shipped one), for :func:`repriced`."""
    out = {"per_hour": round(est.per_hour, 6), "strategy": est.strategy, "region": est.region, "date": est.date, "currency": est.currency}
    if table:
        out["table"] = table
    return out


def repriced(price: Any, body: dict[str, Any], region: str) -> Any:
    """A record's ``price`` for another attempt (``body`` in ``region``: failover), from the same
    table; ``price`` as it was when that table cannot be read now (a catalog's, a file gone)."""
    if not isinstance(price, dict):
        return price
    table = price.get("table")
    if table == CATALOG:
        return price
    try:
        est = estimate(body, region=region, table=load_table(table) if table else load_table(SHIPPED))
    except UsageError:
        return price
    return price_record(est, table)


def ran_cost(status: Any, now: float | None = None) -> dict[str, Any] | None:
    """The estimated cost of the time a job ran (its running time at the price recorded when it
    was submitted), or None where tfjob has no price for it. A local job's is 0, and said so.

    Returns:
        ``{"estimate": True, "cost", "currency", "hours", "per_hour", "price_table_date", "text"}``.
    """
    import time

    if getattr(status, "backend", None) == "local":
        return {"estimate": True, "cost": 0.0, "currency": "USD", "hours": None, "per_hour": 0.0, "price_table_date": None,
                "text": "$0.00 (the job runs on this machine: no platform charge)"}  # fmt: skip
    extra = getattr(status, "extra", None) or {}
    price = extra.get("price")
    if not isinstance(price, dict) or not isinstance(price.get("per_hour"), (int, float)):
        return None
    started = status.started
    if started is None:
        seconds = 0.0
    else:
        end = status.ended if status.ended is not None else (now if now is not None else time.time())
        seconds = max(0.0, float(end) - float(started))
    per_hour = float(price["per_hour"])
    cost = per_hour * seconds / 3600.0
    hours = seconds / 3600.0
    ongoing = "" if status.ended is not None or started is None else ", still running"
    text = f"~{money(cost)} (an estimate: {hours:.2f} h at {money(per_hour)}/h, price table of {price.get('date')}{ongoing})"
    return {"estimate": True, "cost": round(cost, 4), "currency": str(price.get("currency", "USD")), "hours": round(hours, 4),
            "per_hour": per_hour, "price_table_date": price.get("date"), "text": text}  # fmt: skip
