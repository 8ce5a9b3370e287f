"""Connecting, disconnecting and forgetting a Google Calendar (the OAuth use cases).

1. ``/calendar`` in a DM → :func:`start_connect`: Google's consent URL with a signed,
   expiring ``state`` naming the Telegram user and a one-time nonce; the PKCE verifier
   is kept (encrypted) with the nonce.
2. Google redirects to Alfred's endpoint (``integrations.google.oauth_http``), which
   calls :func:`complete_connect`: the state is checked (signature, expiry), the nonce
   is consumed (a link works once), the code is exchanged for tokens, and the tokens are
   stored encrypted for the user the state names, *unconfirmed*.
3. The person is asked in their DM to confirm the Google account the tokens came from
   ("Connect the calendar of carol@example.com?"): a link forwarded to, or completed by,
   someone else would otherwise connect that other person's calendar without anyone
   noticing. Nothing is read until ``/calendar confirm`` (:func:`confirm_connect`);
   ``/calendar off`` drops the tokens instead.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import TypeVar

from memory.calendar_ports import (
    STATE_TTL,
    ConnectionNotSaved,
    InvalidState,
    Notify,
    TokenCipher,
)
from memory.errors import AlfredError, ConfigurationError
from memory.ids import new_id
from services.calendar.feature import CalendarFeature

log = logging.getLogger(__name__)

CONNECTED_NOTICE = (
    "Your Google Calendar is connected. I'll remember useful things from it (who you meet, "
    "upcoming appointments), and that stays in our private chat. Send /calendar to see the "
    "options, or /calendar off to disconnect."
)
NOTHING_TO_CONFIRM = (
    "There's no calendar waiting for your confirmation. Send /calendar to connect one."
)

T = TypeVar("T")


def confirm_question(email: str | None) -> str:
    """The question asked once Google sent tokens back: which account, and how to say yes."""
    account = f"the Google Calendar of {email}" if email else "the Google Calendar you just chose"
    return (
        f"Connect {account}? I won't read anything from it until you confirm.\n"
        "Send /calendar confirm to connect it, or /calendar off if that isn't the account you "
        "meant."
    )


def _require(calendar: CalendarFeature) -> TokenCipher:
    """The feature's cipher, or :class:`ConfigurationError` saying why connecting is off."""
    problem = calendar.problem()
    if problem is not None:
        raise ConfigurationError(problem)
    if calendar.cipher is None:
        raise ConfigurationError("Google Calendar is not configured (no key for its links)")
    return calendar.cipher


async def start_connect(calendar: CalendarFeature, user_id: str) -> str:
    """The consent URL for ``user_id``; valid for 10 minutes, once. Raises
    :class:`ConfigurationError` (with words for the person) when connecting is impossible."""
    cipher = _require(calendar)
    now = calendar.clock.now()
    nonce = new_id()
    state = cipher.sign_state(user_id, nonce, now)
    url, verifier = calendar.google.consent_url(state)
    sealed = cipher.encrypt({"v": verifier})
    await calendar.store.set_pending(user_id, nonce, sealed, now + STATE_TTL, now)
    return url


async def _saved(step: Awaitable[T]) -> T:
    """A store call while completing a connection: a failure of Alfred's own database
    becomes :class:`ConnectionNotSaved` (the redirect page asks to try again)."""
    try:
        return await step
    except AlfredError:
        raise
    except Exception as exc:
        raise ConnectionNotSaved("the calendar connection could not be saved") from exc


async def finish_connect(calendar: CalendarFeature, state: str, code: str) -> str:
    """Complete a connection from Google's redirect; returns the user id connected.

    Raises :class:`InvalidState` (bad, expired or used link), ``ConnectRefused``,
    ``Unavailable`` (Google's token endpoint is down) or :class:`ConnectionNotSaved`.
    """
    cipher = _require(calendar)
    now = calendar.clock.now()
    claims = cipher.verify_state(state, now)
    sealed = await _saved(calendar.store.take_pending(claims.user_id, claims.nonce, now))
    if sealed is None:
        raise InvalidState("the link was already used, or a newer one was asked for")
    verifier = str(cipher.decrypt(sealed).get("v") or "") or None
    tokens = await calendar.google.exchange_code(code, verifier)
    sealed_tokens = calendar.encrypt_tokens(tokens)
    await _saved(calendar.store.save_unconfirmed(claims.user_id, sealed_tokens, now))
    log.info("calendar tokens received; waiting for the person to confirm the account")
    return claims.user_id


async def complete_connect(
    calendar: CalendarFeature, state: str, code: str, *, notify: Notify | None = None
) -> str:
    """:func:`finish_connect`, then ask the person in Telegram to confirm the account (a
    failed message does not undo anything: ``/calendar`` asks again)."""
    user_id = await finish_connect(calendar, state, code)
    if notify is not None:
        try:
            await notify(user_id, await pending_question(calendar, user_id))
        except Exception as exc:
            log.warning("could not ask to confirm the calendar: %s", type(exc).__name__)
    return user_id


async def pending_question(calendar: CalendarFeature, user_id: str) -> str:
    """The confirmation question for ``user_id``'s unconfirmed connection."""
    connection = await calendar.store.get(user_id)
    email = await calendar.account_email(connection) if connection is not None else None
    return confirm_question(email)


async def confirm_connect(calendar: CalendarFeature, user_id: str) -> str:
    """``/calendar confirm``: the person recognised the account; syncing may start."""
    if not await calendar.store.confirm(user_id, calendar.clock.now()):
        return NOTHING_TO_CONFIRM
    log.info("calendar connected for a user")
    return CONNECTED_NOTICE


def connection_completer(
    calendar: CalendarFeature, *, notify: Notify | None = None
) -> Callable[[str, str], Awaitable[str]]:
    """:func:`complete_connect` bound to this calendar, as the redirect endpoint calls it."""

    async def complete(state: str, code: str) -> str:
        return await complete_connect(calendar, state, code, notify=notify)

    return complete


async def disconnect(calendar: CalendarFeature, user_id: str) -> bool:
    """``/calendar off``: delete the tokens (and ask Google to revoke them). True if a
    calendar was connected. Memories already derived stay until the person forgets them."""
    connection = await calendar.store.delete(user_id)
    if connection is None or connection.tokens is None:
        return False
    try:
        tokens = calendar.tokens(connection)
    except AlfredError:
        return True
    token = tokens.refresh_token or tokens.access_token
    if token:
        await calendar.google.revoke(token)
    return True


async def forget_calendar_user(calendar: CalendarFeature, user_id: str) -> None:
    """Part of "forget everything about me": the connection (tokens revoked at Google)
    and the event links go. The derived facts are the user's own and are erased by the
    usual cascade."""
    await disconnect(calendar, user_id)
    await calendar.store.delete_user(user_id)
