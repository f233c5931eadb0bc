"""SHA-256 that loads OpenSSL only when it pays.

``hashlib`` loads OpenSSL (``_hashlib``) on import: ~5 ms, a twentieth of an unchanged
re-submit. Python's own SHA-256 needs no loading but is ~5× slower on large inputs, so a
digest of at most :data:`LARGE` bytes uses it, a larger one OpenSSL's. Both compute the same
SHA-256: only the time differs.
"""

from __future__ import annotations

from typing import Any

#: Inputs larger than this go to OpenSSL (~1.7 GB/s here, against ~0.3 GB/s).
LARGE = 4 << 20


def _builtin() -> Any:
    try:
        from _sha2 import sha256  # Python 3.12+
    except ImportError:
        try:
            from _sha256 import sha256  # Python 3.11
        except ImportError:  # an interpreter built without it
            return None
    return sha256


def sha256(data: bytes = b"", *, expected: int = 0) -> Any:
    """A ``hashlib.sha256``-alike over ``data``; ``expected``: how many bytes in all it will be
    fed (``update``), when more than ``data``."""
    if max(len(data), expected) <= LARGE:
        impl = _builtin()
        if impl is not None:
            return impl(data)
    import hashlib

    return hashlib.sha256(data)
