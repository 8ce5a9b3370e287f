"""HTTP endpoints for operators: ``/metrics``, ``/healthz`` and ``/readyz``.

Three questions, three endpoints, because orchestrators act on them differently:

* ``/healthz`` — *is the process alive?* Always 200 while the event loop runs. A
  liveness probe that checked the database would make Kubernetes (or compose) restart
  every replica during a database outage, which fixes nothing and drops updates.
* ``/readyz`` — *should this replica get traffic?* 200 only when the database and the
  queue each answer a ping within :data:`PING_TIMEOUT_S`; otherwise 503 with a JSON
  body naming what is down, so the load balancer sends webhooks elsewhere and the
  operator sees why.
* ``/metrics`` — Prometheus text format. It must answer during an outage (that is when
  it matters most): the pings run with a time limit, and a failed one becomes
  ``alfred_up{component="database"} 0`` instead of an error.

The handlers take *getters* rather than objects: the routes are added when the web app
is built, which may be before the services exist (or while they are being rebuilt),
and a getter returning ``None`` simply reports the component as "not started".
Errors are reported by exception type only: a driver message can carry a connection
string with a password.

The server listens on loopback unless ``METRICS_LISTEN`` says otherwise, and with
``METRICS_TOKEN`` set every one of its paths wants ``Authorization: Bearer <token>``
(:func:`bearer_guard`); Prometheus sends it with ``authorization: {credentials: …}``.
The webhook listener's ``/healthz`` and ``/readyz`` stay open: they say only "up" or
"down", and a load balancer's probe often cannot send a header.
"""

from __future__ import annotations

import asyncio
import hmac
import logging
from collections.abc import Awaitable, Callable
from typing import Any, Final, Protocol

from aiohttp import web
from aiohttp.typedefs import Middleware
from prometheus_client import CONTENT_TYPE_LATEST
from pydantic import SecretStr

from runtime.metrics import DATABASE, QUEUE, AlfredMetrics, get_metrics

log = logging.getLogger(__name__)

#: A ready replica's dependencies answer a ping well under a second; slower is "down".
PING_TIMEOUT_S: Final = 1.0
#: Loopback: the operators' endpoints are not for the internet unless someone says so.
DEFAULT_HOST: Final = "127.0.0.1"

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


class _HasDb(Protocol):
    db: Any


class ServicesLike(Protocol):
    """What the health checks need of :class:`runtime.bundle.Services` (tests pass less)."""

    @property
    def mongo(self) -> _HasDb: ...


ServicesGetter = Callable[[], ServicesLike | None]
#: Returns a ``redis.asyncio.Redis`` (anything with ``async ping()``), or None.
RedisGetter = Callable[[], Any]


async def _check(ping: Callable[[], Awaitable[Any]] | None, timeout_s: float) -> str:
    """``"ok"``, ``"not started"``, ``"timeout"`` or ``"error: <Type>"``."""
    if ping is None:
        return "not started"
    try:
        await asyncio.wait_for(ping(), timeout_s)
    except TimeoutError:
        return "timeout"
    except asyncio.CancelledError:
        raise
    except Exception as exc:
        return f"error: {type(exc).__name__}"
    return "ok"


def _database_ping(services_getter: ServicesGetter) -> Callable[[], Awaitable[Any]] | None:
    try:
        services = services_getter()
    except Exception:
        return None
    if services is None:
        return None
    db = services.mongo.db

    async def ping() -> Any:
        return await db.command("ping")

    return ping


def _queue_ping(redis_getter: RedisGetter) -> Callable[[], Awaitable[Any]] | None:
    try:
        redis = redis_getter()
    except Exception:
        return None
    if redis is None:
        return None

    async def ping() -> Any:
        return await redis.ping()

    return ping


async def check_dependencies(
    services_getter: ServicesGetter,
    redis_getter: RedisGetter,
    *,
    timeout_s: float = PING_TIMEOUT_S,
) -> dict[str, str]:
    """Ping the database and the queue concurrently: component → state."""
    database, queue = await asyncio.gather(
        _check(_database_ping(services_getter), timeout_s),
        _check(_queue_ping(redis_getter), timeout_s),
    )
    return {DATABASE: database, QUEUE: queue}


def make_handlers(
    services_getter: ServicesGetter,
    redis_getter: RedisGetter,
    metrics: AlfredMetrics | None = None,
    *,
    timeout_s: float = PING_TIMEOUT_S,
) -> dict[str, Handler]:
    """The three handlers, by path (for apps that route them their own way)."""

    def _metrics() -> AlfredMetrics:
        return metrics if metrics is not None else get_metrics()

    async def healthz(_: web.Request) -> web.StreamResponse:
        return web.json_response({"ok": True})

    async def readyz(_: web.Request) -> web.StreamResponse:
        checks = await check_dependencies(services_getter, redis_getter, timeout_s=timeout_s)
        down = sorted(name for name, state in checks.items() if state != "ok")
        for name, state in checks.items():
            _metrics().set_up(name, state == "ok")
        if down:
            log.warning("not ready: %s", ", ".join(f"{n} {checks[n]}" for n in down))
            return web.json_response({"ready": False, "down": down, "checks": checks}, status=503)
        return web.json_response({"ready": True, "checks": checks})

    async def metrics_handler(_: web.Request) -> web.StreamResponse:
        registry = _metrics()
        # Pings and refreshers each have their own time limit, so an outage makes the
        # scrape a little slower (≤ timeout_s) but never makes it fail.
        checks, _refreshed = await asyncio.gather(
            check_dependencies(services_getter, redis_getter, timeout_s=timeout_s),
            registry.refresh(timeout_s),
        )
        for name, state in checks.items():
            registry.set_up(name, state == "ok")
        return web.Response(body=registry.render(), headers={"Content-Type": CONTENT_TYPE_LATEST})

    return {"/healthz": healthz, "/readyz": readyz, "/metrics": metrics_handler}


def _registered_get_paths(app: web.Application) -> set[str]:
    paths: set[str] = set()
    for route in app.router.routes():
        if route.method in ("GET", "*"):
            info = route.resource.get_info() if route.resource is not None else {}
            path = info.get("path") or info.get("formatter")
            if isinstance(path, str):
                paths.add(path)
    return paths


def add_health_routes(
    app: web.Application,
    services_getter: ServicesGetter,
    redis_getter: RedisGetter,
    metrics: AlfredMetrics | None = None,
    *,
    timeout_s: float = PING_TIMEOUT_S,
    include_metrics: bool = True,
) -> None:
    """Add ``GET /healthz``, ``/readyz`` and ``/metrics`` to ``app``.

    A path the app already serves (the webhook app's own ``/healthz``) is left alone,
    so this can be called on any app. ``metrics`` defaults to the process-wide registry.
    ``include_metrics=False`` leaves ``/metrics`` out: for an internet-facing listener
    (the webhook's), where the load balancer needs ``/readyz`` but nobody outside should
    read the metrics.
    """
    present = _registered_get_paths(app)
    for path, handler in make_handlers(
        services_getter, redis_getter, metrics, timeout_s=timeout_s
    ).items():
        if path == "/metrics" and not include_metrics:
            continue
        if path in present:
            log.debug("%s is already routed; keeping the existing handler", path)
            continue
        app.router.add_get(path, handler)


def bearer_guard(token: SecretStr) -> Middleware:
    """Middleware that answers 401 unless the request carries ``Bearer <token>``.

    The comparison is :func:`hmac.compare_digest` on bytes, so its time does not tell
    how much of a guess was right. The scheme is matched without regard to case, as
    RFC 9110 says; a missing header, another scheme and a wrong token get the same 401.
    """
    expected = token.get_secret_value().encode("utf-8")

    @web.middleware
    async def guard(request: web.Request, handler: Handler) -> web.StreamResponse:
        scheme, _, given = request.headers.get("Authorization", "").partition(" ")
        offered = given.strip().encode("utf-8", "replace")
        # Both sides are compared even when the scheme is wrong: one path, one timing.
        matches = hmac.compare_digest(offered, expected)
        if scheme.lower() != "bearer" or not matches:
            return web.json_response(
                {"error": "unauthorized"},
                status=401,
                headers={"WWW-Authenticate": 'Bearer realm="alfred"'},
            )
        return await handler(request)

    return guard


def make_health_app(
    services_getter: ServicesGetter,
    redis_getter: RedisGetter,
    metrics: AlfredMetrics | None = None,
    *,
    token: SecretStr | None = None,
) -> web.Application:
    """A web app with only the health routes: for polling mode and arq workers, which
    have no webhook server to hang them on. With ``token``, every path needs it."""
    app = web.Application(middlewares=[bearer_guard(token)] if token is not None else [])
    add_health_routes(app, services_getter, redis_getter, metrics)
    return app


async def start_health_server(
    services_getter: ServicesGetter,
    redis_getter: RedisGetter,
    *,
    host: str = DEFAULT_HOST,
    port: int = 9100,
    metrics: AlfredMetrics | None = None,
    token: SecretStr | None = None,
) -> web.AppRunner:
    """Serve :func:`make_health_app` on ``host:port``; ``await runner.cleanup()`` stops it."""
    app = make_health_app(services_getter, redis_getter, metrics, token=token)
    runner = web.AppRunner(app)
    await runner.setup()
    await web.TCPSite(runner, host, port).start()
    log.info(
        "health and metrics on %s:%d (%s)",
        host,
        port,
        "bearer token required" if token is not None else "no token",
    )
    return runner


__all__ = [
    "DEFAULT_HOST",
    "PING_TIMEOUT_S",
    "ServicesLike",
    "add_health_routes",
    "bearer_guard",
    "check_dependencies",
    "make_handlers",
    "make_health_app",
    "start_health_server",
]
