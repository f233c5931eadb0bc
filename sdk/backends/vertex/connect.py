"""A Vertex AI client made for a call (credentials ready, retries said), and how often a job is polled."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

from ...model import SubmitOptions
from ...errors import UsageError
from .follow import POLL_INTERVAL

if TYPE_CHECKING:
    from ...runtime.settings import Settings


Echo = Callable[[str], None]


def quiet(message: str) -> None:
    pass


def settings_or_none(settings: Settings | None) -> Settings:
    """The settings the backend was given, else none set (``Settings()``): the edge that made
    the backend resolved them; nothing here reads the environment or ``config.yaml``."""
    if settings is not None:
        return settings
    from ...runtime.settings import Settings

    return Settings()


def poll_interval(options: SubmitOptions | None = None, settings: Settings | None = None) -> float:
    """Seconds between polls: ``--poll-interval``, else the ``poll_interval`` setting of
    ``settings`` (``$TFJOB_POLL_INTERVAL``, config.yaml, as the edge resolved them), else 5."""
    if options is not None and options.poll_interval:
        return float(options.poll_interval)
    text = settings_or_none(settings).poll_interval
    try:
        seconds = float(text) if text else POLL_INTERVAL
    except ValueError:
        seconds = -1.0
    if not 0 < seconds <= 3600:
        raise UsageError(f"the poll_interval setting {text!r} ($TFJOB_POLL_INTERVAL or config.yaml) must be seconds in (0, 3600]")
    return seconds


def make_client(
    project: str, region: str, api_endpoint: str | None, echo: Echo = quiet, credentials: Any = None, client_class: Any = None
) -> Any:
    """A :class:`~.client.VertexClient` (or ``client_class``, a subclass) with ``credentials``
    (default: application-default ones), a token already in hand; retries are said on ``echo``."""
    from .auth import ready_credentials
    from .client import VertexClient

    credentials = ready_credentials(credentials)

    def on_retry(exc: BaseException, delay: float, attempt: int) -> None:
        from .errors import server_message

        code = getattr(exc, "code", None)
        what = f"{code} {server_message(exc)}" if isinstance(code, int) else type(exc).__name__
        echo(f"Vertex AI call failed ({what}); retry {attempt} in {delay:.1f}s")

    return (client_class or VertexClient)(project, region, api_endpoint=api_endpoint, credentials=credentials, on_retry=on_retry)


def client_credentials(client: Any) -> Any:
    """The credentials a client was made with (for the storage client)."""
    return getattr(client, "credentials", None)
