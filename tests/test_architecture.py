"""The package's layers, as import-linter reads the imports: the contracts hold, and the docs draw them as they are."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tools"))
import layers  # noqa: E402

pytestmark = pytest.mark.timeout(300)


def test_the_import_contracts_are_kept() -> None:
    """Layers point down (the edge and the commands import the core, never the reverse), the core imports no
    Kafka, Faust, HTTP server or streaming edge, and no package has an import cycle."""
    with layers.mirror() as root:
        result = layers.lint(root)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    assert "Contracts: 3 kept, 0 broken." in result.stdout


def test_the_layers_drawn_in_the_docs_are_the_imports_of_now() -> None:
    done = subprocess.run([sys.executable, str(REPO / "tools" / "layers.py"), "--check"], capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr


def test_every_package_directory_is_in_the_wheel() -> None:
    """pyproject.toml lists the packages by hand (the edge is mapped from agents/): a new sub-package must be
    listed, or the installed wheel would miss it."""
    import tomllib

    listed = set(tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    found = {".".join(p.parent.relative_to(REPO).parts) for p in (REPO / "stream_guard").rglob("__init__.py")}
    data_only = {"stream_guard.samples", "stream_guard.models"}  # listed so setuptools ships them without warning
    assert found | {"stream_guard.agents"} | data_only == listed


def test_every_name_of_the_public_api_imports() -> None:
    """`from stream_guard import ...` names resolve lazily (stream_guard/__init__.py): a moved module must not
    leave one behind."""
    import stream_guard

    missing = [name for name in stream_guard.__all__ if getattr(stream_guard, name, None) is None]
    assert missing == []
