"""The key tables are generated from the model, and the docs name no key the model does not have."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Any, Mapping

import pytest

from stream_guard.config.detector import DetectorConfig
from stream_guard.config.docs import SECTIONS, main
from stream_guard.config.monitor import MonitorSettings, TenantSettings
from stream_guard.config.schema import specs
from stream_guard.config.stream import StreamSettings

REPO = Path(__file__).resolve().parents[3]
DOCS = [REPO / "README.md", REPO / "deploy" / "OPERATIONS.md", *sorted((REPO / "docs").glob("*.md"))]


def test_every_key_of_the_model_is_documented_in_the_generated_tables() -> None:
    assert main(["--check"]) == 0, "docs/CONFIG.md is stale: run python -m stream_guard.config"
    text = (REPO / "docs" / "CONFIG.md").read_text()
    for section in SECTIONS:
        for spec in specs(section):
            assert spec.doc, f"{section.__name__}.{spec.name} has no Doc(...)"
            if spec.section is None and not (section is TenantSettings and spec.name == "name"):
                assert f"| `{spec.key}` |" in text, spec.key


def _unknown(table: Mapping[str, Any], section: type[Any], path: str) -> list[str]:
    fields = {spec.key: spec for spec in specs(section)}
    if section is DetectorConfig:
        fields = {**fields, "preset": None}  # type: ignore[dict-item]
    out = []
    for key, value in table.items():
        spec = fields.get(key)
        if key not in fields:
            out.append(f"{path}.{key}")
        elif spec is not None and spec.section is not None and isinstance(value, Mapping):
            out += _unknown(value, spec.section, f"{path}.{key}")
        elif section is MonitorSettings and key == "tenants" and isinstance(value, Mapping):
            for name, tenant in value.items():
                out += _unknown(tenant, TenantSettings, f"{path}.tenants.{name}")
    return out


def toml_blocks() -> list[tuple[str, dict[str, Any]]]:
    blocks = []
    for doc in DOCS:
        for block in re.findall(r"```toml\n(.*?)```", doc.read_text(), re.S):
            blocks.append((doc.name, tomllib.loads(block)))
    return blocks


@pytest.mark.parametrize("where, doc", toml_blocks())
def test_every_key_in_the_docs_exists(where: str, doc: dict[str, Any]) -> None:
    sections = {"detector": DetectorConfig, "stream": StreamSettings, "monitor": MonitorSettings}
    unknown = [key for name, table in doc.items() if name in sections
               for key in _unknown(table, sections[name], name)]
    unknown += [name for name in doc if name not in sections]
    assert unknown == [], f"{where}: {unknown}"


def test_keys_named_inline_in_the_docs_exist() -> None:
    """`[stream] batch_max`-style mentions and `[detector.limits]` table names."""
    names = {f"[{name}]" for name in ("detector", "detector.limits", "stream", "stream.topics", "monitor",
                                      "monitor.rules", "monitor.tenants", "monitor.tenants.<name>")}
    for doc in DOCS:
        for table in re.findall(r"`(\[[a-z_.<>]+\])`", doc.read_text()):
            if table.startswith(("[detector", "[stream", "[monitor")):
                assert table in names or table.startswith("[monitor.tenants."), f"{doc.name}: {table}"
