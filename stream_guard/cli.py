def main() -> None:  # replaced below by the real CLI
    raise SystemExit("not yet")
