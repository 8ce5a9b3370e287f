"""Calendar secrets: Fernet token bundles, key rotation, and signed, expiring states;
and the translation of Google's errors (with googleapiclient's own HTTP mocks)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import httplib2
import pytest
from cryptography.fernet import Fernet
from google.auth.exceptions import RefreshError
from googleapiclient.discovery import build
from googleapiclient.errors import HttpError
from googleapiclient.http import HttpMockSequence

from integrations.google.calendar_client import _Retryable, translate
from integrations.google.crypto import CalendarCrypto
from memory.calendar_ports import (
    STATE_TTL,
    CalendarBadRequest,
    CalendarForbidden,
    CalendarRateLimited,
    CalendarRevoked,
    InvalidState,
    RetryPolicy,
    SyncTokenExpired,
    UnreadableTokens,
)
from memory.errors import ConfigurationError, Unavailable

NOW = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)


def test_tokens_round_trip_and_rotate() -> None:
    old, new = Fernet.generate_key().decode(), Fernet.generate_key().decode()
    sealed = CalendarCrypto(old).encrypt({"refresh_token": "rt-secret"})
    assert "rt-secret" not in sealed
    rotated = CalendarCrypto(f"{new}, {old}")
    assert rotated.decrypt(sealed) == {"refresh_token": "rt-secret"}
    with pytest.raises(UnreadableTokens):
        CalendarCrypto(new).decrypt(sealed)
    with pytest.raises(ConfigurationError):
        CalendarCrypto("not-a-key")


def test_state_is_signed_bound_and_expiring() -> None:
    crypto = CalendarCrypto(Fernet.generate_key().decode())
    state = crypto.sign_state("1001", "nonce1", NOW)
    claims = crypto.verify_state(state, NOW + timedelta(minutes=9))
    assert (claims.user_id, claims.nonce) == ("1001", "nonce1")
    with pytest.raises(InvalidState, match="expired"):
        crypto.verify_state(state, NOW + STATE_TTL)
    body, signature = state.split(".")
    forged_body = body.replace(body[-4:], "AAAA")
    for bad in (f"{forged_body}.{signature}", "garbage", f"{body}.{signature[::-1]}", ""):
        with pytest.raises(InvalidState):
            crypto.verify_state(bad, NOW)
    other = CalendarCrypto(Fernet.generate_key().decode())
    with pytest.raises(InvalidState, match="not issued"):
        other.verify_state(state, NOW)


def _error(status: int, reason: str = "", headers: dict[str, str] | None = None) -> HttpError:
    resp = httplib2.Response({"status": str(status), **(headers or {})})
    body = {"error": {"code": status, "message": reason, "errors": [{"reason": reason}]}}
    return HttpError(resp, json.dumps(body).encode())


def test_google_errors_are_sorted() -> None:
    assert isinstance(translate(_error(410, "fullSyncRequired")), SyncTokenExpired)
    assert isinstance(translate(_error(401, "authError")), CalendarRevoked)
    limited = translate(_error(429, "", {"retry-after": "7"}))
    assert isinstance(limited, _Retryable) and limited.retry_after == 7.0
    assert isinstance(limited.final, CalendarRateLimited)
    assert isinstance(translate(_error(403, "rateLimitExceeded")), _Retryable)
    assert isinstance(translate(_error(403, "quotaExceeded")), CalendarRateLimited)
    assert isinstance(translate(_error(403, "forbidden")), CalendarForbidden)
    assert isinstance(translate(_error(400, "badRequest")), CalendarBadRequest)
    down = translate(_error(503))
    assert isinstance(down, _Retryable) and isinstance(down.final, Unavailable)
    revoked = RefreshError("invalid_grant: Token has been expired or revoked.")
    assert isinstance(translate(revoked), CalendarRevoked)
    assert isinstance(translate(RefreshError("invalid_client: nope")), ConfigurationError)
    assert isinstance(translate(ConnectionRefusedError()), _Retryable)


def test_retry_policy_backs_off_and_honours_retry_after() -> None:
    policy = RetryPolicy(attempts=5, base_delay=1.0, max_delay=8.0)
    assert [policy.delay(i) for i in range(5)] == [1.0, 2.0, 4.0, 8.0, 8.0]
    assert policy.delay(0, retry_after=5.0) == 5.0
    assert policy.delay(0, retry_after=60.0) == 8.0


def test_static_discovery_client_with_http_mocks() -> None:
    """The client layer as google-api-python-client sees it, without any server."""
    http = HttpMockSequence(
        [
            ({"status": "200"}, json.dumps({"items": [{"id": "a"}], "nextSyncToken": "s1"})),
            ({"status": "410"}, json.dumps({"error": {"code": 410, "errors": [{}]}})),
        ]
    )
    service = build("calendar", "v3", http=http, static_discovery=True)
    first = service.events().list(calendarId="primary").execute()
    assert first["nextSyncToken"] == "s1"
    with pytest.raises(HttpError) as caught:
        service.events().list(calendarId="primary", syncToken="s1").execute()
    assert isinstance(translate(caught.value), SyncTokenExpired)
