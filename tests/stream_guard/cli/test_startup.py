"""What `import stream_guard` and a short `stream-guard check` load: start-up is paid on every run and by every
process, so the heavy libraries stay out until a run needs them (each checked in a fresh interpreter)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import orjson

# asyncio (with ssl, about 35 ms of CPU): only the worker, serve and the pool's async front-end run an event loop;
# sqlite3 (8 ms): only a SQLite history store (the worker's, or one a caller opens) needs it.
HEAVY = ("spacy", "faust", "aiokafka", "aiohttp", "matplotlib", "numpy", "asyncio", "sqlite3")

# What the fresh interpreter runs: argv[1] is Python to execute, then it prints which HEAVY packages it imported.
PROBE = """
import sys
exec(sys.argv[1])
heavy = sorted({name.split(".")[0] for name in sys.modules} & set(sys.argv[2].split(",")))
print(",".join(heavy))
"""


def imported(code: str) -> list[str]:
    done = subprocess.run([sys.executable, "-c", PROBE, code, ",".join(HEAVY)], capture_output=True, text=True,
                          check=True, timeout=120)
    return [name for name in done.stdout.strip().split(",") if name]


def check(path: Path, ner: str) -> str:
    return (f"from stream_guard.cli import main; "
            f"assert main(['check', {str(path)!r}, '--ner', {ner!r}, '-o', {str(path) + '.out'!r}, '-q']) == 0")


def event(tmp_path: Path, answer: str) -> Path:
    path = tmp_path / "one.jsonl"
    path.write_bytes(orjson.dumps({"event_id": "e1", "tenant": "support", "question": "What is the refund window?",
                                   "context": ["Refunds are accepted within 14 days of purchase."],
                                   "answer": answer}) + b"\n")
    return path


def test_importing_the_package_loads_no_heavy_library() -> None:
    assert imported("import stream_guard") == []


def test_check_with_regex_ner_on_one_event_loads_no_heavy_library(tmp_path: Path) -> None:
    path = event(tmp_path, "Refunds are accepted within 30 days of purchase, says Maria Lopez.")
    assert imported(check(path, "regex")) == []
    assert orjson.loads((tmp_path / "one.jsonl.out").read_bytes())["event_id"] == "e1"


def test_spacy_is_loaded_only_when_an_answer_names_something_its_context_does_not(tmp_path: Path) -> None:
    # Nothing to look up: the answer's capitalised words are all in its context (or open the sentence).
    assert imported(check(event(tmp_path, "Refunds are accepted within 30 days of purchase."), "spacy")) == []
    # A name the context lacks: only a statistical recognizer can say what it is, so spaCy is loaded for it.
    assert "spacy" in imported(check(event(tmp_path, "Maria Lopez says refunds take 30 days."), "spacy"))


def test_check_on_empty_input_starts_no_judge_process(tmp_path: Path) -> None:
    # Unknown length (not a regular file): check would judge in one process per core, started with the first event.
    code = ("from stream_guard.engine import pool; started = []; start = pool.JudgeProcess.__init__\n"
            "def counted(self, *args): started.append(1); start(self, *args)\n"
            "pool.JudgeProcess.__init__ = counted\n"
            "from stream_guard.cli import main; assert main(['check', '/dev/null', '--ner', 'spacy', '-q']) == 0\n"
            "assert not started, f'{len(started)} judge process(es) started'")
    assert imported(code) == []


def test_the_program_runs_numpy_s_blas_on_one_thread_unless_the_operator_chose(tmp_path: Path) -> None:
    # The program itself: `stream-guard check` judging an answer that needs spaCy's NER, in a fresh interpreter
    # without the variable, has numpy's BLAS on one thread when it has judged (set before numpy was imported).
    path = event(tmp_path, "Maria Lopez says refunds take 30 days.")
    code = ("import os, sys; os.environ.pop('OPENBLAS_NUM_THREADS', None)\n"
            f"sys.argv = ['stream-guard', 'check', {str(path)!r}, '--ner', 'spacy', '-o', {str(path) + '.out'!r},"
            " '-q', '--jobs', '1']\n"
            "import atexit\n"
            "def report():\n"
            "    from threadpoolctl import threadpool_info\n"
            "    print([lib['num_threads'] for lib in threadpool_info() if lib['user_api'] == 'blas'], flush=True)\n"
            "atexit.register(report)  # the program's exit runs the exit handlers (cli/process_exit.py)\n"
            "from stream_guard.cli import entry\n"
            "entry()")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[1]"
