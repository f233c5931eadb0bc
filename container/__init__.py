"""The in-container side of tfjob: the bootstrap (stdlib only) and the base image."""
