"""The image's install steps, rehearsed without a Docker engine.

No engine runs on the test machines, so ``docker build`` cannot. What can go wrong in the
build that the editable install of the test suite would hide is the packaging: a package
the Dockerfile does not copy, a data file (the demo scenario, the migrations) missing from
the wheel, an import that only works from the source tree. This test does what the
build stage does — copy what its ``COPY`` lines name, honouring the ``.dockerignore``,
and ``pip install .`` (here: build the wheel offline and unpack it into a folder) — then
runs ``alfred demo`` from that folder, in an empty working directory, and checks the code
really came from the installed copy.
"""

from __future__ import annotations

import fnmatch
import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCKERFILE = ROOT / "docker" / "Dockerfile"
DOCKERIGNORE = ROOT / "docker" / "Dockerfile.dockerignore"


def _stages(text: str) -> list[list[str]]:
    """The Dockerfile's instructions, stage by stage (continuation lines joined)."""
    joined = re.sub(r"\\\n\s*", " ", text)
    stages: list[list[str]] = []
    for line in joined.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        if line.upper().startswith("FROM "):
            stages.append([])
        stages[-1].append(line)
    return stages


def _copied(stage: list[str]) -> list[str]:
    """What the stage's ``COPY`` lines take from the build context."""
    sources: list[str] = []
    for line in stage:
        words = line.split()
        if words[0].upper() == "COPY" and not any(w.startswith("--from") for w in words):
            sources.extend(words[1:-1])
    return sources


def _ignored(relative: str, patterns: list[str]) -> bool:
    for pattern in patterns:
        bare = pattern.removeprefix("**/")
        if fnmatch.fnmatch(relative, pattern) or any(
            fnmatch.fnmatch(part, bare) for part in relative.split("/")
        ):
            return True
    return False


def _build_context(target: Path, sources: list[str]) -> None:
    patterns = [
        line.strip()
        for line in DOCKERIGNORE.read_text(encoding="utf-8").splitlines()
        if line.strip() and not line.startswith("#")
    ]
    for source in sources:
        origin = ROOT / source
        assert origin.exists(), f"the Dockerfile copies {source}, which does not exist"
        if origin.is_file():
            shutil.copy2(origin, target / source)
            continue
        for path in origin.rglob("*"):
            relative = path.relative_to(ROOT).as_posix()
            if path.is_file() and not _ignored(relative, patterns):
                (target / relative).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(path, target / relative)


def _run(*args: str, cwd: Path, env: dict[str, str] | None = None) -> str:
    done = subprocess.run(
        list(args), cwd=cwd, env=env, capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, f"{args[:4]} failed:\n{done.stdout}\n{done.stderr}"
    return done.stdout


@pytest.mark.timeout(300)
def test_what_the_image_installs_runs_alfred(tmp_path: Path) -> None:
    build, runtime = _stages(DOCKERFILE.read_text(encoding="utf-8"))
    sources = _copied(build)
    # every package the project declares is copied into the build
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    packages = config["tool"]["setuptools"]["packages"]["find"]["include"]
    for package in (p.rstrip("*") for p in packages):
        assert package in sources, f"the Dockerfile does not copy the {package} package"
    # the runtime stage takes the virtualenv only, and starts `alfred run`
    assert _copied(runtime) == []
    assert 'ENTRYPOINT ["alfred"]' in runtime and 'CMD ["run"]' in runtime

    context = tmp_path / "src"
    context.mkdir()
    _build_context(context, sources)
    assert not (context / "tests").exists() and not list(context.rglob("__pycache__"))

    # `pip install .`, offline: the build tools come from the test environment
    wheels = tmp_path / "wheels"
    pip = (sys.executable, "-m", "pip")
    quiet = ("--no-deps", "--no-index", "--no-build-isolation", "--quiet")
    _run(*pip, "wheel", *quiet, "--wheel-dir", str(wheels), str(context), cwd=tmp_path)
    (wheel,) = wheels.glob("alfred_memory_bot-*.whl")
    site = tmp_path / "site"
    _run(*pip, "install", *quiet, "--target", str(site), str(wheel), cwd=tmp_path)
    assert (site / "bot" / "replay" / "scenarios" / "demo.jsonl").is_file()

    # `alfred demo` from the installed copy, in an empty directory, as the image runs it
    home = tmp_path / "home"
    home.mkdir()
    launcher = (
        "import sys; sys.path.insert(0, sys.argv.pop(1)); "
        "import bot, memory, integrations, jobs, migrations; "
        "assert all(m.__file__.startswith(sys.path[0]) "
        "for m in (bot, memory, integrations, jobs, migrations)), 'not the installed copy'; "
        "from bot.cli.main import main; sys.argv[0] = 'alfred'; main()"
    )
    env = {**os.environ, "ALFRED_DATA_DIR": str(tmp_path / "data"), "PYTHONSAFEPATH": "1"}
    out = _run(sys.executable, "-c", launcher, str(site), "demo", cwd=home, env=env)
    assert "Try it yourself" in out, out
    # the demo answered from memory: a line the offline reply composer writes from a fact
    assert re.search(r"restaurant|anniversary", out), out
