// SPDX-License-Identifier: Apache-2.0

package deploytest

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
)

// loadBalancingConfig is the part of the contrib load_balancing exporter's configuration the
// fleet config uses (exporter/loadbalancingexporter, which is not in this distribution and not
// served at v0.165.1, so its Go type cannot be imported here). Decoded with known fields only, so
// a misspelled top-level or resolver key fails.
type loadBalancingConfig struct {
	RoutingKey        string   `yaml:"routing_key"`
	RoutingAttributes []string `yaml:"routing_attributes"`
	Timeout           string   `yaml:"timeout"`
	Protocol          struct {
		OTLP map[string]any `yaml:"otlp"`
	} `yaml:"protocol"`
	Resolver struct {
		Static *struct {
			Hostnames []string `yaml:"hostnames"`
		} `yaml:"static"`
		DNS *struct {
			Hostname string `yaml:"hostname"`
			Port     string `yaml:"port"`
			Interval string `yaml:"interval"`
			Timeout  string `yaml:"timeout"`
		} `yaml:"dns"`
		K8s *struct {
			Service         string `yaml:"service"`
			Ports           []int  `yaml:"ports"`
			Timeout         string `yaml:"timeout"`
			ReturnHostnames bool   `yaml:"return_hostnames"`
		} `yaml:"k8s"`
	} `yaml:"resolver"`
}

// routingKeys are the load_balancing exporter's routing_key values.
var routingKeys = []string{"traceID", "service", "resource", "metric", "streamID", "attributes"}

func strictYAML(t *testing.T, v any, into any) {
	t.Helper()
	b, err := yaml.Marshal(v)
	require.NoError(t, err)
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	require.NoError(t, dec.Decode(into))
}

// TestFleetConfig checks deploy/fleet/otelcol-contrib.yaml structurally (it is for otelcol-contrib,
// whose load_balancing exporter this distribution cannot build): every pipeline names defined
// components; there is a load_balancing exporter routing by traceID and one routing by a session
// attribute the gateway also uses as session key; the k8s resolver names the gateway's headless
// Service and its OTLP gRPC port; the exporters use TLS and the bearer token; the RBAC lets the
// fleet watch the gateway's endpoints.
func TestFleetConfig(t *testing.T) {
	var cfg map[string]map[string]any
	require.NoError(t, yaml.Unmarshal(readFile(t, "deploy/fleet/otelcol-contrib.yaml"), &cfg))

	// Every id a pipeline or the service names is defined.
	var svc struct {
		Extensions []string `yaml:"extensions"`
		Pipelines  map[string]struct {
			Receivers  []string `yaml:"receivers"`
			Processors []string `yaml:"processors"`
			Exporters  []string `yaml:"exporters"`
		} `yaml:"pipelines"`
	}
	strictYAML(t, cfg["service"], &svc)
	for _, e := range svc.Extensions {
		assert.Contains(t, cfg["extensions"], e)
	}
	require.NotEmpty(t, svc.Pipelines)
	for name, p := range svc.Pipelines {
		for _, id := range p.Receivers {
			assert.Contains(t, cfg["receivers"], id, "pipeline %s", name)
		}
		for _, id := range p.Processors {
			assert.Contains(t, cfg["processors"], id, "pipeline %s", name)
		}
		for _, id := range p.Exporters {
			assert.Contains(t, cfg["exporters"], id, "pipeline %s", name)
			assert.True(t, strings.HasPrefix(id, "load_balancing"), "pipeline %s exports to %s, not the gateway", name, id)
		}
	}

	// The gateway side: headless Service, its OTLP gRPC port, and the session keys.
	var headless *corev1.Service
	for _, obj := range decodeManifests(t, "deploy/kubernetes/service.yaml") {
		if s := obj.(*corev1.Service); s.Spec.ClusterIP == corev1.ClusterIPNone {
			headless = s
		}
	}
	require.NotNil(t, headless)
	var grpcPort int
	for _, p := range headless.Spec.Ports {
		if p.Name == "otlp-grpc" {
			grpcPort = int(p.Port)
		}
	}
	require.NotZero(t, grpcPort)
	var gw struct {
		Extensions struct {
			Storage struct {
				SessionKeys []string `yaml:"session_keys"`
			} `yaml:"runagain_storage"`
		} `yaml:"extensions"`
	}
	require.NoError(t, yaml.Unmarshal(readFile(t, "config/gateway.yaml"), &gw))
	require.NotEmpty(t, gw.Extensions.Storage.SessionKeys, "gateway.yaml's runagain_storage::session_keys")

	byKey := map[string]int{}
	for id, raw := range cfg["exporters"] {
		typ, _, _ := strings.Cut(id, "/")
		require.Equal(t, "load_balancing", typ, "exporter %s", id)
		var lb loadBalancingConfig
		strictYAML(t, raw, &lb)
		assert.Contains(t, routingKeys, lb.RoutingKey, "%s routing_key", id)
		byKey[lb.RoutingKey]++
		if lb.RoutingKey == "attributes" {
			require.NotEmpty(t, lb.RoutingAttributes, "%s: routing_key attributes needs routing_attributes", id)
			for _, a := range lb.RoutingAttributes {
				assert.Contains(t, gw.Extensions.Storage.SessionKeys, a, "%s routes by %s, which is not a gateway session key", id, a)
			}
		}
		// Exactly one resolver, and it finds the gateway pods.
		n := 0
		if lb.Resolver.Static != nil {
			n++
		}
		if lb.Resolver.DNS != nil {
			n++
		}
		if k := lb.Resolver.K8s; k != nil {
			n++
			assert.Equal(t, headless.Name+"."+headless.Namespace, k.Service, "%s: k8s resolver service", id)
			assert.Equal(t, []int{grpcPort}, k.Ports, "%s: k8s resolver ports", id)
		}
		assert.Equal(t, 1, n, "%s: exactly one resolver", id)
		// TLS with the gateway's CA, and the bearer token from a bearertokenauth extension the service starts.
		tlsCfg, _ := lb.Protocol.OTLP["tls"].(map[string]any)
		require.NotNil(t, tlsCfg, "%s: protocol.otlp.tls", id)
		assert.NotEmpty(t, tlsCfg["ca_file"], "%s: protocol.otlp.tls.ca_file", id)
		assert.NotEqual(t, true, tlsCfg["insecure"], "%s must not disable TLS", id)
		auth, _ := lb.Protocol.OTLP["auth"].(map[string]any)
		require.NotNil(t, auth, "%s: protocol.otlp.auth", id)
		authID, _ := auth["authenticator"].(string)
		assert.True(t, strings.HasPrefix(authID, "bearertokenauth"), "%s authenticator %q", id, authID)
		assert.Contains(t, cfg["extensions"], authID)
		assert.Contains(t, svc.Extensions, authID)
		_, hasEndpoint := lb.Protocol.OTLP["endpoint"]
		assert.False(t, hasEndpoint, "%s: the resolver provides the endpoints", id)
	}
	assert.Positive(t, byKey["traceID"], "a load_balancing exporter routing by trace id")
	assert.Positive(t, byKey["attributes"], "a load_balancing exporter routing by the session attribute")

	// RBAC: the fleet may watch the gateway's endpoints in the gateway's namespace.
	var role *rbacv1.Role
	var binding *rbacv1.RoleBinding
	for _, obj := range decodeManifests(t, "deploy/fleet/rbac.yaml") {
		switch o := obj.(type) {
		case *rbacv1.Role:
			role = o
		case *rbacv1.RoleBinding:
			binding = o
		}
	}
	require.NotNil(t, role)
	require.NotNil(t, binding)
	assert.Equal(t, headless.Namespace, role.Namespace)
	assert.Equal(t, role.Name, binding.RoleRef.Name)
	watches := false
	for _, r := range role.Rules {
		if slices.Contains(r.APIGroups, "discovery.k8s.io") && slices.Contains(r.Resources, "endpointslices") {
			watches = slices.Contains(r.Verbs, "watch") && slices.Contains(r.Verbs, "list")
		}
	}
	assert.True(t, watches, "the Role grants list/watch on endpointslices")
}

// TestSystemdUnit: the unit passes systemd-analyze verify (no unknown keys or sections; the only
// complaint allowed is the binary not being installed on this machine), runs the config it
// validates first, and reads the environment file shipped beside it.
func TestSystemdUnit(t *testing.T) {
	unit := string(readFile(t, "deploy/systemd/otelcol-runagain.service"))
	var start, pre, envFile string
	for _, l := range strings.Split(unit, "\n") {
		k, v, _ := strings.Cut(l, "=")
		switch k {
		case "ExecStart":
			start = v
		case "ExecStartPre":
			pre = v
		case "EnvironmentFile":
			envFile = v
		}
	}
	require.NotEmpty(t, start)
	bin, args, _ := strings.Cut(start, " ")
	assert.Equal(t, bin+" validate "+args, pre, "ExecStartPre validates the config ExecStart runs")
	assert.Equal(t, "/etc/runagain/runagain.env", envFile)
	assert.Contains(t, unit, "deploy/systemd/runagain.env "+envFile, "the install steps put runagain.env where EnvironmentFile reads it")
	assert.Contains(t, unit, "User=runagain")

	sa, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Skip("systemd-analyze not installed: unit syntax not verified")
	}
	verify := func(body string) []string {
		dir := t.TempDir()
		p := filepath.Join(dir, "otelcol-runagain.service")
		require.NoError(t, os.WriteFile(p, []byte(body), 0o644))
		out, _ := exec.Command(sa, "verify", "--man=no", p).CombinedOutput()
		var complaints []string
		for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			if l == "" || strings.Contains(l, "is not executable") {
				continue
			}
			complaints = append(complaints, l)
		}
		return complaints
	}
	assert.Empty(t, verify(unit), "systemd-analyze verify")
	// The check sees mistakes: a misspelled key is reported.
	assert.NotEmpty(t, verify(strings.Replace(unit, "Restart=on-failure", "Restrat=on-failure", 1)))
}
