"""The ``alfred`` command line starts without loading the benchmarks.

Every ``alfred`` command registers the benches; importing them builds the composition
root, which cost about a second before ``alfred --help`` or ``alfred doctor`` printed a
thing. Checked in a fresh interpreter, since this test session has loaded them already.
"""

from __future__ import annotations

from tests.helpers.fresh_interpreter import probe

PROBE = """
import json, sys
from typer.testing import CliRunner
from bot.cli.main import app

heavy = lambda: sorted(
    m for m in sys.modules if m.startswith("bot.bench.") or m == "runtime.container"
)
runner = CliRunner()
top = runner.invoke(app, ["--help"])
seen = {"top": [top.exit_code, heavy(), top.output]}
one = runner.invoke(app, ["bench", "retrieval", "--help"])
seen["one"] = [one.exit_code, heavy(), one.output]
print(json.dumps(seen))
"""


def test_help_loads_no_bench_and_a_bench_loads_only_itself() -> None:
    seen = probe(PROBE)
    code, loaded, output = seen["top"]
    assert code == 0 and "bench" in output
    assert loaded == []
    code, loaded, output = seen["one"]
    assert code == 0 and "--compare" in output
    assert "bot.bench.retrieval" in loaded
    assert "bot.bench.faults" not in loaded and "bot.bench.telegram" not in loaded
