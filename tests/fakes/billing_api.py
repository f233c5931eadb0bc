"""A local HTTP server that speaks the Cloud Billing Catalog API (v1, REST) for the real
``google-cloud-billing`` client (``api_endpoint="http://127.0.0.1:PORT"``):

- ``GET /v1/services?pageSize=&pageToken=`` — the services, paged;
- ``GET /v1/services/ID/skus?currencyCode=&pageSize=&pageToken=`` — a service's SKUs, paged.

SKUs are given with :meth:`FakeBilling.add_sku` in the shape the API answers (description,
category.usageType, serviceRegions, pricingInfo.pricingExpression.tieredRates.unitPrice);
:attr:`FakeBilling.authorizations` records the Authorization headers received.
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import parse_qs, urlparse

from .server import JsonHandler, LocalServer

VERTEX = {
    "name": "services/C7E2-9256-1C43",
    "serviceId": "C7E2-9256-1C43",
    "displayName": "Vertex AI",
    "businessEntityName": "businessEntities/GCP",
}
COMPUTE = {
    "name": "services/6F81-5844-456A",
    "serviceId": "6F81-5844-456A",
    "displayName": "Compute Engine",
    "businessEntityName": "businessEntities/GCP",
}
_SKUS = re.compile(r"^/v1/services/([^/]+)/skus$")


def sku(sku_id: str, description: str, price: float, regions: list[str], unit: str = "h", usage: str = "OnDemand") -> dict[str, Any]:
    """One SKU as the API answers it (its price as units + nanos)."""
    units, nanos = int(price), round((price - int(price)) * 1e9)
    return {
        "name": f"services/C7E2-9256-1C43/skus/{sku_id}", "skuId": sku_id, "description": description,
        "category": {"serviceDisplayName": "Vertex AI", "resourceFamily": "Compute", "resourceGroup": "Training", "usageType": usage},
        "serviceRegions": regions,
        "pricingInfo": [{"summary": "", "pricingExpression": {"usageUnit": unit, "usageUnitDescription": unit, "displayQuantity": 1,
                          "tieredRates": [{"startUsageAmount": 0, "unitPrice": {"currencyCode": "USD", "units": str(units), "nanos": nanos}}]},
                         "currencyConversionRate": 1, "effectiveTime": "2026-11-01T00:00:00Z"}],
        "serviceProviderName": "Google",
    }  # fmt: skip


class FakeBilling(LocalServer):
    def __init__(self, page_size: int = 2) -> None:
        super().__init__()
        self.services = [COMPUTE, VERTEX]
        self.skus: dict[str, list[dict[str, Any]]] = {VERTEX["serviceId"]: []}
        self.page_size = page_size
        self.requests: list[str] = []
        self.authorizations: list[str] = []

    def add_sku(self, *args: Any, service: str = VERTEX["serviceId"], **kw: Any) -> None:
        self.skus.setdefault(service, []).append(sku(*args, **kw))


class _Handler(JsonHandler):
    state: FakeBilling

    def _page(self, items: list[dict[str, Any]], field: str, query: dict[str, list[str]]) -> None:
        start = int(query.get("pageToken", ["0"])[0] or 0)
        size = min(int(query.get("pageSize", ["100"])[0] or 100), self.state.page_size)
        out: dict[str, Any] = {field: items[start : start + size]}
        if start + size < len(items):
            out["nextPageToken"] = str(start + size)
        self._reply(200, out)

    def _handle(self, method: str) -> None:
        url = urlparse(self.path)
        query = parse_qs(url.query)
        self.state.requests.append(f"{method} {url.path}?{url.query}")
        self.state.authorizations.append(self.headers.get("Authorization", ""))
        if method == "POST" and url.path == "/token":
            length = int(self.headers.get("Content-Length") or 0)
            self.rfile.read(length)
            return self._reply(200, {"access_token": "ya29.fake-billing-token", "expires_in": 3600, "token_type": "Bearer"})
        if method == "GET" and url.path == "/v1/services":
            return self._page(self.state.services, "services", query)
        m = _SKUS.match(url.path)
        if method == "GET" and m:
            if query.get("currencyCode", ["USD"])[0] != "USD":
                return self._error(400, "only USD here", "INVALID_ARGUMENT")
            return self._page(self.state.skus.get(m.group(1), []), "skus", query)
        self._error(404, f"no route for {method} {url.path}", "NOT_FOUND")


FakeBilling.handler = _Handler
