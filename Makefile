# Everything a fresh machine needs: `make up` runs the main job, `make test` runs the tests.
# Both create .venv and install the project into it on first use (and again when pyproject.toml changes).
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: up test bench install clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)

up: $(STAMP)
	$(BIN)/stream-guard up

test: $(STAMP)
	$(BIN)/python -m pytest $(PYTEST_ARGS)

bench: $(STAMP)
	$(BIN)/python bench/inspect_latency.py
	$(BIN)/python bench/detection_quality.py --ner regex
	$(BIN)/python bench/detection_quality.py --ner spacy
	$(BIN)/python bench/stream_throughput.py --events 3000 --rounds 3 --paced-seconds 20

clean:
	rm -rf $(VENV) build *.egg-info
