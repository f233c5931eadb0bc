"""Is this file a credential? Judged by its name and by its content, never by executing it.

By name (case-insensitive): ``.env``/``*.env``, ``*.pem``, ``*.key*``, ``*.ppk``, ``id_rsa*``,
anything under ``.ssh/`` or ``.gnupg/``, ``.aws/credentials``, ``.s3cfg``, ``.boto``,
``.docker/config.json``, ``kubeconfig``, ``.git-credentials``, ``.pypirc``, ``.npmrc``,
gcloud's and the OAuth client's files, ``.netrc``, ``.pgpass``, and secret stores known by
name: Streamlit's ``secrets.toml``, the ``credentials.json`` of Google's API quickstarts,
``.my.cnf``, Terraform's ``credentials.tfrc.json``, Kaggle's, Hugging Face's, Azure's, the
GitHub CLI's and Databricks' token files (:data:`_SECRET_NAMES`, :data:`_SECRET_PATHS`).

By content, whatever the name: the first :data:`SECRET_SCAN_BYTES` bytes by every rule below,
the rest of the file (to :data:`MAX_SCAN_BYTES`, a window at a time) by key blocks and token
shapes:

- private keys in any armour: PEM (``-----BEGIN … PRIVATE KEY-----``, OpenSSH, PGP), SSH2
  (``---- BEGIN SSH2 ENCRYPTED PRIVATE KEY ----``), PuTTY ``.ppk``, and a PEM block written
  in base64 (a kubeconfig's ``client-key-data``) or percent-escaped;
- cloud keys and tokens by their published shapes: AWS access key ids (``AKIA…``), Google
  API keys (``AIza…``), OAuth client secrets (``GOCSPX-…``), access and refresh tokens
  (``ya29.…``, ``1//…``), GitHub and Slack tokens;
- credential documents by their fields: Google service-account and user credentials,
  ``client_email`` with ``private_key_id``, OAuth refresh-token/client-secret pairs, AWS and
  S3 key pairs (``.aws/credentials``, ``.s3cfg``, ``.boto``), registry ``auths``, kubeconfig
  users (``client-key-data``, ``token``, ``password``), Kubernetes ``kind: Secret``
  manifests, and an assignment of a high-entropy value to a secret-sounding key
  (``API_TOKEN=…``, ``password: …``), gsutil's ``gs_oauth2_refresh_token`` of any length.

Text is judged in what it means: UTF-16 and UTF-32 (with a byte-order mark or with the NUL
bytes of ASCII text in them) are decoded first, JSON ``\\uXXXX`` escapes read, and a
pickle (google-auth's ``token.pickle``) is read opcode by opcode (:mod:`pickletools`, which
never runs what it reads) for the strings it holds. Python sources are judged by key blocks,
token shapes and a service-account key written as a dict (its type, a private key string and
the account's e-mail together) only: their dict literals would match the other field rules
without holding a credential.
"""

from __future__ import annotations

import base64
import binascii
import math
import re
from pathlib import Path
from typing import Callable

from ..lazy import LazyPattern

#: The head of a file judged by every rule (key blocks, token shapes, credential documents).
SECRET_SCAN_BYTES = 64 * 1024
#: The rest of the file is read in windows of this size (overlapping by :data:`_OVERLAP`, so a
#: key block's first line or a token that straddles two windows is whole in one of them) and
#: judged by the rules that are evidence anywhere in a file: key blocks and token shapes.
SCAN_WINDOW = 256 * 1024
_OVERLAP = 4096
#: The most of one file read to judge it: the largest package (tfjob.packaging's
#: ``MAX_PACKAGE_BYTES``); a larger file is refused by the package's own bound.
MAX_SCAN_BYTES = 512 * 1024 * 1024

# -- by name ------------------------------------------------------------------------------
# File names that hold credentials, matched case-insensitively against the file name.
_SECRET_NAMES = (
    ".env", ".env.*", "*.env", "*.pem", "*.pem.*", "*.key", "*.key.*", "*.p12", "*.pfx", "*.jks",
    "*.keystore", "*.ppk", "id_rsa*", "id_dsa*", "id_ecdsa*", "id_ed25519*", ".netrc", "_netrc", ".pgpass",
    "credentials.db", "access_tokens.db", "application_default_credentials.json", ".git-credentials", ".pypirc",
    ".npmrc", ".yarnrc", "kubeconfig", "kubeconfig.*", "*.kubeconfig", ".htpasswd", ".s3cfg", ".boto",
    ".vault-token", ".dockercfg", "client_secret*.json", "token.pickle", "*.token.pickle",
    # Well-known secret stores by name, whatever they hold: Streamlit's secrets.toml, the
    # credentials.json of Google's API quickstarts (an OAuth client, or an authorized user),
    # MySQL's and Terraform's client files, and the SQL Server/ODBC and Rails key files.
    "secrets.toml", "credentials.json", ".my.cnf", ".mylogin.cnf", ".terraformrc", "credentials.tfrc.json",
    "master.key", "odbc.ini", ".odbc.ini",
)  # fmt: skip
# Relative paths (their last components) that hold credentials, matched case-insensitively.
_SECRET_PATHS = (
    ".aws/credentials", ".aws/config", ".docker/config.json", ".kube/config",
    ".config/gcloud/*", ".gnupg/*", ".azure/accesstokens.json", ".azure/msal_token_cache.*",
    ".kaggle/kaggle.json", "huggingface/token", ".config/gh/hosts.yml", ".config/hub", ".databrickscfg",
)  # fmt: skip
# Any file in one of these directories is a secret (private keys under .ssh/, whatever their name).
_SECRET_DIRS = (".ssh", ".gnupg")


def star_glob(pattern: str) -> Callable[[str], bool]:
    """A matcher of a glob made of literal text and ``*`` (which matches anything, ``/`` too,
    as :func:`fnmatch.fnmatchcase` does) — with string methods, no regular expression to
    compile: these globs are tried on every file of every package."""
    cut = pattern.split("*")
    if len(cut) == 1:
        return pattern.__eq__
    head, middle, tail = cut[0], [c for c in cut[1:-1] if c], cut[-1]
    least = len(head) + len(tail)

    def match(text: str) -> bool:
        if len(text) < least or not text.startswith(head) or not text.endswith(tail):
            return False
        pos, end = len(head), len(text) - len(tail)
        for piece in middle:
            found = text.find(piece, pos, end)
            if found < 0:
                return False
            pos = found + len(piece)
        return True

    return match


_NAME_GLOBS = tuple(star_glob(p) for p in _SECRET_NAMES)
_PATH_GLOBS = tuple(star_glob(p) for p in _SECRET_PATHS) + tuple(star_glob("*/" + p) for p in _SECRET_PATHS)


def secret_by_name(rel: str) -> bool:
    """Whether the path (relative, ``/``-separated) names a credential file."""
    lowered = rel.lower()
    parts = lowered.split("/")
    if any(p in _SECRET_DIRS for p in parts[:-1]):
        return True
    name = parts[-1]
    if any(glob(name) for glob in _NAME_GLOBS):
        return True
    return any(glob(lowered) for glob in _PATH_GLOBS)


# -- by content -----------------------------------------------------------------------------
# Private keys, in every armour they are written in (bytes: they are judged before any decoding).
# Each with the literal its text must hold (a fast check before the expression runs).
_KEY_BLOCKS: tuple[tuple[str, str, LazyPattern], ...] = (
    ("a private key (PEM)", "BEGIN", LazyPattern(r"-----\s*BEGIN ([A-Z0-9]+ )*PRIVATE KEY( BLOCK)?\s*-----")),
    ("a private key (SSH2)", "BEGIN", LazyPattern(r"----\s*BEGIN SSH2 ([A-Z0-9]+ )*PRIVATE KEY\s*----")),
    ("a private key (PuTTY)", "PuTTY-User-Key-File", LazyPattern(r"PuTTY-User-Key-File-\d+\s*:")),
)
# "-----BEGIN" in base64, at each of the three alignments a longer text can put it.
_B64_LITERALS = ("LS0tLS1CRUdJT", "0tLS0tQkVHSU", "tLS0tLUJFR0lO")
_B64_BEGIN = LazyPattern(r"(LS0tLS1CRUdJT|0tLS0tQkVHSU|tLS0tLUJFR0lO)[A-Za-z0-9+/=\s]{8,}")
# Token shapes that are credentials wherever they stand (documented prefixes). Each starts with
# its literal prefix (so the search is a fast scan for it); the character before a match is
# checked apart (:func:`_token`).
_TOKENS: tuple[tuple[str, tuple[str, ...], LazyPattern], ...] = (
    (
        "an AWS access key id",
        ("AKIA", "ASIA", "AGPA", "AIDA", "AROA", "ANPA", "ANVA", "AIPA"),
        LazyPattern(r"(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA|ANVA|AIPA)[A-Z0-9]{16}(?![A-Z0-9])"),
    ),
    ("a Google API key", ("AIza",), LazyPattern(r"AIza[0-9A-Za-z_-]{35}(?![\w-])")),
    ("an OAuth client secret", ("GOCSPX-",), LazyPattern(r"GOCSPX-[0-9A-Za-z_-]{20,}")),
    ("a Google OAuth access token", ("ya29.",), LazyPattern(r"ya29\.[0-9A-Za-z_-]{20,}")),
    ("a Google OAuth refresh token", ("1//0",), LazyPattern(r"1//0[0-9A-Za-z_-]{20,}")),
    (
        "a GitHub token",
        ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
        LazyPattern(r"gh[pousr]_[0-9A-Za-z]{36}|github_pat_[0-9A-Za-z_]{40,}"),
    ),
    ("a Slack token", ("xox",), LazyPattern(r"xox[abposr]-[0-9A-Za-z-]{10,}")),
)
_JSON_ESCAPE = LazyPattern(r"\\u([0-9a-fA-F]{4})")
_PERCENT = LazyPattern(r"%([0-9a-fA-F]{2})")


def _key(name: str) -> str:
    # A key as JSON, YAML or INI writes it: quoted or bare, followed by a colon or =.
    return r"""(?:^|[\s{,\[;])["']?""" + name + r"""["']?\s*[:=]"""


# Each rule: why, the lower-case words its text must hold (all of the groups, any word of
# each: a fast check before any expression runs), and the expressions that must all match.
_CREDENTIAL_RULES: tuple[tuple[str, tuple[tuple[str, ...], ...], tuple[LazyPattern, ...]], ...] = tuple(
    (reason, needles, tuple(LazyPattern(p, re.IGNORECASE | re.MULTILINE) for p in patterns))
    for reason, needles, patterns in (
        ("a Google service-account or user credential", (("service_account", "authorized_user", "external_account"),),
         (_key("type") + r"""\s*["']?(service_account|authorized_user|external_account|impersonated_service_account)\b""",)),
        ("a private key field", (("private_key",),), (_key("private_key") + r"""\s*(["'][^"'\s]|[|>]|-----)""",)),
        ("a service-account key's fields", (("client_email",), ("private_key_id",)), (_key("client_email"), _key("private_key_id"))),
        ("an OAuth refresh token with its client secret", (("refresh_token",), ("client_secret",)),
         (_key("refresh_token"), _key("client_secret"))),
        ("an AWS access key pair", (("aws_access_key_id",), ("aws_secret_access_key",)),
         (_key("aws_access_key_id"), _key("aws_secret_access_key"))),
        ("an S3 key pair", (("access_key",), ("secret_key",)), (_key("access_key"), _key("secret_key") + r"""\s*["']?[^\s"']""")),
        ("a Cloud Storage HMAC key pair", (("gs_access_key_id",), ("gs_secret_access_key",)),
         (_key("gs_access_key_id"), _key("gs_secret_access_key"))),
        # gsutil's boto file after `gsutil config`: the refresh token alone is the credential, whatever its length.
        ("a Cloud Storage OAuth refresh token (boto)", (("gs_oauth2_refresh_token", "oauth2_refresh_token"),),
         (_key(r"(?:gs_)?oauth2_refresh_token") + r"""[ \t]*["']?[^\s"'#;]""",)),
        ("container registry credentials", (("auths",),), (_key("auths") + r"""\s*\{""", _key("auth") + r"""\s*["']""")),
        ("a kubeconfig client key", (("client-key-data",),), (_key("client-key-data") + r"""\s*["']?[A-Za-z0-9+/]""",)),
        ("a kubeconfig user's credentials", (("users",), ("token", "password", "client-key", "auth-provider", "exec")),
         (_key("users"), _key(r"(?:token|password|client-key|auth-provider|exec)"))),
        ("a Kubernetes Secret", (("secret",), ("apiversion",)),
         (_key("kind") + r"""\s*["']?Secret["']?\s*(?:$|,|\})""", _key("apiVersion"))),
    )
)  # fmt: skip

# In Python source, a service-account key written as a dict literal (no PEM block needed):
# its type, a private key given as a string, and the account's e-mail — all three.
_PYTHON_SERVICE_ACCOUNT = (
    LazyPattern(_key("type") + r"""\s*["']service_account["']""", re.MULTILINE),
    LazyPattern(_key("private_key") + r"""\s*[rbuRBU]{0,2}(["'])[^"'\s]{16,}""", re.MULTILINE),
    LazyPattern(_key("client_email") + r"""\s*["'][^"'\s@]+@""", re.MULTILINE),
)


# An assignment to a key that ends in a secret-sounding word: its value is judged by its entropy.
_ASSIGNMENT = LazyPattern(
    r"""(?:passw(?:or)?d|pwd|secret|token|api[_-]?key|apikey|access[_-]?key|auth[_-]?key|credentials?|private[_-]?key)["']?"""
    r"""\s*[:=]\s*["']?([A-Za-z0-9+/=_\-.~]{16,256})["']?\s*(?:$|[,;}\]#])""",
    re.IGNORECASE | re.MULTILINE,
)
_ASSIGNMENT_WORDS = ("pass", "pwd", "secret", "token", "key", "credential")
_PLACEHOLDER = LazyPattern(r"example|changeme|placeholder|your[_-]|xxxx|\*\*\*|<|\$\{", re.IGNORECASE)


def _entropy(value: str) -> float:
    counts: dict[str, int] = {}
    for c in value:
        counts[c] = counts.get(c, 0) + 1
    n = len(value)
    return -sum(k / n * math.log2(k / n) for k in counts.values())


def _high_entropy_assignment(text: str) -> bool:
    for m in _ASSIGNMENT.finditer(text):
        value = m.group(1)
        if _PLACEHOLDER.search(value) or value.startswith(("/", ".", "~")):
            continue
        if not (re.search(r"[0-9]", value) and re.search(r"[A-Za-z]", value)):
            continue
        if _entropy(value) >= 3.5:
            return True
    return False


def _texts(head: bytes) -> list[str]:
    """What the bytes say, in every encoding they could be written in."""
    boms = (
        (b"\xff\xfe\x00\x00", "utf-32-le"), (b"\x00\x00\xfe\xff", "utf-32-be"),
        (b"\xff\xfe", "utf-16-le"), (b"\xfe\xff", "utf-16-be"), (b"\xef\xbb\xbf", "utf-8"),
    )  # fmt: skip
    for bom, codec in boms:
        if head.startswith(bom):
            return [head[len(bom) :].decode(codec, errors="replace")]
    if b"\0" not in head:
        return [head.decode("utf-8", errors="replace")]
    texts = []
    # UTF-16 or UTF-32 without a mark: the NUL bytes of ASCII text sit at fixed places.
    sample = head[:4096]
    quarter = max(1, len(sample) // 4)
    nul = [sample[i::4].count(0) / quarter for i in range(4)]
    if nul[1] > 0.6 and nul[2] > 0.6 and nul[3] > 0.6:
        texts.append(head[: len(head) - len(head) % 4].decode("utf-32-le", errors="replace"))
    elif nul[0] > 0.6 and nul[1] > 0.6 and nul[2] > 0.6:
        texts.append(head[: len(head) - len(head) % 4].decode("utf-32-be", errors="replace"))
    elif nul[1] > 0.6 and nul[3] > 0.6:
        texts.append(head[: len(head) - len(head) % 2].decode("utf-16-le", errors="replace"))
    elif nul[0] > 0.6 and nul[2] > 0.6:
        texts.append(head[: len(head) - len(head) % 2].decode("utf-16-be", errors="replace"))
    # Binary data: its runs of text, in one byte per character and in two (like `strings -e l/b`).
    texts.append(_printable_runs(head))
    return texts


def _printable_runs(data: bytes) -> str:
    """The runs of printable ASCII in binary data (one byte or two a character), one a line."""
    runs = [m.group().decode("ascii") for m in re.finditer(rb"[\x20-\x7e\t]{6,}", data)]
    runs += [m.group().decode("utf-16-le") for m in re.finditer(rb"(?:[\x20-\x7e]\x00){6,}", data)]
    runs += [m.group().decode("utf-16-be") for m in re.finditer(rb"(?:\x00[\x20-\x7e]){6,}", data)]
    return "\n".join(runs)


def pickle_strings(data: bytes, limit: int = 10_000) -> list[str]:
    """The strings a pickle holds, read opcode by opcode; nothing in it is run or imported.

    A truncated or damaged pickle gives the strings read before the damage.
    """
    import pickletools

    out: list[str] = []
    try:
        for opcode, arg, _ in pickletools.genops(data):
            if isinstance(arg, str) and opcode.name not in ("GLOBAL", "INST"):
                out.append(arg)
            elif isinstance(arg, (bytes, bytearray)):
                out.append(bytes(arg).decode("utf-8", errors="replace"))
            if len(out) >= limit:
                break
    except Exception:  # noqa: BLE001 - pickletools raises ValueError and more on damaged input
        pass
    return out


def _is_pickle(head: bytes, name: str) -> bool:
    if head[:1] == b"\x80" and head[1:2] in (b"\x02", b"\x03", b"\x04", b"\x05"):
        return True
    return name.lower().endswith((".pickle", ".pkl", ".pck", ".p"))


def _pickle_document(strings: list[str]) -> str:
    """A pickle's strings as the lines of a document the field rules read: a pickled dict is
    key, value, key, value…, so each string is written as the key of the next; attribute names
    lose their leading underscores (google-auth pickles ``_refresh_token``, ``_client_secret``)."""
    lines = [s for s in strings]
    for key, value in zip(strings, strings[1:]):
        if re.fullmatch(r"_*[A-Za-z][\w-]{0,63}", key):
            lines.append(f'"{key.lstrip("_")}": "{value}"')
    return "\n".join(lines)


def _decoded_views(text: str) -> list[str]:
    views = [text]
    if "\\u" in text:  # JSON may spell any character as an escape: judge what it means
        views.append(_JSON_ESCAPE.sub(lambda m: chr(int(m.group(1), 16)), text))
    if "%2" in text:
        views.append(_PERCENT.sub(lambda m: chr(int(m.group(1), 16)), text))
    return views


def _base64_key_block(text: str) -> bool:
    for m in _B64_BEGIN.finditer(text):
        chunk = re.sub(r"\s", "", m.group())[:400]
        for start in range(0, 4):
            piece = chunk[start:]
            piece = piece[: len(piece) - len(piece) % 4]
            try:
                decoded = base64.b64decode(piece, validate=False).decode("latin-1")
            except (binascii.Error, ValueError):
                continue
            if "PRIVATE KEY" in decoded:
                return True
    return False


def secret_in_content(head: bytes, *, python_source: bool = False, name: str = "") -> str | None:
    """Why the first bytes of a file look like a credential, or None.

    ``head`` is at most :data:`SECRET_SCAN_BYTES` long; ``name`` (the file's name) tells a
    pickle saved under a pickle's suffix. Key blocks and token shapes are secrets in any file;
    the field rules (credential documents, token pairs, key pairs, manifests, high-entropy
    assignments) are not applied to Python sources.
    """
    texts = _texts(head)
    if _is_pickle(head, name):
        texts.append(_pickle_document(pickle_strings(head)))
    for raw in texts:
        for text in _decoded_views(raw):
            reason = _judge(text, python_source)
            if reason:
                return reason
    return None


def _judge(text: str, python_source: bool, strong_only: bool = False) -> str | None:
    for reason, literal, pattern in _KEY_BLOCKS:
        if literal in text and pattern.search(text):
            return reason
    if any(b in text for b in _B64_LITERALS) and _base64_key_block(text):
        return "a private key (base64 PEM)"
    for reason, prefixes, pattern in _TOKENS:
        if not any(prefix in text for prefix in prefixes):
            continue
        for m in pattern.finditer(text):
            before = text[m.start() - 1 : m.start()]
            if not (before.isalnum() or before in "_-./") or not before:
                if "EXAMPLE" not in m.group().upper():
                    return reason
    if strong_only:
        return None
    if python_source:
        if "service_account" in text and "client_email" in text and all(p.search(text) for p in _PYTHON_SERVICE_ACCOUNT):
            return "a Google service-account key (a dict in Python source)"
        return None
    low = text.lower()
    for reason, needles, patterns in _CREDENTIAL_RULES:
        if all(any(word in low for word in group) for group in needles) and all(p.search(text) for p in patterns):
            return reason
    if any(word in low for word in _ASSIGNMENT_WORDS) and _high_entropy_assignment(text):
        return "a high-entropy value given to a secret-sounding key"
    return None


def _strong_in(window: bytes) -> str | None:
    """Why a window past the head of a file holds a credential (key blocks, token shapes), or None."""
    for raw in _texts(window):
        for text in _decoded_views(raw):
            reason = _judge(text, python_source=False, strong_only=True)
            if reason:
                return reason
    return None


def scan_stream(read: Callable[[int], bytes], *, python_source: bool = False, name: str = "") -> str | None:
    """Why a file, read through ``read(n)``, holds a credential, or None: its head by every
    rule (:func:`secret_in_content`), the rest — to :data:`MAX_SCAN_BYTES` — window by
    window by key blocks and token shapes (a key pasted at the end of a log or a notebook).
    Memory stays one window whatever the file's size."""
    head = read(SECRET_SCAN_BYTES)
    reason = secret_in_content(head, python_source=python_source, name=name)
    if reason or len(head) < SECRET_SCAN_BYTES:
        return reason
    carry, seen = head[-_OVERLAP:], len(head)
    while seen < MAX_SCAN_BYTES:
        chunk = read(min(SCAN_WINDOW, MAX_SCAN_BYTES - seen))
        if not chunk:
            return None
        seen += len(chunk)
        window = carry + chunk
        reason = _strong_in(window)
        if reason:
            return f"{reason}, past the file's first {_size(seen - len(chunk))}"
        carry = window[-_OVERLAP:]
    return None


def _size(n: int) -> str:
    return f"{n // (1 << 20)} MiB" if n >= 1 << 20 else f"{n // 1024} KiB"


def secret_in_data(data: bytes, *, python_source: bool = False, name: str = "") -> str | None:
    """:func:`scan_stream` of bytes in memory (a member of an archive a build backend made)."""
    import io

    return scan_stream(io.BytesIO(data).read, python_source=python_source, name=name)


def secret_reason(path: Path, rel: str) -> str | None:
    """Why the regular file ``path`` (``rel`` in the trainer) looks like a secret, or None."""
    if secret_by_name(rel):
        return "its name"
    try:
        with open(path, "rb") as f:
            return scan_stream(f.read, python_source=rel.endswith(".py"), name=rel.rsplit("/", 1)[-1])
    except OSError:
        return None


def looks_like_secret(path: Path) -> bool:
    """True for a credential file, judged by its name and by its content."""
    return secret_reason(path, path.name) is not None
