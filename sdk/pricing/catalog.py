"""A price table from the Cloud Billing Catalog API (``google-cloud-billing``, the ``billing`` extra).

Vertex AI's training SKUs price a machine by its parts: a vCPU-hour and a GiB-hour of memory per
machine family ("… Training on N1 Predefined Instance Core …", "… Instance Ram …"), and each GPU
per hour ("… Nvidia Tesla T4 GPU …"); a SKU whose ``category.usageType`` is ``Preemptible`` is
the Spot price. :func:`fetch_table` reads every SKU of the Vertex AI service (paged, bounded) and
builds a table in the shipped file's format: each machine tfjob's catalog knows
(:data:`tfjob.description.machines.MACHINES`) priced as ``vCPUs x core + GiB x RAM`` in every region asked
for. ``tools/refresh_prices.py`` writes it to a file; ``--price-table catalog`` reads it at once
(credentials needed: application-default ones). ``$TFJOB_BILLING_ENDPOINT`` points the client
elsewhere (a local stand-in in tests).
"""

from __future__ import annotations

import datetime
import os
import re
from typing import Any, Iterable

from ..errors import BackendError, UsageError, missing_extra

#: The Vertex AI service as the Catalog API names it.
SERVICE_NAME = "Vertex AI"
#: Bounds: SKUs read, pages followed.
MAX_SKUS = 50_000
MAX_PAGES = 200

_GPUS = {
    "T4": "NVIDIA_TESLA_T4", "V100": "NVIDIA_TESLA_V100", "P100": "NVIDIA_TESLA_P100", "P4": "NVIDIA_TESLA_P4",
    "A100": "NVIDIA_TESLA_A100", "A100 80GB": "NVIDIA_A100_80GB", "L4": "NVIDIA_L4", "H100 80GB": "NVIDIA_H100_80GB",
    "H100": "NVIDIA_H100_80GB",
}  # fmt: skip
_GPU = re.compile(r"\bNvidia\s+(?:Tesla\s+)?(T4|V100|P100|P4|A100 80GB|A100|L4|H100 80GB|H100)\s+GPU\b", re.I)
_PART = re.compile(r"\b(N1|N2|N2D|E2|C2|C2D|C3|A2|A3|G2|M1|M2)\s+(?:Predefined\s+|Custom\s+)?Instance\s+(Core|Ram)\b", re.I)
_TRAINING = re.compile(r"\bTraining\b", re.I)


def _price(sku: Any) -> float | None:
    """The SKU's last tier's unit price (the rate a job pays), in the currency asked for."""
    infos = list(getattr(sku, "pricing_info", None) or [])
    if not infos:
        return None
    rates = list(infos[-1].pricing_expression.tiered_rates or [])
    if not rates:
        return None
    money = rates[-1].unit_price
    return float(money.units or 0) + float(money.nanos or 0) / 1e9


def parse_skus(skus: Iterable[Any], regions: Iterable[str]) -> dict[str, dict[str, dict[str, list[float]]]]:
    """Vertex AI training SKUs → ``{region: {"machines"|"accelerators"|"parts": {name: [on_demand, spot]}}}``."""
    wanted = set(regions)
    out: dict[str, dict[str, dict[str, list[float]]]] = {r: {"accelerators": {}, "parts": {}} for r in wanted}
    for sku in skus:
        description = str(getattr(sku, "description", ""))[:500]
        if not _TRAINING.search(description):
            continue
        price = _price(sku)
        if price is None:
            continue
        spot = str(getattr(getattr(sku, "category", None), "usage_type", "")) == "Preemptible"
        gpu = _GPU.search(description)
        part = _PART.search(description)
        if gpu is not None:
            section, name = "accelerators", _GPUS[" ".join(gpu.group(1).upper().split())]
        elif part is not None:
            section, name = "parts", f"{part.group(1).lower()}-{part.group(2).lower()}"
        else:
            continue
        for region in getattr(sku, "service_regions", None) or []:
            if region in wanted:
                entry = out[region][section].setdefault(name, [-1.0, -1.0])
                entry[1 if spot else 0] = price
    return out


def build_table(parsed: dict[str, dict[str, dict[str, list[float]]]], *, source: str, date: str | None = None) -> dict[str, Any]:
    """A price table (the shipped file's format) from :func:`parse_skus`: machines from their parts."""
    from ..description.machines import MACHINES, family_of

    regions: dict[str, Any] = {}
    for region, found in parsed.items():
        parts = found["parts"]
        machines = {}
        for name, info in MACHINES.items():
            core, ram = parts.get(f"{family_of(name)}-core"), parts.get(f"{family_of(name)}-ram")
            if core is None or ram is None or core[0] < 0 or ram[0] < 0:
                continue
            on_demand = info.vcpus * core[0] + info.memory_gb * ram[0]
            spot = info.vcpus * core[1] + info.memory_gb * ram[1] if core[1] >= 0 and ram[1] >= 0 else on_demand
            machines[name] = [round(on_demand, 6), round(spot, 6)]
        accelerators = {k: [round(v[0], 6), round(v[1] if v[1] >= 0 else v[0], 6)] for k, v in found["accelerators"].items() if v[0] >= 0}
        regions[region] = {"machines": machines, "accelerators": accelerators, "disks": {}}
    return {
        "format": 1,
        "what": "Vertex AI custom training, USD per hour per machine / per accelerator; [on-demand, Spot]",
        "date": date or datetime.date.today().isoformat(),
        "currency": "USD",
        "source": source,
        "notes": ["machines: vCPUs x the family's training core SKU + GiB x its RAM SKU; Spot: the Preemptible SKUs"],
        "regions": regions,
    }


def fetch_table(regions: Iterable[str], *, credentials: Any = None, api_endpoint: str | None = None) -> dict[str, Any]:
    """Read Vertex AI's SKUs from the Cloud Billing Catalog API and build a price table for ``regions``."""
    try:
        from google.api_core import exceptions as core
        from google.api_core.client_options import ClientOptions
        from google.cloud import billing_v1
    except ImportError as e:
        raise missing_extra("billing", "price catalog", e) from e

    endpoint = api_endpoint or os.environ.get("TFJOB_BILLING_ENDPOINT") or None
    options = ClientOptions(api_endpoint=endpoint) if endpoint else None
    if credentials is None:
        import google.auth
        from google.auth import exceptions as auth

        try:
            credentials, _ = google.auth.default(scopes=["https://www.googleapis.com/auth/cloud-platform"])
        except auth.DefaultCredentialsError as e:
            raise UsageError("--price-table catalog reads the Cloud Billing Catalog API, which needs Google Cloud credentials "
                             "(`gcloud auth application-default login`); or give --price-table FILE") from e  # fmt: skip
    client = billing_v1.CloudCatalogClient(transport="rest", credentials=credentials, client_options=options)
    try:
        service = None
        for page_number, page in enumerate(client.list_services(request={"page_size": 5000}).pages):
            service = next((s for s in page.services if s.display_name == SERVICE_NAME), None)
            if service is not None or page_number >= MAX_PAGES:
                break
        if service is None:
            raise BackendError(f"the Cloud Billing Catalog lists no {SERVICE_NAME!r} service; give --price-table FILE instead")
        skus: list[Any] = []
        for page_number, page in enumerate(
            client.list_skus(request={"parent": service.name, "currency_code": "USD", "page_size": 5000}).pages
        ):
            skus.extend(page.skus)
            if len(skus) >= MAX_SKUS or page_number >= MAX_PAGES:
                break
    except core.GoogleAPICallError as e:
        if isinstance(e, (core.Forbidden, core.Unauthorized)):
            raise UsageError(
                f"the Cloud Billing Catalog API refused the credentials ({e.code}): give --price-table FILE, or use credentials that may read it"
            ) from e
        raise BackendError(
            f"the Cloud Billing Catalog API answered {e.code}: {str(e.message)[:300]}; try again, or give --price-table FILE"
        ) from e
    where = endpoint or "cloudbilling.googleapis.com"
    return build_table(parse_skus(skus, regions), source=f"Cloud Billing Catalog API ({where}), service {service.name}")
