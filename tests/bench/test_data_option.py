"""`--data DIR`: every benchmark that reads labelled data takes the folder as an option (bench/_data.py)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import orjson

REPO = Path(__file__).resolve().parents[2]
BENCH = REPO / "bench"
# What reads the labelled files through bench/_data.py (by name, from the data folder).
READERS = re.compile(r"\b(data_path|load_events|development_events|read_rows|DATA_DIR)\b")


def tiny_folder(folder: Path) -> list[dict]:
    """Ten labelled rows from ten sources, so some are development rows and some (by the keyed hash) locked."""
    rows = [{"event_id": f"tiny-{i}", "question": f"What does plan {i} cost?", "answer": f"Plan {i} costs {i} euros.",
             "context": [f"Plan {i} costs {i} euros a month."], "label": i % 2, "source": "tiny",
             "meta": {"source_id": f"doc-{i}"}} for i in range(10)]
    folder.mkdir()
    (folder / "tiny.jsonl").write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows))
    return rows


def run_dev_rows(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(BENCH / "dev_rows.py"), *args], capture_output=True, text=True,
                          timeout=120, env=env)


def test_a_benchmark_given_data_reads_that_folder(tmp_path: Path) -> None:
    rows = tiny_folder(tmp_path / "labelled")
    done = run_dev_rows("--data", str(tmp_path / "labelled"), "--out", str(tmp_path / "out"), "tiny")
    assert done.returncode == 0, done.stderr
    assert "shipped sample" not in done.stderr
    written = [orjson.loads(line) for line in (tmp_path / "out" / "tiny.jsonl").read_bytes().splitlines()]
    # The rows come from the tiny folder (its ids), less the locked slice, in file order.
    assert written and {r["event_id"] for r in written} < {r["event_id"] for r in rows}
    ids = [r["event_id"] for r in written]
    assert ids == [r["event_id"] for r in rows if r["event_id"] in ids]


def test_data_folder_without_the_file_is_an_error_not_the_sample(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    done = run_dev_rows("--data", str(tmp_path / "empty"), "--out", str(tmp_path / "out"), "ragtruth_dev")
    assert done.returncode != 0
    assert "ragtruth_dev.jsonl not found" in done.stderr and "--data" in done.stderr
    assert not (tmp_path / "out" / "ragtruth_dev.jsonl").exists()


def test_data_that_is_not_a_folder_is_refused(tmp_path: Path) -> None:
    done = run_dev_rows("--data", str(tmp_path / "nowhere"), "--out", str(tmp_path / "out"), "tiny")
    assert done.returncode != 0 and "not a folder" in done.stderr


def test_every_benchmark_reading_labelled_data_offers_data() -> None:
    readers = [path.name for path in sorted(BENCH.glob("*.py"))
               if path.name != "_data.py" and READERS.search(path.read_text())]
    assert "trust.py" in readers and "dev_rows.py" in readers  # the pattern finds them
    missing = [name for name in readers if "add_data_option(parser)" not in (BENCH / name).read_text()]
    assert not missing, f"benchmarks reading labelled data without --data: {missing}"
