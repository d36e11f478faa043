// SPDX-License-Identifier: Apache-2.0

package agentredactionprocessor

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/processor/processortest"

	"github.com/runagain/runagain/internal/corpus"
	"github.com/runagain/runagain/internal/importer"
	"github.com/runagain/runagain/internal/redact"
)

// plantValues are the PII and credentials planted into corpus spans, one per span in turn.
func plantValues(i int) string {
	vals := []string{
		fmt.Sprintf("jane.doe%d@example.com", i),
		"+44 20 7946 0958",
		"4111 1111 1111 1111",
		"sk-proj-" + strings.Repeat("Zq3vN8xW2kLm5pR7", 3),
		"AKIA" + "Z7QW3ER5TY7UI9OP",
		"ghp_" + strings.Repeat("Aa1Bb2Cc3D", 4)[:36],
		"DE89 3704 0044 0532 0130 00",
		"123-45-6789",
	}
	return vals[i%len(vals)]
}

// plantInto puts v into s: inside a string leaf when s is a JSON document, else appended.
func plantInto(s, v string) string {
	if redact.LooksJSON(s) {
		var doc any
		if json.Unmarshal([]byte(s), &doc) == nil {
			planted := false
			var walk func(any) any
			walk = func(x any) any {
				switch y := x.(type) {
				case string:
					if !planted {
						planted = true
						return y + " (contact " + v + ")"
					}
				case []any:
					for k := range y {
						y[k] = walk(y[k])
					}
				case map[string]any:
					for k := range y {
						y[k] = walk(y[k])
					}
				}
				return x
			}
			doc = walk(doc)
			if planted {
				b, _ := json.Marshal(doc)
				return string(b)
			}
		}
	}
	return s + " contact " + v
}

// TestCorpusTracesWithPlantedValues runs real agent traces from the corpus (Langfuse and any-agent
// exports, converted to OTLP by internal/importer) with PII and credentials planted into their
// string attributes through the processor: none of the planted values survives, every JSON
// attribute stays valid JSON, and each span with a planted value carries runagain.redaction.count.
func TestCorpusTracesWithPlantedValues(t *testing.T) {
	files := corpus.Walk(t, "langfuse", func(p string) bool { return strings.HasSuffix(p, ".trace.json") })
	files = append(files, corpus.Walk(t, "any-agent", func(p string) bool { return strings.HasSuffix(p, "_trace.json") })...)
	require.NotEmpty(t, files)
	cfg := createDefaultConfig().(*Config)
	cfg.HashKey = "corpus-test"
	spansSeen, planted := 0, 0
	for _, f := range files {
		res, err := importer.ParseFile(f)
		if err != nil {
			t.Logf("skip %s: %v", f, err)
			continue
		}
		td := res.Traces
		var values []string
		wasJSON := map[string]bool{}
		plantedIn := map[string]bool{} // span ids
		forEachSpan(td, func(id string, span ptrace.Span) {
			spansSeen++
			span.Attributes().Range(func(k string, v pcommon.Value) bool {
				if v.Type() != pcommon.ValueTypeStr || v.Str() == "" {
					return true
				}
				pv := plantValues(planted)
				planted++
				values = append(values, pv)
				plantedIn[id] = true
				v.SetStr(plantInto(v.Str(), pv))
				if redact.LooksJSON(v.Str()) && json.Valid([]byte(v.Str())) {
					wasJSON[id+"/"+k] = true
				}
				return true
			})
		})
		sink := new(consumertest.TracesSink)
		p, err := NewFactory().CreateTraces(context.Background(), processortest.NewNopSettings(component.MustNewType("agent_redaction")), cfg, sink)
		require.NoError(t, err)
		require.NoError(t, p.ConsumeTraces(context.Background(), td))
		out := sink.AllTraces()[0]
		b, err := (&ptrace.JSONMarshaler{}).MarshalTraces(out)
		require.NoError(t, err)
		all := string(b)
		for _, v := range values {
			if strings.Contains(all, v) {
				t.Errorf("%s: planted %q survived", f, v)
			}
		}
		forEachSpan(out, func(id string, span ptrace.Span) {
			span.Attributes().Range(func(k string, v pcommon.Value) bool {
				if wasJSON[id+"/"+k] && !json.Valid([]byte(v.Str())) {
					t.Errorf("%s: %s of span %s is no longer JSON", f, k, id)
				}
				return true
			})
			if _, ok := span.Attributes().Get(CountAttribute); plantedIn[id] && !ok {
				t.Errorf("%s: span %s has no %s", f, id, CountAttribute)
			}
		})
	}
	if planted < 100 {
		t.Fatalf("planted only %d values in %d spans", planted, spansSeen)
	}
	t.Logf("%d files, %d spans, %d planted values removed", len(files), spansSeen, planted)
}

func forEachSpan(td ptrace.Traces, f func(id string, span ptrace.Span)) {
	rss := td.ResourceSpans()
	for i := 0; i < rss.Len(); i++ {
		sss := rss.At(i).ScopeSpans()
		for j := 0; j < sss.Len(); j++ {
			spans := sss.At(j).Spans()
			for k := 0; k < spans.Len(); k++ {
				s := spans.At(k)
				f(fmt.Sprintf("%d/%d/%d", i, j, k), s)
			}
		}
	}
}
