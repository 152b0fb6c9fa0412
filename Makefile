# Longboat: the two set-up commands are `make up` and `make test`.
PYTHON ?= python3.11
VENV   ?= .venv
PY     := $(VENV)/bin/python
PIP    := $(VENV)/bin/pip
STAMP  := $(VENV)/.installed

.PHONY: up test lint bench demo node-peers clean

$(VENV)/bin/python:
	$(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --upgrade pip

$(STAMP): pyproject.toml | $(VENV)/bin/python
	$(PIP) install --quiet -e '.[dev,spark,bench]'
	touch $(STAMP)

node-peers: tests/peers/node/node_modules/.package-lock.json

tests/peers/node/node_modules/.package-lock.json: tests/peers/node/package-lock.json
	cd tests/peers/node && npm ci --no-audit --no-fund --loglevel=error

## Start a name server (127.0.0.1:9876) and a broker (127.0.0.1:10911) in one process.
up: $(STAMP)
	$(VENV)/bin/longboat up

## Install everything (Python extras and the Node test peers) and run the whole suite.
test: $(STAMP) node-peers
	$(VENV)/bin/ruff check .
	$(PY) -m mypy
	$(PY) -m pytest

lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(PY) -m mypy
	$(VENV)/bin/ruff format --check .

bench: $(STAMP)
	$(PY) -m bench.protocol_codec
	$(PY) -m bench.store_bench

demo: $(STAMP)
	$(VENV)/bin/longboat demo

clean:
	rm -rf $(VENV) tests/peers/node/node_modules .pytest_cache
