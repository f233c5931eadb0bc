"""Packaging a trainer: what of its directory may leave the machine, and the archive it ships in.

One concern a module:

- :mod:`~tfjob.packaging.secrets`: is a file a credential, by its name and its content
  (any encoding, pickles read without being run);
- :mod:`~tfjob.packaging.ignore`: ``.gcloudignore``/``.tfjobignore`` patterns, matched in
  linear time;
- :mod:`~tfjob.packaging.tree`: the walk that decides what may be shipped (links, hard links,
  special files, secrets, bounds) — :func:`collect_files` — and :func:`copy_shippable`, the
  filtered tree a container build context is made of;
- :mod:`~tfjob.packaging.archive`: the canonical ``.tar.gz`` (same files, same bytes) and
  :class:`BuiltPackage`;
- :mod:`~tfjob.packaging.cache`: the build cache of project sdists;
- :mod:`~tfjob.packaging.sdist`: :func:`build_sdist` (a project through its PEP 517 backend,
  a bare package around a generated ``setup.py``), :func:`gather_packages`; and
  :func:`check_trainer`, the rule every backend applies, from :mod:`tfjob.description.spec`.

The names below are the public face; import them from ``tfjob.packaging``.
"""

from __future__ import annotations

from .archive import FIXED_MTIME, BuiltPackage, read_tar, write_canonical_tar
from .ignore import MAX_IGNORE_RULES, IgnoreRule, RuleSet, is_excluded, is_ignored, parse_ignore
from .secrets import (
    MAX_SCAN_BYTES,
    SECRET_SCAN_BYTES,
    looks_like_secret,
    pickle_strings,
    scan_stream,
    secret_by_name,
    secret_in_content,
    secret_in_data,
    secret_reason,
)
from .sdist import BARE_VERSION, build_sdist, check_built_package, gather_packages
from ..description.spec import check_trainer
from .tree import (
    IGNORE_FILES,
    MAX_IGNORE_FILE_BYTES,
    MAX_PACKAGE_BYTES,
    MAX_PACKAGE_FILES,
    Collected,
    collect_files,
    copy_shippable,
    read_ignore_rules,
    read_member,
    shown,
)

__all__ = [
    "BARE_VERSION", "FIXED_MTIME", "IGNORE_FILES", "MAX_IGNORE_FILE_BYTES", "MAX_IGNORE_RULES", "MAX_PACKAGE_BYTES",
    "MAX_PACKAGE_FILES", "MAX_SCAN_BYTES", "SECRET_SCAN_BYTES", "BuiltPackage", "Collected", "IgnoreRule", "RuleSet", "build_sdist",
    "check_built_package", "check_trainer", "collect_files", "copy_shippable", "gather_packages", "is_excluded",
    "is_ignored", "looks_like_secret", "parse_ignore", "pickle_strings", "read_ignore_rules", "read_member", "read_tar",
    "scan_stream", "secret_by_name", "secret_in_content", "secret_in_data", "secret_reason", "shown", "write_canonical_tar",
]  # fmt: skip
