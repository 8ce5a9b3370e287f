"""How a component runs, as adapters and the runtime both report it."""

from __future__ import annotations

from enum import StrEnum


class Mode(StrEnum):
    """How a component runs: started by Alfred, pointed at by configuration, or not used."""

    EMBEDDED = "embedded"
    CONFIGURED = "configured"
    OFF = "off"
