"""Bounded exponential backoff with jitter, for calls to Google Cloud.

Transient failures (429, 500, 502, 503, 504, a reset or refused connection, a read
timeout) are retried; anything else is raised at once — a 429 that is a resource quota,
or a stockout, too (:mod:`.quota`: another try meets the same answer). Waits grow ×``multiplier``
from ``initial`` up to ``maximum`` seconds, each shortened by a random fraction up
to ``jitter`` so that many clients do not retry in step, and there are at most
``attempts`` tries in all. The sleep function and the random source are injected,
so tests wait for nothing.
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass
from typing import Callable, Iterator, TypeVar

T = TypeVar("T")

#: HTTP status codes worth another try.
RETRYABLE_CODES = frozenset({408, 429, 500, 502, 503, 504})


@dataclass(frozen=True)
class Backoff:
    """How long to wait between tries, and how many tries.

    Attributes:
        initial: the first wait, seconds.
        multiplier: each wait is this many times the previous one.
        maximum: no wait is longer.
        attempts: tries in all (the first one included).
        jitter: each wait is cut by up to this fraction, at random.
    """

    initial: float = 1.0
    multiplier: float = 2.0
    maximum: float = 32.0
    attempts: int = 6
    jitter: float = 0.5

    def delays(self, rng: random.Random) -> Iterator[float]:
        """The waits before the 2nd, 3rd… tries (``attempts - 1`` of them)."""
        delay = self.initial
        for _ in range(max(0, self.attempts - 1)):
            base = min(delay, self.maximum)
            yield base * (1.0 - self.jitter * rng.random())
            delay *= self.multiplier


def status_code(exc: BaseException) -> int | None:
    """The HTTP status of a google.api_core error (None for other errors)."""
    code = getattr(exc, "code", None)
    return code if isinstance(code, int) else None


def is_retryable(exc: BaseException) -> bool:
    """True for errors another try may cure: throttling, server errors, lost connections."""
    import requests
    from google.api_core import exceptions as core
    from google.auth import exceptions as auth

    if isinstance(exc, core.GoogleAPICallError):
        from .quota import refused

        # A resource quota or a stockout: the same request meets the same answer (rate limiting is retried).
        return status_code(exc) in RETRYABLE_CODES and not refused(exc)
    if isinstance(exc, (requests.ConnectionError, requests.Timeout, requests.exceptions.ChunkedEncodingError)):
        return True
    # google-auth wraps a failed connection to the token endpoint this way.
    return isinstance(exc, auth.TransportError)


def call_with_retry(
    fn: Callable[[], T],
    *,
    backoff: Backoff,
    sleep: Callable[[float], None] = time.sleep,
    rng: random.Random | None = None,
    retry_if: Callable[[BaseException], bool] = is_retryable,
    on_retry: Callable[[BaseException, float, int], None] | None = None,
) -> T:
    """``fn()``, tried again after a transient failure; the last error is raised.

    Args:
        fn: the call.
        backoff: waits and number of tries.
        sleep: how to wait (injected in tests).
        rng: the jitter's random source.
        retry_if: which errors are worth another try.
        on_retry: told (error, wait, attempt number) before each wait.
    """
    rng = rng or random.Random()
    delays = backoff.delays(rng)
    attempt = 1
    while True:
        try:
            return fn()
        except Exception as e:
            if not retry_if(e):
                raise
            delay = next(delays, None)
            if delay is None:
                raise
            if on_retry is not None:
                on_retry(e, delay, attempt)
            sleep(delay)
            attempt += 1
