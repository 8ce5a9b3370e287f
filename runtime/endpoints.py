"""Where a server is: the URL the settings give, or an embedded server Alfred starts."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from pydantic import SecretStr

from runtime.embedded import EmbeddedLease, Kind, acquire
from runtime.settings import Mode, Settings


@dataclass(frozen=True)
class Endpoint:
    url: str
    mode: Mode
    lease: EmbeddedLease | None


async def resolve_endpoint(
    kind: Kind, configured: SecretStr | None, settings: Settings, *, port: int
) -> Endpoint:
    """The configured URL, or a lease on the shared embedded server of ``kind``."""
    if configured is not None:
        return Endpoint(configured.get_secret_value(), Mode.CONFIGURED, None)
    lease = await asyncio.to_thread(
        acquire, kind, settings.data_dir(), port=port, timeout=settings.embedded_start_timeout
    )
    return Endpoint(lease.url, Mode.EMBEDDED, lease)
