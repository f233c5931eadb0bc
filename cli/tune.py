"""tfjob tune commands."""

from __future__ import annotations

from .main import app  # noqa: F401
