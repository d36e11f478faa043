// SPDX-License-Identifier: Apache-2.0

package deploytest

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"
	corev1 "k8s.io/api/core/v1"
)

// collectorConfig is one shipped otelcol-runagain config and the environment it runs with.
type collectorConfig struct {
	name string // where it ships
	body []byte
	env  map[string]string
}

// gatewayEnv is the environment the Kubernetes manifests give the gateway: the env ConfigMap, the
// credentials Secret template and the StatefulSet's own env entries. Validating gateway.yaml with
// exactly these values checks that the manifests supply what the config needs.
func gatewayEnv(t *testing.T) map[string]string {
	t.Helper()
	env := map[string]string{}
	for _, obj := range decodeManifests(t, "deploy/kubernetes/env-configmap.yaml") {
		cm, ok := obj.(*corev1.ConfigMap)
		require.True(t, ok, "env-configmap.yaml holds a %T", obj)
		for k, v := range cm.Data {
			env[k] = v
		}
	}
	for _, obj := range decodeManifests(t, "deploy/kubernetes/secret.template.yaml") {
		if s, ok := obj.(*corev1.Secret); ok && s.Name == "runagain-gateway-credentials" {
			for k, v := range s.StringData {
				env[k] = v
			}
		}
	}
	for _, e := range gatewayContainer(t).Env {
		if e.ValueFrom == nil {
			env[e.Name] = e.Value
		}
	}
	return env
}

// systemdEnv parses deploy/systemd/runagain.env (KEY=VALUE lines, # comments).
func systemdEnv(t *testing.T) map[string]string {
	t.Helper()
	env := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(readFile(t, "deploy/systemd/runagain.env")))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		require.True(t, ok, "runagain.env line %d is not KEY=VALUE: %q", n, line)
		env[k] = v
	}
	return env
}

func isCollectorConfig(body []byte) bool {
	var doc map[string]any
	if yaml.Unmarshal(body, &doc) != nil {
		return false
	}
	svc, _ := doc["service"].(map[string]any)
	return svc != nil && svc["pipelines"] != nil
}

// shippedCollectorConfigs finds every otelcol-runagain config the project ships.
func shippedCollectorConfigs(t *testing.T) []collectorConfig {
	t.Helper()
	root := repoRoot(t)
	var out []collectorConfig
	files, err := filepath.Glob(filepath.Join(root, "config", "*.yaml"))
	require.NoError(t, err)
	for _, f := range files {
		body, err := os.ReadFile(f)
		require.NoError(t, err)
		rel, _ := filepath.Rel(root, f)
		env := map[string]string{}
		if filepath.Base(f) == "gateway.yaml" {
			env = gatewayEnv(t)
		}
		out = append(out, collectorConfig{name: rel, body: body, env: env})
	}
	// The single-host unit runs config/default.yaml with deploy/systemd/runagain.env.
	out = append(out, collectorConfig{name: "deploy/systemd (config/default.yaml + runagain.env)",
		body: readFile(t, "config/default.yaml"), env: systemdEnv(t)})

	for _, rel := range deployFiles(t, ".yaml", ".yml") {
		if strings.HasPrefix(rel, filepath.Join("deploy", "fleet")) {
			continue // otelcol-contrib, checked structurally in TestFleetConfig
		}
		body := readFile(t, rel)
		if isCollectorConfig(body) {
			out = append(out, collectorConfig{name: rel, body: body, env: gatewayEnv(t)})
			continue
		}
		// Collector configs inside ConfigMaps.
		if strings.HasPrefix(rel, filepath.Join("deploy", "kubernetes")) && filepath.Base(rel) != "kustomization.yaml" {
			for _, obj := range decodeManifests(t, rel) {
				if cm, ok := obj.(*corev1.ConfigMap); ok {
					keys := make([]string, 0, len(cm.Data))
					for k := range cm.Data {
						keys = append(keys, k)
					}
					sort.Strings(keys)
					for _, k := range keys {
						if isCollectorConfig([]byte(cm.Data[k])) {
							out = append(out, collectorConfig{name: fmt.Sprintf("%s ConfigMap %s key %s", rel, cm.Name, k),
								body: []byte(cm.Data[k]), env: gatewayEnv(t)})
						}
					}
				}
			}
		}
	}
	out = append(out, collectorConfig{name: "deploy/helm/values.yaml (merged into the chart's default config)",
		body: helmMergedConfig(t), env: gatewayEnv(t)})
	return out
}

func envList(env map[string]string) []string {
	var out []string
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}

// TestShippedCollectorConfigsValidate: every otelcol-runagain config the project ships passes
// `otelcol-runagain validate` (the real binary) with the environment it ships with.
func TestShippedCollectorConfigsValidate(t *testing.T) {
	bin := collectorBin(t)
	configs := shippedCollectorConfigs(t)
	require.GreaterOrEqual(t, len(configs), 5, "config/default.yaml, config/gateway.yaml, systemd, ConfigMap, Helm")
	for _, c := range configs {
		t.Run(c.name, func(t *testing.T) {
			for _, k := range requiredEnv(c.body) {
				_, ok := c.env[k]
				require.True(t, ok, "%s uses ${env:%s} without a default and its deployment does not set it", c.name, k)
			}
			skipIfMissing(t, bin, c.name, c.body)
			path := filepath.Join(t.TempDir(), "config.yaml")
			require.NoError(t, os.WriteFile(path, c.body, 0o600))
			out, err := validate(t, bin, path, envList(c.env))
			require.NoError(t, err, "otelcol-runagain validate %s:\n%s", c.name, out)
		})
	}
}

// TestValidateCatchesBrokenGateway: validate really checks our components' configs: gateway.yaml
// without its payload store URL, or with an unknown key in the runagain_storage extension's hot
// tier, is refused with the field named.
func TestValidateCatchesBrokenGateway(t *testing.T) {
	bin := collectorBin(t)
	body := readFile(t, "config/gateway.yaml")
	skipIfMissing(t, bin, "config/gateway.yaml", body)
	path := filepath.Join(t.TempDir(), "gateway.yaml")
	require.NoError(t, os.WriteFile(path, body, 0o600))

	env := gatewayEnv(t)
	delete(env, "RUNAGAIN_PAYLOAD_URL")
	out, err := validate(t, bin, path, envList(env))
	require.Error(t, err, "gateway.yaml without RUNAGAIN_PAYLOAD_URL must not validate:\n%s", out)
	assert.Contains(t, out, "payloads::url")

	broken := bytes.Replace(body, []byte("      retention: 168h\n"), []byte("      retention: 168h\n      retension: 1h\n"), 1)
	require.NotEqual(t, body, broken, "gateway.yaml no longer has the hot tier block this test edits")
	require.NoError(t, os.WriteFile(path, broken, 0o600))
	out, err = validate(t, bin, path, envList(gatewayEnv(t)))
	require.Error(t, err, "an unknown runagain_storage key must not validate:\n%s", out)
	assert.Contains(t, out, "retension")
}

// helmMerge does what Helm does with a values override: maps merge recursively, any other value
// (lists included) replaces, and a null deletes the key.
func helmMerge(dst, src map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range dst {
		out[k] = v
	}
	for k, v := range src {
		if v == nil {
			delete(out, k)
			continue
		}
		sm, sok := v.(map[string]any)
		dm, dok := out[k].(map[string]any)
		if sok && dok {
			out[k] = helmMerge(dm, sm)
		} else if sok {
			out[k] = helmMerge(map[string]any{}, sm)
		} else {
			out[k] = v
		}
	}
	return out
}

// helmValuesConfigBlock is the generated tail of deploy/helm/values.yaml: gateway.yaml under
// `config:`, plus nulls that delete the chart's default components this distribution lacks.
func helmValuesConfigBlock(gateway []byte) string {
	inserts := map[string][]string{
		"receivers:":   {"  # chart defaults this distribution does not contain", "  jaeger: null", "  zipkin: null", "  prometheus: null"},
		"processors:":  {"  batch: null # chart default; batching happens in the tiers' sending queues"},
		"exporters:":   {"  debug: null # chart default"},
		"  pipelines:": {"    metrics: null # chart default pipeline (prometheus receiver)"},
	}
	var b strings.Builder
	b.WriteString("config:\n")
	for _, line := range strings.Split(strings.TrimRight(string(gateway), "\n"), "\n") {
		if line == "" {
			b.WriteString("\n")
		} else {
			b.WriteString("  " + line + "\n")
		}
		for _, ins := range inserts[line] {
			b.WriteString("  " + ins + "\n")
		}
	}
	return b.String()
}

const helmMarker = "# ---- everything below is generated from config/gateway.yaml"

func helmMergedConfig(t *testing.T) []byte {
	t.Helper()
	var values map[string]any
	require.NoError(t, yaml.Unmarshal(readFile(t, "deploy/helm/values.yaml"), &values))
	cfg, ok := values["config"].(map[string]any)
	require.True(t, ok, "deploy/helm/values.yaml has no config map")
	var chart map[string]any
	require.NoError(t, yaml.Unmarshal(readFile(t, "deploy/deploytest/testdata/chart-default-config.yaml"), &chart))
	merged, err := yaml.Marshal(helmMerge(chart, cfg))
	require.NoError(t, err)
	return merged
}

// TestHelmValues: deploy/helm/values.yaml's config, merged into the chart's default config the way
// Helm merges, is exactly config/gateway.yaml (so the Helm path runs the same gateway), and its
// generated block is up to date (-update rewrites it).
func TestHelmValues(t *testing.T) {
	gateway := readFile(t, "config/gateway.yaml")
	valuesPath := filepath.Join(repoRoot(t), "deploy", "helm", "values.yaml")
	values, err := os.ReadFile(valuesPath)
	require.NoError(t, err)
	head, _, ok := strings.Cut(string(values), helmMarker)
	require.True(t, ok, "values.yaml lost its marker line %q", helmMarker)
	want := head + helmMarker + " by hand; run\n#   go test ./deploy/deploytest -run TestHelmValues -update\n" + helmValuesConfigBlock(gateway)
	if *update {
		require.NoError(t, os.WriteFile(valuesPath, []byte(want), 0o644))
		values = []byte(want)
	}
	require.Equal(t, want, string(values), "deploy/helm/values.yaml is stale: run go test ./deploy/deploytest -run TestHelmValues -update")

	var gw, merged map[string]any
	require.NoError(t, yaml.Unmarshal(gateway, &gw))
	require.NoError(t, yaml.Unmarshal(helmMergedConfig(t), &merged))
	assert.Equal(t, gw, merged, "chart default config + values.yaml config must equal config/gateway.yaml")

	var v map[string]any
	require.NoError(t, yaml.Unmarshal(values, &v))
	assert.Equal(t, "statefulset", v["mode"])
	assert.Equal(t, "otelcol-runagain", v["command"].(map[string]any)["name"])
	assert.Equal(t, "runagain/otelcol-runagain", v["image"].(map[string]any)["repository"])
}

// TestGatewayConfigMap: the Kubernetes ConfigMap carries config/gateway.yaml byte for byte
// (-update rewrites it).
func TestGatewayConfigMap(t *testing.T) {
	gateway := readFile(t, "config/gateway.yaml")
	path := filepath.Join(repoRoot(t), "deploy", "kubernetes", "gateway-configmap.yaml")
	if *update {
		var b strings.Builder
		b.WriteString("# GENERATED from config/gateway.yaml: do not edit; run\n#   go test ./deploy/deploytest -run TestGatewayConfigMap -update\n")
		b.WriteString("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: runagain-gateway-config\n  namespace: runagain\n")
		b.WriteString("  labels:\n    app.kubernetes.io/name: runagain-gateway\n    app.kubernetes.io/part-of: runagain\ndata:\n  gateway.yaml: |\n")
		for _, line := range strings.Split(strings.TrimRight(string(gateway), "\n"), "\n") {
			if line == "" {
				b.WriteString("\n")
			} else {
				b.WriteString("    " + line + "\n")
			}
		}
		require.NoError(t, os.WriteFile(path, []byte(b.String()), 0o644))
	}
	objs := decodeManifests(t, "deploy/kubernetes/gateway-configmap.yaml")
	require.Len(t, objs, 1)
	cm, ok := objs[0].(*corev1.ConfigMap)
	require.True(t, ok)
	assert.Equal(t, "runagain-gateway-config", cm.Name)
	require.Equal(t, string(gateway), cm.Data["gateway.yaml"],
		"gateway-configmap.yaml is stale: run go test ./deploy/deploytest -run TestGatewayConfigMap -update")
}
