"""Who may read ``/metrics``, ``/healthz`` and ``/readyz``: loopback by default, and with
``METRICS_TOKEN`` set only a request carrying that bearer token.

Requests go to a real server over a real socket (aiohttp's test server, or the one
:func:`start_health_server` binds), not to the handlers directly.
"""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import yaml  # type: ignore[import-untyped]
from pydantic import SecretStr

from runtime.health import make_health_app, start_health_server
from runtime.metrics import AlfredMetrics
from runtime.settings import Settings

ROOT = Path(__file__).resolve().parents[2]
PATHS = ("/healthz", "/readyz", "/metrics")
#: What each path answers once let in, with nothing started: /readyz says "not ready".
OPEN_STATUS = {"/healthz": 200, "/readyz": 503, "/metrics": 200}
TOKEN = "s3cret-metrics-Token"


def _settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, **env: str) -> Settings:
    """Settings as a fresh install reads them: no .env, no METRICS_* but ``env``."""
    for name in ("METRICS_LISTEN", "METRICS_PORT", "METRICS_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    for name, val in env.items():
        monkeypatch.setenv(name, val)
    return Settings(_env_file=None, alfred_data_dir=tmp_path)  # type: ignore[call-arg]


async def test_by_default_the_server_listens_on_loopback_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = _settings(tmp_path, monkeypatch)
    assert settings.metrics_listen == "127.0.0.1"
    assert settings.metrics_token is None
    # As run_bot and the worker start it: host from the settings (and the function's own
    # default agrees, for any caller that passes none).
    for kwargs in ({"host": settings.metrics_listen}, {}):
        runner = await start_health_server(
            lambda: None, lambda: None, port=0, metrics=AlfredMetrics(), **kwargs
        )
        try:
            bound = {address[0] for address in runner.addresses}
            assert bound == {"127.0.0.1"}, bound
            port = runner.addresses[0][1]
            async with aiohttp.ClientSession() as http:
                for path in PATHS:
                    async with http.get(f"http://127.0.0.1:{port}{path}") as response:
                        assert response.status == OPEN_STATUS[path], path
        finally:
            await runner.cleanup()


async def test_a_configured_address_is_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = _settings(tmp_path, monkeypatch, METRICS_LISTEN="0.0.0.0")
    assert settings.metrics_listen == "0.0.0.0"
    runner = await start_health_server(
        lambda: None, lambda: None, host=settings.metrics_listen, port=0, metrics=AlfredMetrics()
    )
    try:
        assert {address[0] for address in runner.addresses} == {"0.0.0.0"}
    finally:
        await runner.cleanup()


async def test_with_a_token_every_endpoint_wants_it(client_for: Any) -> None:
    app = make_health_app(lambda: None, lambda: None, AlfredMetrics(), token=SecretStr(TOKEN))
    client = await client_for(app)
    refused = [
        {},
        {"Authorization": "Bearer wrong-token"},
        {"Authorization": f"Bearer {TOKEN[:-1]}"},  # all but the last character
        {"Authorization": f"Bearer {TOKEN}x"},
        {"Authorization": f"Basic {TOKEN}"},  # the right secret under another scheme
        {"Authorization": TOKEN},
        {"Authorization": "Bearer "},
        {"Authorization": "Bearer é-not-ascii"},
    ]
    for path in PATHS:
        for headers in refused:
            response = await client.get(path, headers=headers)
            assert response.status == 401, (path, headers)
            assert response.headers["WWW-Authenticate"].startswith("Bearer")
            body = await response.text()
            assert TOKEN not in body and "alfred_" not in body
        for scheme in ("Bearer", "bearer"):  # the scheme's case does not matter (RFC 9110)
            response = await client.get(path, headers={"Authorization": f"{scheme} {TOKEN}"})
            assert response.status == OPEN_STATUS[path], (path, scheme)
    metrics = await client.get("/metrics", headers={"Authorization": f"Bearer {TOKEN}"})
    assert "alfred_" in await metrics.text()


async def test_the_token_guards_the_real_server_started_from_settings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = _settings(tmp_path, monkeypatch, METRICS_TOKEN=TOKEN)
    assert settings.metrics_token is not None
    runner = await start_health_server(
        lambda: None,
        lambda: None,
        host=settings.metrics_listen,
        port=0,
        metrics=AlfredMetrics(),
        token=settings.metrics_token,
    )
    try:
        url = f"http://127.0.0.1:{runner.addresses[0][1]}/metrics"
        async with aiohttp.ClientSession() as http:
            async with http.get(url) as response:
                assert response.status == 401
            async with http.get(url, headers={"Authorization": "Bearer nope"}) as response:
                assert response.status == 401
            async with http.get(url, headers={"Authorization": f"Bearer {TOKEN}"}) as response:
                assert response.status == 200
    finally:
        await runner.cleanup()


async def test_without_a_token_no_header_is_needed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, client_for: Any
) -> None:
    # A blank METRICS_TOKEN (as a copied .env.example leaves it) is no token at all, not
    # an empty one that "Bearer " would open.
    settings = _settings(tmp_path, monkeypatch, METRICS_TOKEN="  ")
    assert settings.metrics_token is None
    client = await client_for(
        make_health_app(lambda: None, lambda: None, AlfredMetrics(), token=settings.metrics_token)
    )
    for path in PATHS:
        assert (await client.get(path)).status == OPEN_STATUS[path], path
        # A header nobody asked for is ignored, not refused.
        response = await client.get(path, headers={"Authorization": "Bearer anything"})
        assert response.status == OPEN_STATUS[path], path


async def test_the_compose_health_check_sends_the_token(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """docker/compose.yaml's check for the bot, run as the container would run it, against
    a guarded server: it passes with the container's METRICS_TOKEN, fails without."""
    compose = yaml.safe_load((ROOT / "docker" / "compose.yaml").read_text(encoding="utf-8"))
    command = compose["services"]["bot"]["healthcheck"]["test"]
    assert command[:3] == ["CMD", "python", "-c"]
    runner = await start_health_server(
        lambda: None, lambda: None, port=0, metrics=AlfredMetrics(), token=SecretStr(TOKEN)
    )
    try:
        port = runner.addresses[0][1]
        code = command[3].replace("127.0.0.1:9100", f"127.0.0.1:{port}")
        assert code != command[3]

        async def check(**env: str) -> int:
            environ = {k: v for k, v in os.environ.items() if k != "METRICS_TOKEN"} | env
            proc = await asyncio.create_subprocess_exec(
                sys.executable, "-c", code, env=environ,
                stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL,
            )  # fmt: skip
            return await asyncio.wait_for(proc.wait(), 30)

        assert await check(METRICS_TOKEN=TOKEN) == 0
        assert await check() != 0
        assert await check(METRICS_TOKEN="wrong") != 0
    finally:
        await runner.cleanup()
