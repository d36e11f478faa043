// SPDX-License-Identifier: Apache-2.0

package dataset

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"gopkg.in/yaml.v3"

	"github.com/runagain/runagain/internal/corpus"
	"github.com/runagain/runagain/internal/runagainattr"
)

// semconvEvent is the definition of one event in semantic-conventions-genai's model.
type semconvEvent struct {
	Name       string `yaml:"name"`
	Attributes []struct {
		Ref              string    `yaml:"ref"`
		RefGroup         string    `yaml:"ref_group"`
		RequirementLevel yaml.Node `yaml:"requirement_level"`
	} `yaml:"attributes"`
}

// evaluationConvention reads the gen_ai.evaluation.result event from the corpus's copy of the
// conventions: its attributes (ref_groups expanded from spans.yaml) with their requirement level
// ("required", "conditionally_required", "recommended") and the registry's type of each.
func evaluationConvention(t *testing.T) (levels map[string]string, types map[string]string) {
	t.Helper()
	dir := filepath.Join(corpus.Dir(t), "semconv-genai", "model", "gen-ai")
	read := func(name string, v any) {
		b, err := os.ReadFile(filepath.Join(dir, name))
		require.NoError(t, err)
		require.NoError(t, yaml.Unmarshal(b, v))
	}
	var events struct{ Events []semconvEvent }
	read("events.yaml", &events)
	var groups struct {
		Groups []struct {
			ID         string `yaml:"id"`
			Attributes []struct {
				Ref string `yaml:"ref"`
			} `yaml:"attributes"`
		} `yaml:"attribute_groups"`
	}
	read("spans.yaml", &groups)
	var registry struct {
		Attributes []struct {
			Key  string    `yaml:"key"`
			Type yaml.Node `yaml:"type"`
		} `yaml:"attributes"`
	}
	read("registry.yaml", &registry)
	level := func(n yaml.Node) string {
		if n.Kind == yaml.ScalarNode {
			return n.Value
		}
		if n.Kind == yaml.MappingNode && len(n.Content) > 0 {
			return n.Content[0].Value
		}
		return "recommended"
	}
	levels = map[string]string{}
	for _, e := range events.Events {
		if e.Name != "gen_ai.evaluation.result" {
			continue
		}
		for _, a := range e.Attributes {
			if a.Ref != "" {
				levels[a.Ref] = level(a.RequirementLevel)
				continue
			}
			for _, g := range groups.Groups {
				if g.ID == a.RefGroup {
					for _, ga := range g.Attributes {
						levels[ga.Ref] = "conditionally_required"
					}
				}
			}
		}
	}
	require.NotEmpty(t, levels, "no gen_ai.evaluation.result event in the corpus's semconv-genai")
	types = map[string]string{}
	for _, a := range registry.Attributes {
		if a.Type.Kind == yaml.ScalarNode {
			types[a.Key] = a.Type.Value
		}
	}
	return levels, types
}

// Every test result becomes one gen_ai.evaluation.result event that follows the conventions as
// the corpus's semantic-conventions-genai defines them: the required attribute present, every
// gen_ai.* / error.type attribute one the event defines, of the registry's type; the label and
// score say pass or fail, an error carries error.type and no score; the event is parented to the
// test run's root span and has a stable record id.
func TestEvaluationEventFollowsConventions(t *testing.T) {
	levels, types := evaluationConvention(t)
	m := &Manifest{Name: "weather", Version: strings.Repeat("ab", 32)}
	traceID := pcommon.TraceID{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}
	root := pcommon.SpanID{9, 8, 7, 6, 5, 4, 3, 2}
	fl := &Failure{Expectation: `output contains "sunny"`, Expected: `output containing "sunny"`, Got: "no final output"}
	results := map[string]*CaseResult{
		"pass":  {Case: "c1", Status: "pass", Original: "aa", New: traceID.String(), Checked: []string{`output contains "sunny"`, ExpectExitZero}},
		"fail":  {Case: "c1", Status: "fail", Original: "aa", New: traceID.String(), Failure: fl, Failures: []*Failure{fl, {Expectation: "max_steps 2", Expected: "at most 2 steps", Got: "3"}}, DiffCmd: "runagain diff aa " + traceID.String()},
		"error": {Case: "c1", Status: "error", Original: "aa", New: traceID.String(), Error: "case c1: its run has no recorded HTTP or MCP exchanges to replay"},
	}
	ids := map[string]bool{}
	for status, r := range results {
		t.Run(status, func(t *testing.T) {
			ld := EvaluationLogs(m, r, traceID, root, time.Unix(1764460800, 0))
			require.Equal(t, 1, ld.LogRecordCount())
			lr := ld.ResourceLogs().At(0).ScopeLogs().At(0).LogRecords().At(0)
			assert.Equal(t, "gen_ai.evaluation.result", lr.EventName())
			assert.Equal(t, traceID, lr.TraceID())
			assert.Equal(t, root, lr.SpanID(), "parented to the test run's root span")
			a := lr.Attributes()
			for k, lvl := range levels {
				if lvl == "required" {
					assert.Contains(t, a.AsRaw(), k, "required attribute")
				}
			}
			a.Range(func(k string, v pcommon.Value) bool {
				if strings.HasPrefix(k, "runagain.") {
					return true
				}
				_, defined := levels[k]
				assert.True(t, defined, "%s is not an attribute of gen_ai.evaluation.result", k)
				if typ, ok := types[k]; ok {
					want := map[string]pcommon.ValueType{"string": pcommon.ValueTypeStr, "double": pcommon.ValueTypeDouble, "int": pcommon.ValueTypeInt}[typ]
					assert.Equal(t, want, v.Type(), "%s: registry type %s", k, typ)
				}
				return true
			})
			get := func(k string) string {
				v, ok := a.Get(k)
				if !ok {
					return "<absent>"
				}
				return v.AsString()
			}
			assert.Equal(t, "weather", get("gen_ai.evaluation.name"))
			assert.Equal(t, "c1", get(runagainattr.TestCase))
			assert.Equal(t, m.Version, get(runagainattr.TestVersion))
			expl := get("gen_ai.evaluation.explanation")
			switch status {
			case "pass":
				assert.Equal(t, "pass", get("gen_ai.evaluation.score.label"))
				assert.Equal(t, "1", get("gen_ai.evaluation.score.value"))
				assert.Contains(t, expl, `output contains "sunny"`)
				assert.Equal(t, "<absent>", get("error.type"))
				assert.Equal(t, plog.SeverityNumberInfo, lr.SeverityNumber())
			case "fail":
				assert.Equal(t, "fail", get("gen_ai.evaluation.score.label"))
				assert.Equal(t, "0", get("gen_ai.evaluation.score.value"))
				assert.Contains(t, expl, `output contains "sunny": expected output containing "sunny", got no final output`)
				assert.Contains(t, expl, "max_steps 2: expected at most 2 steps, got 3")
				assert.Contains(t, expl, "compare: runagain diff aa "+traceID.String())
				assert.Equal(t, plog.SeverityNumberWarn, lr.SeverityNumber())
			case "error":
				assert.Equal(t, "<absent>", get("gen_ai.evaluation.score.label"))
				assert.Equal(t, "<absent>", get("gen_ai.evaluation.score.value"))
				assert.Equal(t, "_OTHER", get("error.type"))
				assert.Contains(t, expl, "no recorded HTTP or MCP exchanges")
			}
			id := get(runagainattr.RecordID)
			assert.Len(t, id, 64)
			ids[id] = true
			again := EvaluationLogs(m, r, traceID, root, time.Now())
			v, _ := again.ResourceLogs().At(0).ScopeLogs().At(0).LogRecords().At(0).Attributes().Get(runagainattr.RecordID)
			assert.Equal(t, id, v.Str(), "the record id does not depend on when it is sent")
		})
	}
	assert.Len(t, ids, 1, "one case of one run: one record id whatever its status")
}
