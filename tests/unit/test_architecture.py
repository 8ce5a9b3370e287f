"""The shape of the code: the layers hold (import-linter's contracts in pyproject.toml),
the domain imports no adapter, modules stay small, and public surfaces are explicit."""

from __future__ import annotations

import ast
import importlib
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import grimp
import pytest

ROOT = Path(__file__).resolve().parents[2]
FORBIDDEN_IN_DOMAIN = ("integrations", "services", "runtime", "bot", "jobs", "migrations", "tests")
# What the domain may import besides the standard library and itself.
DOMAIN_THIRD_PARTY = {"pydantic", "numpy"}


def _imports(path: Path) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.append((node.lineno, node.module))
    return found


def test_memory_imports_no_adapter_or_entry_point() -> None:
    offences = []
    for path in sorted((ROOT / "memory").rglob("*.py")):
        for line, module in _imports(path):
            top = module.split(".")[0]
            if top in FORBIDDEN_IN_DOMAIN:
                offences.append(f"{path.relative_to(ROOT)}:{line} imports {module}")
            elif top not in sys.stdlib_module_names and top not in DOMAIN_THIRD_PARTY | {"memory"}:
                offences.append(f"{path.relative_to(ROOT)}:{line} imports third-party {module}")
    assert not offences, "\n".join(offences)


def test_boundary_check_catches_an_offence(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text("from runtime.settings import Settings\nimport os\n")
    assert [m for _, m in _imports(bad)] == ["runtime.settings", "os"]


PACKAGES_WITH_ALL = ["runtime.embedded"]


@pytest.mark.parametrize("name", PACKAGES_WITH_ALL)
def test_public_surface_is_explicit_and_sorted(name: str) -> None:
    module = importlib.import_module(name)
    exported = list(module.__all__)
    assert exported == sorted(exported)
    for symbol in exported:
        assert hasattr(module, symbol), f"{name}.__all__ names missing {symbol}"


#: How long one checking tool may run. mypy over every package, from a fresh clone (no
#: cache), takes about 70 s on a quiet 2-core machine and over 120 s beside the suite's
#: other workers, so these tests get this limit rather than pytest's usual 120 s.
TOOL_TIMEOUT_S = 600
TOOL = pytest.mark.timeout(TOOL_TIMEOUT_S + 30)


def _run_tool(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=TOOL_TIMEOUT_S,
    )


@TOOL
def test_ruff_is_clean() -> None:
    result = _run_tool("ruff", "check", ".")
    assert result.returncode == 0, result.stdout + result.stderr


@TOOL
def test_mypy_is_clean() -> None:
    """Strict on ``memory/`` (pyproject's override), checked on every package."""
    result = _run_tool("mypy")
    assert result.returncode == 0, result.stdout + result.stderr


PACKAGES = ("bot", "jobs", "migrations", "runtime", "services", "integrations", "memory")
#: Production modules stay readable in one sitting.
MAX_MODULE_LINES = 600
#: Entry points build everything through the composition root; nothing else may.
MAX_ROOT_IMPORTERS = 8
ENTRY_POINTS = ("bot", "jobs", "migrations")


def _lint_imports(cwd: Path) -> subprocess.CompletedProcess[str]:
    script = Path(sys.executable).with_name("lint-imports")
    return subprocess.run(
        [str(script), "--no-cache"],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=TOOL_TIMEOUT_S,
    )


@TOOL
def test_import_contracts_hold() -> None:
    """Layers (entry points > runtime > services | adapters > domain), services and the
    domain free of drivers and frameworks, no cycles inside any package."""
    result = _lint_imports(ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"][
        "importlinter"
    ]["contracts"]
    assert f"{len(contracts)} kept, 0 broken" in result.stdout, result.stdout


@TOOL
def test_import_contracts_catch_a_service_reaching_for_an_adapter(tmp_path: Path) -> None:
    """The contracts are not vacuous: a service importing MongoDB's adapter breaks them."""
    for name in PACKAGES:
        shutil.copytree(ROOT / name, tmp_path / name, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy2(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    membership = tmp_path / "services" / "membership.py"
    membership.write_text(
        membership.read_text(encoding="utf-8")
        + "\nfrom integrations.mongo.directory import MongoDirectory  # noqa: E402\n",
        encoding="utf-8",
    )
    result = _lint_imports(tmp_path)
    assert result.returncode != 0
    assert "services is not allowed to import integrations" in result.stdout, result.stdout


def test_no_production_module_is_over_the_limit() -> None:
    long = []
    for name in PACKAGES:
        for path in sorted((ROOT / name).rglob("*.py")):
            lines = len(path.read_text(encoding="utf-8").splitlines())
            if lines > MAX_MODULE_LINES:
                long.append(f"{path.relative_to(ROOT)}: {lines} lines")
    assert not long, "\n".join(long)


def test_only_entry_points_import_the_composition_root() -> None:
    graph = grimp.build_graph(*PACKAGES)
    importers = sorted(graph.find_modules_that_directly_import("runtime.container"))
    assert importers, "nothing builds the services: the graph is not being read"
    outside = [m for m in importers if m.split(".")[0] not in ENTRY_POINTS]
    assert not outside, f"only entry points may import the composition root: {outside}"
    assert len(importers) <= MAX_ROOT_IMPORTERS, importers


#: ``assert`` statements production code may keep, as {"path": count}, each with its
#: reason. An assert is skipped under ``python -O`` and raises a bare AssertionError
#: otherwise, so none may guard what the world (a database, a user, a race) can produce;
#: narrowing a type for mypy is done with a real check. None are kept today.
ALLOWED_ASSERTS: dict[str, int] = {}


def _asserts(path: Path) -> list[int]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    return [node.lineno for node in ast.walk(tree) if isinstance(node, ast.Assert)]


def test_no_production_module_asserts() -> None:
    found: dict[str, list[int]] = {}
    for name in PACKAGES:
        for path in sorted((ROOT / name).rglob("*.py")):
            lines = _asserts(path)
            if lines:
                found[str(path.relative_to(ROOT))] = lines
    unexpected = {
        where: lines for where, lines in found.items() if len(lines) != ALLOWED_ASSERTS.get(where)
    }
    assert not unexpected, f"assert in production code (use a real check): {unexpected}"


def test_the_assert_check_finds_one(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text('def f(doc: dict | None) -> dict:\n    assert doc is not None, "x"\n')
    assert _asserts(module) == [2]
