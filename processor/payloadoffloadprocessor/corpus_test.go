// SPDX-License-Identifier: Apache-2.0

package payloadoffloadprocessor

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"gopkg.in/yaml.v3"

	"github.com/runagain/runagain/internal/corpus"
	"github.com/runagain/runagain/internal/payloadref/ref"
)

// corpusDoc is one corpus file: its raw bytes, every string found in it (cassette bodies -
// VCR.py body.string, go-vcr body, HAR postData.text / content.text -, attribute values, and so on,
// including inside strings that hold JSON), structured bodies re-encoded as JSON (nock "body" and
// "response" objects, pydantic-ai "parsed_body"), and every "attributes" object (a span's attributes).
type corpusDoc struct {
	path    string
	raw     []byte
	strs    []string
	attrMap []map[string]any
	parsed  bool
}

func loadCorpus(t *testing.T) []*corpusDoc {
	t.Helper()
	files := corpus.Walk(t, ".", func(p string) bool {
		switch strings.ToLower(filepath.Ext(p)) {
		case ".yaml", ".yml", ".json", ".har":
			return true
		}
		return false
	})
	var docs []*corpusDoc
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		d := &corpusDoc{path: f, raw: raw}
		var v any
		if strings.HasSuffix(f, ".yaml") || strings.HasSuffix(f, ".yml") {
			err = yaml.Unmarshal(raw, &v)
		} else {
			err = json.Unmarshal(raw, &v)
		}
		if err == nil {
			d.parsed = true
			d.walk(v, "", 0)
		}
		docs = append(docs, d)
	}
	return docs
}

var structuredBodyKeys = map[string]bool{"body": true, "parsed_body": true, "response": true, "postData": true, "content": true}

func (d *corpusDoc) walk(v any, key string, depth int) {
	if depth > 64 {
		return
	}
	switch x := v.(type) {
	case string:
		d.strs = append(d.strs, x)
		if t := strings.TrimSpace(x); len(t) > 1 && (t[0] == '{' || t[0] == '[') {
			var inner any
			if json.Unmarshal([]byte(t), &inner) == nil {
				d.walk(inner, key, depth+1)
			}
		}
	case map[string]any:
		if key == "attributes" {
			d.attrMap = append(d.attrMap, x)
		}
		if structuredBodyKeys[key] {
			if b, err := json.Marshal(x); err == nil {
				d.strs = append(d.strs, string(b))
			}
		}
		for k, e := range x {
			d.walk(e, k, depth+1)
		}
	case map[any]any:
		m := map[string]any{}
		for k, e := range x {
			m[fmt.Sprint(k)] = e
		}
		d.walk(m, key, depth)
	case []any:
		if structuredBodyKeys[key] {
			if b, err := json.Marshal(x); err == nil {
				d.strs = append(d.strs, string(b))
			}
		}
		for _, e := range x {
			d.walk(e, key, depth+1)
		}
	}
}

// TestCorpusRoundTrip offloads every string of every corpus cassette and trace file (bodies,
// attribute values, the raw files themselves, the 3 MB single-line body of large-payloads/
// included) through the processor to file:// storage and rehydrates each one: the bytes must be
// identical. Values go under a message-list key (so JSON is split into element objects and a
// manifest) and, for raw files, as log bodies.
func TestCorpusRoundTrip(t *testing.T) {
	corpusRoundTrip(t, "file://"+t.TempDir()+"?create_dir=true&metadata=skip", func(string) bool { return true })
}

// corpusRoundTrip runs the corpus round trip against storageURL for the files include accepts.
func corpusRoundTrip(t *testing.T, storageURL string, include func(path string) bool) {
	var docs []*corpusDoc
	for _, d := range loadCorpus(t) {
		if include(d.path) {
			docs = append(docs, d)
		}
	}
	seen := map[string]bool{}
	var values []string
	parsed, cassettes := 0, 0
	var largest string
	for _, d := range docs {
		if d.parsed {
			parsed++
		}
		if strings.Contains(d.path, "cassette") || strings.HasSuffix(d.path, ".har") || strings.Contains(d.path, "mock-responses") || strings.Contains(d.path, "fantasy-go-vcr") {
			cassettes++
		}
		for _, s := range d.strs {
			if s != "" && !seen[s] {
				seen[s] = true
				values = append(values, s)
				if len(s) > len(largest) {
					largest = s
				}
			}
		}
	}
	if len(docs) < 1000 || parsed < len(docs)*9/10 || cassettes < 700*len(docs)/1201 {
		t.Fatalf("corpus: %d files, %d parsed, %d cassettes: the corpus walk is broken", len(docs), parsed, cassettes)
	}
	// The 3 MB single line of large-payloads/ (a base64 image in a pydantic-ai cassette) is one of the values, verbatim.
	threeMB := 0
	for _, d := range docs {
		for _, s := range d.strs {
			if strings.Contains(d.path, "large-payloads") && len(s) >= 3_000_000 && !strings.Contains(s, "\n") && strings.Contains(string(d.raw), s) {
				threeMB++
			}
		}
	}
	if threeMB == 0 {
		t.Fatal("the 3 MB single-line body of large-payloads/ was not extracted")
	}
	t.Logf("%d files (%d parsed, %d cassettes), %d distinct strings, largest %d bytes", len(docs), parsed, cassettes, len(values), len(largest))

	cfg := testConfig(storageURL)
	cfg.MinSize = 1
	cfg.Concurrency = 4
	h := newHarness(t, cfg)
	ctx := context.Background()

	const perBatch = 400
	for start := 0; start < len(values); start += perBatch {
		end := min(start+perBatch, len(values))
		td := ptrace.NewTraces()
		spans := td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans()
		for _, v := range values[start:end] {
			spans.AppendEmpty().Attributes().PutStr("gen_ai.input.messages", v)
		}
		if err := h.traces.ConsumeTraces(ctx, td); err != nil {
			t.Fatal(err)
		}
		out := h.tsink.AllTraces()[0].ResourceSpans().At(0).ScopeSpans().At(0).Spans()
		for i, want := range values[start:end] {
			a := out.At(i).Attributes()
			if _, inline := a.Get("gen_ai.input.messages"); inline {
				t.Fatalf("value %d (%d bytes) not offloaded", start+i, len(want))
			}
			uri, _ := a.Get("gen_ai.input.messages_ref")
			got, err := h.res.Fetch(ctx, uri.Str())
			if err != nil {
				t.Fatalf("value %d: fetch %s: %v", start+i, uri.Str(), err)
			}
			if string(got) != want {
				t.Fatalf("value %d: rehydrated %d bytes differ from the %d offloaded (%.80q)", start+i, len(got), len(want), want)
			}
		}
		h.tsink.Reset()
	}

	// Raw files as log bodies (YAML cassettes whole, JSON traces whole).
	for start := 0; start < len(docs); start += 100 {
		end := min(start+100, len(docs))
		ld := plog.NewLogs()
		lrs := ld.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty().LogRecords()
		for _, d := range docs[start:end] {
			lrs.AppendEmpty().Body().SetStr(string(d.raw))
		}
		if err := h.logs.ConsumeLogs(ctx, ld); err != nil {
			t.Fatal(err)
		}
		got := h.lsink.AllLogs()[0]
		if err := h.res.RehydrateLogs(ctx, got); err != nil {
			t.Fatal(err)
		}
		out := got.ResourceLogs().At(0).ScopeLogs().At(0).LogRecords()
		for i, d := range docs[start:end] {
			if len(d.raw) > 0 && out.At(i).Body().Str() != string(d.raw) {
				t.Fatalf("%s: log body not restored byte for byte", d.path)
			}
		}
		h.lsink.Reset()
	}
	t.Logf("offloaded %d values, %d bytes; stored %d bytes; dedup hits %d",
		h.metric("values_offloaded"), h.metric("bytes_offloaded"), h.metric("bytes_stored"), h.metric("dedup_hits"))
	if h.metric("failures") != 0 {
		t.Fatal("failures counted")
	}
}

// TestCorpusTraceAttributes takes every span attribute set in the corpus traces (Langfuse
// framework traces, any-agent, OpenInference and Vercel AI SDK fixtures...) as it is, runs it
// through the processor with the default keys (min_size 1 so that every matching value moves),
// and checks that rehydration gives back an equal attribute map.
func TestCorpusTraceAttributes(t *testing.T) {
	docs := loadCorpus(t)
	cfg := testConfig("mem://corpus-attributes")
	cfg.MinSize = 1
	h := newHarness(t, cfg)
	ctx := context.Background()
	td := ptrace.NewTraces()
	spans := td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans()
	for _, d := range docs {
		for _, am := range d.attrMap {
			s := spans.AppendEmpty()
			if err := s.Attributes().FromRaw(am); err != nil {
				t.Fatalf("%s: %v", d.path, err)
			}
		}
	}
	orig := ptrace.NewTraces()
	td.CopyTo(orig)
	if err := h.traces.ConsumeTraces(ctx, td); err != nil {
		t.Fatal(err)
	}
	out := h.tsink.AllTraces()[0]
	refKeys := map[string]int{}
	spansOut := out.ResourceSpans().At(0).ScopeSpans().At(0).Spans()
	for i := 0; i < spansOut.Len(); i++ {
		spansOut.At(i).Attributes().Range(func(k string, _ pcommon.Value) bool {
			if ref.IsRefKey(k) {
				refKeys[strings.TrimSuffix(k, ref.RefSuffix)]++
			}
			return true
		})
	}
	if spansOut.Len() < 300 || len(refKeys) < 10 {
		t.Fatalf("%d spans, %d distinct keys offloaded: the corpus attributes were not found", spansOut.Len(), len(refKeys))
	}
	if err := h.res.RehydrateTraces(ctx, out); err != nil {
		t.Fatal(err)
	}
	origSpans := orig.ResourceSpans().At(0).ScopeSpans().At(0).Spans()
	for i := 0; i < origSpans.Len(); i++ {
		if !origSpans.At(i).Attributes().Equal(spansOut.At(i).Attributes()) {
			t.Fatalf("span %d: attributes differ after offload and rehydration", i)
		}
	}
	keys := make([]string, 0, len(refKeys))
	for k, n := range refKeys {
		keys = append(keys, fmt.Sprintf("%s=%d", k, n))
	}
	sort.Strings(keys)
	t.Logf("%d spans; offloaded keys: %s", spansOut.Len(), strings.Join(keys, " "))
}
