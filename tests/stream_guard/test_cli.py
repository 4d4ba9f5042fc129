import subprocess
import sys

import orjson
from scenarios import BILLING, CLEAN, PRICE_DRIFTED, PRICE_STABLE, price_event


def run_check(tmp_path, lines, *args):
    path = tmp_path / "events.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    proc = subprocess.run(
        [sys.executable, "-m", "stream_guard.cli", "check", str(path), "--ner", "regex", *args],
        capture_output=True, timeout=120,
    )
    return proc, [orjson.loads(line) for line in proc.stdout.splitlines()]


def test_one_verdict_line_per_input_line_in_order_with_errors_inline(tmp_path):
    lines = [
        orjson.dumps(CLEAN.to_dict()),
        b'{"event_id": "broken", ',
        orjson.dumps({"event_id": "no-answer", "question": "q"}),
        orjson.dumps(BILLING.to_dict()),
    ]
    proc, out = run_check(tmp_path, lines)
    assert proc.returncode == 0, proc.stderr
    assert len(out) == 4
    assert out[0]["event_id"] == CLEAN.event_id and out[0]["routing"] == "accept"
    assert out[1]["line"] == 2 and "not valid JSON" in out[1]["error"]
    assert out[2] == {"line": 3, "error": "answer: is required", "field": "answer", "reason": "is required",
                      "stage": "decode"}
    assert out[3]["event_id"] == BILLING.event_id and out[3]["routing"] == "healed_accept"
    for verdict in (out[0], out[3]):
        for key in ("tenant", "flagged", "hallucination_score", "risk", "delivered_answer", "original_answer",
                    "hallucinated_statements", "verified_statements", "checks", "healing", "latency_ms"):
            assert key in verdict
    assert b"2 verdicts" in proc.stderr and b"2 errors" in proc.stderr


def test_drift_history_carries_across_lines_of_one_run(tmp_path):
    events = [price_event(f"p{i}", PRICE_STABLE) for i in range(40)] + [price_event("drift", PRICE_DRIFTED)]
    proc, out = run_check(tmp_path, [orjson.dumps(e.to_dict()) for e in events])
    assert proc.returncode == 0
    assert "drift" in out[-1]["triggered"] and "drift" not in out[0]["triggered"]


def test_drift_db_carries_history_across_runs(tmp_path):
    db = str(tmp_path / "drift.db")
    stable = [orjson.dumps(price_event(f"p{i}", PRICE_STABLE).to_dict()) for i in range(4)]
    run_check(tmp_path, stable, "--drift-db", db)
    proc, out = run_check(tmp_path, [orjson.dumps(price_event("d", PRICE_DRIFTED).to_dict())], "--drift-db", db)
    assert "drift" in out[0]["triggered"]


def test_unreadable_input_is_the_only_nonzero_exit(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "stream_guard.cli", "check", str(tmp_path / "missing.jsonl")],
                          capture_output=True, timeout=60)
    assert proc.returncode == 1 and b"cannot read" in proc.stderr


def test_bad_config_file_is_reported(tmp_path):
    cfg = tmp_path / "bad.toml"
    cfg.write_text("[detector]\nnot_a_setting = 1\n")
    proc, _ = run_check(tmp_path, [orjson.dumps(CLEAN.to_dict())], "--config", str(cfg))
    assert proc.returncode == 2 and b"not_a_setting" in proc.stderr


def test_strict_preset_demands_more_overlap_per_claim(tmp_path):
    # 7 of 12 content words grounded: enough for the general preset (0.40), not for strict (0.70).
    event = {"event_id": "r", "question": "How fast are refunds?",
             "context": ["Refunds are processed within 5 business days after we receive the returned item."],
             "answer": "Refunds are processed within 5 business days once our warehouse team carefully "
                       "inspects every returned item."}
    _, general = run_check(tmp_path, [orjson.dumps(event)], "--preset", "general")
    _, strict = run_check(tmp_path, [orjson.dumps(event)], "--preset", "strict")
    assert general[0]["checks"]["faithfulness"]["score"] == 1.0
    assert strict[0]["checks"]["faithfulness"]["score"] == 0.0
