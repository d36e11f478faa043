// SPDX-License-Identifier: Apache-2.0

package main

import (
	"fmt"
	"os"
	"regexp"
	"strings"

	"gopkg.in/yaml.v3"
)

// ports are the loopback ports of one collector run; all are picked free at run time so the
// bench never collides with collectors other people run on the defaults.
type ports struct {
	grpc, http, health, telemetry, pprof int
}

// env is the environment config/default.yaml reads (see its header comment).
func (p ports) env(dataDir string) []string {
	return []string{
		"RUNAGAIN_DATA_DIR=" + dataDir,
		fmt.Sprintf("RUNAGAIN_OTLP_GRPC_ENDPOINT=127.0.0.1:%d", p.grpc),
		fmt.Sprintf("RUNAGAIN_OTLP_HTTP_ENDPOINT=127.0.0.1:%d", p.http),
		fmt.Sprintf("RUNAGAIN_HEALTH_ENDPOINT=127.0.0.1:%d", p.health),
		fmt.Sprintf("RUNAGAIN_TELEMETRY_PORT=%d", p.telemetry),
	}
}

// contribBlockedValues are the contrib redaction processor's blocked_values equivalent to the
// built-in rules of internal/redact (rules.go): the same RE2 expressions, without our keyword
// prefilter, JSON awareness and validators (Luhn, mod-97, phone metadata, entropy), which the
// contrib processor does not have. IPv6, found by a byte scanner in internal/redact, is a regex here.
var contribBlockedValues = []string{
	`-----BEGIN[A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----(?:[\s\S]*?-----END[A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----|[A-Za-z0-9+/=\s\\:,\-]*)`,
	`\beyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]*`,
	`\bsk-ant-[a-z]{2,8}\d{2}-[A-Za-z0-9_\-]{20,}`,
	`\bsk-(?:proj-|svcacct-|admin-|None-)?[A-Za-z0-9_\-]{20,}`,
	`\b(?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AIPA|ANPA|ANVA|AROA|APKA)[A-Z0-9]{16}\b`,
	`(?i)(?:aws|amazon)[A-Za-z0-9_.\-]{0,24}(?:secret|sk)[A-Za-z0-9_.\-]{0,24}["']?\s*[:=]\s*["']?([A-Za-z0-9/+=]{40})`,
	`Credential=([A-Za-z0-9]{16,128})/`,
	`\bAIza[0-9A-Za-z_\-]{35}`,
	`\bya29\.[0-9A-Za-z_\-]{20,}`,
	`\b(?:gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{50,255})`,
	`\bgl(?:pat|dt|rt|ptt|cbt|imt|oas|soat|ft|agent|ffct)-[A-Za-z0-9_\-]{20,}`,
	`\bxox[abposre]-(?:[0-9]+-)*[A-Za-z0-9\-]{10,}`,
	`https://hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9+/_\-]{20,}`,
	`\b(?:sk|rk)_(?:live|test|prod)_([A-Za-z0-9]{10,247})`,
	`\b(?:hf_[A-Za-z0-9]{30,40}|api_org_[A-Za-z0-9]{30,40})\b`,
	`\bnpm_[A-Za-z0-9]{36}\b`,
	`\bSG\.[A-Za-z0-9_\-]{22}\.[A-Za-z0-9_\-]{43}\b`,
	`\bgsk_[A-Za-z0-9]{48,52}\b`,
	`\bxai-[A-Za-z0-9]{70,90}\b`,
	`\br8_[A-Za-z0-9]{37}\b`,
	`\bdapi[a-f0-9]{32}(?:-\d)?\b`,
	`\bpypi-AgEIcHlwaS5vcmc[A-Za-z0-9_\-]{50,}`,
	`\b[A-Za-z][A-Za-z0-9+.\-]{1,20}://([^\s:@/?#"'<>\\]{1,128}:([^\s@/?#"'<>\\]{1,256}))@`,
	`(?i)\b(?:bearer|basic)\s+[A-Za-z0-9\-._~+/]{8,}=*`,
	`(?i)\b(?:set-)?cookie["']?\s*[:=]\s*["']?[^\r\n"']+`,
	`(?i)(?:password|passwd|pwd|passphrase|secret|token|apikey|api_key|api-key|credential|private_key|privatekey|access_key|accesskey)[A-Za-z0-9_.\-]{0,48}["']?[ \t]*[:=][ \t]*["']?[^\s"',;&<>]{4,256}`,
	`\b[A-Za-z]{2}\d{2}(?: ?[A-Za-z0-9]){11,30}`,
	`[A-Za-z0-9._%+\-]{1,64}@[A-Za-z0-9\-]{1,63}(?:\.[A-Za-z0-9\-]{1,63})*\.[A-Za-z]{2,24}\b`,
	`\b(?:\d{4}[ \-]){3}\d{1,7}\b|\b\d{4}[ \-]\d{6}[ \-]\d{4,5}\b|\b\d{12,19}\b`,
	`\b\d{3}-\d{2}-\d{4}\b|\b\d{3} \d{2} \d{4}\b`,
	`\b(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(?:\.(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}\b`,
	`\b(?:[0-9A-Fa-f]{1,4}:){7}[0-9A-Fa-f]{1,4}\b|\b(?:[0-9A-Fa-f]{1,4}:){1,6}:[0-9A-Fa-f]{1,4}\b`,
	`(?:\+\d{1,3}[ .\-]?|\b00\d{1,3}[ .\-]?)?(?:\(\d{1,5}\)[ .\-]?)?\d[\d .\-()]{4,22}\d(?:[ ]?(?:x|ext\.?|#)[ ]?\d{1,6})?`,
}

// plainConfig is pipeline (a) or, with redaction, (b): otlp -> [redaction] -> batch -> nop.
func plainConfig(p ports, redaction bool) map[string]any {
	processors := map[string]any{"batch": map[string]any{}}
	chain := []any{}
	if redaction {
		vals := make([]any, len(contribBlockedValues))
		for i, v := range contribBlockedValues {
			vals[i] = v
		}
		processors["redaction"] = map[string]any{
			"allow_all_keys": true,
			"blocked_values": vals,
			"summary":        "info", // counts only, as agent_redaction reports
		}
		chain = append(chain, "redaction")
	}
	chain = append(chain, "batch")
	return map[string]any{
		"extensions": map[string]any{
			"health_check": map[string]any{"endpoint": fmt.Sprintf("127.0.0.1:%d", p.health)},
			"pprof":        map[string]any{"endpoint": fmt.Sprintf("127.0.0.1:%d", p.pprof)},
		},
		"receivers": map[string]any{"otlp": map[string]any{"protocols": map[string]any{
			"grpc": map[string]any{"endpoint": fmt.Sprintf("127.0.0.1:%d", p.grpc), "max_recv_msg_size_mib": 64},
			"http": map[string]any{"endpoint": fmt.Sprintf("127.0.0.1:%d", p.http)},
		}}},
		"processors": processors,
		"exporters":  map[string]any{"nop": map[string]any{}},
		"service": map[string]any{
			"extensions": []any{"health_check", "pprof"},
			"pipelines": map[string]any{"traces": map[string]any{
				"receivers": []any{"otlp"}, "processors": chain, "exporters": []any{"nop"},
			}},
			"telemetry": telemetry(p),
		},
	}
}

func telemetry(p ports) map[string]any {
	return map[string]any{"metrics": map[string]any{"readers": []any{map[string]any{"pull": map[string]any{
		"exporter": map[string]any{"prometheus": map[string]any{"host": "127.0.0.1", "port": p.telemetry}},
	}}}}}
}

// literalEndpoint is a host:port written into a config without an environment variable.
var literalEndpoint = regexp.MustCompile(`^(?:127\.0\.0\.1|localhost|0\.0\.0\.0|\[::1\])?:\d+$`)

// envEndpoint is an endpoint taken from an environment variable with a default.
var envEndpoint = regexp.MustCompile(`^\$\{env:([A-Za-z_][A-Za-z0-9_]*):-[^}]*:\d+\}$`)

// runagainConfig is config/default.yaml as it is now, plus the pprof extension on a free port.
// Endpoints the file gives through RUNAGAIN_* variables are moved by ports.env; literal
// loopback endpoints (a component added later with a fixed port) are moved to free ports too.
//
// Endpoints given as ${env:NAME:-host:port} with NAME not one of ports.env get NAME set to a
// free port in the returned environment (RUNAGAIN_PROMETHEUS_ENDPOINT and the like).
func runagainConfig(path string, p ports, free func() (int, error)) (map[string]any, []string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, err
	}
	var cfg map[string]any
	if err := yaml.Unmarshal(b, &cfg); err != nil {
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	known := map[string]bool{}
	for _, kv := range p.env("") {
		known[kv[:strings.IndexByte(kv, '=')]] = true
	}
	var env []string
	var walkErr error
	var walk func(v any)
	walk = func(v any) {
		switch m := v.(type) {
		case map[string]any:
			for k, sub := range m {
				if s, ok := sub.(string); ok && k == "endpoint" {
					s = strings.TrimSpace(s)
					if literalEndpoint.MatchString(s) {
						port, err := free()
						if err != nil {
							walkErr = err
						}
						m[k] = fmt.Sprintf("127.0.0.1:%d", port)
						continue
					}
					if g := envEndpoint.FindStringSubmatch(s); g != nil && !known[g[1]] {
						port, err := free()
						if err != nil {
							walkErr = err
						}
						known[g[1]] = true
						env = append(env, fmt.Sprintf("%s=127.0.0.1:%d", g[1], port))
						continue
					}
				}
				walk(sub)
			}
		case []any:
			for _, sub := range m {
				walk(sub)
			}
		}
	}
	walk(cfg)
	if walkErr != nil {
		return nil, nil, walkErr
	}
	ext, _ := cfg["extensions"].(map[string]any)
	if ext == nil {
		ext = map[string]any{}
		cfg["extensions"] = ext
	}
	ext["pprof/bench"] = map[string]any{"endpoint": fmt.Sprintf("127.0.0.1:%d", p.pprof)}
	svc, _ := cfg["service"].(map[string]any)
	if svc == nil {
		return nil, nil, fmt.Errorf("%s: no service section", path)
	}
	exts, _ := svc["extensions"].([]any)
	svc["extensions"] = append(exts, "pprof/bench")
	return cfg, env, nil
}

func writeYAML(path string, cfg map[string]any) error {
	b, err := yaml.Marshal(cfg)
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}
