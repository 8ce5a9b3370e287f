"""Reading a replay script (REPLAY.md): one JSON object per line, checked before anything
runs, so a malformed script fails with its line number and changes nothing."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from memory.errors import BadInput

DEFAULT_START = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
#: The range a script's clock may move in (Telegram dates are Unix times).
MIN_CLOCK = datetime(1970, 1, 2, tzinfo=UTC)
MAX_CLOCK = datetime(9000, 1, 1, tzinfo=UTC)
LINE_KINDS = ("circle", "say", "clock", "jobs", "calendar", "probe", "dump", "press")
_DURATION = re.compile(r"^\+(\d+(?:\.\d+)?)([smhd])$")
_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days"}
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")


class ScriptError(BadInput):
    """A malformed script line; ``line`` is 1-based."""

    def __init__(self, line: int, message: str) -> None:
        # One line on a terminal, whatever names or keys the script put in the message.
        message = _CONTROL.sub(lambda m: f"\\u{ord(m.group()):04x}", message)
        super().__init__(f"line {line}: {message}")
        self.line = line


def parse_script(lines: Iterable[str]) -> list[tuple[int, str, Any]]:
    """Validate every line first, so a malformed script fails before anything runs."""
    events: list[tuple[int, str, Any]] = []
    membership = _Membership()
    clock = _ScriptClock()
    for number, raw in enumerate(lines, start=1):
        text = raw.strip()
        if not text or text.startswith("#"):
            continue
        try:
            obj = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ScriptError(number, f"not valid JSON ({exc.msg})") from None
        except RecursionError:
            raise ScriptError(number, "nested too deeply to read") from None
        except ValueError:  # an integer of more than 4,300 digits
            raise ScriptError(
                number, "not usable JSON (a number of more than 4,300 digits?)"
            ) from None
        try:
            json.dumps(obj, ensure_ascii=False).encode("utf-8")
        except UnicodeEncodeError:
            raise ScriptError(
                number, "holds an unpaired surrogate escape (like \\ud83d), which is no character"
            ) from None
        if not isinstance(obj, dict):
            raise ScriptError(
                number, f"a line is a JSON object with one of {', '.join(LINE_KINDS)}"
            )
        kinds = [k for k in obj if k in LINE_KINDS]
        if len(kinds) != 1:
            raise ScriptError(number, f"a line holds exactly one of {', '.join(LINE_KINDS)}")
        kind = kinds[0]
        extra = set(obj) - {kind} - ({"members"} if kind == "circle" else set())
        if extra:
            keys = ", ".join(json.dumps(k)[:40] for k in sorted(extra))
            raise ScriptError(number, f"unexpected key(s) {keys}")
        value = obj[kind]
        if kind == "circle":
            members = obj.get("members", [])
            if not isinstance(members, list) or not all(isinstance(m, str) for m in members):
                raise ScriptError(number, '"members" is a list of user names')
            _check(number, kind, value)
            value = {"name": value, "members": members}
        else:
            _check(number, kind, value)
        membership.follow(number, kind, value)
        if kind == "clock":
            clock.follow(number, value)
        events.append((number, kind, value))
    return events


@dataclass
class _Membership:
    """Who is in which circle at each line, as the script makes it (a ``circle`` line's
    members, and whoever speaks in a group): a ``calendar`` line may only come from the
    owner's own DM or from a group the owner is in, or it would store the owner's event
    in someone else's partition."""

    circles: dict[str, set[str]] = field(default_factory=dict)

    def follow(self, number: int, kind: str, value: Any) -> None:
        if kind == "circle":
            self.circles.setdefault(value["name"], set()).update(value["members"])
        elif kind == "say" and value["in"].startswith("group:"):
            self.circles.setdefault(value["in"].split(":", 1)[1], set()).add(value["from"])
        elif kind == "calendar" and value.get("from") is not None:
            user, (where, name) = value["user"], value["from"].split(":", 1)
            if where == "dm" and name != user:
                raise ScriptError(
                    number, f'a calendar event of {user} can only come from "dm:{user}"'
                )
            if where == "group" and user not in self.circles.get(name, set()):
                raise ScriptError(number, f'{user} is not a member of "group:{name}"')


@dataclass
class _ScriptClock:
    """The simulated time as the script moves it: it must stay within Telegram's dates
    (from 1970) and far enough from ``datetime``'s last year for retention and session
    arithmetic, or the run would fail half-way instead of at parse time."""

    now: datetime = DEFAULT_START

    def follow(self, number: int, value: str) -> None:
        match = _DURATION.match(value)
        try:
            if match:
                amount, unit = float(match.group(1)), match.group(2)
                moved = self.now + timedelta(**{_UNITS[unit]: amount})
            else:
                moved = datetime.fromisoformat(value.replace("Z", "+00:00"))
                if moved.tzinfo is None:
                    moved = moved.replace(tzinfo=UTC)
        except OverflowError:
            moved = datetime.max.replace(tzinfo=UTC)
        if not MIN_CLOCK <= moved <= MAX_CLOCK:
            raise ScriptError(
                number,
                f'"clock" would move the time to {moved:%Y-%m-%d}, outside '
                f"{MIN_CLOCK:%Y} to {MAX_CLOCK:%Y}",
            )
        self.now = moved


def _check(number: int, kind: str, value: Any) -> None:
    def need(cond: bool, what: str) -> None:
        if not cond:
            raise ScriptError(number, what)

    if kind == "circle":
        need(isinstance(value, str) and bool(value), '"circle" needs a name')
    elif kind == "say":
        need(isinstance(value, dict), '"say" needs {"from", "in", "text"}')
        need(
            all(isinstance(value.get(k), str) for k in ("from", "in", "text")),
            '"say" needs string "from", "in" and "text"',
        )
        need(_is_thread(value["in"]), '"in" is "group:<circle>" or "dm:<user>"')
        _own_dm(need, value["from"], value["in"], "speak")
        need(value.get("reply_to") in (None, "bot"), '"reply_to" can only be "bot"')
    elif kind == "clock":
        need(
            isinstance(value, str) and (bool(_DURATION.match(value)) or _is_time(value)),
            '"clock" is "+15m" (s, m, h, d) or an ISO time like "2026-03-01T10:00:00Z"',
        )
    elif kind == "jobs":
        need(value == "drain", '"jobs" must be "drain"')
    elif kind == "probe":
        _someone_in_a_thread(need, kind, value, "query")
    elif kind == "dump":
        need(value == "all", '"dump" must be "all"')
    elif kind == "press":
        _someone_in_a_thread(need, kind, value, "button")
    elif kind == "calendar":
        need(
            isinstance(value, dict)
            and isinstance(value.get("user"), str)
            and isinstance(value.get("event"), dict),
            '"calendar" needs "user" and "event"',
        )
        need(
            value.get("from") is None or _is_thread(value.get("from")),
            '"from" is null, "group:<circle>" or "dm:<user>"',
        )
        need(
            isinstance(value["event"].get("id"), str) and bool(value["event"]["id"]),
            'a calendar "event" needs a string "id"',
        )


def _someone_in_a_thread(
    need: Callable[[bool, str], None], kind: str, value: Any, what: str
) -> None:
    """A line done as someone in a thread (``probe``, ``press``): string "as", "in" and
    ``what``, and "in" names a thread."""
    need(
        isinstance(value, dict) and all(isinstance(value.get(k), str) for k in ("as", "in", what)),
        f'"{kind}" needs string "as", "in" and "{what}"',
    )
    need(_is_thread(value["in"]), '"in" is "group:<circle>" or "dm:<user>"')
    _own_dm(need, value["as"], value["in"], kind)


def may_act_in(who: str, where: str) -> bool:
    """Whether ``who`` can be in thread ``where``: a DM has one person in it, its owner.
    "ana" in "dm:ben" cannot happen in Telegram, and a replay (or the console) that let it
    would answer Ana's question with her memories in Ben's chat, an audit's false alarm."""
    kind, _, owner = where.partition(":")
    return kind != "dm" or owner.casefold() == who.casefold()


def _own_dm(need: Callable[[bool, str], None], who: str, where: str, what: str) -> None:
    owner = where.partition(":")[2]
    need(
        may_act_in(who, where),
        f'only {owner} can {what} in "{where}": a DM is its owner\'s chat with Alfred',
    )


def _is_thread(ref: Any) -> bool:
    return isinstance(ref, str) and re.match(r"^(group|dm):[^:\s]+$", ref) is not None


def _is_time(value: str) -> bool:
    try:
        datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return False
    return True
