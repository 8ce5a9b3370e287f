"""Calendar secrets at rest and in flight: Fernet-encrypted tokens, signed OAuth states.

OAuth tokens give whoever holds them a person's calendar, so they are never stored in
clear: :class:`CalendarCrypto` encrypts them with Fernet (AES-128-CBC + HMAC-SHA256)
under ``CALENDAR_ENCRYPTION_KEY``. The variable may hold several comma-separated keys:
the first encrypts, all decrypt, so a key can be rotated without disconnecting anyone.

The OAuth ``state`` binds Google's redirect to the Telegram user who asked for the link.
It is signed with HMAC-SHA256 under a key *derived* from the encryption key (HKDF with
its own label), so the state key and the token key are never the same bytes, and it
expires after :data:`STATE_TTL`: a link forwarded or found in a chat log an hour later
connects nobody.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
from datetime import datetime
from typing import Any

from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from memory.calendar_ports import STATE_TTL, InvalidState, StateClaims, UnreadableTokens
from memory.errors import ConfigurationError

_STATE_LABEL = b"alfred/calendar/oauth-state/v1"


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


class CalendarCrypto:
    """Encrypts token bundles and signs OAuth states (a
    :class:`memory.calendar_ports.TokenCipher`) with the given comma-separated keys."""

    def __init__(self, key_material: str) -> None:
        keys = [k.strip() for k in key_material.split(",") if k.strip()]
        if not keys:
            raise ConfigurationError("CALENDAR_ENCRYPTION_KEY is empty")
        try:
            fernets = [Fernet(k.encode()) for k in keys]
        except (ValueError, binascii.Error):
            raise ConfigurationError(
                "CALENDAR_ENCRYPTION_KEY is not a valid Fernet key",
                hint='generate one with python -c "from cryptography.fernet import Fernet; '
                'print(Fernet.generate_key().decode())"',
            ) from None
        self._fernet = MultiFernet(fernets)
        self._state_keys = [self._derive(_unb64(k)) for k in keys]

    @staticmethod
    def _derive(key: bytes) -> bytes:
        return HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=_STATE_LABEL).derive(key)

    # --- tokens --------------------------------------------------------------------

    def encrypt(self, data: dict[str, Any]) -> str:
        """A JSON-able mapping, encrypted and authenticated, as text."""
        return self._fernet.encrypt(json.dumps(data, sort_keys=True).encode()).decode()

    def decrypt(self, token: str) -> dict[str, Any]:
        try:
            value = json.loads(self._fernet.decrypt(token.encode()))
        except (InvalidToken, ValueError):
            raise UnreadableTokens(
                "stored calendar tokens cannot be decrypted with CALENDAR_ENCRYPTION_KEY",
                hint="the key was changed without keeping the old one; users must reconnect",
            ) from None
        if not isinstance(value, dict):
            raise UnreadableTokens("stored calendar tokens are not a mapping")
        return value

    # --- OAuth state ----------------------------------------------------------------

    def _sign(self, payload: bytes, key: bytes) -> bytes:
        return hmac.new(key, payload, hashlib.sha256).digest()

    def sign_state(self, user_id: str, nonce: str, now: datetime) -> str:
        """A state for ``user_id``'s pending request ``nonce``, valid for STATE_TTL."""
        expires = int((now + STATE_TTL).timestamp())
        payload = json.dumps({"u": user_id, "n": nonce, "e": expires}, separators=(",", ":"))
        raw = payload.encode()
        return f"{_b64(raw)}.{_b64(self._sign(raw, self._state_keys[0]))}"

    def verify_state(self, state: str, now: datetime) -> StateClaims:
        """The claims of a genuine, unexpired state; :class:`InvalidState` otherwise."""
        try:
            body, signature = state.split(".", 1)
            raw, given = _unb64(body), _unb64(signature)
        except (ValueError, binascii.Error):
            raise InvalidState("the link is malformed") from None
        if not any(hmac.compare_digest(self._sign(raw, k), given) for k in self._state_keys):
            raise InvalidState("the link was not issued by this Alfred")
        try:
            claims = json.loads(raw)
            user_id, nonce, expires = str(claims["u"]), str(claims["n"]), int(claims["e"])
        except (ValueError, KeyError, TypeError):
            raise InvalidState("the link is malformed") from None
        expires_at = datetime.fromtimestamp(expires, tz=now.tzinfo)
        if now >= expires_at:
            raise InvalidState("the link has expired")
        return StateClaims(user_id=user_id, nonce=nonce, expires_at=expires_at)
