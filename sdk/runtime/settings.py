"""Where tfjob keeps its state, and the cloud settings that do not belong to one job.

Precedence, highest first: command-line flags (or keyword arguments), environment
variables, then ``$TFJOB_HOME/config.yaml`` (``project``, ``region``,
``staging_bucket``, ``api_endpoint``, ``backend``, ``namespace``, ``poll_interval``).
``TFJOB_HOME`` defaults to ``~/.tfjob``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Mapping

from ..errors import ConfigFileError

#: Environment variables read for each setting, in order.
ENV_VARS: dict[str, tuple[str, ...]] = {
    "project": ("TFJOB_PROJECT", "GOOGLE_CLOUD_PROJECT", "CLOUDSDK_CORE_PROJECT"),
    "region": ("TFJOB_REGION", "CLOUDSDK_AI_REGION", "GOOGLE_CLOUD_REGION"),
    "staging_bucket": ("TFJOB_STAGING_BUCKET",),
    "api_endpoint": ("TFJOB_API_ENDPOINT",),
    "backend": ("TFJOB_BACKEND",),
    "namespace": ("TFJOB_NAMESPACE",),
    "poll_interval": ("TFJOB_POLL_INTERVAL",),
}


@dataclass
class Settings:
    """Settings that outlive one job."""

    project: str | None = None
    region: str | None = None
    staging_bucket: str | None = None
    api_endpoint: str | None = None
    backend: str | None = None
    namespace: str | None = None
    #: First pause, in seconds, between two status reads while following a cloud job
    #: (it grows to the backend's longest); ``--poll-interval`` overrides it for one job.
    poll_interval: str | None = None
    #: Where each setting that is set came from (``--backend``, ``TFJOB_BACKEND``, the
    #: config file's path), for messages about its value.
    sources: dict[str, str] = field(default_factory=dict, compare=False, repr=False)

    def source(self, name: str) -> str:
        """Where setting ``name`` came from, as a message names it (default: its flag)."""
        return self.sources.get(name, "--" + name.replace("_", "-"))

    def subject(self, name: str) -> dict[str, str]:
        """Where setting ``name`` came from, as an error's subject (:class:`tfjob.errors.SpecError`):
        the variable or the settings file's key, else the knob (a flag or a keyword)."""
        return {"what": self.sources[name]} if name in self.sources else {"field": name}


#: The settings a flag, a variable or the config file sets.
SETTING_NAMES = tuple(f.name for f in fields(Settings) if f.name != "sources")


def tfjob_home(env: Mapping[str, str] | None = None) -> Path:
    """``$TFJOB_HOME``, else ``~/.tfjob`` (not created here)."""
    env = os.environ if env is None else env
    home = env.get("TFJOB_HOME")
    return Path(home).expanduser() if home else Path.home() / ".tfjob"


def load_settings(env: Mapping[str, str] | None = None, **flags: str | None) -> Settings:
    """Resolve the settings from flags, then the environment, then the config file."""
    env = os.environ if env is None else env
    values: dict[str, str | None] = {name: None for name in SETTING_NAMES}
    sources: dict[str, str] = {}
    path = tfjob_home(env) / "config.yaml"
    if path.is_file():
        from_file = _read_config(path)
        values.update(from_file)
        sources.update({name: f"{name} in {path}" for name in from_file})
    for name, variables in ENV_VARS.items():
        for var in variables:
            if env.get(var):
                values[name] = env[var]
                sources[name] = var
                break
    for name, value in flags.items():
        if name not in values:
            raise TypeError(f"unknown setting {name!r}")
        if value is not None:
            values[name] = value
            sources.pop(name, None)  # a flag or keyword: named as such
    return Settings(**values, sources=sources)


def _read_config(path: Path) -> dict[str, str]:
    # Bounded like every document from outside: a regular file of at most 1 MiB, shallow;
    # a YAML mistake is one line with its line number.
    from ..config.files import read_config_file

    data = read_config_file(path, "the settings file") or {}
    if not isinstance(data, dict):
        raise ConfigFileError(f"{path}: expected a mapping of settings, got {type(data).__name__}")
    known = set(SETTING_NAMES)
    unknown = sorted(str(key) for key in set(data) - known)
    if unknown:
        raise ConfigFileError(f"{path}: unknown key {unknown[0]!r}; known keys are {', '.join(sorted(known))}")
    return {k: str(v) for k, v in data.items() if v is not None}
