"""The Vertex AI stand-in's Model Registry and metadata store (contexts), for :class:`FakeVertex`.

- ``POST /v1/projects/P/locations/R/models:upload`` — the body is parsed strictly into
  ``aiplatform_v1.UploadModelRequest`` (an unknown field is a 400); a ``parentModel`` must be
  a model of the registry. The answer is a long-running operation, not yet done; it is done
  at its first read (``GET …/operations/ID``), its response an ``UploadModelResponse``: the
  model (a new one, or the parent with a new version) and its version id.
- ``GET /v1/projects/P/locations/R/models?filter=display_name="N"`` — the registry's models.
- ``GET`` / ``PATCH …/metadataStores/default/contexts/ID`` — a context (an experiment run),
  read, and written whole as ``aiplatform_v1.Context`` (``allowMissing=true`` creates it).

The state lives on the server: ``models`` (name → Model dict with its ``versions``),
``uploads`` (each parsed ``UploadModelRequest`` as a dict), ``operations`` and ``contexts``.
"""

from __future__ import annotations

import json
import re
from typing import Any
from urllib.parse import parse_qs

_UPLOAD = re.compile(r"^/v1/projects/([^/]+)/locations/([^/]+)/models:upload$")
_MODELS = re.compile(r"^/v1/projects/([^/]+)/locations/([^/]+)/models$")
#: The REST transport's operations client reads ``/ui/…/operations/ID``.
_OPERATION = re.compile(r"^/(?:v1|ui)/(projects/[^/]+/locations/[^/]+/operations/[^/]+)$")
_CONTEXT = re.compile(r"^/v1/(projects/[^/]+/locations/[^/]+/metadataStores/[^/]+/contexts/[^/]+)$")


def _state(server: Any) -> Any:
    if not hasattr(server, "models"):
        server.models = {}
        server.uploads = []
        server.operations = {}
        server.contexts = {}
    return server


def handle(handler: Any, method: str, path: str, query: str, body: Any) -> bool:
    """Answer a Model Registry or metadata request; False when ``path`` is none of theirs."""
    state = _state(handler.state)
    m = _UPLOAD.match(path)
    if m and method == "POST":
        _upload(handler, state, *m.groups(), body or {})
        return True
    m = _MODELS.match(path)
    if m and method == "GET":
        wanted = re.search(r'display_name\s*=\s*"([^"]*)"', parse_qs(query).get("filter", [""])[0])
        prefix = f"projects/{m.group(1)}/locations/{m.group(2)}/"
        with state.lock:
            models = [
                {k: v for k, v in model.items() if k != "versions"}
                for name, model in state.models.items()
                if name.startswith(prefix) and (not wanted or model["displayName"] == wanted.group(1))
            ]
        handler._reply(200, {"models": models})
        return True
    m = _OPERATION.match(path)
    if m and method == "GET":
        with state.lock:
            operation = state.operations.get(m.group(1))
            if operation is not None:
                operation["done"] = True  # done at its first read, as a short upload is
        if operation is None:
            handler._error(404, f"Operation {m.group(1)} not found.", "NOT_FOUND")
        else:
            handler._reply(200, operation)
        return True
    m = _CONTEXT.match(path)
    if m and method in ("GET", "PATCH"):
        _context(handler, state, method, m.group(1), parse_qs(query), body)
        return True
    return False


def _upload(handler: Any, state: Any, project: str, region: str, body: dict[str, Any]) -> None:
    from google.cloud import aiplatform_v1
    from google.protobuf import json_format

    parent = f"projects/{project}/locations/{region}"
    try:  # strictly, as the service: an unknown or misspelt field is refused
        request = json_format.ParseDict({**body, "parent": parent}, aiplatform_v1.UploadModelRequest()._pb)
    except json_format.ParseError as e:
        handler._error(400, f"Invalid JSON payload received. {e}", "INVALID_ARGUMENT")
        return
    parsed = json_format.MessageToDict(request)
    with state.lock:
        state.uploads.append(parsed)
        model = parsed["model"]
        if not model.get("displayName") or not model.get("artifactUri") or not model.get("containerSpec", {}).get("imageUri"):
            handler._error(
                400, "model.display_name, model.artifact_uri and model.container_spec.image_uri are required.", "INVALID_ARGUMENT"
            )
            return
        parent_model = parsed.get("parentModel")
        if parent_model:
            if parent_model not in state.models:
                handler._error(404, f"Parent model {parent_model} does not exist.", "NOT_FOUND")
                return
            stored = state.models[parent_model]
            stored["versions"].append(model)
            version = str(len(stored["versions"]))
            stored.update(versionId=version, artifactUri=model["artifactUri"], labels=model.get("labels", {}))
            name = parent_model
        else:
            name = f"{parent}/models/{8000000000000000000 + len(state.models) + 1}"
            version = "1"
            state.models[name] = {**model, "name": name, "versionId": version, "versions": [model]}
        operation_name = f"{parent}/operations/{9000000000000000000 + len(state.operations) + 1}"
        state.operations[operation_name] = {
            "name": operation_name,
            "done": False,
            "metadata": {"@type": "type.googleapis.com/google.cloud.aiplatform.v1.UploadModelOperationMetadata"},
            "response": {
                "@type": "type.googleapis.com/google.cloud.aiplatform.v1.UploadModelResponse",
                "model": name,
                "modelVersionId": version,
            },
        }
        answer = {k: v for k, v in state.operations[operation_name].items() if k != "response"}
    handler._reply(200, answer)


def _context(handler: Any, state: Any, method: str, name: str, query: dict[str, list[str]], body: Any) -> None:
    from google.cloud import aiplatform_v1
    from google.protobuf import json_format

    with state.lock:
        stored = state.contexts.get(name)
    if method == "GET":
        if stored is None:
            handler._error(404, f"Context {name} not found.", "NOT_FOUND")
        else:
            handler._reply(200, stored)
        return
    try:
        context = json_format.MessageToDict(json_format.ParseDict(body or {}, aiplatform_v1.Context()._pb))
    except json_format.ParseError as e:
        handler._error(400, f"Invalid JSON payload received. {e}", "INVALID_ARGUMENT")
        return
    if stored is None and query.get("allowMissing", ["false"])[0] != "true":
        handler._error(404, f"Context {name} not found.", "NOT_FOUND")
        return
    with state.lock:
        state.contexts[name] = {**(stored or {}), **context, "name": name}
        answer = json.loads(json.dumps(state.contexts[name]))
    handler._reply(200, answer)
