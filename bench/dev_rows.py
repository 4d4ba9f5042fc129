"""Write the development rows of the labelled files (`_data.split_rows`: the locked slice left out) to a folder, so
`stream-guard calibrate` can fit the shipped model on them alone.

    .venv/bin/python bench/dev_rows.py --out /tmp/dev ragtruth_dev ragtruth_d2t_dev halueval_qa_dev
    .venv/bin/stream-guard calibrate --labels /tmp/dev/ragtruth_dev.jsonl /tmp/dev/ragtruth_d2t_dev.jsonl \\
        /tmp/dev/halueval_qa_dev.jsonl --ner spacy --write-default --rows "development rows, locked slice excluded"

Each file keeps its name (calibrate names its sources by file name) and its rows' order.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _data import DATASETS, add_data_option, read_rows, split_rows, write_jsonl  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", default=list(DATASETS), help=f"labelled files (default {' '.join(DATASETS)})")
    parser.add_argument("--out", required=True, help="folder to write <name>.jsonl into")
    add_data_option(parser)
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for name in args.names:
        dev, _ = split_rows(read_rows(name))
        path = write_jsonl(out / f"{name}.jsonl", dev)
        print(f"{path}: {len(dev)} development rows")


if __name__ == "__main__":
    main()
