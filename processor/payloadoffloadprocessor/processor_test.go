// SPDX-License-Identifier: Apache-2.0

package payloadoffloadprocessor

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/runagain/runagain/internal/payloadref/ref"
)

func bigMessages(n, size int) string {
	msgs := make([]map[string]any, n)
	for i := range msgs {
		msgs[i] = map[string]any{"role": []string{"user", "assistant"}[i%2], "parts": []any{map[string]any{"type": "text", "content": fmt.Sprintf("%d %s", i, strings.Repeat("x", size))}}}
	}
	b, _ := json.MarshalIndent(msgs, "", "  ")
	return string(b)
}

func oneSpan() (ptrace.Traces, ptrace.Span) {
	td := ptrace.NewTraces()
	s := td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans().AppendEmpty()
	s.SetName("chat gpt-4o")
	return td, s
}

func str(m pcommon.Map, k string) (string, bool) {
	v, ok := m.Get(k)
	if !ok {
		return "", false
	}
	return v.Str(), true
}

// TestTracesSelection offloads exactly the matching, large enough string values of span and
// span event attributes, and leaves the rest (small, other keys, non-strings, *_ref, values that
// already have a *_ref) untouched.
func TestTracesSelection(t *testing.T) {
	h := newHarness(t, testConfig("mem://selection"))
	td, s := oneSpan()
	a := s.Attributes()
	in := bigMessages(20, 300)
	result := strings.Repeat("tool output line\n", 400)
	exact := strings.Repeat("e", 4096)
	a.PutStr("gen_ai.input.messages", in)
	a.PutStr("gen_ai.tool.call.result", result)
	a.PutStr("gen_ai.prompt.0.content", exact)                                                     // exactly min_size: moves
	a.PutStr("gen_ai.output.messages", strings.Repeat("s", 4095))                                  // below min_size
	a.PutStr("my.custom.blob", strings.Repeat("c", 10000))                                         // not a configured key
	a.PutInt("gen_ai.usage.input_tokens", 12345)                                                   // not a string
	a.PutStr("ai.response.text_ref", "file:///nonexistent/sdk/"+strings.Repeat("r", 5000)+".json") // a reference
	a.PutStr("gen_ai.system_instructions", strings.Repeat("i", 5000))                              // SDK hook already uploaded it
	a.PutStr("gen_ai.system_instructions_ref", "file:///sdk/instructions.json")
	ev := s.Events().AppendEmpty()
	ev.SetName("gen_ai.content.prompt")
	ev.Attributes().PutStr("gen_ai.prompt", in) // same bytes as the span attribute: one object
	orig := ptrace.NewTraces()
	td.CopyTo(orig)

	if err := h.traces.ConsumeTraces(context.Background(), td); err != nil {
		t.Fatal(err)
	}
	out := h.tsink.AllTraces()[0].ResourceSpans().At(0).ScopeSpans().At(0).Spans().At(0)
	oa := out.Attributes()
	for _, k := range []string{"gen_ai.input.messages", "gen_ai.tool.call.result", "gen_ai.prompt.0.content"} {
		if _, ok := oa.Get(k); ok {
			t.Errorf("%s still inline", k)
		}
		uri, ok := str(oa, k+"_ref")
		if !ok || !strings.HasPrefix(uri, "mem://selection/sha256/") {
			t.Errorf("%s_ref = %q", k, uri)
		}
	}
	for _, k := range []string{"gen_ai.output.messages", "my.custom.blob", "ai.response.text_ref", "gen_ai.system_instructions", "gen_ai.system_instructions_ref"} {
		ov, _ := orig.ResourceSpans().At(0).ScopeSpans().At(0).Spans().At(0).Attributes().Get(k)
		if v, ok := str(oa, k); !ok || v != ov.Str() {
			t.Errorf("%s changed", k)
		}
	}
	if v, _ := oa.Get("gen_ai.usage.input_tokens"); v.Int() != 12345 {
		t.Error("int attribute changed")
	}
	if _, ok := oa.Get(FailedKeysAttr); ok {
		t.Error("span marked as failed")
	}
	evRef, _ := str(out.Events().At(0).Attributes(), "gen_ai.prompt_ref")
	spanRef, _ := str(oa, "gen_ai.input.messages_ref")
	if evRef == "" || evRef != spanRef {
		t.Errorf("event ref %q, span ref %q: same bytes must give the same object", evRef, spanRef)
	}
	if !strings.HasSuffix(spanRef, ref.ManifestSuffix) {
		t.Errorf("message list stored as %s, want a manifest", spanRef)
	}
	if r, _ := str(oa, "gen_ai.tool.call.result_ref"); !strings.HasSuffix(r, ".zst") || strings.HasSuffix(r, ref.ManifestSuffix) {
		t.Errorf("tool result stored as %s, want a single object", r)
	}

	// Rehydration gives the original span back.
	// *_ref attributes that were there before are rehydrated too; these two point nowhere.
	err := h.res.RehydrateTraces(context.Background(), h.tsink.AllTraces()[0])
	if err == nil || strings.Count(err.Error(), "attribute ") != 2 || !strings.Contains(err.Error(), "ai.response.text_ref") || !strings.Contains(err.Error(), "gen_ai.system_instructions_ref") {
		t.Fatalf("rehydrate: %v; want errors for the two dangling SDK refs only", err)
	}
	back := h.tsink.AllTraces()[0].ResourceSpans().At(0).ScopeSpans().At(0).Spans().At(0)
	for _, k := range []string{"gen_ai.input.messages", "gen_ai.tool.call.result", "gen_ai.prompt.0.content"} {
		want, _ := str(orig.ResourceSpans().At(0).ScopeSpans().At(0).Spans().At(0).Attributes(), k)
		if got, _ := str(back.Attributes(), k); got != want {
			t.Errorf("%s: rehydrated %d bytes, want %d", k, len(got), len(want))
		}
	}
	if got, _ := str(back.Events().At(0).Attributes(), "gen_ai.prompt"); got != in {
		t.Error("event attribute not rehydrated")
	}

	if got, want := h.metric("values_offloaded"), int64(4); got != want {
		t.Errorf("values_offloaded = %d, want %d", got, want)
	}
	if got, want := h.metric("bytes_offloaded"), int64(2*len(in)+len(result)+len(exact)); got != want {
		t.Errorf("bytes_offloaded = %d, want %d", got, want)
	}
	if got := h.metric("dedup_hits"); got != 1 {
		t.Errorf("dedup_hits = %d, want 1 (the event repeats the span's messages)", got)
	}
	if got := h.metric("bytes_stored"); got <= 0 || got >= int64(len(in)+len(result)+len(exact)) {
		t.Errorf("bytes_stored = %d, want compressed bytes below the %d offloaded", got, len(in)+len(result)+len(exact))
	}
	if got := h.metric("upload_duration"); got != 3 {
		t.Errorf("upload_duration recorded %d times, want 3 (one per distinct value)", got)
	}
	if got := h.metric("failures"); got != 0 {
		t.Errorf("failures = %d", got)
	}
}

// TestLogs offloads log attributes, string log bodies and the large string values of Map bodies
// (nested ones too), and rehydrates them all.
func TestLogs(t *testing.T) {
	h := newHarness(t, testConfig("mem://logs"))
	ld := plog.NewLogs()
	lrs := ld.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty().LogRecords()
	body := bigMessages(10, 500)
	lr := lrs.AppendEmpty()
	lr.Body().SetStr(body)
	lr.Attributes().PutStr("gen_ai.output.messages", bigMessages(3, 2000))
	mapBody := lrs.AppendEmpty()
	mapBody.Body().SetEmptyMap().PutStr("content", strings.Repeat("m", 9000))
	mapBody.Body().Map().PutStr("id", "call_1")
	tc := mapBody.Body().Map().PutEmptySlice("tool_calls").AppendEmpty().SetEmptyMap().PutEmptyMap("function")
	tc.PutStr("arguments", strings.Repeat("a", 9000))
	small := lrs.AppendEmpty()
	small.Body().SetStr("short")
	orig := plog.NewLogs()
	ld.CopyTo(orig)

	if err := h.logs.ConsumeLogs(context.Background(), ld); err != nil {
		t.Fatal(err)
	}
	got := h.lsink.AllLogs()[0]
	out := got.ResourceLogs().At(0).ScopeLogs().At(0).LogRecords()
	if out.At(0).Body().Type() != pcommon.ValueTypeEmpty {
		t.Errorf("offloaded body is %v, want empty", out.At(0).Body().Type())
	}
	if _, ok := str(out.At(0).Attributes(), ref.LogBodyRefKey); !ok {
		t.Error("no log.body_ref")
	}
	if _, ok := str(out.At(0).Attributes(), "gen_ai.output.messages_ref"); !ok {
		t.Error("log attribute not offloaded")
	}
	mb := out.At(1).Body().Map()
	if _, ok := str(mb, "content_ref"); !ok {
		t.Error("large string in a Map body not offloaded")
	}
	if v, ok := str(mb, "id"); !ok || v != "call_1" {
		t.Error("small string in a Map body changed")
	}
	calls, _ := mb.Get("tool_calls")
	fn, _ := calls.Slice().At(0).Map().Get("function")
	if _, ok := str(fn.Map(), "arguments_ref"); !ok {
		t.Error("nested large string in a Map body not offloaded")
	}
	if out.At(2).Body().Str() != "short" {
		t.Error("small body changed")
	}
	if err := h.res.RehydrateLogs(context.Background(), got); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		a, b := orig.ResourceLogs().At(0).ScopeLogs().At(0).LogRecords().At(i), out.At(i)
		if a.Body().AsString() != b.Body().AsString() || !a.Attributes().Equal(b.Attributes()) {
			t.Errorf("log record %d differs after rehydration", i)
		}
	}
	if got := h.metric("values_offloaded"); got != 4 {
		t.Errorf("values_offloaded = %d, want 4", got)
	}
}

// brokenStorage returns a file:// URL whose directory is replaced by a regular file after the
// processor started, so that every write fails.
func brokenStorage(t *testing.T) (url string, breakIt func()) {
	dir := filepath.Join(t.TempDir(), "blobs")
	return "file://" + dir + "?create_dir=true&metadata=skip", func() {
		if err := os.RemoveAll(dir); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dir, []byte("not a directory"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

// TestKeepInline: with storage failing, values stay, the span and log record are marked, the
// failure counter rises, and the data flows on without error.
func TestKeepInline(t *testing.T) {
	url, breakIt := brokenStorage(t)
	h := newHarness(t, testConfig(url))
	breakIt()
	td, s := oneSpan()
	in := bigMessages(5, 1000)
	s.Attributes().PutStr("gen_ai.input.messages", in)
	s.Events().AppendEmpty().Attributes().PutStr("gen_ai.tool.call.arguments", strings.Repeat("a", 5000))
	if err := h.traces.ConsumeTraces(context.Background(), td); err != nil {
		t.Fatalf("keep_inline returned %v", err)
	}
	out := h.tsink.AllTraces()[0].ResourceSpans().At(0).ScopeSpans().At(0).Spans().At(0)
	if v, _ := str(out.Attributes(), "gen_ai.input.messages"); v != in {
		t.Fatal("value not kept inline")
	}
	if _, ok := out.Attributes().Get("gen_ai.input.messages_ref"); ok {
		t.Fatal("ref set for a failed value")
	}
	marks, ok := out.Attributes().Get(FailedKeysAttr)
	if !ok || marks.Slice().Len() != 2 || marks.Slice().At(0).Str() != "gen_ai.input.messages" || marks.Slice().At(1).Str() != "gen_ai.tool.call.arguments" {
		t.Fatalf("span mark = %v", marks.AsRaw())
	}
	ld := plog.NewLogs()
	ld.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty().LogRecords().AppendEmpty().Body().SetStr(strings.Repeat("b", 5000))
	if err := h.logs.ConsumeLogs(context.Background(), ld); err != nil {
		t.Fatal(err)
	}
	lr := h.lsink.AllLogs()[0].ResourceLogs().At(0).ScopeLogs().At(0).LogRecords().At(0)
	if m, _ := lr.Attributes().Get(FailedKeysAttr); lr.Body().Str() != strings.Repeat("b", 5000) || m.Slice().At(0).Str() != "log.body" {
		t.Fatal("log body not kept and marked")
	}
	if got := h.metric("failures"); got != 3 {
		t.Errorf("failures = %d, want 3", got)
	}
	if got := h.metric("values_offloaded"); got != 0 {
		t.Errorf("values_offloaded = %d, want 0", got)
	}
}

// TestReject: with storage failing and on_failure: reject, the batch is refused unchanged.
func TestReject(t *testing.T) {
	url, breakIt := brokenStorage(t)
	cfg := testConfig(url)
	cfg.OnFailure = OnFailureReject
	h := newHarness(t, cfg)
	breakIt()
	td, s := oneSpan()
	s.Attributes().PutStr("gen_ai.input.messages", bigMessages(5, 1000))
	s.Attributes().PutStr("gen_ai.output.messages", bigMessages(2, 3000))
	orig := ptrace.NewTraces()
	td.CopyTo(orig)
	err := h.traces.ConsumeTraces(context.Background(), td)
	if err == nil || !strings.Contains(err.Error(), "on_failure: reject") {
		t.Fatalf("reject returned %v", err)
	}
	if len(h.tsink.AllTraces()) != 0 {
		t.Fatal("rejected batch reached the next consumer")
	}
	if !td.ResourceSpans().At(0).ScopeSpans().At(0).Spans().At(0).Attributes().Equal(orig.ResourceSpans().At(0).ScopeSpans().At(0).Spans().At(0).Attributes()) {
		t.Fatal("rejected batch was modified")
	}
	if got := h.metric("failures"); got != 2 {
		t.Errorf("failures = %d, want 2", got)
	}
}

// TestCooldown: after a value fails its whole retry, storage is not tried during storage.cooldown
// (values fail at once and stay inline), then it is tried again and offload resumes.
func TestCooldown(t *testing.T) {
	url, breakIt := brokenStorage(t)
	cfg := testConfig(url)
	cfg.Storage.Cooldown = 200 * time.Millisecond
	h := newHarness(t, cfg)
	breakIt()
	send := func(i int) ptrace.Span {
		td, s := oneSpan()
		s.Attributes().PutStr("gen_ai.tool.call.result", fmt.Sprintf("%d %s", i, strings.Repeat("r", 5000)))
		if err := h.traces.ConsumeTraces(context.Background(), td); err != nil {
			t.Fatal(err)
		}
		all := h.tsink.AllTraces()
		return all[len(all)-1].ResourceSpans().At(0).ScopeSpans().At(0).Spans().At(0)
	}
	attempts := func() int64 { return h.metric("upload_duration") }

	if _, ok := send(1).Attributes().Get(FailedKeysAttr); !ok || attempts() != 1 {
		t.Fatalf("first batch: marked=%v attempts=%d, want a failed attempt", ok, attempts())
	}
	if _, ok := send(2).Attributes().Get(FailedKeysAttr); !ok || attempts() != 1 {
		t.Fatalf("second batch within the cooldown: marked=%v attempts=%d, want kept inline without an attempt", ok, attempts())
	}
	// Storage comes back; after the cooldown the next value is tried and offloaded.
	dir := strings.TrimPrefix(strings.SplitN(url, "?", 2)[0], "file://")
	if err := os.Remove(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	s := send(3)
	if _, ok := s.Attributes().Get("gen_ai.tool.call.result_ref"); !ok || attempts() != 2 {
		t.Fatalf("after the cooldown: attempts=%d, attributes %v: want the value offloaded", attempts(), s.Attributes().AsRaw())
	}
	if got := h.metric("failures"); got != 2 {
		t.Errorf("failures = %d, want 2", got)
	}
}

// TestConcurrentBatches sends overlapping conversations from several goroutines at once (the
// same messages are stored by concurrent writers) and checks every value comes back.
func TestConcurrentBatches(t *testing.T) {
	for _, url := range []string{"mem://concurrent", "file://" + t.TempDir() + "?create_dir=true&metadata=skip"} {
		cfg := testConfig(url)
		h := newHarness(t, cfg)
		history := []string{}
		for i := 0; i < 12; i++ {
			history = append(history, msgJSON(i))
		}
		value := func(n int) string { return "[" + strings.Join(history[:n], ",") + "]" }
		var wg sync.WaitGroup
		errs := make(chan error, 8)
		for g := 0; g < 8; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for n := 2; n <= 12; n++ {
					td, s := oneSpan()
					s.SetName(fmt.Sprint(n))
					s.Attributes().PutStr("gen_ai.input.messages", value(n))
					if err := h.traces.ConsumeTraces(context.Background(), td); err != nil {
						errs <- err
						return
					}
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		all := h.tsink.AllTraces()
		if len(all) != 8*11 {
			t.Fatalf("%d batches delivered, want %d", len(all), 8*11)
		}
		for _, td := range all {
			s := td.ResourceSpans().At(0).ScopeSpans().At(0).Spans().At(0)
			var n int
			if _, err := fmt.Sscan(s.Name(), &n); err != nil {
				t.Fatal(err)
			}
			if err := h.res.RehydrateSpan(context.Background(), s); err != nil {
				t.Fatal(err)
			}
			if v, _ := str(s.Attributes(), "gen_ai.input.messages"); v != value(n) {
				t.Fatalf("%s: turn %d not rehydrated byte for byte", url, n)
			}
		}
		if h.metric("failures") != 0 {
			t.Fatalf("%s: failures counted", url)
		}
	}
}

func msgJSON(i int) string {
	b, _ := json.Marshal(textMsg([]string{"user", "assistant"}[i%2], fmt.Sprintf("message %d %s", i, strings.Repeat("lorem ipsum ", 60))))
	return string(b)
}
