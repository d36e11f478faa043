// SPDX-License-Identifier: Apache-2.0

package diff

import (
	"maps"
	"runtime"
	"slices"
	"sync"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/runagain/runagain/internal/genai"
)

// Reading an LLM step's messages (decoding its message JSON) is most of the time of a large
// diff: a 10,000-span run has about 5,000 LLM calls, each of a few KiB of JSON per side
// (BENCHMARKS.md). Two runs being compared are mostly the same run (a rerun, the same agent
// on the same input, a run with itself), so most aligned LLM steps were recorded with exactly
// the same content. Runs therefore compares the recorded content first (sameRecord: the bytes
// the messages are read from) and reads the messages of such a pair once; comparePair then
// knows without comparing them that the two steps' messages, system instructions, tool
// definitions, tool calls and output are the same. A pair whose recorded content differs in
// any byte is read on both sides and compared as before, so two recordings that differ only in
// their encoding (key order, whitespace, another dialect of the same messages) still compare
// as the same when their messages are the same: the diff is of messages, not of bytes. The
// step's own fields that are not read from the messages (model, tokens, cost, latency, status,
// error, the request the recorded exchange sent) are compared on every pair.

// fastPaths turns on what this file describes: a run diffed with itself listed once, a pair
// recorded with the same content read once and its messages not compared, tool texts compared
// as bytes before JSON. Tests turn it off to compare every result with the one read and
// compared in full.
var fastPaths = true

// readCalls reads the messages of LLM step s and what the step shows from them (the source,
// a read error, the finish reasons when the span has none, the request with tools offered and
// system instructions), then merges the request bodies of its recorded exchanges.
func readCalls(s *step, msgs MessagesFunc) {
	n := s.node
	a := n.Effective.Attributes()
	cm, err := msgs(n.Effective, n.Logs)
	if err != nil {
		s.MessagesError = err.Error()
	}
	rawFallback(&cm, a)
	s.calls = &cm
	s.FinishReasons = genai.FinishReasons(a)
	if len(s.FinishReasons) == 0 {
		for _, m := range cm.Output {
			if m.FinishReason != "" {
				s.FinishReasons = append(s.FinishReasons, m.FinishReason)
			}
		}
	}
	s.request = requestOf(a, &cm)
	s.finishCalls()
}

// shareCalls gives LLM step s the messages read for step from, recorded with the same content
// (sameRecord): everything read from that content is the same; what belongs to s's own node
// (derived from an exchange, the exchanges that carried it) is its own.
func shareCalls(s, from *step) {
	s.calls = from.calls
	s.MessagesError = from.MessagesError
	s.FinishReasons = slices.Clone(from.FinishReasons)
	s.request = from.request
	s.finishCalls()
}

// finishCalls sets what an LLM step shows from its messages and its node.
func (s *step) finishCalls() {
	s.Derived = s.calls.Derived || s.node.Derived
	s.MessagesSource = string(s.calls.InputSource)
	s.Request = maps.Clone(s.request)
	for _, w := range s.wire {
		s.Request = mergeRequest(s.Request, w)
	}
}

// readAll reads the messages of the LLM steps of the two aligned runs: a step of B aligned with
// a step of A recorded with the same content shares A's reading (a run diffed with itself, the
// same step list on both sides, is read once); every other LLM step is read, on every core.
func readAll(sa, sb []*step, pairs []alignOp, msgs MessagesFunc) {
	var todo []*step
	shared := map[*step]*step{}
	for _, s := range sa {
		if s.node != nil {
			todo = append(todo, s)
		}
	}
	sameList := fastPaths && len(sa) > 0 && len(sa) == len(sb) && &sa[0] == &sb[0]
	if !sameList {
		for _, o := range pairs {
			if !fastPaths || o.a < 0 || o.b < 0 {
				continue
			}
			x, y := sa[o.a].node, sb[o.b].node
			if x != nil && y != nil && sameRecord(x.Effective, y.Effective, x.Logs, y.Logs) {
				shared[sb[o.b]] = sa[o.a]
			}
		}
		for _, s := range sb {
			if _, ok := shared[s]; !ok && s.node != nil {
				todo = append(todo, s)
			}
		}
	}
	readEach(todo, msgs)
	for s, from := range shared {
		shareCalls(s, from)
	}
}

// readEach runs readCalls on every step, spread over GOMAXPROCS goroutines (a MessagesFunc is
// called concurrently; genai.LLMCallMessages only reads its span and logs).
func readEach(todo []*step, msgs MessagesFunc) {
	workers := min(runtime.GOMAXPROCS(0), len(todo)/64+1)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < len(todo); i += workers {
				readCalls(todo[i], msgs)
			}
		}()
	}
	wg.Wait()
}

// sameRecord reports whether two LLM spans hold exactly the content their messages are read
// from: the span attributes (in order, by key and value), the span events (name and
// attributes, in order) and the log records (event name, attributes and body, in order). What
// no reader of messages looks at (ids, names, timestamps, status) is not compared. A false
// answer only means the messages are read and compared; true means they are the same.
func sameRecord(x, y ptrace.Span, lx, ly []plog.LogRecord) bool {
	if !sameAttrs(x.Attributes(), y.Attributes()) {
		return false
	}
	ex, ey := x.Events(), y.Events()
	if ex.Len() != ey.Len() || len(lx) != len(ly) {
		return false
	}
	for i := 0; i < ex.Len(); i++ {
		a, b := ex.At(i), ey.At(i)
		if a.Name() != b.Name() || !sameAttrs(a.Attributes(), b.Attributes()) {
			return false
		}
	}
	for i := range lx {
		a, b := lx[i], ly[i]
		if a.EventName() != b.EventName() || !sameAttrs(a.Attributes(), b.Attributes()) || !a.Body().Equal(b.Body()) {
			return false
		}
	}
	return true
}

// sameAttrs reports whether two attribute maps hold the same keys with equal values in the same
// order (pcommon.Value.Equal: same type and value; strings byte for byte).
func sameAttrs(a, b pcommon.Map) bool {
	if a.Len() != b.Len() {
		return false
	}
	type kv struct {
		k string
		v pcommon.Value
	}
	list := make([]kv, 0, a.Len())
	a.Range(func(k string, v pcommon.Value) bool {
		list = append(list, kv{k, v})
		return true
	})
	i, same := 0, true
	b.Range(func(k string, v pcommon.Value) bool {
		same = list[i].k == k && list[i].v.Equal(v)
		i++
		return same
	})
	return same
}
