"""Run a probe in a fresh Python interpreter and read back what it printed.

For what a test session cannot see itself: which modules an import or a command loads,
when this session has loaded them all long ago.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]


def probe(code: str, *, timeout: float = 120) -> Any:
    """The JSON value on the last line ``code`` prints, run from the repository's root;
    fails the test with the probe's stderr when it does not exit 0."""
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])
