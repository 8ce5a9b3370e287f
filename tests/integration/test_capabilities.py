"""What ``alfred doctor`` and the start-up say of the embedded server's search."""

from __future__ import annotations

from typing import Any

from pymongo.asynchronous.database import AsyncDatabase

from integrations.mongo.capabilities import REASON_CHARS, detect_capabilities

PREFIX = "no Atlas Search on this server ("
SUFFIX = "); search runs in the application"


async def test_the_embedded_server_reports_its_search_in_a_readable_line(
    migrated_db: AsyncDatabase[dict[str, Any]],
) -> None:
    caps = await detect_capabilities(migrated_db)
    assert caps.atlas_search is False
    assert caps.server_version != "?"
    assert caps.detail.startswith(PREFIX) and caps.detail.endswith(SUFFIX), caps.detail
    reason = caps.detail.removeprefix(PREFIX).removesuffix(SUFFIX)
    assert reason and len(reason) <= REASON_CHARS, reason
    assert "full error" not in reason and ". " not in reason, reason
