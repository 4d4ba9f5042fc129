"""without_pydantic_v1: confection imported without `pydantic.v1`, and still telling v1 models (and catching their
errors) as the confection imported the normal way does; each case in a fresh interpreter."""

from __future__ import annotations

import subprocess
import sys

import pytest

pytest.importorskip("confection")
pytest.importorskip("pydantic.v1")

# Prints what confection's validation tells of a v1 model, a v2 model and a plain class, and the errors it catches.
TOLD = """
import sys
{import_confection}
import confection.validation as validation
print("pydantic.v1 imported:", "pydantic.v1" in sys.modules)
print("plain:", validation._is_pydantic_model(int))
import pydantic
class V2(pydantic.BaseModel):
    x: int
print("v2:", validation._is_pydantic_model(V2))
print("pydantic.v1 imported:", "pydantic.v1" in sys.modules)
from pydantic.v1 import BaseModel
class V1(BaseModel):
    x: int
print("v1:", validation._is_pydantic_model(V1))
print("errors:", [e.__module__ + "." + e.__name__ for e in validation._get_pydantic_validation_error()])
"""
HIDDEN = ("from stream_guard.text.pydantic_v1 import without_pydantic_v1\n"
          "with without_pydantic_v1():\n    import confection")


def told(import_confection: str) -> list[str]:
    done = subprocess.run([sys.executable, "-c", TOLD.format(import_confection=import_confection)],
                          capture_output=True, text=True, check=True, timeout=120)
    return done.stdout.splitlines()


def test_confection_imports_without_pydantic_v1_and_tells_models_as_the_normal_import_does() -> None:
    hidden, normal = told(HIDDEN), told("import confection")
    assert hidden[0] == "pydantic.v1 imported: False"
    assert normal[0] == "pydantic.v1 imported: True"
    assert hidden[1:3] == normal[1:3] == ["plain: False", "v2: True"]
    assert hidden[3] == "pydantic.v1 imported: False"  # telling a v2 model did not import v1
    assert hidden[4:] == normal[4:]
    assert hidden[4] == "v1: True" and "pydantic.v1.error_wrappers.ValidationError" in hidden[5]


def test_a_v1_schema_is_validated_and_its_errors_reported_as_with_the_normal_import() -> None:
    code = """
{import_confection}
from confection import Config, ConfigValidationError, registry
from pydantic.v1 import BaseModel, StrictInt
class Schema(BaseModel):
    x: StrictInt
    class Config:
        extra = "forbid"
print(registry.resolve(Config({{"x": 1}}), schema=Schema))
try:
    registry.resolve(Config({{"x": "one"}}), schema=Schema)
except ConfigValidationError as err:
    print("invalid:", [e["loc"] for e in err.errors])
"""
    outputs = [subprocess.run([sys.executable, "-c", code.format(import_confection=form)], capture_output=True,
                              text=True, check=True, timeout=120).stdout for form in (HIDDEN, "import confection")]
    assert outputs[0] == outputs[1]
    assert "invalid:" in outputs[0]


def test_another_confection_or_one_already_imported_is_imported_as_it_is(monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib

    from stream_guard.text import pydantic_v1

    importlib.import_module("confection.validation")

    with pydantic_v1.without_pydantic_v1():  # confection's validation already imported: nothing to keep out
        assert sys.modules.get("pydantic.v1", "absent") is not None
    monkeypatch.setattr(pydantic_v1, "CONFECTION_VERSIONS", ("0.9.",))
    monkeypatch.delitem(sys.modules, "pydantic.v1", raising=False)
    monkeypatch.delitem(sys.modules, "confection.validation")
    with pydantic_v1.without_pydantic_v1():  # a confection it was not checked on
        assert "pydantic.v1" not in sys.modules  # not stood in for: an import of it would run
