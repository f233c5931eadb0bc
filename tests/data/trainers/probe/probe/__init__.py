"""A trivial trainer for the local backend's tests (see probe.task)."""
