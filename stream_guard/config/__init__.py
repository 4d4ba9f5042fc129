"""The configuration model: one frozen msgspec Struct per section, each key's rule beside it, the relations
between keys in one table, and one loader (file < environment < flags).

    schema.py      how a section is declared and checked; ConfigError
    relations.py   the rules between keys
    detector.py    [detector], [detector.limits], the presets
    stream.py      [stream], [stream.topics]
    monitor.py     [monitor], [monitor.rules], [monitor.tenants.<name>]
    serve.py       [serve] (the HTTP service)
    alerts.py      [alerts] (forwarding alerts to a webhook)
    score_model.py the score model file `calibrate` writes (and the shipped one)
    load.py        the loader and the environment's variables
    docs.py        the key tables of docs/CONFIG.md (`python -m stream_guard.config`)
"""

from stream_guard.config.alerts import AlertSettings
from stream_guard.config.detector import PRESETS, DetectorConfig, Limits, preset
from stream_guard.config.load import Config, build_config, check_environment, load, load_config
from stream_guard.config.monitor import MonitorSettings, RuleSettings, TenantSettings
from stream_guard.config.schema import ConfigError
from stream_guard.config.serve import ServeSettings
from stream_guard.config.stream import StreamSettings, TopicNames

__all__ = ["PRESETS", "AlertSettings", "Config", "ConfigError", "DetectorConfig", "Limits", "MonitorSettings", "RuleSettings",
           "ServeSettings", "StreamSettings", "TenantSettings", "TopicNames", "build_config", "check_environment", "load", "load_config",
           "preset"]
