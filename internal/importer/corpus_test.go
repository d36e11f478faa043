// SPDX-License-Identifier: Apache-2.0

package importer

import (
	"encoding/json"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/runagain/runagain/internal/corpus"
	"github.com/runagain/runagain/internal/genai"
)

func langfuseCorpus(t testing.TB) []string {
	files := corpus.Walk(t, "langfuse", func(p string) bool { return strings.HasSuffix(p, ".trace.json") })
	if len(files) == 0 {
		t.Fatal("no *.trace.json under the corpus langfuse/ folder")
	}
	return files
}

func anyAgentCorpus(t testing.TB) []string {
	files := corpus.Walk(t, "any-agent", func(p string) bool { return strings.HasSuffix(p, "_trace.json") })
	if len(files) == 0 {
		t.Fatal("no *_trace.json under the corpus any-agent/ folder")
	}
	return files
}

// parseCorpusFile reads file and parses it, failing the test unless it is detected as format.
func parseCorpusFile(t *testing.T, file, format string) ([]byte, Result) {
	t.Helper()
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	res, err := ParseBytes(file, raw)
	if err != nil {
		t.Fatal(err)
	}
	if res.Format != format {
		t.Fatalf("detected %s, want %s", res.Format, format)
	}
	return raw, res
}

// addedByImporter reports whether key is one the Langfuse importer adds beside the recorded
// OTel attributes (documented on Langfuse).
func addedByImporter(key string) bool {
	switch key {
	case "session.id", "user.id", AttrReportedCost, // lfGenAI: Langfuse's own fields, only where the source lacks them
		genai.AttrRequestModel, genai.AttrOperationName, genai.AttrUsageInputTokens, genai.AttrUsageOutputTokens,
		genai.AttrUsageCacheRead, genai.AttrUsageCacheWrite, genai.AttrUsageReasoning,
		genai.AttrInputMessages, genai.AttrOutputMessages: // lfMessages: the input and output Langfuse moved out of them
		return true
	}
	return strings.HasPrefix(key, "langfuse.")
}

// TestLangfuseCorpus parses every Langfuse trace in the corpus and checks, against an
// independent encoding/json reading of the file, that every observation became one span whose
// attributes, resource and scope equal the source value by value (strings byte for byte,
// numbers by type), with ids, parent links and times intact.
func TestLangfuseCorpus(t *testing.T) {
	for _, file := range langfuseCorpus(t) {
		t.Run(filepath.Base(file), func(t *testing.T) {
			raw, res := parseCorpusFile(t, file, "langfuse")
			src := decodeAny(t, raw).(map[string]any)
			trace := src["trace"].(map[string]any)
			obs := src["observations"].([]any)
			if res.SpanCount() != len(obs) || res.TraceCount() != 1 {
				t.Fatalf("%d spans in %d traces, want %d observations in 1 trace", res.SpanCount(), res.TraceCount(), len(obs))
			}
			spans := spansByID(t, res.Traces)
			values, parents := 0, 0
			for i, o := range obs {
				o := o.(map[string]any)
				id := o["id"].(string)
				ref, ok := spans[id]
				if !ok {
					t.Fatalf("observation %d (%s): no span", i, id)
				}
				sp := ref.span
				if sp.TraceID().String() != trace["id"].(string) {
					t.Errorf("%s: trace id %s", id, sp.TraceID())
				}
				if p, _ := o["parentObservationId"].(string); p != "" {
					parents++
					if sp.ParentSpanID().String() != p {
						t.Errorf("%s: parent %s, want %s", id, sp.ParentSpanID(), p)
					}
					if _, ok := spans[p]; !ok {
						t.Errorf("%s: parent %s not in the file", id, p)
					}
				} else if !sp.ParentSpanID().IsEmpty() {
					t.Errorf("%s: root has parent %s", id, sp.ParentSpanID())
				}
				if sp.Name() != o["name"] {
					t.Errorf("%s: name %q", id, sp.Name())
				}
				checkTime(t, id+".startTime", o["startTime"], sp.StartTimestamp())
				checkTime(t, id+".endTime", o["endTime"], sp.EndTimestamp())
				wantErr := o["level"] == "ERROR"
				if (sp.Status().Code() == ptrace.StatusCodeError) != wantErr {
					t.Errorf("%s: status %v for level %v", id, sp.Status().Code(), o["level"])
				}

				meta := o["metadata"]
				if s, ok := meta.(string); ok {
					meta = decodeAny(t, []byte(s))
				}
				md, _ := meta.(map[string]any)
				srcAttrs, _ := md["attributes"].(map[string]any)
				if d := mapDiff(id+".attributes", srcAttrs, sp.Attributes(), false); d != "" {
					t.Error(d)
				}
				values += countValues(srcAttrs)
				sp.Attributes().Range(func(k string, _ pcommon.Value) bool {
					_, recorded := srcAttrs[k]
					if !recorded && !addedByImporter(k) {
						t.Errorf("%s: attribute %q is neither recorded nor a documented addition", id, k)
					}
					if field := map[string]string{genai.AttrInputMessages: "input", genai.AttrOutputMessages: "output"}[k]; field != "" && !recorded {
						v, _ := sp.Attributes().Get(k)
						if got := decodeAny(t, []byte(v.Str())); !reflect.DeepEqual(got, o[field]) {
							t.Errorf("%s: %s is not the observation's %s", id, k, field)
						}
					}
					return true
				})
				resAttrs, _ := md["resourceAttributes"].(map[string]any)
				if d := mapDiff(id+".resource", resAttrs, ref.res.Attributes(), true); d != "" {
					t.Error(d)
				}
				values += countValues(resAttrs)
				scope, _ := md["scope"].(map[string]any)
				if ref.scope.Name() != str0(scope["name"]) || ref.scope.Version() != str0(scope["version"]) {
					t.Errorf("%s: scope %q %q, want %v %v", id, ref.scope.Name(), ref.scope.Version(), scope["name"], scope["version"])
				}
				scopeAttrs, _ := scope["attributes"].(map[string]any)
				if d := mapDiff(id+".scope.attributes", scopeAttrs, ref.scope.Attributes(), true); d != "" {
					t.Error(d)
				}
				if srcAttrs == nil { // Langfuse-SDK observation: its payload must survive too
					for _, f := range []string{"input", "output"} {
						if v := o[f]; v != nil && v != "" {
							if _, ok := sp.Attributes().Get("langfuse.observation." + f); !ok {
								t.Errorf("%s: %s not kept", id, f)
							}
						}
					}
				}
			}
			t.Logf("%d spans, %d parent links, %d source values compared", len(obs), parents, values)
		})
	}
}

// TestAnyAgentCorpus does the same for every any-agent trace in the corpus.
func TestAnyAgentCorpus(t *testing.T) {
	for _, file := range anyAgentCorpus(t) {
		t.Run(filepath.Base(file), func(t *testing.T) {
			raw, res := parseCorpusFile(t, file, "any-agent")
			src := decodeAny(t, raw).(map[string]any)
			srcSpans := src["spans"].([]any)
			if res.SpanCount() != len(srcSpans) {
				t.Fatalf("%d spans, want %d", res.SpanCount(), len(srcSpans))
			}
			spans := spansByID(t, res.Traces)
			values, parents := 0, 0
			for i, s := range srcSpans {
				s := s.(map[string]any)
				ctx := s["context"].(map[string]any)
				id := decHex(t, ctx["span_id"], 8)
				ref, ok := spans[id]
				if !ok {
					t.Fatalf("span %d (%s): missing", i, id)
				}
				sp := ref.span
				if sp.TraceID().String() != decHex(t, ctx["trace_id"], 16) {
					t.Errorf("%s: trace id %s", id, sp.TraceID())
				}
				parent, _ := s["parent"].(map[string]any)
				if parent != nil && parent["span_id"] != nil {
					parents++
					if want := decHex(t, parent["span_id"], 8); sp.ParentSpanID().String() != want {
						t.Errorf("%s: parent %s want %s", id, sp.ParentSpanID(), want)
					}
				} else if !sp.ParentSpanID().IsEmpty() {
					t.Errorf("%s: root has parent", id)
				}
				if sp.Name() != s["name"] || !strings.EqualFold(sp.Kind().String(), s["kind"].(string)) {
					t.Errorf("%s: name %q kind %v", id, sp.Name(), sp.Kind())
				}
				if fmt.Sprint(uint64(sp.StartTimestamp())) != string(s["start_time"].(json.Number)) ||
					fmt.Sprint(uint64(sp.EndTimestamp())) != string(s["end_time"].(json.Number)) {
					t.Errorf("%s: times %d %d", id, sp.StartTimestamp(), sp.EndTimestamp())
				}
				st := s["status"].(map[string]any)
				if !strings.EqualFold(sp.Status().Code().String(), st["status_code"].(string)) {
					t.Errorf("%s: status %v want %v", id, sp.Status().Code(), st["status_code"])
				}
				attrs := s["attributes"].(map[string]any)
				if d := mapDiff(id+".attributes", attrs, sp.Attributes(), false); d != "" {
					t.Error(d)
				}
				extra := sp.Attributes().Len() - len(attrs)
				if _, has := sp.Attributes().Get("any_agent.final_output"); has {
					extra--
				}
				if extra != 0 {
					t.Errorf("%s: %d attributes not in the source", id, extra)
				}
				values += countValues(attrs)
				resAttrs := s["resource"].(map[string]any)["attributes"].(map[string]any)
				if d := mapDiff(id+".resource", resAttrs, ref.res.Attributes(), true); d != "" {
					t.Error(d)
				}
				if sp.Events().Len() != len(s["events"].([]any)) || sp.Links().Len() != len(s["links"].([]any)) {
					t.Errorf("%s: %d events %d links", id, sp.Events().Len(), sp.Links().Len())
				}
			}
			t.Logf("%d spans, %d parent links, %d source values compared", len(srcSpans), parents, values)
		})
	}
}

// decHex renders a decimal JSON number id as big-endian hex of n bytes (independently of aaID).
func decHex(t testing.TB, v any, n int) string {
	t.Helper()
	num, ok := v.(json.Number)
	if !ok {
		t.Fatalf("id %v is not a number", v)
	}
	b, ok := new(big.Int).SetString(string(num), 10)
	if !ok {
		t.Fatalf("id %v", v)
	}
	return fmt.Sprintf("%0*x", 2*n, b)
}

func checkTime(t *testing.T, what string, v any, got pcommon.Timestamp) {
	t.Helper()
	s, _ := v.(string)
	if s == "" {
		if got != 0 {
			t.Errorf("%s: %v, want unset", what, got)
		}
		return
	}
	want, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if !got.AsTime().Equal(want) {
		t.Errorf("%s: %v, want %v", what, got.AsTime(), want)
	}
}

func str0(v any) string { s, _ := v.(string); return s }

// countValues counts leaf values compared (to show the test did real work).
func countValues(v any) int {
	switch w := v.(type) {
	case map[string]any:
		n := 0
		for _, e := range w {
			n += countValues(e)
		}
		return n
	case []any:
		n := 0
		for _, e := range w {
			n += countValues(e)
		}
		return n
	}
	return 1
}
