// SPDX-License-Identifier: Apache-2.0

package ui

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/runagain/runagain/internal/corpus"
	"github.com/runagain/runagain/internal/genai"
	"github.com/runagain/runagain/internal/importer"
	"github.com/runagain/runagain/internal/runview/rule"
	"github.com/runagain/runagain/internal/store"
	"github.com/runagain/runagain/internal/store/coldstore"
	"github.com/runagain/runagain/internal/store/sqlitestore"
)

// TestAgentsSameInEveryTier imports each Langfuse framework trace of the corpus (as `runagain
// import` does), writes it to a real hot file, warm file (once whole, once one span per request,
// as an SDK's batch processor may send a run) and cold bucket, and checks that the run page names
// the same agents from each: the warm page all the hot page names, the cold page (one agent per
// session record) the greatest of them.
func TestAgentsSameInEveryTier(t *testing.T) {
	ctx := context.Background()
	files := corpus.Walk(t, "langfuse/worker/src/__tests__/chatml/framework-traces", func(p string) bool {
		return strings.HasSuffix(p, ".trace.json")
	})
	require.NotEmpty(t, files)
	named := 0
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			res, err := importer.ParseFile(f)
			require.NoError(t, err)
			td := res.Traces
			hot, warm, cold := writeTiers(t, td)
			split := warmOneSpanEach(t, td)

			for _, id := range traceIDs(td) {
				agents := func(r store.Reader, tier string) []string {
					run, err := r.Run(ctx, id)
					require.NoError(t, err)
					require.Equal(t, tier, run.Tier)
					return arrange(run).detail.Agents
				}
				want := agents(hot, store.TierHot)
				if filepath.Base(f) == "pydantic-ai-2025-06-06.trace.json" { // its "qa_agent run" span has only agent_name
					assert.Equal(t, []string{"qa_agent"}, want, "hot")
				}
				if len(want) > 0 {
					named++
				}
				assert.Equal(t, want, agents(warm, store.TierWarm), "warm")
				assert.Equal(t, want, agents(split, store.TierWarm), "warm, one span per request")
				var greatest []string
				if len(want) > 0 {
					greatest = []string{slices.Max(want)}
				}
				assert.Equal(t, greatest, agents(cold, store.TierCold), "cold")
			}
		})
	}
	assert.GreaterOrEqual(t, named, 5, "runs whose hot page names an agent (OpenAI Agents, Koog, Agno, BeeAI, Pydantic AI)")
}

// writeTiers writes td whole to a real hot file, warm file and cold bucket in a temporary
// directory, closed when the test ends.
func writeTiers(t *testing.T, td ptrace.Traces) (hot *sqlitestore.DB, warm *sqlitestore.WarmDB, cold *coldstore.Store) {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	hot, err := sqlitestore.Open(filepath.Join(dir, "hot.db"), sqlitestore.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = hot.Close() })
	_, err = hot.WriteTraces(ctx, td)
	require.NoError(t, err)
	warm, err = sqlitestore.OpenWarm(filepath.Join(dir, "warm.db"), sqlitestore.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = warm.Close() })
	require.NoError(t, warm.WriteTraces(ctx, td))
	cold, err = coldstore.Open(ctx, filepath.Join(dir, "cold"), coldstore.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = cold.Close() })
	_, err = cold.Write(ctx, store.Partials(td, plog.NewLogs(), nil, 1, nil))
	require.NoError(t, err)
	return hot, warm, cold
}

// warmOneSpanEach writes td into a new warm file one span per request (as a client exporting each
// span on its own would), closed when the test ends.
func warmOneSpanEach(t *testing.T, td ptrace.Traces) *sqlitestore.WarmDB {
	t.Helper()
	split, err := sqlitestore.OpenWarm(filepath.Join(t.TempDir(), "split.db"), sqlitestore.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { split.Close() })
	for _, one := range oneSpanEach(td) {
		require.NoError(t, split.WriteTraces(context.Background(), one))
	}
	return split
}

// oneSpanEach returns td as one request per span, each with its resource and scope.
func oneSpanEach(td ptrace.Traces) []ptrace.Traces {
	var out []ptrace.Traces
	for i := 0; i < td.ResourceSpans().Len(); i++ {
		rs := td.ResourceSpans().At(i)
		for j := 0; j < rs.ScopeSpans().Len(); j++ {
			ss := rs.ScopeSpans().At(j)
			for k := 0; k < ss.Spans().Len(); k++ {
				one := ptrace.NewTraces()
				ors := one.ResourceSpans().AppendEmpty()
				rs.Resource().CopyTo(ors.Resource())
				oss := ors.ScopeSpans().AppendEmpty()
				ss.Scope().CopyTo(oss.Scope())
				ss.Spans().At(k).CopyTo(oss.Spans().AppendEmpty())
				out = append(out, one)
			}
		}
	}
	return out
}

// traceIDs returns the distinct trace ids of td, sorted.
func traceIDs(td ptrace.Traces) []string {
	seen := map[string]bool{}
	for _, one := range oneSpanEach(td) {
		seen[one.ResourceSpans().At(0).ScopeSpans().At(0).Spans().At(0).TraceID().String()] = true
	}
	ids := make([]string, 0, len(seen))
	for id := range seen {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// TestRunTokensCountEachCallOnce imports each Langfuse framework trace of the corpus into a real
// hot file, warm file and cold bucket and checks that each tier lists the run with the tokens of
// its LLM calls, counted once. Pydantic AI's "<agent> run" spans record the sum of their calls'
// usage, so a run that also summed those spans listed every token twice (2630/418 instead of
// 1315/209 for pydantic-ai-tools-2025-12-04) and an "unpriced" cost for each agent span.
func TestRunTokensCountEachCallOnce(t *testing.T) {
	ctx := context.Background()
	files := corpus.Walk(t, "langfuse/worker/src/__tests__/chatml/framework-traces", func(p string) bool {
		return strings.HasSuffix(p, ".trace.json")
	})
	require.NotEmpty(t, files)
	agentUsage := 0
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			res, err := importer.ParseFile(f)
			require.NoError(t, err)
			td := res.Traces
			want := map[string][2]int64{} // trace -> LLM calls' input, output tokens
			var agentSpans []ptrace.Span  // agent invocations that record usage
			uncounted := rule.Uncounted(td)
			for _, one := range oneSpanEach(td) {
				s := one.ResourceSpans().At(0).ScopeSpans().At(0).Spans().At(0)
				k := genai.Classify(s.Attributes())
				u := genai.TokenUsage(s.Attributes())
				if k == genai.KindAgent && u.Total() > 0 {
					agentUsage++
					agentSpans = append(agentSpans, s)
				}
				if k != genai.KindLLM || uncounted[rule.SpanKey{Trace: s.TraceID(), Span: s.SpanID()}] {
					continue // a framework's call over the client library's counts once (runview/rule)
				}
				w := want[s.TraceID().String()]
				want[s.TraceID().String()] = [2]int64{w[0] + u.Input, w[1] + u.Output}
			}
			hot, warm, cold := writeTiers(t, td)
			for tier, r := range map[string]store.Reader{store.TierHot: hot, store.TierWarm: warm, store.TierCold: cold} {
				rows, err := r.Runs(ctx, store.RunFilter{})
				require.NoError(t, err, tier)
				got := map[string][2]int64{}
				for _, row := range rows {
					got[row.TraceID] = [2]int64{row.InputTokens, row.OutputTokens}
				}
				for trace, w := range want {
					assert.Equal(t, w, got[trace], "%s: run %s tokens in/out", tier, trace)
				}
			}
			// The span panel shows an invocation's tokens but no cost of its own (not "$0").
			for _, s := range agentSpans {
				run, err := hot.Run(ctx, s.TraceID().String())
				require.NoError(t, err)
				_, ts := newTestServer(t, run)
				code, body := get(t, ts.URL+"/runs/"+run.TraceID+"/spans/"+s.SpanID().String()+"/panel")
				require.Equal(t, http.StatusOK, code)
				assert.Contains(t, body, "in its calls", "span %s", s.Name())
			}
		})
	}
	assert.Positive(t, agentUsage, "agent spans that record their calls' usage (Pydantic AI)")
}

// TestAgentNamesFromSpanNamesAndResource reads testdata/agent-names.otlp.json (forms no corpus
// trace has) into every tier and checks the run page's agents: a root span named just
// "invoke_agent " names no agent (before: "invoke_agent"); Google ADK's "agent_run [a] [b]" names
// the first bracketed agent, ADK names being Python identifiers (before: "a] [b"); an agent named
// only by its resource's gen_ai.agent.name is named from the warm tier too (before: only hot).
func TestAgentNamesFromSpanNamesAndResource(t *testing.T) {
	ctx := context.Background()
	raw, err := os.ReadFile(filepath.Join("testdata", "agent-names.otlp.json"))
	require.NoError(t, err)
	td, err := (&ptrace.JSONUnmarshaler{}).UnmarshalTraces(raw)
	require.NoError(t, err)
	hot, warm, cold := writeTiers(t, td)
	split := warmOneSpanEach(t, td)
	for trace, want := range map[string][]string{
		"a1000000000000000000000000000001": nil,
		"a2000000000000000000000000000002": {"a"},
		"a3000000000000000000000000000003": {"billing"},
	} {
		for _, tier := range []struct {
			name string
			r    store.Reader
			want string
		}{{"hot", hot, store.TierHot}, {"warm", warm, store.TierWarm}, {"warm, one span per request", split, store.TierWarm}, {"cold", cold, store.TierCold}} {
			run, err := tier.r.Run(ctx, trace)
			require.NoError(t, err)
			require.Equal(t, tier.want, run.Tier)
			assert.Equal(t, want, arrange(run).detail.Agents, "%s: run %s", tier.name, trace)
		}
	}
}

// TestResourceAgentOnWarmPage moves each any-agent corpus trace's gen_ai.agent.name from its
// "invoke_agent [any_agent]" span to the resource (an agent named by its service) and checks that
// the warm page names the agent as the hot page does (the rebuilt warm resource kept only
// service.name, and the page named no agent).
func TestResourceAgentOnWarmPage(t *testing.T) {
	ctx := context.Background()
	files := corpus.Walk(t, "any-agent/tests/assets", func(p string) bool { return strings.HasSuffix(p, "_trace.json") })
	require.NotEmpty(t, files)
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			res, err := importer.ParseFile(f)
			require.NoError(t, err)
			td := res.Traces
			moved := 0
			for i := 0; i < td.ResourceSpans().Len(); i++ {
				rs := td.ResourceSpans().At(i)
				for j := 0; j < rs.ScopeSpans().Len(); j++ {
					spans := rs.ScopeSpans().At(j).Spans()
					for k := 0; k < spans.Len(); k++ {
						if v, ok := spans.At(k).Attributes().Get(genai.AttrAgentName); ok {
							rs.Resource().Attributes().PutStr(genai.AttrAgentName, v.AsString())
							spans.At(k).Attributes().Remove(genai.AttrAgentName)
							moved++
						}
					}
				}
			}
			require.Positive(t, moved)
			hot, warm, _ := writeTiers(t, td)
			for _, id := range traceIDs(td) {
				agents := func(r store.Reader) []string {
					run, err := r.Run(ctx, id)
					require.NoError(t, err)
					return arrange(run).detail.Agents
				}
				want := agents(hot)
				assert.Equal(t, []string{"any_agent"}, want, "hot")
				assert.Equal(t, want, agents(warm), "warm")
			}
		})
	}
}
