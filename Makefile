# runagain: build the otelcol-runagain distribution (ocb) and the runagain CLI, run, test.
GO        ?= go
BIN       := bin
COLLECTOR := $(BIN)/otelcol-runagain
CLI       := $(BIN)/runagain
JAEGER    := $(BIN)/jaeger
BENCH_FILE := $(BIN)/otelcol-bench-file
CONFIG    ?= config/default.yaml
# Release flags of the CLI binaries: no build paths (-trimpath), no symbol table or DWARF
# (-s -w). ocb builds the collector with the same flags by default (debug_compilation: false).
GOFLAGS_BIN := -trimpath -ldflags='-s -w'
GO_SOURCES := $(shell find . -name '*.go' -not -path './_build/*' -not -path './data/*') go.mod go.sum
export RUNAGAIN_CORPUS ?= $(abspath ../shared/corpus)

.PHONY: build run demo test test-race test-short lint tidy-check govulncheck bench bench-ui pii-score secrets-score clean

build: $(COLLECTOR) $(CLI)

# ocb generates the distribution's sources into _build (with `replaces: ../` to this module)
# and compiles them. The binary is copied, then renamed over: a collector running from it (make
# run in another terminal) keeps its old file, and `make build` / `make test` do not fail with
# "Text file busy".
$(COLLECTOR): builder-config.yaml $(GO_SOURCES)
	$(GO) tool builder --config builder-config.yaml
	@mkdir -p $(BIN)
	cp _build/otelcol-runagain $(COLLECTOR).tmp && mv -f $(COLLECTOR).tmp $(COLLECTOR)

$(CLI): $(GO_SOURCES)
	@mkdir -p $(BIN)
	$(GO) build $(GOFLAGS_BIN) -o $(CLI) ./cmd/runagain

run: build
	@echo "otelcol-runagain: OTLP on $${RUNAGAIN_OTLP_GRPC_ENDPOINT:-127.0.0.1:4317} (gRPC) and $${RUNAGAIN_OTLP_HTTP_ENDPOINT:-127.0.0.1:4318} (HTTP); data in $${RUNAGAIN_DATA_DIR:-./data}"
	@echo "runagain CLI: sends to RUNAGAIN_ENDPOINT (default 127.0.0.1:4317; set it when you move the gRPC port)"
	@echo "web UI: in another terminal run '$(CLI) ui', then open http://127.0.0.1:7600/"
	$(COLLECTOR) --config $(CONFIG)

# A scripted agent (examples/demo) through record, replay, rerun, diff, dataset and test, offline,
# on its own data directory (data/demo) and free loopback ports; prints what to open in the UI.
# test/e2e TestDemo runs the same program.
demo: build
	$(GO) build $(GOFLAGS_BIN) -o $(BIN)/runagain-demo ./examples/demo
	$(BIN)/runagain-demo -bin $(BIN) -config $(CONFIG)

# The end-to-end tests use the real binaries built above (RUNAGAIN_BIN_DIR).
test: build
	RUNAGAIN_BIN_DIR=$(abspath $(BIN)) $(GO) test -count=1 -timeout 45m ./...

test-short:
	$(GO) test -short ./...

# The unit packages (everything but test/ and deploy/deploytest, which drive the real binaries)
# under the race detector, -short: .ci/run runs it as its own step. -race costs about 10x the CPU
# of a plain run here (internal/store/sqlitestore and internal/redact: 43 s of user CPU against
# 4 s), and -short leaves out the tests that start MinIO, chDB or the real binaries, whose
# processes are not race-built anyway.
UNIT_PKGS = $(shell $(GO) list ./... | grep -v -e '/test/' -e '/deploy/deploytest')
test-race:
	$(GO) test -race -short -count=1 -timeout 30m $(UNIT_PKGS)

# golangci-lint, pinned in go.mod as a tool (go tool golangci-lint); configuration in .golangci.yml
# (the standard linters, contrib's that fit, depguard layering rules, gofmt and goimports); first
# go.mod and go.sum tidy, and govulncheck where its database is reachable.
lint: tidy-check govulncheck
	$(GO) tool golangci-lint run ./...

# go.mod and go.sum are tidy: `go mod tidy` changes neither (it is undone when it does).
tidy-check:
	@cp go.mod go.mod.tidy-check && cp go.sum go.sum.tidy-check; \
	$(GO) mod tidy; \
	if ! cmp -s go.mod go.mod.tidy-check || ! cmp -s go.sum go.sum.tidy-check; then \
	  echo "go.mod/go.sum are not tidy: run go mod tidy and commit"; diff go.mod.tidy-check go.mod; \
	  mv go.mod.tidy-check go.mod; mv go.sum.tidy-check go.sum; exit 1; fi; \
	rm -f go.mod.tidy-check go.sum.tidy-check

# Known vulnerabilities (.ci/govulncheck; skipped, saying so, where the database is unreachable).
govulncheck:
	.ci/govulncheck

# mdatagen (pinned in go.mod as a tool) regenerates each component's metadata code, generated
# tests, documentation.md and the status table between the README's markers.
COMPONENTS := processor/agentredactionprocessor processor/payloadoffloadprocessor processor/retryinfoprocessor processor/spanquarantineprocessor \
	connector/agentguardconnector exporter/tieredexporter extension/runagainstorageextension extension/partialsuccessextension
generate:
	@for d in $(COMPONENTS); do (cd $$d && $(GO) generate ./) || exit 1; done

# Fails when `make generate` changes anything: the generated files must be committed current.
check-generate:
	@before=$$(git status --porcelain -- $(COMPONENTS); git diff -- $(COMPONENTS) | sha256sum); \
	$(MAKE) --no-print-directory generate; \
	after=$$(git status --porcelain -- $(COMPONENTS); git diff -- $(COMPONENTS) | sha256sum); \
	if [ "$$before" != "$$after" ]; then echo "generated files are stale: run make generate and commit"; \
	  git status --short -- $(COMPONENTS); exit 1; fi

# Load benchmark: the same agent traffic (runagain loadgen) through (a) baseline (otlp -> batch -> nop),
# (b) contrib redaction, (c) $(CONFIG), its storage peers (d) otlp -> batch -> file (zstd, a small
# collector of its own) and
# (e) Jaeger v2 with Badger, and (c) with its payloads on MinIO when a minio binary is found;
# writes bench/results/ and BENCHMARKS.md (docs/loadgen.md).
# BENCH_FLAGS passes options to bench/cmd/bench, e.g. BENCH_FLAGS='-sessions 100'.
bench: build $(JAEGER) $(BENCH_FILE)
	$(GO) run ./bench/cmd/bench -bin $(BIN) -jaeger $(JAEGER) -file-collector $(BENCH_FILE) -config $(CONFIG) $(BENCH_FLAGS)

# The web UI's pages on a real store in headless Chromium (bench/cmd/uibench): the sessions page over
# 10^5 loadgen runs, the run page and the diff page of 10,000-span runs, a search in a run with
# about 100 MB of payloads, against a one-turn run page timed in the same run; prints the table of
# BENCHMARKS.md "runagain ui: pages on a real store". UIBENCH_FLAGS passes options (-reps, -runs).
bench-ui:
	$(GO) run ./bench/cmd/uibench $(UIBENCH_FLAGS)

# Row (d)'s collector, otlp -> batch -> file (zstd), from its own ocb manifest (why not in the
# distribution: see bench/filecollector/builder-config.yaml).
$(BENCH_FILE): bench/filecollector/builder-config.yaml
	@mkdir -p _build
	$(GO) tool builder --config bench/filecollector/builder-config.yaml
	@mkdir -p $(BIN)
	cp _build/bench-file/otelcol-bench-file $(BENCH_FILE)

# Jaeger v2 for row (e) of make bench: a tools module of its own (bench/jaeger/go.mod), so its
# dependencies never enter the distribution's go.mod; go's build cache makes rebuilds quick.
$(JAEGER): bench/jaeger/go.mod bench/jaeger/go.sum
	@mkdir -p $(BIN)
	cd bench/jaeger && $(GO) build -o $(abspath $(JAEGER)) github.com/jaegertracing/jaeger/cmd/jaeger

# Precision and recall of agent_redaction's PII detectors on the corpus pii/ records (presidio),
# per entity type; exits non-zero below the targets (recall 0.98, precision 0.95).
pii-score:
	$(GO) run ./internal/redact/cmd/pii-score

# Recall per rule family of agent_redaction's secret detectors on the gitleaks rule examples
# (module github.com/zricethezav/gitleaks/v8, fetched by `go mod download`) and the labelled
# detect-secrets test files of the corpus, false positives on their negative examples, precision;
# exits non-zero below the targets (gitleaks recall 0.95, precision 0.95). SECRETS_SCORE_FLAGS=-v lists misses.
secrets-score:
	$(GO) run ./internal/redact/cmd/secrets-score $(SECRETS_SCORE_FLAGS)

clean:
	rm -rf _build $(BIN)
