// SPDX-License-Identifier: Apache-2.0

// Package deploytest checks everything the project ships for deployment, against the real parts:
//
//   - every collector config for otelcol-runagain (config/*.yaml, the Kubernetes ConfigMap, the
//     Helm values after the chart's merge) passes `otelcol-runagain validate` with the real binary
//     (RUNAGAIN_BIN_DIR, built by `make build`);
//   - every Kubernetes manifest under deploy/ decodes strictly into the k8s.io/api types (an unknown
//     or duplicated field fails), and the manifests agree with each other and with gateway.yaml;
//   - the Prometheus alert rules parse with Prometheus's own rule-file parser and, like the Grafana
//     dashboard, name only metrics (and labels) that a running otelcol-runagain really exposes;
//   - gateway.yaml's OTLP authentication (TLS + bearertokenauth) refuses a client without the token
//     and accepts one with it, end to end against the real binary;
//   - the fleet config for otelcol-contrib (load_balancing exporter, not in this distribution) is
//     checked structurally; the systemd unit with systemd-analyze where present; the Dockerfile's
//     stages and copied paths.
//
// Tests that need the binary skip without RUNAGAIN_BIN_DIR, and fail instead when CI is set.
package deploytest
