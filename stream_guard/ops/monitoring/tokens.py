"""Dashboard access tokens: made at random, configured only as their SHA-256 hash.

    python -m stream_guard.ops.monitoring.tokens new          # prints a fresh token and the hash to configure
    python -m stream_guard.ops.monitoring.tokens hash         # reads a token on stdin, prints its hash

Tokens are 256 random bits, so a plain SHA-256 is enough to keep the config file from being a credential
(there is nothing to brute-force); a slow password hash would only slow every login down.
"""

from __future__ import annotations

import hashlib
import secrets
import sys
from typing import Sequence

MIN_TOKEN_CHARS = 20


def hash_token(token: str) -> str:
    """The hex SHA-256 of a token, as the `[monitor]` table wants it."""
    return hashlib.sha256(token.strip().encode("utf-8")).hexdigest()


def new_token() -> str:
    return secrets.token_urlsafe(32)


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args == ["new"]:
        token = new_token()
        print(f"token:        {token}")
        print(f"token_sha256: {hash_token(token)}")
        return 0
    if args == ["hash"]:
        token = sys.stdin.readline().strip()
        if len(token) < MIN_TOKEN_CHARS:
            print(f"a token must have at least {MIN_TOKEN_CHARS} characters; make one with `new`", file=sys.stderr)
            return 2
        print(hash_token(token))
        return 0
    print("usage: python -m stream_guard.ops.monitoring.tokens new | hash (token on stdin)", file=sys.stderr)
    return 2


if __name__ == "__main__":
    raise SystemExit(main())
