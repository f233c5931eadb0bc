"""The packaging secret scanner's third round (issue 36): what the second round's corpus
still let through, each kind judged directly (the corpus in test_packaging_corpus.py checks
that none of it reaches the sdist, the ConfigMap or either image context).
"""

from __future__ import annotations

import pytest

from tfjob.packaging import MAX_SCAN_BYTES, SECRET_SCAN_BYTES, scan_stream, secret_by_name, secret_in_content, secret_in_data

PEM = "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7\n-----END PRIVATE KEY-----\n"


@pytest.mark.parametrize("offset", [SECRET_SCAN_BYTES - 10, SECRET_SCAN_BYTES + 1, 3 << 20, (3 << 20) + 256 * 1024 - 20])
def test_a_key_block_anywhere_in_a_file_is_found(offset: int) -> None:
    # Also where it straddles two windows (the windows overlap by more than a key block's first line).
    data = b"x" * offset + PEM.encode()
    assert secret_in_data(data) is not None
    assert secret_in_data(data.replace(b"BEGIN PRIVATE", b"BEGIN PUBLIC")) is None


def test_a_token_deep_in_a_log_is_found_and_said_where() -> None:
    data = b"step 1 loss=0.1\n" * 300_000 + b"export GH=ghp_" + b"a1B2" * 9 + b"\n"
    reason = secret_in_data(data, name="train.log")
    assert reason is not None and "GitHub token" in reason and "past the file's first" in reason


def test_the_scan_is_bounded_whatever_the_file(monkeypatch: pytest.MonkeyPatch) -> None:
    """An endless file is read to MAX_SCAN_BYTES and no further, a window at a time (the
    bound lowered to 8 MiB here: 512 MiB takes seconds)."""
    import tfjob.packaging.secrets as scanner

    assert MAX_SCAN_BYTES == 512 << 20  # the largest package: a larger file is refused by the package's bound
    monkeypatch.setattr(scanner, "MAX_SCAN_BYTES", 8 << 20)
    read = [0]
    biggest = [0]

    def endless(n: int) -> bytes:
        read[0] += n
        biggest[0] = max(biggest[0], n)
        return b"0123456789abcdef" * (n // 16)

    assert scan_stream(endless) is None
    assert read[0] == 8 << 20 and biggest[0] <= 256 * 1024


@pytest.mark.parametrize("text, secret", [
    ("[Credentials]\ngs_oauth2_refresh_token = 1/x\n", True),  # short: any length
    ("[Credentials]\ngs_oauth2_refresh_token = 1//0" + "A" * 80 + "\n", True),
    ("[OAuth2]\noauth2_refresh_token: abc\n", True),
    ("[Credentials]\ngs_oauth2_refresh_token =\n", False),  # none given
    ("[Boto]\nhttps_validate_certificates = True\n", False),
])  # fmt: skip
def test_a_boto_refresh_token_of_any_length(text: str, secret: bool) -> None:
    assert (secret_in_content(text.encode()) is not None) is secret


@pytest.mark.parametrize("source, secret", [
    ("SA = {'type': 'service_account', 'private_key': 'MIIEvQIBADANBgkqhkiG9w0BAQEF', 'client_email': 'a@p.iam.gserviceaccount.com'}", True),
    ('SA = dict(**{"client_email": "a@b.c", "type": "service_account", "private_key": r"MIIEvQIBADANBgkqhkiG9w"})', True),
    ("def info(key, email):\n    return {'type': 'service_account', 'private_key': key, 'client_email': email}\n", False),
    ("SA = {'type': 'service_account', 'private_key': 'MIIEvQIBADANBgkqhkiG9w0BAQEF'}", False),  # no account
    ("CONFIG = {'type': 'service_account', 'private_key': 'x', 'client_email': 'a@b.c'}", False),  # no key in it
])  # fmt: skip
def test_a_service_account_dict_in_python_source(source: str, secret: bool) -> None:
    assert (secret_in_content(source.encode(), python_source=True) is not None) is secret


@pytest.mark.parametrize("rel, secret", [
    (".streamlit/secrets.toml", True), ("app/secrets.toml", True), ("credentials.json", True), (".netrc", True),
    (".pgpass", True), (".git-credentials", True), (".npmrc", True), (".pypirc", True), (".my.cnf", True),
    (".kaggle/kaggle.json", True), (".cache/huggingface/token", True), (".config/gh/hosts.yml", True),
    (".azure/msal_token_cache.json", True), ("credentials.tfrc.json", True), (".databrickscfg", True),
    ("secrets.py", False), ("credentials.py", False), ("secrets_schema.toml", False), ("token.py", False), ("hosts.yml", False),
])  # fmt: skip
def test_well_known_secret_files_by_name(rel: str, secret: bool) -> None:
    assert secret_by_name(rel) is secret
