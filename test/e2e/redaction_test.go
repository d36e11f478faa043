// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/runagain/runagain/internal/corpus"
	"github.com/runagain/runagain/internal/testutil/collectortest"
)

// planted are PII and credentials that agent_redaction claims to find (one per rule family).
var planted = map[string]string{
	"email":          "jane.doe@example-corp.com",
	"phone":          "+1 650-253-0000",
	"credit card":    "4111 1111 1111 1111",
	"US SSN":         "536-22-1234",
	"IBAN":           "GB82 WEST 1234 5698 7654 32",
	"IPv4":           "203.0.113.77",
	"OpenAI key":     "sk-proj-Q7vX2mN9kL4pR8sT1wY6zB3cD5fG0hJ2aE4iO6uK8nM1qS3t",
	"AWS key id":     "AKIAZ7Q4VBNR2XK5LM3P",
	"GitHub token":   "ghp_R8sT1wY6zB3cD5fG0hJ2aE4iO6uK8nM1qS3t",
	"Anthropic key":  "sk-ant-api03-Xq9vB2nM7kL4pR8sT1wY6zB3cD5fG0hJ2aE4iO6uK8nM1qS3tV5xZ7bN9mQ2wE4rT6yU8iO0pA-ZZZZZZAA",
	"Slack token":    "xoxb-2948573019-4829301847-Qa8Zk3LmN7pR2sT5vW9yB1cD",
	"JWT":            "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiI0MjQyIiwibmFtZSI6IkphbmUifQ.5mhBHqs5_DTLdINd9p5m7ZJ6XD0Xc55kIaCRY5r6HRA",
	"password value": "Tr0ub4dor&3-horse",
	// a token of a made-up vendor, no credential word near it: only prefixed_token's shape
	// finds it
	"unseen-family token": "zorp_live_Kq8Zm3LnP7rT2sW5vY9bC1dF4gH6jN0xQa",
}

func plantedText() string {
	var b strings.Builder
	b.WriteString("Customer record: ")
	for _, name := range []string{"email", "phone", "credit card", "US SSN", "IBAN", "IPv4"} {
		b.WriteString(name + " " + planted[name] + "; ")
	}
	b.WriteString("keys: openai=" + planted["OpenAI key"] + " aws=" + planted["AWS key id"] +
		" github=" + planted["GitHub token"] + " anthropic=" + planted["Anthropic key"] +
		" slack=" + planted["Slack token"] + " session " + planted["JWT"] + "; deploy with " + planted["unseen-family token"])
	return b.String()
}

// plantIntoAnyAgent rewrites an any-agent corpus trace: every gen_ai.input.messages value gets a
// user message carrying the planted values (and a password field), and one attribute carries them
// inside a value large enough to be offloaded.
func plantIntoAnyAgent(t *testing.T, src, dst string) {
	data, err := os.ReadFile(src)
	require.NoError(t, err)
	var doc map[string]any
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	require.NoError(t, d.Decode(&doc))
	for _, s := range doc["spans"].([]any) {
		attrs, _ := s.(map[string]any)["attributes"].(map[string]any)
		if attrs == nil {
			continue
		}
		if raw, ok := attrs["gen_ai.input.messages"].(string); ok {
			var msgs []any
			if json.Unmarshal([]byte(raw), &msgs) == nil {
				msgs = append(msgs, map[string]any{"role": "user", "content": plantedText(),
					"password": planted["password value"]})
				b, _ := json.Marshal(msgs)
				attrs["gen_ai.input.messages"] = string(b)
			}
		}
		attrs["gen_ai.tool.call.result"] = strings.Repeat("filler text for a large tool result. ", 200) + plantedText()
	}
	out, err := json.Marshal(doc)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(dst, out, 0o600))
}

// TestPlantedSecretsNeverStored runs corpus traces with planted PII and secrets through
// config/default.yaml and searches every file of the data directory (the SQLite file and its WAL,
// the queue, and every blob, decompressed) for each planted value.
func TestPlantedSecretsNeverStored(t *testing.T) {
	files := corpus.Walk(t, "any-agent", func(p string) bool { return strings.HasSuffix(p, "_trace.json") })
	require.NotEmpty(t, files)
	dir := t.TempDir()
	var inputs []string
	var total int64
	for _, f := range files {
		dst := filepath.Join(dir, filepath.Base(f))
		plantIntoAnyAgent(t, f, dst)
		inputs = append(inputs, dst)
		total += int64(len(anyAgentSpans(t, dst)))
	}
	c := collectortest.Start(t, collectortest.Options{})
	cli(t, c, append([]string{"import", "--endpoint", c.GRPC}, inputs...)...)
	rows := waitForSpans(t, c, total)
	c.Stop() // flush everything to disk before searching

	values := []string{"Customer record: "} // a control: kept by redaction, beside every planted value
	for _, v := range planted {
		values = append(values, v)
	}
	hits, searched, _ := scanDir(t, c.DataDir, values)
	for name, v := range planted {
		assert.Empty(t, hits[v], "%s %q found in %v", name, v, hits[v])
	}
	assert.NotEmpty(t, hits["Customer record: "], "the scan reads where the planted values were sent: it would find them")
	assert.Greater(t, searched, 1)

	// The hash key persists under the data directory, so tokens survive restarts and replays.
	st, err := os.Stat(filepath.Join(c.DataDir, "redaction.key"))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), st.Mode().Perm())

	// The runs are still there and readable, with redaction counted on the spans.
	c.StartAgain()
	show := cli(t, c, "show", "--json", rows[0].TraceID)
	assert.Contains(t, show, "runagain.redaction.count")
}
