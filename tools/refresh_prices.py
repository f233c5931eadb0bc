#!/usr/bin/env python3
"""Write a tfjob price table from the Cloud Billing Catalog API.

    pip install 'tfjob[billing]'
    gcloud auth application-default login
    python tools/refresh_prices.py --regions us-central1,us-east4 --out prices.json
    tfjob cost trainer/ -m trainer.task --backend vertex --price-table prices.json

The table (the format of tfjob/pricing/vertex_prices.json, dated today, its source the API) prices
every machine tfjob knows as vCPUs x its family's Vertex AI training core SKU + GiB x its RAM SKU,
each GPU by its SKU, on-demand and Spot (the Preemptible SKUs). To refresh the table tfjob ships,
give ``--out sdk/pricing/vertex_prices.json`` and review the difference before committing it.
``--endpoint`` (or ``$TFJOB_BILLING_ENDPOINT``) points the client at another endpoint.
"""

from __future__ import annotations

import argparse
import json
import sys


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--regions", default="us-central1,us-east4", help="comma-separated regions (default us-central1,us-east4)")
    parser.add_argument("--out", required=True, help="the JSON file to write")
    parser.add_argument("--endpoint", default=None, help="another Cloud Billing API endpoint (a test stand-in)")
    args = parser.parse_args(argv)
    from tfjob import TfjobError
    from tfjob.pricing.catalog import fetch_table

    regions = [r.strip() for r in args.regions.split(",") if r.strip()][:50]
    try:
        table = fetch_table(regions, api_endpoint=args.endpoint)
    except TfjobError as e:
        print(f"error: {e}", file=sys.stderr)
        return e.exit_code
    empty = [r for r, prices in table["regions"].items() if not prices["machines"]]
    with open(args.out, "w", encoding="utf-8") as f:
        json.dump(table, f, indent=1)
        f.write("\n")
    counts = ", ".join(f"{r}: {len(p['machines'])} machines, {len(p['accelerators'])} accelerators" for r, p in table["regions"].items())
    print(f"wrote {args.out} ({table['date']}; {counts})")
    if empty:
        print(f"warning: no training SKUs found for {', '.join(empty)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
