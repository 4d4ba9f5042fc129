# Everything a fresh machine needs: `make up` runs the main job, `make test` runs the tests.
# Both create .venv and install the project into it on first use (and again when pyproject.toml changes).
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: up test test-long bench install browser clean schemas deploy-rules docs

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)

up: $(STAMP)
	$(BIN)/stream-guard up

# The page tests drive a real Chromium; Debian's package is the one that works offline (Playwright's own
# browser download does not). Installed when missing and we may (root); otherwise those tests say why they skip.
browser:
	@command -v chromium >/dev/null 2>&1 || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 \
		&& (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null) \
		|| echo "chromium not installed: the browser tests will be skipped"; }

# Test files run in TEST_WORKERS processes (pytest-xdist). The broker tests mostly wait (on group joins, on the
# workers they start), so more processes than cores pays off on 2 cores.
TEST_WORKERS ?= 4

test: $(STAMP) browser
	$(BIN)/python -m pytest -n $(TEST_WORKERS) $(PYTEST_ARGS)

# The long runs (minutes each, marked `long`): 20,000 unkeyed events with SIGTERM mid-stream and a restart, three
# times; the monitoring replay and restore from the changelogs; the dashboard's all-tenants view at 10,000
# tenants; the wheel installed beside openai-agents in a fresh virtual environment. CI (.ci/run) runs them after
# `make test`.
test-long: $(STAMP)
	$(BIN)/python -m pytest -m long $(PYTEST_ARGS)

bench: $(STAMP)
	$(BIN)/python bench/cpu_profile.py
	$(BIN)/python bench/inspect_latency.py
	$(BIN)/python bench/event_cost.py
	$(BIN)/python bench/detection_quality.py --ner regex
	$(BIN)/python bench/detection_quality.py --ner spacy
	$(BIN)/python bench/stream_throughput.py --events 3000 --rounds 3 --paced-seconds 20

# The published JSON Schemas (schemas/) and the PrometheusRule (deploy/k8s/prometheusrule.yaml) are generated;
# the tests fail when the committed files differ from what these write.
schemas: $(STAMP)
	$(BIN)/python -m stream_guard.wire.schemas

# Generated docs: the configuration key tables (docs/CONFIG.md, from stream_guard/config/) and the layers drawn
# from the imports (README.md, docs/ARCHITECTURE.md). The tests fail when either is stale.
docs: $(STAMP)
	$(BIN)/python -m stream_guard.config
	$(BIN)/python tools/layers.py

deploy-rules: $(STAMP)
	$(BIN)/python deploy/render_prometheusrule.py

clean:
	rm -rf $(VENV) build *.egg-info
