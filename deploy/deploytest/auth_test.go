// SPDX-License-Identifier: Apache-2.0

package deploytest

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"gopkg.in/yaml.v3"

	"github.com/runagain/runagain/internal/testutil/collectortest"
)

// testPKI is a CA and a server certificate for 127.0.0.1/localhost, generated for one test.
type testPKI struct {
	caPool            *x509.CertPool
	certFile, keyFile string
}

func newTestPKI(t *testing.T) testPKI {
	t.Helper()
	dir := t.TempDir()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	caTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "runagain deploytest CA"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IsCA:                  true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	require.NoError(t, err)
	ca, err := x509.ParseCertificate(caDER)
	require.NoError(t, err)

	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: "runagain-gateway"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1")},
		DNSNames:     []string{"localhost", "runagain-gateway.runagain.svc"},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	require.NoError(t, err)
	keyDER, err := x509.MarshalECPrivateKey(key)
	require.NoError(t, err)

	p := testPKI{caPool: x509.NewCertPool(), certFile: filepath.Join(dir, "tls.crt"), keyFile: filepath.Join(dir, "tls.key")}
	p.caPool.AddCert(ca)
	require.NoError(t, os.WriteFile(p.certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600))
	require.NoError(t, os.WriteFile(p.keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600))
	return p
}

func randomToken(t *testing.T) string {
	b := make([]byte, 24)
	_, err := rand.Read(b)
	require.NoError(t, err)
	return hex.EncodeToString(b)
}

// oneSpan is a trace with one span whose trace id starts with tag, so the store can tell which
// request got through.
func oneSpan(tag byte) (ptrace.Traces, string) {
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr("service.name", "deploytest-auth")
	sp := rs.ScopeSpans().AppendEmpty().Spans().AppendEmpty()
	var id [16]byte
	id[0], id[15] = tag, 0xa5
	_, _ = rand.Read(id[1:15])
	sp.SetTraceID(pcommon.TraceID(id))
	sp.SetSpanID(pcommon.SpanID([8]byte{tag, 1}))
	sp.SetName("auth check")
	now := time.Now()
	sp.SetStartTimestamp(pcommon.NewTimestampFromTime(now.Add(-time.Second)))
	sp.SetEndTimestamp(pcommon.NewTimestampFromTime(now))
	return td, hex.EncodeToString(id[:])
}

// gatewayAuthConfig derives a runnable config from gateway.yaml's authentication parts, taken
// verbatim: the bearertokenauth and health_check extensions and the whole otlp receiver (TLS,
// auth, endpoints). Behind them: memory_limiter and the tiered exporter's hot tier on SQLite (set in
// the runagain_storage extension), so
// the test can read back what got in.
func gatewayAuthConfig(t *testing.T) []byte {
	t.Helper()
	var gw map[string]any
	require.NoError(t, yaml.Unmarshal(readFile(t, "config/gateway.yaml"), &gw))
	ext := gw["extensions"].(map[string]any)
	rcv := gw["receivers"].(map[string]any)
	require.Contains(t, ext, "bearertokenauth")
	require.Contains(t, rcv, "otlp")
	cfg := map[string]any{
		"extensions": map[string]any{"bearertokenauth": ext["bearertokenauth"], "health_check": ext["health_check"],
			"partial_success": ext["partial_success"],
			"runagain_storage": map[string]any{"hot": map[string]any{
				"sqlite": map[string]any{"path": "${env:RUNAGAIN_DATA_DIR}/hot.db"}}}},
		"receivers":  map[string]any{"otlp": rcv["otlp"]},
		"processors": map[string]any{"memory_limiter": gw["processors"].(map[string]any)["memory_limiter"]},
		"exporters":  map[string]any{"tiered": map[string]any{}},
		"service": map[string]any{
			"extensions": []string{"runagain_storage", "partial_success", "health_check", "bearertokenauth"},
			"pipelines": map[string]any{"traces": map[string]any{
				"receivers": []string{"otlp"}, "processors": []string{"memory_limiter"}, "exporters": []string{"tiered"}}},
			"telemetry": map[string]any{"metrics": map[string]any{"level": "none"}},
		},
	}
	b, err := yaml.Marshal(cfg)
	require.NoError(t, err)
	return b
}

// TestGatewayAuth: gateway.yaml's OTLP receiver with TLS (a certificate generated here) and the
// bearertokenauth extension, run by the real binary: over gRPC and HTTP a client without the
// token, or with a wrong one, is refused and nothing of its data is stored; a client with the
// token is accepted and its span is stored; plaintext and untrusted-certificate clients cannot
// connect; a token rotated in the token file takes effect without a restart.
func TestGatewayAuth(t *testing.T) {
	bin := collectorBin(t)
	cfg := gatewayAuthConfig(t)
	skipIfMissing(t, bin, "gateway.yaml's receiver and auth sections", cfg)
	path := filepath.Join(t.TempDir(), "gateway-auth.yaml")
	require.NoError(t, os.WriteFile(path, cfg, 0o600))
	runAuthChecks(t, path, nil, true)
}

// TestGatewayAuthFullConfig runs the same checks against the complete config/gateway.yaml, once
// every component it names is in the binary. ClickHouse cannot be installed on these machines:
// its endpoint points at a closed local port with create_schema off, so the hot tier's data waits
// in the persistent queue; payloads and the cold tier go to file:// buckets.
func TestGatewayAuthFullConfig(t *testing.T) {
	bin := collectorBin(t)
	body := readFile(t, "config/gateway.yaml")
	skipIfMissing(t, bin, "config/gateway.yaml", body)
	dir := t.TempDir()
	env := []string{
		fmt.Sprintf("RUNAGAIN_CLICKHOUSE_ENDPOINT=tcp://127.0.0.1:%d", collectortest.FreePort(t)),
		"RUNAGAIN_CLICKHOUSE_USERNAME=runagain", "RUNAGAIN_CLICKHOUSE_PASSWORD=unused",
		"RUNAGAIN_CLICKHOUSE_CREATE_SCHEMA=false",
		"RUNAGAIN_REDACTION_KEY=" + randomToken(t),
		"RUNAGAIN_PAYLOAD_URL=file://" + filepath.Join(dir, "payloads") + "?create_dir=true",
		"RUNAGAIN_COLD_URL=file://" + filepath.Join(dir, "cold") + "?create_dir=true",
		"RUNAGAIN_TELEMETRY_HOST=127.0.0.1",
	}
	before := dirEntries(t, ".")
	c, send := runAuthChecks(t, filepath.Join(repoRoot(t), "config", "gateway.yaml"), env, false)
	// In Kubernetes the gateway runs with a read-only root filesystem: it must write only under
	// the configured directories, never relative to where it was started (here, this package's directory).
	defer func() {
		c.Stop()
		assert.Equal(t, before, dirEntries(t, "."), "the gateway wrote into its working directory")
	}()

	// The production pipeline behind the door: a runaway session sent with the token reaches
	// agent_guard, whose loop alert and cost appear on the gateway's Prometheus endpoint, and the
	// gateway's own metrics carry the classic names the alert rules use.
	require.NoError(t, send(runawaySession()))
	promURL := "http://" + envValue(c.Env, "RUNAGAIN_PROMETHEUS_ENDPOINT") + "/metrics"
	telURL := fmt.Sprintf("http://127.0.0.1:%d/metrics", c.TelemetryPort)
	deadline := time.Now().Add(30 * time.Second)
	for {
		got := exposed{}
		scrape(t, promURL, got)
		scrape(t, telURL, got)
		ok := got["runagain_alerts_total"]["alert_kind"] && got["runagain_cost_USD_total"] != nil &&
			got["otelcol_receiver_accepted_spans_total"] != nil && got["otelcol_processor_payload_offload_values_offloaded_total"] != nil
		if ok {
			break
		}
		require.True(t, time.Now().Before(deadline), "gateway did not expose agent_guard and pipeline metrics within 30s; exposed:\n%s\n%s",
			strings.Join(got.names(), "\n"), c.Output())
		time.Sleep(500 * time.Millisecond)
	}
}

// runAuthChecks starts the collector on config and runs the authentication checks. readBack
// says whether accepted spans can be read back from the SQLite hot tier in the data directory.
// It returns the running collector and a function that sends traces with the (current) token.
func runAuthChecks(t *testing.T, config string, extraEnv []string, readBack bool) (*collectortest.Collector, func(ptrace.Traces) error) {
	pki := newTestPKI(t)
	token := randomToken(t)
	tokenFile := filepath.Join(t.TempDir(), "tokens")
	require.NoError(t, os.WriteFile(tokenFile, []byte(token+" deploytest client\n"), 0o600))

	c := collectortest.Start(t, collectortest.Options{Config: config, Env: append([]string{
		"RUNAGAIN_TLS_CERT_FILE=" + pki.certFile,
		"RUNAGAIN_TLS_KEY_FILE=" + pki.keyFile,
		"RUNAGAIN_TOKEN_FILE=" + tokenFile,
	}, extraEnv...)})

	tlsCfg := &tls.Config{RootCAs: pki.caPool, MinVersion: tls.VersionTLS12}
	conn, err := grpc.NewClient(c.GRPC, grpc.WithTransportCredentials(credentials.NewTLS(tlsCfg)))
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	client := ptraceotlp.NewGRPCClient(conn)
	exportGRPC := func(cl ptraceotlp.GRPCClient, bearer string, td ptrace.Traces) error {
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		if bearer != "" {
			ctx = metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+bearer)
		}
		_, err := cl.Export(ctx, ptraceotlp.NewExportRequestFromTraces(td))
		return err
	}
	httpClient := &http.Client{Timeout: 15 * time.Second, Transport: &http.Transport{TLSClientConfig: tlsCfg}}
	exportHTTP := func(hc *http.Client, scheme, bearer string, td ptrace.Traces) (int, error) {
		body, err := ptraceotlp.NewExportRequestFromTraces(td).MarshalProto()
		require.NoError(t, err)
		req, err := http.NewRequest(http.MethodPost, scheme+"://"+c.HTTP+"/v1/traces", bytes.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/x-protobuf")
		if bearer != "" {
			req.Header.Set("Authorization", "Bearer "+bearer)
		}
		resp, err := hc.Do(req)
		if err != nil {
			return 0, err
		}
		resp.Body.Close()
		return resp.StatusCode, nil
	}

	var refused, accepted []string
	refuse := func(tag byte) ptrace.Traces {
		td, id := oneSpan(tag)
		refused = append(refused, id)
		return td
	}
	accept := func(tag byte) ptrace.Traces {
		td, id := oneSpan(tag)
		accepted = append(accepted, id)
		return td
	}

	// gRPC
	err = exportGRPC(client, "", refuse(0x01))
	require.Error(t, err, "gRPC without a token must be refused")
	assert.Equal(t, codes.Unauthenticated, status.Code(err), "%v", err)
	err = exportGRPC(client, "not-"+token, refuse(0x02))
	assert.Equal(t, codes.Unauthenticated, status.Code(err), "gRPC with a wrong token: %v", err)
	require.NoError(t, exportGRPC(client, token, accept(0x03)), "gRPC with the token must be accepted")

	// HTTP
	code, err := exportHTTP(httpClient, "https", "", refuse(0x11))
	require.NoError(t, err)
	assert.Equal(t, http.StatusUnauthorized, code, "HTTP without a token")
	code, err = exportHTTP(httpClient, "https", "not-"+token, refuse(0x12))
	require.NoError(t, err)
	assert.Equal(t, http.StatusUnauthorized, code, "HTTP with a wrong token")
	code, err = exportHTTP(httpClient, "https", token, accept(0x13))
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, code, "HTTP with the token")

	// TLS is required: plaintext gets nowhere, and a client that does not trust the certificate
	// does not connect, token or not.
	plain, err := grpc.NewClient(c.GRPC, grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	defer plain.Close()
	err = exportGRPC(ptraceotlp.NewGRPCClient(plain), token, refuse(0x21))
	assert.Equal(t, codes.Unavailable, status.Code(err), "plaintext gRPC: %v", err)
	code, err = exportHTTP(&http.Client{Timeout: 15 * time.Second}, "http", token, refuse(0x22))
	assert.True(t, err != nil || code == http.StatusBadRequest, "plaintext HTTP must fail, got %d %v", code, err)
	untrusting := &http.Client{Timeout: 15 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{MinVersion: tls.VersionTLS12}}}
	_, err = exportHTTP(untrusting, "https", token, refuse(0x23))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "certificate")

	// Rotation: the extension re-reads the token file when it changes.
	newToken := randomToken(t)
	require.NoError(t, os.WriteFile(tokenFile, []byte(newToken+" rotated\n"), 0o600))
	deadline := time.Now().Add(20 * time.Second)
	for {
		td, id := oneSpan(0x31)
		err = exportGRPC(client, newToken, td)
		if err == nil {
			accepted = append(accepted, id)
			break
		}
		refused = append(refused, id)
		require.Equal(t, codes.Unauthenticated, status.Code(err), "%v", err)
		require.True(t, time.Now().Before(deadline), "rotated token not accepted within 20s")
		time.Sleep(200 * time.Millisecond)
	}
	err = exportGRPC(client, token, refuse(0x32))
	assert.Equal(t, codes.Unauthenticated, status.Code(err), "the old token after rotation: %v", err)
	send := func(td ptrace.Traces) error { return exportGRPC(client, newToken, td) }

	if !readBack {
		return c, send
	}
	// What was accepted is stored; nothing refused is.
	deadline = time.Now().Add(30 * time.Second)
	var stored map[string]bool
	for {
		stored = storedTraces(t, c)
		all := true
		for _, id := range accepted {
			all = all && stored[id]
		}
		if all || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	for _, id := range accepted {
		assert.True(t, stored[id], "accepted trace %s is not in the hot tier", id)
	}
	for _, id := range refused {
		assert.False(t, stored[id], "refused trace %s reached the hot tier", id)
	}
	assert.Len(t, stored, len(accepted), "the hot tier holds exactly the accepted traces")
	return c, send
}

// storedTraces lists the trace ids in the hot tier through `runagain sessions --json`.
func storedTraces(t *testing.T, c *collectortest.Collector) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	if _, err := os.Stat(filepath.Join(c.DataDir, "hot.db")); err != nil {
		return out
	}
	stdout, stderr, err := c.CLI("sessions", "--json")
	require.NoError(t, err, "runagain sessions: %s", stderr)
	var rows []struct {
		TraceID string `json:"trace_id"`
	}
	require.NoError(t, json.Unmarshal([]byte(strings.TrimSpace(stdout)), &rows), stdout)
	for _, r := range rows {
		out[r.TraceID] = true
	}
	return out
}

func dirEntries(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	require.NoError(t, err)
	var out []string
	for _, e := range es {
		out = append(out, e.Name())
	}
	return out
}
