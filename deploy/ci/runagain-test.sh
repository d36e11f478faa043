#!/usr/bin/env bash
# runagain-test.sh: the regression gate CI runs (GitHub Actions and GitLab CI call it; so can you).
#
#   RUNAGAIN_DATASET_DIR=regression/weather deploy/ci/runagain-test.sh python agent.py
#
# It starts otelcol-runagain with the embedded default pipeline on a fresh data directory,
# imports the dataset exported into the repository (`runagain dataset export NAME DIR`), runs
# `runagain test NAME@VERSION -- COMMAND` (the version the directory holds, expectations as
# edited there), writes the JUnit report and exits with runagain test's code: non-zero when any
# case fails.
#
# Environment:
#   RUNAGAIN_DATASET_DIR   exported dataset directory (required)
#   RUNAGAIN_BIN_DIR       directory with otelcol-runagain and runagain (default: bin)
#   RUNAGAIN_CONFIG        collector config (default: config/default.yaml beside RUNAGAIN_BIN_DIR/..)
#   RUNAGAIN_JUNIT         JUnit XML report path (default: runagain-junit.xml)
#   RUNAGAIN_TEST_ARGS     more flags for runagain test (e.g. "--parallel 4")
#   RUNAGAIN_DATA_DIR      data directory (default: a new temporary directory)
#   RUNAGAIN_HEALTH_ENDPOINT, RUNAGAIN_OTLP_GRPC_ENDPOINT, ...  listening addresses (config/default.yaml)
set -euo pipefail

if [ $# -eq 0 ]; then
  echo "usage: RUNAGAIN_DATASET_DIR=DIR $0 COMMAND [ARGS...]" >&2
  exit 2
fi
: "${RUNAGAIN_DATASET_DIR:?set RUNAGAIN_DATASET_DIR to the exported dataset directory}"
bin=${RUNAGAIN_BIN_DIR:-bin}
config=${RUNAGAIN_CONFIG:-$bin/../config/default.yaml}
junit=${RUNAGAIN_JUNIT:-runagain-junit.xml}
export RUNAGAIN_DATA_DIR=${RUNAGAIN_DATA_DIR:-$(mktemp -d)}
health=${RUNAGAIN_HEALTH_ENDPOINT:-127.0.0.1:13133}
export RUNAGAIN_ENDPOINT=${RUNAGAIN_OTLP_GRPC_ENDPOINT:-127.0.0.1:4317}

log="$RUNAGAIN_DATA_DIR/collector.log"
"$bin/otelcol-runagain" --config "$config" >"$log" 2>&1 &
collector=$!
stop() { kill "$collector" 2>/dev/null || true; wait "$collector" 2>/dev/null || true; }
trap stop EXIT
for _ in $(seq 1 150); do
  if curl -fsS "http://$health" >/dev/null 2>&1; then break; fi
  if ! kill -0 "$collector" 2>/dev/null; then
    echo "runagain-test: the collector exited at start:" >&2
    cat "$log" >&2
    exit 1
  fi
  sleep 0.2
done
curl -fsS "http://$health" >/dev/null || { echo "runagain-test: collector not healthy on $health" >&2; cat "$log" >&2; exit 1; }

imported=$("$bin/runagain" dataset import "$RUNAGAIN_DATASET_DIR")
echo "$imported"
ref=$(printf '%s\n' "$imported" | sed -n 's/^imported dataset \([^ :]*\):.*/\1/p' | head -n 1)
[ -n "$ref" ] || { echo "runagain-test: could not read the imported version" >&2; exit 1; }

# shellcheck disable=SC2086 # RUNAGAIN_TEST_ARGS is a list of flags
"$bin/runagain" test "$ref" --junit "$junit" ${RUNAGAIN_TEST_ARGS:-} -- "$@"
