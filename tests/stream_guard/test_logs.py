from __future__ import annotations

import io
import logging
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from stream_guard.errors import HallucinationBlocked
from stream_guard.logs import JsonFormatter, configure_logging
from stream_guard.wire.report import CheckResult, HallucinationReport, Risk


@pytest.fixture
def captured():
    stream = io.StringIO()
    logger = logging.getLogger("stream_guard")
    saved = (list(logger.handlers), logger.level, logger.propagate)
    configure_logging(logging.WARNING, stream=stream)
    yield stream
    logger.handlers[:], logger.level, logger.propagate = saved[0], saved[1], saved[2]


def lines(stream: io.StringIO) -> list[dict]:
    return [orjson.loads(line) for line in stream.getvalue().splitlines() if line]


def test_child_logger_records_become_one_json_object_per_line(captured):
    logging.getLogger("stream_guard.detector").warning("hallucination %s", "flagged", extra={"report": {"risk": "high"}})
    (record,) = lines(captured)
    assert record["level"] == "WARNING"
    assert record["logger"] == "stream_guard.detector"
    assert record["msg"] == "hallucination flagged"
    assert record["report"] == {"risk": "high"}
    assert record["time"].endswith("+00:00")


def test_level_filters_below_threshold(captured):
    logging.getLogger("stream_guard.pipeline").info("routine")
    assert lines(captured) == []


def test_reconfiguring_replaces_instead_of_duplicating(captured):
    second = io.StringIO()
    configure_logging(logging.INFO, stream=second)
    logging.getLogger("stream_guard").info("once")
    assert captured.getvalue() == ""
    assert len(lines(second)) == 1


def test_unserialisable_extras_and_exceptions_do_not_break_logging(captured):
    try:
        raise ValueError("boom")
    except ValueError:
        logging.getLogger("stream_guard").exception("failed", extra={"path": Path("/tmp/x"), "risk": Risk.HIGH})
    (record,) = lines(captured)
    assert record["path"] == "/tmp/x"
    assert record["risk"] == "high"
    assert "ValueError: boom" in record["exc"]


def test_formatter_is_usable_on_its_own():
    record = logging.LogRecord("x", logging.ERROR, __file__, 1, "hi", (), None)
    assert orjson.loads(JsonFormatter().format(record))["msg"] == "hi"


def _report() -> HallucinationReport:
    return HallucinationReport(
        question="Cost?",
        answer="The Pro plan costs $10 per month.",
        checks={"contradiction": CheckResult("contradiction", 1.0, True)},
        hallucinated_statements=(),
        verified_statements=(),
        risk=Risk.CRITICAL,
        flagged=True,
        hallucination_score=0.92,
        hallucination_type="factual_error",
        triggered=("contradiction",),
        latency_ms=3.0,
    )


def test_hallucination_blocked_carries_the_full_report_dict():
    report = _report()
    with pytest.raises(HallucinationBlocked) as caught:
        raise HallucinationBlocked(report)
    assert caught.value.report == report.to_dict()
    assert caught.value.risk == "critical"
    assert "risk=critical" in str(caught.value) and "contradiction" in str(caught.value)
    orjson.dumps(caught.value.report)  # JSON-ready for a monitoring layer


def test_hallucination_blocked_accepts_a_plain_mapping_and_rejects_junk():
    assert HallucinationBlocked({"risk": "high"}).report == {"risk": "high"}
    with pytest.raises(TypeError):
        HallucinationBlocked(42)


def test_a_program_that_never_configures_logging_gets_no_log_lines_on_stderr() -> None:
    # Python's last-resort handler prints WARNING records of loggers with no handler; a flagged answer in a
    # program that only uses the library must not write "hallucination flagged" to its stderr.
    program = ("from stream_guard import HallucinationDetector\n"
               "report = HallucinationDetector().inspect('How long?', ['Refunds within 14 days.'],"
               " 'Refunds within 30 days.')\n"
               "assert report.flagged\n")
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
