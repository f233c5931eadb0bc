"""tfjob machines: the machine types, accelerators, legacy names and scale tiers tfjob knows."""

from __future__ import annotations

from .main import app  # noqa: F401
