import pytest

from stream_guard.config.monitor import MonitorSettings
from stream_guard.ops.monitoring.throttle import LoginThrottle


def test_a_client_is_refused_after_its_failures_until_the_oldest_is_a_window_old() -> None:
    throttle = LoginThrottle(max_failures=3, window_s=60)
    for t in (0.0, 10.0, 20.0):
        assert throttle.retry_after("a", t) is None
        throttle.failed("a", t)
    assert throttle.retry_after("a", 30.0) == pytest.approx(30.0)  # the failure at 0 s counts until 60 s
    assert throttle.retry_after("b", 30.0) is None  # another client is not affected
    assert throttle.retry_after("a", 60.0) is None  # the failure at 0 s has left the window
    throttle.failed("a", 61.0)
    assert throttle.retry_after("a", 62.0) == pytest.approx(8.0)  # 10, 20, 61: free again at 70 s


def test_a_success_forgets_the_failures_and_zero_turns_it_off() -> None:
    throttle = LoginThrottle(max_failures=2, window_s=60)
    throttle.failed("a", 0.0)
    throttle.succeeded("a")
    throttle.failed("a", 1.0)
    assert throttle.retry_after("a", 2.0) is None
    off = LoginThrottle(max_failures=0, window_s=60)
    for t in range(100):
        off.failed("a", float(t))
    assert off.retry_after("a", 100.0) is None


def test_a_flood_of_addresses_is_bounded() -> None:
    throttle = LoginThrottle(max_failures=5, window_s=60, max_clients=100)
    for n in range(10_000):
        throttle.failed(f"10.0.{n // 256}.{n % 256}", 0.0)
    assert len(throttle) == 100


def test_the_lockout_settings_are_validated() -> None:
    with pytest.raises(ValueError, match="login_max_failures"):
        MonitorSettings(login_max_failures=-1).validate()
    assert MonitorSettings().login_max_failures == 10 and MonitorSettings().login_lockout_minutes == 5.0
