"""`python -m stream_guard.config`: write (or --check) the key tables of docs/CONFIG.md."""

from stream_guard.config.docs import main

if __name__ == "__main__":
    raise SystemExit(main())
