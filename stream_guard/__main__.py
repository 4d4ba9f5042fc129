"""`python -m stream_guard ...`: the same command line as `stream-guard ...`."""

from stream_guard.cli import entry

if __name__ == "__main__":
    entry()
