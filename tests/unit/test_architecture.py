"""The shape of the code: the domain imports no adapter, and public surfaces are explicit."""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FORBIDDEN_IN_DOMAIN = ("integrations", "bot", "jobs", "migrations", "tests")
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


def _run_tool(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", *args], cwd=ROOT, capture_output=True, text=True, timeout=600
    )


def test_ruff_is_clean() -> None:
    result = _run_tool("ruff", "check", ".")
    assert result.returncode == 0, result.stdout + result.stderr


def test_mypy_is_clean() -> None:
    """Strict on ``memory/`` (pyproject's override), checked on every package."""
    result = _run_tool("mypy")
    assert result.returncode == 0, result.stdout + result.stderr
