"""The built wheel, as a user installs it: one top-level import name, coexisting with openai-agents."""

from __future__ import annotations

import subprocess
import sys
import venv
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "-v", "--no-deps", "--wheel-dir", str(out), str(REPO)],
                           check=True, capture_output=True, text=True, timeout=600)
    # No packaging warning (setuptools' "Package would be ignored", package-data naming files that are absent).
    warnings = [line for line in (built.stdout + built.stderr).splitlines() if "Warning" in line]
    assert not warnings, "\n".join(warnings)
    return next(out.glob("stream_guard-*.whl"))


def test_the_wheel_adds_one_top_level_package_and_ships_the_streaming_edge_inside_it(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    top = {name.split("/")[0] for name in names if not name.split("/")[0].endswith(".dist-info")}
    assert top == {"stream_guard"}
    assert "stream_guard/agents/app.py" in names and "stream_guard/py.typed" in names
    # The samples a fresh install runs on: the demo and the labelled file calibrate and the benchmarks take.
    assert {"stream_guard/samples/demo.jsonl", "stream_guard/samples/labelled.jsonl"} <= set(names)
    assert any(name.endswith(".dist-info/licenses/LICENSE") or name.endswith(".dist-info/LICENSE") for name in names)


@pytest.mark.long  # a fresh venv and openai-agents' dependencies: about two minutes of CPU
def test_installed_beside_openai_agents_both_import(wheel: Path, tmp_path: Path) -> None:
    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=True)
    python = env_dir / "bin" / "python"
    # Ours without its dependencies: the question is which files land where, not whether Faust installs.
    subprocess.run([str(python), "-m", "pip", "install", "--quiet", "--no-deps", str(wheel)], check=True,
                   capture_output=True, timeout=300)
    subprocess.run([str(python), "-m", "pip", "install", "--quiet", "openai-agents"], check=True,
                   capture_output=True, timeout=600)
    probe = ("import agents, stream_guard.agents, stream_guard; "
             "assert hasattr(agents, 'Agent') and hasattr(agents, 'Runner'), agents.__file__; "
             "assert 'stream_guard' in stream_guard.agents.__file__; "
             "print(stream_guard.__version__)")
    # From elsewhere than the repository, whose source folders would shadow the installed packages.
    done = subprocess.run([str(python), "-c", probe], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    check = subprocess.run([str(python), "-m", "pip", "check"], capture_output=True, text=True, timeout=120)
    # pip check would also list our own missing dependencies (installed with --no-deps); only clashes matter.
    assert "openai-agents" not in check.stdout, check.stdout
