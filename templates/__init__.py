"""Trainer templates copied by ``tfjob init`` (package data)."""
