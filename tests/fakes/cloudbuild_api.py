"""A local HTTP server that speaks the Cloud Build REST API (v1) for builds, and a registry's
manifest ``HEAD`` for the images it "pushes".

The real client library (``google-cloud-build``, REST transport) talks to it through
``api_endpoint="http://127.0.0.1:PORT"``:

- ``POST /v1/projects/P/builds`` — the body is parsed strictly into
  ``cloudbuild_v1.types.Build`` (an unknown field is a 400, as the service does); the answer is a
  long-running operation whose metadata is the queued build;
- ``GET /v1/operations/build/P/ID`` — the operation, done: the build SUCCESS with
  ``results.images`` naming what it pushed (a digest made from the build's staged source), or,
  with :attr:`FakeCloudBuild.fail_detail` set, failed at its first step with that detail;
- ``POST /token`` — an OAuth2 token endpoint (for credentials whose ``token_uri`` points here);
- ``HEAD /v2/PATH/manifests/TAG`` — the registry side: 200 with ``Docker-Content-Digest`` for
  an image a successful build pushed, else 404.

The build's source must be staged where it says (checked in the storage emulator when
``STORAGE_EMULATOR_HOST`` is set).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import urllib.request
from typing import Any
from urllib.parse import urlparse

from .server import JsonHandler, LocalServer

_BUILDS = re.compile(r"^/v1/projects/([^/]+)/builds$")
_OPERATION = re.compile(r"^/v1/operations/build/([^/]+)/([^/]+)$")
_MANIFEST = re.compile(r"^/v2/(.+)/manifests/([^/]+)$")
BUILD_TYPE = "type.googleapis.com/google.devtools.cloudbuild.v1.Build"
METADATA_TYPE = "type.googleapis.com/google.devtools.cloudbuild.v1.BuildOperationMetadata"


class _Handler(JsonHandler):
    state: "FakeCloudBuild"

    def do_HEAD(self) -> None:
        m = _MANIFEST.match(urlparse(self.path).path)
        digest = self.state.pushed.get((m.group(1), m.group(2))) if m else None
        self.send_response(200 if digest else 404)
        if digest:
            self.send_header("Docker-Content-Digest", digest)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def _handle(self, method: str) -> None:
        url = urlparse(self.path)
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        if url.path == "/token" and method == "POST":
            return self._reply(200, {"access_token": "ya29.cloudbuild-stand-in", "expires_in": 3600, "token_type": "Bearer"})
        self.state.requests.append((method, url.path))
        m = _BUILDS.match(url.path)
        if m and method == "POST":
            return self._create(m.group(1), raw)
        m = _OPERATION.match(url.path)
        if m and method == "GET" and (m.group(1), m.group(2)) in self.state.builds:
            return self._reply(200, self.state.finish(m.group(1), m.group(2)))
        return self._error(404, f"no such resource: {url.path}", "NOT_FOUND")

    def _create(self, project: str, raw: bytes) -> None:
        from google.cloud.devtools import cloudbuild_v1
        from google.protobuf import json_format

        try:
            body = json.loads(raw)
            json_format.ParseDict(body, cloudbuild_v1.types.Build()._pb)  # no ignore_unknown_fields: a stray key fails
        except Exception as e:  # noqa: BLE001 - said back as the service says it
            return self._error(400, f"Invalid JSON payload received. {e}", "INVALID_ARGUMENT")
        source = body.get("source", {}).get("storageSource", {})
        staged = self.state.staged_bytes(source.get("bucket", ""), source.get("object", ""))
        if staged is None:
            return self._error(400, f"gs://{source.get('bucket')}/{source.get('object')} is not found", "INVALID_ARGUMENT")
        build_id = f"b{len(self.state.builds) + 1:04d}"
        self.state.created.append(body)
        self.state.builds[(project, build_id)] = {
            **body,
            "id": build_id,
            "projectId": project,
            "status": "QUEUED",
            "_source": hashlib.sha256(staged).hexdigest(),
        }
        self._reply(200, {
            "name": f"operations/build/{project}/{build_id}",
            "metadata": {"@type": METADATA_TYPE, "build": self.state.public(project, build_id)},
        })  # fmt: skip


class FakeCloudBuild(LocalServer):
    """The Cloud Build stand-in (see the module docstring)."""

    handler = _Handler

    def __init__(self) -> None:
        super().__init__()
        self.requests: list[tuple[str, str]] = []
        self.created: list[dict[str, Any]] = []
        self.builds: dict[tuple[str, str], dict[str, Any]] = {}
        #: (registry path, tag) → digest of what successful builds pushed.
        self.pushed: dict[tuple[str, str], str] = {}
        #: Set to make the next builds fail at their first step with this detail.
        self.fail_detail: str | None = None

    @property
    def host(self) -> str:
        return self.endpoint.split("//", 1)[1]

    def staged_bytes(self, bucket: str, name: str) -> bytes | None:
        emulator = os.environ.get("STORAGE_EMULATOR_HOST")
        if not emulator:
            return b""
        url = f"{emulator}/download/storage/v1/b/{bucket}/o/{urllib.request.quote(name, safe='')}?alt=media"
        try:
            with urllib.request.urlopen(url, timeout=10) as answer:
                return answer.read()
        except OSError:
            return None

    def public(self, project: str, build_id: str) -> dict[str, Any]:
        return {k: v for k, v in self.builds[(project, build_id)].items() if not k.startswith("_")}

    def finish(self, project: str, build_id: str) -> dict[str, Any]:
        build = self.builds[(project, build_id)]
        name = f"operations/build/{project}/{build_id}"
        if self.fail_detail is not None:
            build.update(status="FAILURE", statusDetail="Build failed; check build logs for details",
                         failureInfo={"type": "USER_BUILD_STEP", "detail": self.fail_detail})  # fmt: skip
            build["steps"] = [{**build["steps"][0], "status": "FAILURE"}, *build["steps"][1:]]
            return {"name": name, "done": True, "metadata": {"@type": METADATA_TYPE, "build": self.public(project, build_id)},
                    "error": {"code": 2, "message": "Build failed; check build logs for details"}}  # fmt: skip
        images = []
        for tag in build.get("images", []):
            digest = "sha256:" + hashlib.sha256(f"{tag}|{build['_source']}".encode()).hexdigest()
            repo, _, version = tag.rpartition(":")
            self.pushed[(repo.split("/", 1)[1], version)] = digest
            images.append({"name": tag, "digest": digest})
        build.update(status="SUCCESS", results={"images": images})
        build["steps"] = [{**s, "status": "SUCCESS"} for s in build["steps"]]
        public = self.public(project, build_id)
        return {
            "name": name,
            "done": True,
            "metadata": {"@type": METADATA_TYPE, "build": public},
            "response": {"@type": BUILD_TYPE, **public},
        }
