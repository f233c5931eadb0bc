"""Pure renderers: JobSpec → each platform's request body (no I/O, no Google imports)."""
