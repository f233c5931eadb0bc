"""The bootstrap's ``--package``: install trainer archives (local, or ``gs://`` ones downloaded
first) with pip before the task runs. Stdlib only, like the bootstrap, which imports this
module only for a task given a package: the others do not pay for reading it.
"""

from __future__ import annotations

import os
import sys

from tfjob.errors import TfjobError, UsageError

# Not `from typing import TYPE_CHECKING`: importing typing costs ~3 ms.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Sequence


def install_packages(packages: Sequence[str]) -> None:
    """pip-install trainer archives (downloading ``gs://`` ones first).

    Raises:
        UsageError: a local package that does not exist.
        TfjobError: pip failed (exit 1).
    """
    import subprocess
    import tempfile

    with tempfile.TemporaryDirectory(prefix="tfjob-packages-") as tmp:
        paths = []
        for number, package in enumerate(packages):
            if package.startswith("gs://"):
                # A directory each: two objects of the same name (v1/, v2/) must not overwrite each other.
                into = os.path.join(tmp, str(number))
                os.mkdir(into)
                paths.append(_download_gcs(package, into))
            elif os.path.exists(package):
                paths.append(os.path.abspath(package))
            else:
                raise UsageError(f"--package {package}: no such file or directory; give a local path or a gs:// URI")
        sdists = [p for p in paths if not p.endswith(".whl")]
        if sdists:
            _check_sdist_tools(sdists)
        # --no-build-isolation: an sdist builds with the setuptools already here, offline;
        # as a non-root user (the base image's uid 1000) pip installs into the user site.
        cmd = [
            sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--no-input",
            "--no-build-isolation", *paths,
        ]  # fmt: skip
        done = subprocess.run(cmd, stdout=sys.stderr, check=False)
        if done.returncode != 0:
            raise TfjobError(f"pip could not install {', '.join(packages)} (pip exited {done.returncode}; its output is above)")
    # The user site (~/.local/lib/pythonX.Y/site-packages) did not exist at start-up, so
    # it is not on sys.path: add it as site.py would have. Directories pip just created or
    # filled were also cached as empty (or absent).
    import site

    if site.ENABLE_USER_SITE and os.path.isdir(site.getusersitepackages()):
        site.addsitedir(site.getusersitepackages())
    sys.path_importer_cache.clear()


def _check_sdist_tools(sdists: Sequence[str]) -> None:
    """A source archive is built here, offline, by the setuptools already installed; it
    builds a wheel only where a ``bdist_wheel`` command is registered (setuptools 70.1 and
    later have it; before, the ``wheel`` package up to 0.45 adds it; the TensorFlow images
    have one). Say so in one line instead of pip's page of output."""
    import importlib.util
    from importlib.metadata import entry_points

    if importlib.util.find_spec("setuptools") is None:
        lacking = "setuptools"
    elif not any(ep.name == "bdist_wheel" for ep in entry_points(group="distutils.commands")):
        lacking = "setuptools 70.1 or later (or the wheel package)"
    else:
        return
    raise TfjobError(
        f"--package {os.path.basename(sdists[0])} is a source archive, and building it here needs {lacking}, "
        'which this image lacks (the TensorFlow images have it): add `pip install "setuptools>=70.1"` to the '
        "image, or give a built wheel"
    )


#: Cloud Storage's JSON API, and the metadata server every Vertex AI replica and GKE pod has.
_GCS_API = "https://storage.googleapis.com"
_TOKEN_URL = "http://metadata.google.internal/computeMetadata/v1/instance/service-accounts/default/token"
#: The largest trainer package downloaded (a package is code, not data).
MAX_PACKAGE_BYTES = 2 * 1024**3


def _download_gcs_stdlib(uri: str, bucket: str, blob: str, directory: str) -> str:
    """Download one object with the standard library alone: the JSON API, authorized by the
    metadata server's token (``STORAGE_EMULATOR_HOST``: an emulator, no token)."""
    import json
    import urllib.error
    import urllib.parse
    import urllib.request

    emulator = os.environ.get("STORAGE_EMULATOR_HOST")
    base = emulator.rstrip("/") if emulator else _GCS_API
    headers = {}
    if not emulator:
        request = urllib.request.Request(_TOKEN_URL, headers={"Metadata-Flavor": "Google"})
        try:
            with urllib.request.urlopen(request, timeout=10) as reply:
                headers["Authorization"] = "Bearer " + json.loads(reply.read(65536))["access_token"]
        except (OSError, ValueError, KeyError) as e:
            raise TfjobError(
                f"--package {uri}: no credentials to read Cloud Storage here (the metadata server at "
                f"{_TOKEN_URL} did not answer: {e}); install google-cloud-storage, or give a local path"
            ) from None
    url = f"{base}/storage/v1/b/{urllib.parse.quote(bucket, safe='')}/o/{urllib.parse.quote(blob, safe='')}?alt=media"
    dest = os.path.join(directory, os.path.basename(blob))
    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=60) as reply, open(dest, "wb") as out:
            total = 0
            while chunk := reply.read(1 << 20):
                total += len(chunk)
                if total > MAX_PACKAGE_BYTES:
                    raise TfjobError(f"--package {uri}: larger than {MAX_PACKAGE_BYTES >> 30} GiB; a trainer package is code")
                out.write(chunk)
    except urllib.error.HTTPError as e:
        if e.code == 404:
            raise UsageError(f"--package {uri}: no such object in Cloud Storage") from None
        raise TfjobError(f"--package {uri}: could not download it: HTTP {e.code} {e.reason}") from None
    except urllib.error.URLError as e:
        raise TfjobError(f"--package {uri}: could not reach {base}: {e.reason}") from None
    return dest


def _download_gcs(uri: str, directory: str) -> str:

    bucket_name, _, blob_name = uri[len("gs://") :].partition("/")
    if not bucket_name or not blob_name or blob_name.endswith("/") or os.path.basename(blob_name) in (".", ".."):
        raise UsageError(f"--package {uri}: name one object, e.g. gs://BUCKET/path/trainer-0.1.tar.gz")
    try:
        from google.cloud import storage  # used when installed; the base image has no Google libraries
    except ImportError:
        return _download_gcs_stdlib(uri, bucket_name, blob_name, directory)
    from google.api_core import exceptions as gexc

    dest = os.path.join(directory, os.path.basename(blob_name))
    try:
        storage.Client().bucket(bucket_name).blob(blob_name).download_to_filename(dest)
    except gexc.NotFound:
        raise UsageError(f"--package {uri}: no such object in Cloud Storage") from None
    except gexc.GoogleAPIError as e:
        raise TfjobError(f"--package {uri}: could not download it: {e}") from e
    return dest
