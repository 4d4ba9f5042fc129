"""CPU cost of tenant monitoring per answer, against the cost of judging it, in one run.

- judge side: what `agents/monitor.py` adds per verdict on the judge's event loop: parse the verdict JSON,
  `observe()`, encode the record, the sample filter, and the review item for answers the filter admits;
- monitor side: `ledger.apply` over batches of 32 records with an in-memory store (the count, the seen-set,
  the day record's JSON round trip, closing days, the rules, the sample), without Faust or RocksDB;
- judging: `Guard.evaluate_batch` (regex NER) over the same events, batches of 32.

Events: ../shared/data/ragtruth_dev.jsonl, spread over 4 tenants and 40 days of event time. CPU time
(time.process_time), so other processes on the machine do not count.

    .venv/bin/python bench/monitor_cost.py [--repeat 3]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _data import add_data_option, load_events, machine, write_result  # noqa: E402

from stream_guard.config.detector import DetectorConfig  # noqa: E402
from stream_guard.wire.events import decode_event  # noqa: E402
from stream_guard.ops.monitoring.ledger import apply  # noqa: E402
from stream_guard.ops.monitoring.observation import observe  # noqa: E402
from stream_guard.ops.monitoring.review import review_item  # noqa: E402
from stream_guard.ops.monitoring.sampling import CandidateFilter, sample_score  # noqa: E402
from stream_guard.config.monitor import MonitorSettings  # noqa: E402
from stream_guard.ops.monitoring.windows import DAY_MS, day_of, week_of  # noqa: E402
from stream_guard.engine.pipeline import Guard  # noqa: E402

BATCH = 32
T0 = 20_000 * DAY_MS


class DictStore:
    def __init__(self) -> None:
        self.tables: dict[str, dict[bytes, bytes]] = {}

    def get(self, table: str, key: bytes) -> bytes | None:
        return self.tables.get(table, {}).get(key)

    def write(self, puts: dict[tuple[str, bytes], bytes | None]) -> None:
        for (table, key), value in puts.items():
            if value is None:
                self.tables.setdefault(table, {}).pop(key, None)
            else:
                self.tables.setdefault(table, {})[key] = value


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=3)
    add_data_option(parser)
    args = parser.parse_args()
    events = load_events("ragtruth_dev")
    payloads = []
    for i, e in enumerate(events):
        body = e.to_dict()
        body.update(event_id=f"ev-{i}", tenant=f"tenant-{i % 4}", produced_at=T0 + (i * 40 * DAY_MS) // len(events))
        payloads.append(orjson.dumps(body))
    parsed = [decode_event(p) for p in payloads]
    guard = Guard(DetectorConfig(ner="regex", db_path=":memory:", log_flagged=False))
    settings = MonitorSettings()
    rounds = []
    for _ in range(args.repeat):
        started = time.process_time()
        verdicts = []
        for i in range(0, len(parsed), BATCH):
            results, _ = guard.evaluate_batch(parsed[i:i + BATCH], {})
            verdicts += [r.to_json() for r in results]
        judge_cpu = time.process_time() - started

        candidates = CandidateFilter()
        records, admitted = [], 0
        started = time.process_time()
        for raw_verdict, payload in zip(verdicts, payloads):
            verdict = orjson.loads(raw_verdict)
            obs = observe(verdict, None)
            record = obs.to_record()
            week = week_of(day_of(obs.at_ms or 0))
            if candidates.offer(obs.tenant, week, sample_score("", obs.tenant, week, obs.event_id), obs.event_id, 30):
                admitted += 1
                record["review"] = review_item(verdict, decode_event(payload).context, week, 16_000)
            records.append(orjson.dumps(record))
        observe_cpu = time.process_time() - started

        store = DictStore()
        started = time.process_time()
        for i in range(0, len(records), BATCH):
            by_tenant: dict[str, list[dict]] = {}
            for raw in records[i:i + BATCH]:
                record = orjson.loads(raw)
                by_tenant.setdefault(record["tenant"], []).append(record)
            for tenant, batch in by_tenant.items():
                store.write(apply(store, tenant, batch, settings, T0 + 60 * DAY_MS).puts)
        ledger_cpu = time.process_time() - started
        n = len(parsed)
        rounds.append({"judge_ms_per_event": 1000 * judge_cpu / n, "observe_ms_per_event": 1000 * observe_cpu / n,
                       "ledger_ms_per_event": 1000 * ledger_cpu / n, "review_items": admitted,
                       "monitor_share_of_judging": (observe_cpu + ledger_cpu) / judge_cpu})
    median = {k: sorted(r[k] for r in rounds)[len(rounds) // 2] for k in rounds[0]}
    result = {"events": len(parsed), "rounds": rounds, "median": median, "machine": machine()}
    path = write_result("monitor_cost", result)
    print(orjson.dumps(median, option=orjson.OPT_INDENT_2).decode())
    print(f"written to {path}")


if __name__ == "__main__":
    main()
