"""The compose file, checked without a Docker engine.

``docker compose config`` needs the Compose plugin, which this machine lacks, so the file
is validated against the Compose Specification's JSON schema (the copy check-jsonschema
ships), then loaded with PyYAML (merge keys resolved, as Compose does) and the parts Alfred
relies on are checked: the services and their images, commands, connection settings,
start order and health checks, and that they agree with the Dockerfile and the code.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml  # type: ignore[import-untyped]

ROOT = Path(__file__).resolve().parents[2]
COMPOSE = ROOT / "docker" / "compose.yaml"
DOCKERFILE = ROOT / "docker" / "Dockerfile"


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    data = yaml.safe_load(COMPOSE.read_text(encoding="utf-8"))
    assert isinstance(data, dict)
    return data


@pytest.fixture(scope="module")
def services(compose: dict[str, Any]) -> dict[str, Any]:
    found = compose["services"]
    assert isinstance(found, dict)
    return found


SCHEMA = "vendor.compose-spec"
CHECK_COMPOSE = (sys.executable, "-m", "check_jsonschema", "--builtin-schema", SCHEMA)


def _check_compose_schema(path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*CHECK_COMPOSE, str(path)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_the_file_follows_the_compose_specification(tmp_path: Path) -> None:
    checked = _check_compose_schema(COMPOSE)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    # The same check refuses a file Compose would refuse (so the pass above means something).
    text = COMPOSE.read_text(encoding="utf-8")
    broken = tmp_path / "compose.yaml"
    broken.write_text(
        text.replace("condition: service_healthy", "condition: when_ready", 1), encoding="utf-8"
    )
    refused = _check_compose_schema(broken)
    assert refused.returncode == 1 and "when_ready" in refused.stdout


def _healthy(service: dict[str, Any], name: str) -> None:
    assert service["depends_on"][name]["condition"] == "service_healthy"


def test_the_services_and_their_images(services: dict[str, Any]) -> None:
    assert {"mongodb", "redis", "bot", "worker"} <= set(services)
    # Atlas Local: $vectorSearch and $search are real, as on Atlas.
    assert services["mongodb"]["image"].startswith("mongodb/mongodb-atlas-local")
    assert services["redis"]["image"].startswith(("redis:", "valkey/valkey:"))
    for name in ("bot", "worker", "migrate"):
        assert services[name]["image"] == "alfred:latest"
        assert services[name]["build"] == {"context": "..", "dockerfile": "docker/Dockerfile"}
        assert (COMPOSE.parent / services[name]["build"]["context"] / "pyproject.toml").exists()


def test_commands(services: dict[str, Any]) -> None:
    # The Dockerfile's entrypoint is `alfred`, so the bot's command is `run`.
    assert "entrypoint" not in services["bot"]
    assert services["bot"]["command"] == ["run"]
    assert services["migrate"]["command"] == ["migrate"]
    worker = services["worker"]
    assert [*worker["entrypoint"], *worker["command"]] == ["arq", "jobs.worker.WorkerSettings"]
    import jobs.worker

    assert callable(jobs.worker.build_worker_settings)  # the module arq is pointed at


def test_alfred_services_point_at_the_compose_servers(services: dict[str, Any]) -> None:
    for name in ("bot", "worker", "migrate"):
        env = services[name]["environment"]
        uri = env["MONGODB_URI"]
        assert uri.startswith("mongodb://") and "@mongodb:27017/" in uri
        assert "directConnection=true" in uri
        assert env["REDIS_URL"] == "redis://redis:6379/0"
        assert env["ALFRED_DATA_DIR"] == "/data"
    # The Atlas Local credentials are the ones in the URI.
    mongo_env = services["mongodb"]["environment"]
    user = mongo_env["MONGODB_INITDB_ROOT_USERNAME"]
    password = mongo_env["MONGODB_INITDB_ROOT_PASSWORD"]
    assert f"mongodb://{user}:{password}@" in services["bot"]["environment"]["MONGODB_URI"]
    # The separate worker does the background work.
    assert services["bot"]["environment"]["RUN_WORKER"] == "external"


def test_every_environment_key_is_a_setting_or_known(services: dict[str, Any]) -> None:
    from runtime.settings import Settings

    known = {name.upper() for name in Settings.model_fields} | {"RUN_WORKER"}
    for name in ("bot", "worker", "migrate"):
        unknown = set(services[name]["environment"]) - known
        assert not unknown, f"{name}: {unknown} are not Alfred settings"


def test_metrics_reach_the_compose_network_only(services: dict[str, Any]) -> None:
    """Alfred's default listen address is loopback; in a container that would hide the
    metrics from Prometheus in the next one, so the file opens them to its own network,
    and publishes nothing of port 9100 on the host."""
    for name in ("bot", "worker"):
        assert services[name]["environment"]["METRICS_LISTEN"] == "0.0.0.0"
        assert "9100" in [str(port) for port in services[name]["expose"]]
        published = [str(port) for port in services[name].get("ports", [])]
        assert not any("9100" in port for port in published), (name, published)
    # With METRICS_TOKEN set in .env, the bot's own health check sends it.
    bot_check = " ".join(services["bot"]["healthcheck"]["test"])
    assert "METRICS_TOKEN" in bot_check and "Bearer" in bot_check


def test_start_order(services: dict[str, Any]) -> None:
    for name in ("bot", "worker"):
        _healthy(services[name], "mongodb")
        _healthy(services[name], "redis")
        assert services[name]["depends_on"]["migrate"]["condition"] == (
            "service_completed_successfully"
        )
    _healthy(services["migrate"], "mongodb")
    assert services["migrate"]["restart"] == "no"


def test_health_checks(services: dict[str, Any]) -> None:
    for name in ("mongodb", "redis", "bot", "worker"):
        check = services[name]["healthcheck"]
        assert check["test"][0] in ("CMD", "CMD-SHELL"), name
        for key in ("interval", "timeout"):
            assert re.fullmatch(r"\d+s", check[key]), (name, key)
        assert int(check["retries"]) >= 3
    assert services["redis"]["healthcheck"]["test"] == ["CMD", "redis-cli", "ping"]
    assert services["mongodb"]["healthcheck"]["test"][1:] == [
        "/usr/local/bin/runner",
        "healthcheck",
    ]
    assert services["worker"]["healthcheck"]["test"][1:] == [
        "arq",
        "--check",
        "jobs.worker.WorkerSettings",
    ]
    # The bot's check is liveness (/healthz), never readiness: a database outage must
    # not get every replica restarted.
    bot_check = " ".join(services["bot"]["healthcheck"]["test"])
    assert "/healthz" in bot_check and "/readyz" not in bot_check
    assert services["migrate"]["healthcheck"] == {"disable": True}


def test_volumes_are_declared(compose: dict[str, Any], services: dict[str, Any]) -> None:
    declared = set(compose["volumes"])
    for service in services.values():
        for mount in service.get("volumes", []):
            source = mount.split(":", 1)[0]
            assert source in declared, source


def test_database_port_is_not_published_to_the_network(services: dict[str, Any]) -> None:
    for port in services["mongodb"].get("ports", []):
        assert str(port).startswith("127.0.0.1:")


def test_dockerfile_matches(services: dict[str, Any]) -> None:
    text = DOCKERFILE.read_text(encoding="utf-8")
    assert re.search(r"^FROM python:3\.11-slim", text, re.M)
    assert re.search(r"^USER alfred$", text, re.M)  # not root
    assert 'ENTRYPOINT ["alfred"]' in text and 'CMD ["run"]' in text
    assert "HEALTHCHECK" in text and "/healthz" in text
    for package in ("bot", "memory", "integrations", "jobs", "migrations"):
        assert f"COPY {package} ./{package}" in text
    ignore = (DOCKERFILE.parent / "Dockerfile.dockerignore").read_text(encoding="utf-8")
    assert ".env" in ignore.split() and ".venv" in ignore.split()
