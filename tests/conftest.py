"""Shared fixtures: real embedded servers for the whole session, no outbound network."""

from __future__ import annotations

import os
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp import test_utils as aiotest
from aiohttp import web
from pymongo.asynchronous.database import AsyncDatabase

from integrations.mongo.connection import MongoHandle
from integrations.redis.connection import RedisHandle
from runtime.connections import open_mongo, open_redis
from runtime.settings import Settings
from tests.helpers import network_guard
from tests.helpers.cleanup import drop_test_database

# Tests never use the developer's real services: nothing from the environment or .env
# may switch a test onto a production database, a paid API or the internet.
for _name in list(os.environ):
    if _name.upper() in {
        "MONGODB_URI",
        "REDIS_URL",
        "OPENAI_API_KEY",
        "OPENAI_BASE_URL",
        "TELEGRAM_BOT_TOKEN",
        "MEM0_API_KEY",
        "MEM0_MODE",
        "GOOGLE_CLIENT_ID",
        "WEBHOOK_URL",
        "EMBEDDINGS_PROVIDER",
        "ALFRED_DATA_DIR",
    }:
        del os.environ[_name]
os.environ["MEM0_TELEMETRY"] = "False"
# PTB warns on every duration unless told to use timedeltas; warnings are errors here.
os.environ["PTB_TIMEDELTA"] = "1"
network_guard.install()


def make_settings(data_dir: Path, **overrides: Any) -> Settings:
    """Settings for a test: embedded everything under ``data_dir``, no ``.env`` file."""
    overrides.setdefault("metrics_port", 0)  # tests that want the server start their own
    # One update at a time, in arrival order: the bot harness proves an update handled by
    # the answer to a marker pushed after it. Tests of concurrent handling set their own.
    overrides.setdefault("update_concurrency", 1)
    return Settings(_env_file=None, alfred_data_dir=data_dir, **overrides)  # type: ignore[call-arg]


@pytest.fixture(scope="session")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One data folder for the session's shared embedded servers."""
    return tmp_path_factory.mktemp("alfred-data")


@pytest.fixture(scope="session")
def settings(data_dir: Path) -> Settings:
    return make_settings(data_dir)


#: The session client's connect and server-selection timeout: a day, so in effect none.
#: Its server monitor keeps a streamed ``hello`` waiting on the shared event loop for this
#: long plus its 10 s beat, and the loop stands still between tests and through every
#: synchronous one (a run of CLI and bench tests in one file lasts minutes). Past that
#: wait the monitor calls the server lost and closes the connections in use, failing
#: whatever the next test has in flight. A test that hangs is still stopped by
#: pytest-timeout.
SESSION_MONGO_TIMEOUT_MS = 86_400_000


@pytest.fixture(scope="session")
async def mongo(settings: Settings) -> AsyncIterator[MongoHandle]:
    """The real embedded MongoDB-wire server, started once for the session."""
    handle = await open_mongo(
        settings.model_copy(update={"mongodb_timeout_ms": SESSION_MONGO_TIMEOUT_MS})
    )
    yield handle
    await handle.close()


@pytest.fixture(scope="session")
async def redis(settings: Settings) -> AsyncIterator[RedisHandle]:
    """The real embedded Redis server, started once for the session."""
    handle = await open_redis(settings)
    yield handle
    await handle.close()


@pytest.fixture
async def db(mongo: MongoHandle) -> AsyncIterator[AsyncDatabase[dict[str, Any]]]:
    """A fresh, empty database for one test, dropped afterwards."""
    name = f"test_{uuid.uuid4().hex[:12]}"
    database = mongo.client[name]
    yield database
    await drop_test_database(mongo.client, name)


@pytest.fixture
def tmp_cwd(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Run a test from an empty working directory (for default-path behaviour)."""
    monkeypatch.chdir(tmp_path)
    yield tmp_path


@pytest.fixture
async def migrated_db(
    db: AsyncDatabase[dict[str, Any]],
) -> AsyncDatabase[dict[str, Any]]:
    """A fresh database with every migration applied (indexes, unique keys)."""
    from migrations import MigrationContext, migrate

    await migrate(
        MigrationContext(db=db, atlas_search=False, embedding_dims=384, log=lambda _: None)
    )
    return db


@pytest.fixture
async def client_for() -> AsyncIterator[Any]:
    """Start a real server for an app; every client is closed at the end."""
    clients: list[aiotest.TestClient[Any, Any]] = []

    async def start(app: web.Application) -> aiotest.TestClient[Any, Any]:
        client: aiotest.TestClient[Any, Any] = aiotest.TestClient(aiotest.TestServer(app))
        await client.start_server()
        clients.append(client)
        return client

    yield start
    for client in clients:
        await client.close()
