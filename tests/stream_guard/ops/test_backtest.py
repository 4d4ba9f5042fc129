"""Backtest reports: the figures, the documented shape, the page in a real browser, partial runs."""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import orjson
import pytest

from stream_guard.engine.alerts import alerts_for_verdict
from stream_guard.ops.backtest import Backtest, latency_summary
from stream_guard.ops.sources import Decision, Position, UsageError, live_decisions, parse_bound
from stream_guard.config.detector import DetectorConfig
from stream_guard.engine.judging import Judged
from in_process import stream_guard
from labelled_data import DATA, labelled

REPO = Path(__file__).resolve().parents[3]
SCHEMA = json.loads((REPO / "schemas" / "backtest-report.schema.json").read_text())


def verdict(event_id: str, routing: str, score: float, *, flagged: bool | None = None, tenant: str = "acme",
            changed: bool | None = None, label: int | None = None, risk: str = "low", latency: float = 1.0,
            task: str | None = None) -> Judged:
    changed = routing != "accept" if changed is None else changed
    body: dict[str, Any] = {
        "event_id": event_id, "tenant": tenant, "question_hash": "q" * 24, "routing": routing,
        "hallucination_score": score, "flagged": score >= 0.4 if flagged is None else flagged, "risk": risk,
        "original_answer": "orig", "delivered_answer": "healed" if changed else "orig", "latency_ms": latency,
        "triggered": [], "checks": {}}
    if label is not None:
        body["label"] = label
    return Judged(event_id=event_id, routing=routing, verdict=orjson.dumps(body),
                  alerts=tuple(alerts_for_verdict(body)))


def feed(backtest: Backtest, items: list[tuple[Judged, str | None]]) -> Backtest:
    for n, (judged, task) in enumerate(items, start=1):
        backtest.add(Position(f"line {n}", task), judged)
    return backtest


HAND = [  # the hand example of test_evaluation, as verdicts: two task types, two tenants
    (verdict("a", "healed_accept", 0.9, label=1, tenant="acme", risk="critical"), "QA"),
    (verdict("b", "fallback", 0.8, label=0, tenant="acme"), "QA"),
    (verdict("c", "discard", 0.6, label=1, tenant="bank"), "Summary"),
    (verdict("d", "accept", 0.3, label=1, tenant="bank"), "Summary"),
    (verdict("e", "accept", 0.2, label=0, tenant="bank"), "QA"),
    (verdict("f", "accept", 0.1, label=0, tenant="acme"), None),
]


def test_every_report_figure_matches_the_hand_computed_example() -> None:
    live = {"a": Decision("accept", 0.2, False), "b": Decision("fallback", 0.7, True),
            "c": Decision("discard", 0.6, True), "d": Decision("accept", 0.3, True),
            "e": Decision("accept", 0.1, False)}  # f: no live verdict
    report = feed(Backtest(live=live), HAND).report(source={"kind": "file", "path": "x"}, config=DetectorConfig(),
                                                    jobs=1, generated_at="2026-01-01T00:00:00+00:00")
    assert report["events"] == report["inputs"] == 6
    assert report["routing"] == {"accept": 3, "healed_accept": 1, "fallback": 1, "discard": 1}
    assert report["flagged"] == 3
    assert report["alerts"]["by_kind"] == {"critical_risk": 1, "discard": 1}
    # a changed routing; d changed its flag only; b moved its score but not its decision: no difference.
    assert [(d["event_id"], d["kind"]) for d in report["differences"]] == [("a", "accept->healed_accept"),
                                                                             ("d", "flagged->unflagged")]
    assert report["differences"][0]["live"] == {"routing": "accept", "hallucination_score": 0.2, "flagged": False}
    assert report["live"] | {"examples": None} == {"compared": 5, "without_live_verdict": 1, "changed": 2,
                                                   "by_kind": {"accept->healed_accept": 1, "flagged->unflagged": 1},
                                                   "examples": None}
    overall = report["metrics"]["overall"]
    assert (overall["roc_auc"], overall["f1"], overall["faithful_kept"], overall["hallucinated_caught"]) == (
        0.7778, 0.6667, 0.6667, 0.6667)
    assert overall["precision_at_recall"] == {"0.80": 0.75, "0.90": 0.75, "0.95": 0.75}
    qa = report["metrics"]["by_task_type"]["QA"]  # a (1, caught), b (0, rewritten), e (0, kept)
    assert (qa["n"], qa["tp"], qa["fp"], qa["tn"], qa["fn"]) == (3, 1, 1, 1, 0)
    assert (qa["roc_auc"], qa["faithful_kept"], qa["hallucinated_caught"]) == (1.0, 0.5, 1.0)
    assert set(report["metrics"]["by_task_type"]) == {"QA", "Summary", "(none)"}
    bank = report["metrics"]["by_tenant"]["bank"]  # c (1, caught at 0.6), d (1, missed at 0.3), e (0, kept at 0.2)
    assert (bank["roc_auc"], bank["recall"], bank["precision"], bank["faithful_kept"]) == (1.0, 0.5, 1.0, 1.0)
    import jsonschema

    jsonschema.validate(report, SCHEMA)


def test_separate_labels_override_the_events_and_a_label_less_run_has_no_label_metrics() -> None:
    unlabelled = [(verdict(j, "accept", 0.1), None) for j in "xyz"]
    bare = feed(Backtest(), unlabelled).report(source={"kind": "file"}, config=DetectorConfig(), jobs=1)
    assert "metrics" not in bare and bare["labels"]["labelled"] == 0 and bare["live"] is None
    regraded = feed(Backtest(labels={"x": 1, "y": 0}), [(verdict("x", "accept", 0.1, label=0), None)]
                    + unlabelled[1:]).report(source={"kind": "file"}, config=DetectorConfig(), jobs=1)
    assert regraded["labels"] == {"labelled": 2, "hallucinated": 1, "faithful": 1}


def test_latency_percentiles_are_nearest_rank() -> None:
    summary = latency_summary([float(v) for v in range(1, 101)])
    assert (summary["p50"], summary["p95"], summary["p99"], summary["max"], summary["mean"]) == (50, 95, 99, 100, 50.5)


def test_live_verdicts_keep_the_last_of_duplicates_and_skip_what_is_not_a_verdict() -> None:
    records = [b'{"event_id": "a", "routing": "accept", "hallucination_score": 0.1, "flagged": false}',
               b'{"event_id": "a", "routing": "fallback", "hallucination_score": 0.7, "flagged": true}',
               b'{"alert_id": "x"}', b"not json"]
    assert live_decisions(records) == {"a": Decision("fallback", 0.7, True)}


def test_range_bounds_are_offsets_offsets_per_partition_or_times() -> None:
    assert parse_bound("42", "--from").offset == 42
    assert parse_bound("0:5, 1:7", "--from").per_partition == {0: 5, 1: 7}
    assert parse_bound("2026-11-22T10:00:00Z", "--to").time_ms == 1795341600000
    with pytest.raises(UsageError, match="--to 'yesterday'"):
        parse_bound("yesterday", "--to")


# --- the command --------------------------------------------------------------------------------------------


def cli(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "stream_guard", *args], cwd=REPO, capture_output=True, text=True,
                          timeout=timeout, check=False)


def small_file(tmp_path: Path, rows: int = 40) -> Path:
    lines = labelled("ragtruth_dev").read_bytes().splitlines()[:rows]
    path = tmp_path / "answers.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n{broken\n")
    return path


@pytest.fixture(scope="module")
def html_report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("report")
    out = tmp / "out"
    done = cli("backtest", "--file", str(small_file(tmp)), "--out", str(out), "--ner", "regex", "--jobs", "2", "-q")
    assert done.returncode == 0, done.stderr
    return out


def test_a_file_backtest_writes_a_report_of_the_documented_shape(html_report: Path) -> None:
    import jsonschema

    report = json.loads((html_report / "report.json").read_text())
    jsonschema.validate(report, SCHEMA)
    assert report["events"] == 40 and report["inputs"] == 41 and report["errors"]["by_stage"] == {"decode": 1}
    assert report["metrics"]["overall"]["n"] == 40 and not report["partial"]
    assert len((html_report / "verdicts.jsonl").read_bytes().splitlines()) == 40
    assert set(report["plots"]) == {"routing", "latency", "scores", "roc", "pr"}
    assert all((html_report / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" for name in report["plots"].values())


def test_the_page_is_self_contained_and_shows_its_plots_in_a_browser(html_report: Path, browser: Any) -> None:
    page_html = (html_report / "report.html").read_text()
    assert "http://" not in page_html and "https://" not in page_html and "<script" not in page_html
    page = browser.new_page(viewport={"width": 1200, "height": 900})
    try:
        requests: list[str] = []
        page.on("request", lambda r: requests.append(r.url))
        page.goto((html_report / "report.html").as_uri())
        images = page.eval_on_selector_all(
            "img[data-plot]", "els => els.map(e => ({plot: e.dataset.plot, ok: e.complete && e.naturalWidth > 0}))")
        assert {i["plot"] for i in images} == {"routing.png", "latency.png", "scores.png", "roc.png", "pr.png"}
        assert all(i["ok"] for i in images), images
        assert all(u.startswith(("file:", "data:")) for u in requests), requests
        page.locator("img[data-plot='roc.png']").scroll_into_view_if_needed()
        shot = page.locator("img[data-plot='roc.png']").screenshot()
    finally:
        page.close()
    from matplotlib.image import imread

    pixels = imread(io.BytesIO(shot))
    assert pixels.shape[0] > 100 and pixels.shape[1] > 100
    assert float(pixels[..., :3].std()) > 0.05  # curves, axes and text, not a blank box


@pytest.mark.skipif(not (DATA / "ragtruth_dev.jsonl").exists(), reason="needs a file long enough to interrupt")
def test_ctrl_c_leaves_a_report_that_says_it_is_partial(tmp_path: Path) -> None:
    out = tmp_path / "out"
    # Four copies of the file (ids made unique), so the run is still going when the signal lands however busy
    # the machine is.
    rows = [orjson.loads(line) for line in (DATA / "ragtruth_dev.jsonl").read_bytes().splitlines() if line.strip()]
    long_file = tmp_path / "long.jsonl"
    long_file.write_bytes(b"".join(orjson.dumps({**row, "id": f"{row['id']}-{copy}"}) + b"\n"
                                   for copy in range(4) for row in rows))
    proc = subprocess.Popen([sys.executable, "-m", "stream_guard", "backtest", "--file",
                             str(long_file), "--out", str(out), "--ner", "regex", "--jobs", "1",
                             "--json-only", "-q"], cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            # a pytest-xdist worker ignores SIGINT, and a child would inherit that: not a user's shell
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    verdicts = out / "verdicts.jsonl"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and (not verdicts.exists() or verdicts.stat().st_size < 20_000):
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    report = json.loads((out / "report.json").read_text())
    assert report["partial"] is True and "Ctrl-C" in report["stopped"]
    assert 0 < report["events"] < 4 * len(rows)
    assert report["events"] == len(verdicts.read_bytes().splitlines())


def test_bad_requests_exit_2_with_the_reason(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    done = stream_guard(capsys, "backtest", "--file", str(small_file(tmp_path)), "--from", "3", "--out",
                        str(tmp_path / "o"))
    assert done.returncode == 2 and "--from/--to select a range of a topic" in done.stderr
    done = stream_guard(capsys, "backtest", "--file", str(small_file(tmp_path)), "--labels",
                        str(tmp_path / "none.jsonl"))
    assert done.returncode == 2 and "none.jsonl: no such file" in done.stderr
