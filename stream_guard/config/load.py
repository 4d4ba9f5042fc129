"""The one way configuration is loaded: defaults < a TOML file < the environment < command-line flags (for
`[detector]`, a preset first: the flag's, else `STREAM_GUARD_PRESET`; a file's own `preset` key restarts from
that one). Every section is checked as it is built; an error names the key path, the value and the reason.

Environment variables mirror the file: `[detector]` keys as `STREAM_GUARD_<KEY>`, `[detector.limits]` as
`STREAM_GUARD_LIMITS_<KEY>`, `[stream]` as `STREAM_GUARD_<KEY>`, `[stream.topics]` as `STREAM_GUARD_TOPIC_<KEY>`,
`[monitor]` scalars as `STREAM_GUARD_MONITOR_<KEY>`, `[serve]` as `STREAM_GUARD_SERVE_<KEY>`, `[alerts]` as
`STREAM_GUARD_ALERTS_<KEY>`. Any other `STREAM_GUARD_*` variable, unless it is one of the
project's OTHER_VARIABLES, is refused by name: a misspelt one would otherwise be ignored.
"""

from __future__ import annotations

import tomllib
import warnings
from functools import cache
from pathlib import Path
from typing import Any, Mapping

import msgspec

from stream_guard.config.alerts import AlertSettings
from stream_guard.config.detector import DetectorConfig, Limits, preset
from stream_guard.config.monitor import MonitorSettings, TenantSettings
from stream_guard.config.schema import ConfigError, Spec, build, check_relations, specs
from stream_guard.config.score_model import load_model
from stream_guard.config.serve import ServeSettings
from stream_guard.config.stream import StreamSettings, TopicNames

ENV_PREFIX = "STREAM_GUARD_"
# The project's `STREAM_GUARD_*` variables that are not settings.
OTHER_VARIABLES = frozenset({
    "STREAM_GUARD_DATA",              # the labelled data sets (bench/)
    "STREAM_GUARD_TANSU_BIN",         # the embedded broker's binary (agents/embedded_broker.py)
    "STREAM_GUARD_TEST_BROKER",       # `embedded`: the tests skip Docker (tests/conftest.py)
    "STREAM_GUARD_REQUIRE_BROWSER",   # CI: a missing chromium fails the page tests
    "STREAM_GUARD_CHROMIUM",          # the page tests' chromium binary
    "STREAM_GUARD_WORKER_NAME",       # a worker's name in metrics and dead letters (agents/app.py)
    "STREAM_GUARD_FORK_SERVER_MODEL", # set by the pool while its fork server starts (engine/pool.py)
})
SECTIONS = ("detector", "stream", "monitor", "serve", "alerts")

# Where the environment sets each section's keys: (file path of the table, variable prefix, its section). The
# monitor's rules and tenants are tables of the file only.
ENVIRONMENT: tuple[tuple[tuple[str, ...], str, type[Any]], ...] = (
    (("detector",), "STREAM_GUARD_", DetectorConfig),
    (("detector", "limits"), "STREAM_GUARD_LIMITS_", Limits),
    (("stream",), "STREAM_GUARD_", StreamSettings),
    (("stream", "topics"), "STREAM_GUARD_TOPIC_", TopicNames),
    (("monitor",), "STREAM_GUARD_MONITOR_", MonitorSettings),
    (("serve",), "STREAM_GUARD_SERVE_", ServeSettings),
    (("alerts",), "STREAM_GUARD_ALERTS_", AlertSettings),
)
PRESET_VARIABLE = "STREAM_GUARD_PRESET"

# Keys renamed, per table: old key -> new key. The old spelling keeps working in a file and in the environment
# (its variable too) with a DeprecatedSetting warning naming the new one; both spellings in one layer is an error.
RENAMED: dict[tuple[str, ...], dict[str, str]] = {
    ("alerts",): {"to": "webhook"},  # the webhook's URL; `to` read as a range's end beside `--from/--to`
}


class DeprecatedSetting(FutureWarning):
    """An old spelling of a configuration key or variable: it still works; the message names the new one.
    (FutureWarning: shown by default, to the user who wrote the setting.)"""


class Config(msgspec.Struct, frozen=True):
    """The whole configuration: `[detector]`, `[stream]`, `[monitor]`, `[serve]` and `[alerts]` of one file, with
    the environment's and the command line's values over them."""

    detector: DetectorConfig = msgspec.field(default_factory=DetectorConfig)
    stream: StreamSettings = msgspec.field(default_factory=StreamSettings)
    monitor: MonitorSettings = msgspec.field(default_factory=MonitorSettings)
    serve: ServeSettings = msgspec.field(default_factory=ServeSettings)
    alerts: AlertSettings = msgspec.field(default_factory=AlertSettings)

    def __post_init__(self) -> None:
        check_relations(self)  # the rules across sections (relations.py)


def load(file: str | Path | Mapping[str, Any] | None = None, env: Mapping[str, str] | None = None, *,
         preset: str | None = None, detector: Mapping[str, Any] | None = None,
         stream: Mapping[str, Any] | None = None, serve: Mapping[str, Any] | None = None,
         alerts: Mapping[str, Any] | None = None) -> Config:
    """The configuration from a TOML file (a path, or a parsed document), the environment and command-line flags
    (`detector`, `stream`, `serve`, `alerts`: key -> typed value; None values are left out), in that order of
    precedence over the defaults. Raises ConfigError naming the first value that cannot work."""
    env = env or {}
    check_environment(env)
    doc, folder = read(file)
    doc = renamed(doc)
    from_env = environment(env)
    return Config(
        detector=_detector(detector_table(doc), folder, from_env["detector"], preset, detector),
        stream=build(StreamSettings, [_table(doc, "stream"), from_env["stream"], _given(stream)], "stream."),
        monitor=_monitor(_table(doc, "monitor"), from_env["monitor"]),
        serve=build(ServeSettings, [_table(doc, "serve"), from_env["serve"], _given(serve)], "serve."),
        alerts=build(AlertSettings, [_table(doc, "alerts"), from_env["alerts"], _given(alerts)], "alerts."),
    )


def load_config(path: str | Path, base: DetectorConfig | None = None) -> DetectorConfig:
    """`[detector]` (or a file's top-level keys) of a TOML file, over `base` (default: the defaults)."""
    doc, folder = read(path)
    return _detector(detector_table(doc), folder, {}, None, None, base=base)


def build_config(config_path: str | Path | None, preset_name: str | None, ner: str | None,
                 env: Mapping[str, str] | None = None) -> DetectorConfig:
    """The detector configuration a command runs with: `load`'s, with `--ner`, no drift file and no log of
    flagged answers (the commands keep drift history themselves: --drift-db, the worker's table)."""
    return load(config_path, env, preset=preset_name, detector=command_flags(ner)).detector


def command_flags(ner: str | None) -> dict[str, Any]:
    """What every command sets in `[detector]` over the file and the environment."""
    return {"db_path": ":memory:", "log_flagged": False, **({"ner": ner} if ner else {})}


# --- the file -------------------------------------------------------------------------------------------------


def read(file: str | Path | Mapping[str, Any] | None) -> tuple[Mapping[str, Any], Path | None]:
    """A TOML document and the folder relative paths in it are read from (None for a parsed document)."""
    if file is None:
        return {}, None
    if isinstance(file, Mapping):
        return file, None
    try:
        with open(file, "rb") as fh:
            return tomllib.load(fh), Path(file).parent
    except OSError as exc:
        raise ConfigError(str(file), f"cannot read the configuration file: {exc.strerror or exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(str(file), f"not a TOML file: {exc}") from None


def detector_table(doc: Mapping[str, Any]) -> Mapping[str, Any]:
    """`[detector]`, or, in a file without one, its top-level keys (the seed library's flat files)."""
    if "detector" in doc:
        return _table(doc, "detector")
    return {k: v for k, v in doc.items() if k not in SECTIONS}


def renamed(doc: Mapping[str, Any]) -> Mapping[str, Any]:
    """The document with each renamed key (RENAMED) under its new name, warning for each old one used."""
    out = dict(doc)
    for path, renames in RENAMED.items():
        table = out.get(path[0])
        if not isinstance(table, Mapping) or len(path) != 1:  # a non-table is refused when its section is built
            continue
        table = dict(table)
        for old, new in renames.items():
            if old in table:
                where = ".".join(path)
                if new in table:
                    raise ConfigError(f"{where}.{old}", f"the old name of {where}.{new}, and both are given: "
                                                        f"keep {where}.{new}", table[old])
                warnings.warn(f"[{where}] {old} is deprecated: use [{where}] {new}", DeprecatedSetting, stacklevel=3)
                table[new] = table.pop(old)
        out[path[0]] = table
    return out


def _table(doc: Mapping[str, Any], name: str) -> Mapping[str, Any]:
    table = doc.get(name, {})
    if not isinstance(table, Mapping):
        raise ConfigError(name, f"[{name}] must be a table, got {type(table).__name__}", table)
    return table


def _given(flags: Mapping[str, Any] | None) -> dict[str, Any]:
    return {k: v for k, v in (flags or {}).items() if v is not None}


# --- the sections ---------------------------------------------------------------------------------------------


def _detector(table: Mapping[str, Any], folder: Path | None, from_env: Mapping[str, Any], preset_name: str | None,
              flags: Mapping[str, Any] | None, base: DetectorConfig | None = None) -> DetectorConfig:
    from_env = dict(from_env)
    named = preset_name or from_env.pop("preset", None)
    from_env.pop("preset", None)
    start = preset(named) if named else (base or DetectorConfig())
    file = dict(table)
    if "preset" in file:  # a file's own preset restarts from it, as it always has
        start = preset(file.pop("preset"))
    if file.get("score_model_path"):
        file["score_model_path"] = _model_path(file["score_model_path"], folder or Path("."))
    if from_env.get("score_model_path"):  # checked now too, relative to the working directory
        from_env["score_model_path"] = _model_path(from_env["score_model_path"], Path("."))
    return build(DetectorConfig, [file, from_env, _given(flags)], "", base=start)


def _model_path(value: Any, folder: Path) -> str:
    """A config file's score_model_path, relative to that file's folder, checked to hold a score model now rather
    than when the first event is judged."""
    if not isinstance(value, str):
        raise ConfigError("score_model_path", f"must be a path (text), got {value!r}", value)
    resolved = (folder / Path(value).expanduser()).resolve()
    try:
        load_model(str(resolved))
    except FileNotFoundError:
        raise ConfigError("score_model_path", f"{resolved}: no such file (a relative path is read from the config "
                                              "file's folder)", value) from None
    except (OSError, ValueError, TypeError) as exc:
        raise ConfigError("score_model_path", f"{resolved}: not a score model: {exc}", value) from None
    return str(resolved)


def _monitor(table: Mapping[str, Any], from_env: Mapping[str, Any]) -> MonitorSettings:
    """`[monitor]`; each tenant's rules start from `[monitor.rules]`."""
    table = dict(table)
    tenants = table.pop("tenants", None)
    settings = build(MonitorSettings, [table, from_env], "monitor.")
    if tenants is None:
        return settings
    if not isinstance(tenants, Mapping):
        raise ConfigError("monitor.tenants", f"expected a table of tenants, got {type(tenants).__name__}", tenants)
    built = {str(name): _tenant(str(name), spec, settings) for name, spec in tenants.items()}
    return msgspec.structs.replace(settings, tenants=built)


def _tenant(name: str, table: Any, monitor: MonitorSettings) -> TenantSettings:
    where = f"monitor.tenants.{name}"
    if not isinstance(table, Mapping):
        raise ConfigError(where, f"expected a table, got {type(table).__name__}", table)
    if "name" in table:
        raise ConfigError(f"{where}.name", "unknown key(s): name (the table's name is the tenant's)")
    try:
        return build(TenantSettings, [table], f"{where}.", base=TenantSettings(name=name, rules=monitor.rules))
    except ConfigError as exc:
        if exc.key.startswith(where):
            raise
        raise ConfigError(f"{where}.{exc.key}", exc.reason, exc.value) from None


# --- the environment ------------------------------------------------------------------------------------------


@cache
def variables() -> dict[str, tuple[tuple[str, ...], Spec | None]]:
    """Every settings variable: name -> (the table it sets, the key's spec; None for STREAM_GUARD_PRESET)."""
    out: dict[str, tuple[tuple[str, ...], Spec | None]] = {PRESET_VARIABLE: (("detector",), None)}
    for path, prefix, section in ENVIRONMENT:
        for spec in specs(section):
            if spec.section is not None or spec.type is dict or getattr(spec.type, "__origin__", None) is dict:
                continue  # a table: its own prefix, or the file only
            name = prefix + spec.key.upper()
            if name in out:  # pragma: no cover - a new key that shadows another section's variable
                raise RuntimeError(f"{name} would set both {'.'.join(out[name][0])} and {'.'.join(path)}")
            out[name] = (path, spec)
    for old, (new, _) in old_variables().items():
        out[old] = out[new]
    return out


@cache
def old_variables() -> dict[str, tuple[str, str]]:
    """The variables of renamed keys (RENAMED): old name -> (new name, where the message sends the reader)."""
    prefixes = {path: prefix for path, prefix, _ in ENVIRONMENT}
    return {prefixes[path] + old.upper(): (prefixes[path] + new.upper(), f"{'.'.join(path)}.{new}")
            for path, renames in RENAMED.items() for old, new in renames.items()}


def environment(env: Mapping[str, str]) -> dict[str, dict[str, Any]]:
    """The settings among the `STREAM_GUARD_*` variables, as a table per section (nested tables inside)."""
    out: dict[str, dict[str, Any]] = {name: {} for name in SECTIONS}
    known = variables()
    for name, value in env.items():
        if name not in known:
            continue
        if name in old_variables():
            new, key = old_variables()[name]
            if new in env:
                raise ConfigError(name, f"the old name of {new}, and both are set: keep {new}", value)
            warnings.warn(f"{name} is deprecated: use {new} ({key})", DeprecatedSetting, stacklevel=3)
        path, spec = known[name]
        table = out[path[0]]
        for part in path[1:]:
            table = table.setdefault(part, {})
        if spec is None:
            table["preset"] = value
        else:
            # A list: comma-separated, blanks dropped (an empty variable is an empty list).
            table[spec.key] = [v for v in value.split(",") if v.strip()] if spec.env_list else value
    return out


def unknown_variables(env: Mapping[str, str]) -> list[str]:
    """`STREAM_GUARD_*` variables that name no setting and are not one of OTHER_VARIABLES: misspellings, most
    likely."""
    known = variables()
    return sorted(k for k in env if k.startswith(ENV_PREFIX) and k not in known and k not in OTHER_VARIABLES)


def check_environment(env: Mapping[str, str]) -> None:
    """Refuse unknown `STREAM_GUARD_*` variables by name, as a config file's unknown key is."""
    unknown = unknown_variables(env)
    if unknown:
        raise ConfigError(unknown[0], f"unknown environment variable(s): {', '.join(unknown)}; settings are "
                                      "STREAM_GUARD_<SETTING>, STREAM_GUARD_TOPIC_<TOPIC>, STREAM_GUARD_LIMITS_<LIMIT>, "
                                      "STREAM_GUARD_MONITOR_<SETTING>, STREAM_GUARD_SERVE_<SETTING> and "
                                      "STREAM_GUARD_ALERTS_<SETTING> (docs/CONFIG.md)")
