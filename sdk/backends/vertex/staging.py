"""Staging packages to Cloud Storage, content-addressed, with google-cloud-storage.

Each package goes to ``gs://BUCKET/[PREFIX/]tfjob/packages/<sha256>/<file>``. An
object there already holds exactly those bytes, so it is never uploaded again:
re-submitting unchanged code uploads 0 bytes (:attr:`UploadReport.bytes_uploaded`,
which the benchmark reads). Uploads are conditional on the object not existing
(``ifGenerationMatch=0``), so two submits racing do not both write.

The bucket must be where the job runs: a bucket in another region is an error
before anything is uploaded or created. Uploads over :data:`PROGRESS_THRESHOLD`
bytes show a progress bar on stderr.

``STORAGE_EMULATOR_HOST`` (e.g. gcp-storage-emulator in tests) is honoured by the
client library itself; no credentials are sent to an emulator.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from typing import IO, Any, Callable, Sequence

from ...errors import UsageError, missing_extra
from .submission import LocalPackage, parse_gcs_uri

#: Uploads bigger than this show progress.
PROGRESS_THRESHOLD = 4 * 1024 * 1024
#: Resumable uploads go in chunks of this size (a multiple of 256 KiB).
CHUNK_SIZE = 2 * 1024 * 1024

#: Dual-regions and the regions they span.
DUAL_REGIONS: dict[str, tuple[str, ...]] = {
    "NAM4": ("us-central1", "us-east1"),
    "EUR4": ("europe-north1", "europe-west4"),
    "EUR5": ("europe-west1", "europe-west2"),
    "EUR7": ("europe-west2", "europe-west3"),
    "EUR8": ("europe-west3", "europe-west6"),
    "ASIA1": ("asia-northeast1", "asia-northeast2"),
}
#: Multi-regions and the region names they cover (by prefix).
MULTI_REGIONS: dict[str, tuple[str, ...]] = {
    "US": ("us-", "northamerica-"),
    "EU": ("europe-",),
    "ASIA": ("asia-",),
}


@dataclass
class UploadReport:
    """What staging did.

    Attributes:
        uris: the staged URIs, in the order given.
        uploaded: URIs written now.
        skipped: URIs that were there already (same digest, same bytes).
        bytes_uploaded: bytes sent (0 on an unchanged re-submit).
    """

    uris: list[str] = field(default_factory=list)
    uploaded: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    bytes_uploaded: int = 0


def bucket_serves_region(location: str, region: str) -> bool:
    """Whether a bucket in ``location`` (``US-CENTRAL1``, ``US``, ``NAM4``…) is in ``region``."""
    loc = location.upper()
    region = region.lower()
    if loc == region.upper():
        return True
    if loc in DUAL_REGIONS:
        return region in DUAL_REGIONS[loc]
    if loc in MULTI_REGIONS:
        return region.startswith(MULTI_REGIONS[loc])
    return False


def check_bucket_region(bucket: str, location: str, region: str) -> None:
    """Raise UsageError unless the bucket is in the job's region."""
    if not bucket_serves_region(location, region):
        raise UsageError(
            problem=f"staging bucket gs://{bucket} is in {location}, but the job runs in {region}: Vertex AI reads packages from the job's region",
            fix=f"use a bucket in {region} ({{staging_bucket}}) or {{region={location.lower()}}}",
        )


def storage_client(project: str | None, credentials: Any) -> Any:
    """A ``google.cloud.storage.Client`` (anonymous against an emulator)."""
    try:
        from google.cloud import storage
    except ImportError as e:
        raise missing_extra("vertex", "vertex", e) from e

    if os.environ.get("STORAGE_EMULATOR_HOST"):
        return storage.Client(project=project or "test")
    return storage.Client(project=project, credentials=credentials)


class _Progress:
    """A file wrapper that draws ``uploading NAME  42% (4.2/10.0 MB)`` as it is read."""

    def __init__(self, f: IO[bytes], name: str, size: int, stream: IO[str]) -> None:
        self._f = f
        self._name = name
        self._size = max(size, 1)
        self._stream = stream
        self._done = 0
        self._shown = -1

    def read(self, n: int = -1) -> bytes:
        data = self._f.read(n)
        self._done += len(data)
        percent = min(100, self._done * 100 // self._size)
        if percent // 5 != self._shown // 5:  # every 5 %
            self._shown = percent
            end = "\n" if percent == 100 else ""
            self._stream.write(f"\rtfjob: uploading {self._name} {percent:3d}% ({self._done / 1e6:.1f}/{self._size / 1e6:.1f} MB){end}")
            self._stream.flush()
        return data

    def __getattr__(self, name: str) -> Any:
        return getattr(self._f, name)


def stage_packages(
    packages: Sequence[LocalPackage],
    *,
    region: str,
    client: Any,
    progress: IO[str] | None = None,
    echo: Callable[[str], None] | None = None,
    also: Sequence[str] = (),
) -> UploadReport:
    """Upload the packages that are not in their bucket yet.

    Args:
        packages: what to stage (their ``uri`` says where).
        region: the job's region; every bucket must be in it.
        client: a ``google.cloud.storage.Client`` (see :func:`storage_client`).
        progress: where the progress bar of big uploads goes (default stderr).
        echo: told about each upload and skip.
        also: the other regions the job may run in (``--region A,B``): every bucket must serve them too.

    Raises:
        UsageError: a bucket is missing or in another region.
        AuthError, BackendError: the storage service refused or failed.
    """
    from google.api_core import exceptions as core

    from .errors import translate

    report = UploadReport()
    checked: set[str] = set()
    for package in packages:
        bucket_name, object_name = parse_gcs_uri(package.uri, "package URI")
        report.uris.append(package.uri)
        bucket = client.bucket(bucket_name)
        try:
            if bucket_name not in checked:
                bucket.reload()
                for where in (region, *also):
                    check_bucket_region(bucket_name, bucket.location or "", where)
                checked.add(bucket_name)
            blob = bucket.blob(object_name)
            if blob.exists():
                report.skipped.append(package.uri)
                if echo:
                    echo(f"{package.path.name} is staged already ({package.uri}): nothing to upload")
                continue
            if package.size > PROGRESS_THRESHOLD:
                blob.chunk_size = CHUNK_SIZE
            with open(package.path, "rb") as f:
                source: Any = f
                if package.size > PROGRESS_THRESHOLD:
                    source = _Progress(f, package.path.name, package.size, progress or sys.stderr)
                try:
                    blob.upload_from_file(source, size=package.size, if_generation_match=0, content_type="application/gzip")
                except core.PreconditionFailed:  # written meanwhile by another submit: same bytes
                    report.skipped.append(package.uri)
                    continue
            report.uploaded.append(package.uri)
            report.bytes_uploaded += package.size
            if echo:
                echo(f"staged {package.path.name} ({package.size} bytes) at {package.uri}")
        except UsageError:
            raise
        except core.NotFound as e:
            raise UsageError(
                problem=f"staging bucket gs://{bucket_name} does not exist",
                fix=f"create it in {region} (`gcloud storage buckets create gs://{bucket_name} --location {region}`) or pass another {{staging_bucket}}",
            ) from e
        except Exception as e:
            translated = translate(e, action="stage", project=getattr(client, "project", None), endpoint=f"gs://{bucket_name}")
            raise translated from e
    return report
