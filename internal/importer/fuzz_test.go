// SPDX-License-Identifier: Apache-2.0

package importer

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/runagain/runagain/internal/corpus"
)

// Fuzz targets for every parser of outside input in this package: one per format (Parse
// directly) and one through detection (ParseBytes on the Default registry). Seeds: the small
// fixtures of testdata/ and testdata/fuzzseed/, plus, when RUNAGAIN_CORPUS is set, a bounded
// number of small corpus files of the format. `.ci/run` fuzzes each for a bounded time; a crash
// found there is kept as a testdata/fuzz/<Target>/ entry, which `go test` then replays.

const (
	maxCorpusSeeds    = 8
	maxCorpusSeedSize = 64 << 10
)

// seeds adds the named testdata files and, with RUNAGAIN_CORPUS set, up to maxCorpusSeeds files
// under the corpus folders subs accepted by match.
func seeds(f *testing.F, files []string, subs []string, match func(string) bool) {
	f.Helper()
	for _, name := range files {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	if os.Getenv("RUNAGAIN_CORPUS") == "" || match == nil {
		return
	}
	n := 0
	for _, sub := range subs {
		for _, p := range corpus.Walk(f, sub, match) {
			if n >= maxCorpusSeeds {
				return
			}
			if st, err := os.Stat(p); err != nil || st.Size() > maxCorpusSeedSize {
				continue
			}
			b, err := os.ReadFile(p)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(b)
			n++
		}
	}
}

func fuzzFormat(f *testing.F, format Format) {
	f.Fuzz(func(t *testing.T, data []byte) {
		td, err := format.Parse(data)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("an error without a message")
			}
			return
		}
		_ = td.SpanCount()
	})
}

func ext(exts ...string) func(string) bool {
	return func(p string) bool {
		for _, e := range exts {
			if strings.HasSuffix(p, e) {
				return true
			}
		}
		return false
	}
}

func FuzzOTLPJSON(f *testing.F) {
	seeds(f, []string{"otlp_whole.json", "otlp_lines.json", "otlp_bom.json", "bad_otlp_line3.json", "bad_otlp_traceid.json", "bad_otlp_logs.json"}, nil, nil)
	fuzzFormat(f, OTLPJSON{})
}

func FuzzLangfuse(f *testing.F) {
	seeds(f, []string{"langfuse_trace_only.json", "bad_langfuse_attrs.json", "bad_langfuse_syntax.json", "bad_langfuse_time.json"},
		[]string{"langfuse"}, func(p string) bool { return strings.Contains(p, "framework-traces") && strings.HasSuffix(p, ".json") })
	fuzzFormat(f, Langfuse{})
}

func FuzzAnyAgent(f *testing.F) {
	seeds(f, []string{"anyagent_small.json", "bad_anyagent_id.json", "bad_anyagent_spanid.json", "bad_anyagent_truncated_literal.json"},
		[]string{"any-agent"}, ext(".json"))
	fuzzFormat(f, AnyAgent{})
}

func FuzzVCRPy(f *testing.F) {
	seeds(f, []string{"fuzzseed/vcrpy.yaml"}, []string{"openinference", "otel-python-contrib", "openllmetry", "pydantic-ai"}, ext(".yaml", ".yml"))
	fuzzFormat(f, VCRPy{})
}

func FuzzGoVCR(f *testing.F) {
	seeds(f, []string{"fuzzseed/govcr.yaml"}, []string{"fantasy-go-vcr"}, ext(".yaml", ".yml"))
	fuzzFormat(f, GoVCR{})
}

func FuzzNock(f *testing.F) {
	seeds(f, []string{"fuzzseed/nock.json"}, []string{"otel-js-contrib-nock"}, ext(".json"))
	fuzzFormat(f, Nock{})
}

func FuzzHAR(f *testing.F) {
	seeds(f, []string{"fuzzseed/har.har"}, []string{"large-payloads"}, ext(".har"))
	fuzzFormat(f, HAR{})
}

func FuzzWireMock(f *testing.F) {
	seeds(f, []string{"fuzzseed/wiremock.json"}, nil, nil)
	fuzzFormat(f, WireMock{})
}

// FuzzParseBytes: detection and parsing of any content never panics, and what a converting
// format (everything but OTLP/JSON, whose spans are sent as recorded and an invalid one
// quarantined by the collector) parses holds only spans with non-zero trace and span ids.
func FuzzParseBytes(f *testing.F) {
	seeds(f, []string{"otlp_whole.json", "langfuse_trace_only.json", "anyagent_small.json", "fuzzseed/vcrpy.yaml",
		"fuzzseed/govcr.yaml", "fuzzseed/nock.json", "fuzzseed/har.har", "fuzzseed/wiremock.json", "unknown_csv.csv"}, nil, nil)
	f.Fuzz(func(t *testing.T, data []byte) {
		res, err := ParseBytes("fuzz", data)
		if err != nil || res.Format == (OTLPJSON{}).Name() {
			return
		}
		rss := res.Traces.ResourceSpans()
		for i := 0; i < rss.Len(); i++ {
			sss := rss.At(i).ScopeSpans()
			for j := 0; j < sss.Len(); j++ {
				spans := sss.At(j).Spans()
				for k := 0; k < spans.Len(); k++ {
					if s := spans.At(k); s.TraceID().IsEmpty() || s.SpanID().IsEmpty() {
						t.Fatalf("%s: span %d has an all-zero id (trace %s span %s)", res.Format, k, s.TraceID(), s.SpanID())
					}
				}
			}
		}
	})
}
