"""tfjob.digest: the same SHA-256 as hashlib's, without loading OpenSSL for a small input."""

from __future__ import annotations

import hashlib
import subprocess
import sys

import pytest

from tfjob import digest


@pytest.mark.parametrize("size", [0, 1, 63, 64, 65, 1 << 16, digest.LARGE, digest.LARGE + 1])
def test_the_digest_is_hashlibs_at_every_size(size: int) -> None:
    data = bytes(i * 7 % 251 for i in range(size))
    assert digest.sha256(data).hexdigest() == hashlib.sha256(data).hexdigest()
    fed = digest.sha256(expected=size)
    for at in range(0, size, 1 << 20):
        fed.update(data[at : at + (1 << 20)])
    assert fed.hexdigest() == hashlib.sha256(data).hexdigest()


def test_a_small_input_does_not_load_openssl_and_a_large_one_does() -> None:
    probe = "import sys; from tfjob import digest; digest.sha256(b'x' * {n}).hexdigest(); print('_hashlib' in sys.modules)"
    small = subprocess.run([sys.executable, "-c", probe.format(n=1000)], capture_output=True, text=True, timeout=60)
    large = subprocess.run([sys.executable, "-c", probe.format(n=digest.LARGE + 1)], capture_output=True, text=True, timeout=60)
    assert (small.stdout.strip(), large.stdout.strip()) == ("False", "True"), small.stderr + large.stderr
