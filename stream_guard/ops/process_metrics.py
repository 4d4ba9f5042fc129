"""What every stream-guard service's /metrics starts from (the worker's, `serve`'s): a prometheus_client registry
of its own with `stream_guard_build_info` and prometheus_client's process, platform and GC collectors."""

from __future__ import annotations

import platform
from importlib import metadata

from prometheus_client import (CollectorRegistry, GCCollector, Info, PlatformCollector, ProcessCollector,
                               disable_created_metrics)

import stream_guard


def package_version(package: str) -> str:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return "unknown"


def service_registry(*packages: str) -> CollectorRegistry:
    """A service's registry: the build (stream-guard's version, Python's, and each of `packages`' as a label named
    after it) and the standard collectors. No `_created` series beside counters and histograms: Prometheus does not
    read them, and they double what a scrape carries (a process-wide switch: this process is a service)."""
    disable_created_metrics()
    registry = CollectorRegistry(auto_describe=True)
    Info("stream_guard_build", "The running build.", registry=registry).info({
        "version": stream_guard.__version__, "python": platform.python_version(),
        **{package.replace("-", "_"): package_version(package) for package in packages}})
    ProcessCollector(registry=registry)
    PlatformCollector(registry=registry)
    GCCollector(registry=registry)
    return registry
