import math

from stream_guard.ops.monitoring.progress import SourceProgress, horizon, merge


def test_the_horizon_is_the_slowest_busy_partition_and_idle_ones_hold_nothing_back():
    reports = {0: SourceProgress(500, False, 1), 1: SourceProgress(200, False, 1), 2: SourceProgress(None, True, 1)}
    assert horizon(reports, 3) == 200
    reports[1] = SourceProgress(200, True, 2)
    assert horizon(reports, 3) == 500
    assert horizon({p: SourceProgress(p, True, 1) for p in range(3)}, 3) == math.inf


def test_an_unknown_partition_or_a_busy_one_with_nothing_judged_holds_everything():
    assert horizon({0: SourceProgress(500, False, 1)}, 2) == -math.inf
    assert horizon({0: SourceProgress(500, False, 1), 1: SourceProgress(None, False, 1)}, 2) == -math.inf


def test_the_newest_report_of_a_partition_wins_and_records_round_trip():
    reports: dict[int, SourceProgress] = {}
    assert merge(reports, 0, SourceProgress(10, False, 5))
    assert not merge(reports, 0, SourceProgress(99, True, 4))  # an older report from a previous owner
    assert reports[0].at_ms == 10
    report = SourceProgress(7, True, 9)
    assert SourceProgress.from_record(report.to_record(3)) == report
    assert SourceProgress.from_record({"at_ms": "x", "idle": 1}) == SourceProgress(None, False, 0)
