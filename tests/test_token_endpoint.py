"""A token endpoint that cannot be reached is a credentials failure, said as one (issue 14):
nothing is sent to Vertex AI, nothing is recorded as a create whose answer was lost, and
the one error line names the credentials, the host that failed and the fix."""

from __future__ import annotations

import json
import socket
from pathlib import Path
from typing import Any, Iterator

import pytest
from click.testing import CliRunner

from fakes.vertex_api import FakeVertex
from tfjob.cli.main import app


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeVertex]:
    with FakeVertex() as server:
        yield server


def _adc(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "adc.json"
    path.write_text(json.dumps({
        "type": "authorized_user", "client_id": "id.apps.googleusercontent.com", "client_secret": "not-a-secret",
        "refresh_token": "1//not-a-token",
    }))  # fmt: skip
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(path))
    return path


def test_an_unreachable_token_endpoint_sends_nothing_and_says_so(fake: FakeVertex, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # google-auth always sends user credentials to oauth2.googleapis.com; an HTTPS proxy on a
    # closed local port makes that host unreachable without a packet leaving this machine.
    monkeypatch.setenv("HTTPS_PROXY", f"http://127.0.0.1:{_closed_port()}")
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    adc = _adc(tmp_path, monkeypatch)
    result = CliRunner().invoke(
        app,
        ["submit", "--image", "gcr.io/p/t:1", "--backend", "vertex", "--project", "p", "--region", "us-central1",
         "--api-endpoint", fake.endpoint],
    )  # fmt: skip
    assert result.exit_code == 1
    line = result.stderr.strip()
    assert line.count("\n") == 0 and line.startswith("error: cannot get an access token for the application-default credentials in ")
    assert str(adc) in line and "oauth2.googleapis.com cannot be reached" in line and "nothing was sent" in line
    assert "may have created" not in line and "not-a-token" not in line and "not-a-secret" not in line
    assert fake.created_bodies() == []
    listed = CliRunner().invoke(app, ["list", "--json"])
    assert json.loads(listed.stdout) == []  # no job recorded as sent


def test_refused_credentials_say_how_to_log_in_again() -> None:
    from google.auth import exceptions as auth_exceptions
    from google.oauth2.credentials import Credentials

    from tfjob.errors import AuthError
    from tfjob.backends.vertex.auth import ensure_token

    class Revoked(Credentials):
        def refresh(self, request: Any) -> None:
            raise auth_exceptions.RefreshError("invalid_grant: Token has been expired or revoked.")

    credentials = Revoked(token=None, refresh_token="r", client_id="i", client_secret="s", token_uri="https://oauth2.googleapis.com/token")
    with pytest.raises(
        AuthError,
        match=r"were refused by oauth2.googleapis.com \(invalid_grant: Token has been expired or revoked.\); "
        r"nothing was sent. Log in again: gcloud auth application-default login",
    ):
        ensure_token(credentials, env={"GOOGLE_APPLICATION_CREDENTIALS": "/k.json"})
