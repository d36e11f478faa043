// SPDX-License-Identifier: Apache-2.0

package agentredactionprocessor // import "github.com/runagain/runagain/processor/agentredactionprocessor"

import (
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"

	lru "github.com/hashicorp/golang-lru/v2"
	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/runagain/runagain/internal/redact"
)

// An agent repeats what it was given: the password of a user message comes back in the
// assistant's answer, in a tool call's arguments, in a log line. The rules take a credential by
// its context (`password: ...`, a key name, a prefix), and a repeat often has none. So a value
// the secret rules took anywhere in a request is replaced by the same token wherever else it
// stands in that request (every string: attributes at any depth, names, event and link
// attributes, status messages, log bodies), and it is remembered for its trace so that a repeat
// in a later request of the same trace is replaced too.

// DefaultRepeatedSecretTraces is the default of repeated_secret_traces.
const DefaultRepeatedSecretTraces = 10000

// MaxRepeatedSecretTraces is the largest repeated_secret_traces accepted.
const MaxRepeatedSecretTraces = 1000000

// maxSecretsPerTrace bounds what is remembered for one trace (the first ones found are kept);
// within one request every secret found is replaced, whatever the count.
const maxSecretsPerTrace = 32

// echo is one secret value and the token the rules replaced it by.
type echo struct {
	value, rule, token string
}

// echoable reports whether v, a form of a secret (its text, or its raw bytes inside a JSON
// string), is replaced where it repeats: at least redact.MinRepeatedSecret bytes (shorter values
// occur by chance), valid UTF-8, not blank, without a quote or a control byte, and with escaped
// false without a backslash either. Such a value's raw bytes are its text inside a JSON string
// at any depth, so replacing it there keeps the JSON valid. A form holding escapes (escaped) is
// replaced only where a backslash does not escape its first byte (replace).
func echoable(v string, escaped bool) bool {
	if len(v) < redact.MinRepeatedSecret || !utf8.ValidString(v) || strings.TrimSpace(v) == "" {
		return false
	}
	for i := 0; i < len(v); i++ {
		if c := v[i]; c < 0x20 || c == '"' || c == 0x7f || (c == '\\' && !escaped) {
			return false
		}
	}
	return true
}

// goEscaper writes what encoding/json escapes beyond JSON's own escapes (its HTML-safe default).
var goEscaper = strings.NewReplacer("&", `\u0026`, "<", `\u003c`, ">", `\u003e`)

// forms returns the forms of the secret whose raw bytes in s are raw: raw itself, and when raw
// holds a JSON escape inside a JSON value (Go's encoder writes & as \u0026), also its text, and
// for a text holding &, < or > also the form Go's encoder writes; with them the value the rule's
// token was made of (the text of a JSON leaf, else the raw bytes).
func forms(s, raw string) (text string, all []string) {
	if !strings.Contains(raw, `\`) || !redact.LooksJSON(s) {
		if !echoable(raw, false) {
			return raw, nil
		}
		all = []string{raw}
		if g := goEscaper.Replace(raw); g != raw {
			all = append(all, g) // the same text in a JSON document Go's encoder wrote
		}
		return raw, all
	}
	var dec string
	if err := json.Unmarshal([]byte(`"`+raw+`"`), &dec); err != nil {
		return raw, nil // not one level of escapes (a JSON document held in a string): left to the rules
	}
	if echoable(dec, false) {
		all = append(all, dec)
	}
	if echoable(raw, true) {
		all = append(all, raw)
	}
	return dec, all
}

// echoes is one request's set of secrets, found in it or remembered for its traces.
type echoes struct {
	tok  map[string]echo            // value -> echo
	mine map[pcommon.TraceID][]echo // found in this request, per trace, to remember
	vals []echo                     // the set, longest value first (prepare)
}

// note records the secret findings of fs (offsets in s) under trace (empty: a resource or scope
// value, not remembered).
func (e *echoes) note(r *redact.Redactor, trace pcommon.TraceID, s string, fs []redact.Finding) {
	for _, f := range fs {
		if f.Category != redact.CategorySecret {
			continue
		}
		text, all := forms(s, s[f.Start:f.End])
		for _, v := range all {
			if _, ok := e.tok[v]; ok {
				continue
			}
			if e.tok == nil {
				e.tok = map[string]echo{}
			}
			if selfEvident(r, text) {
				e.tok[v] = echo{value: v} // no token: the rules take it wherever it stands
				continue
			}
			ec := echo{value: v, rule: f.Rule, token: r.Token(f.Rule, f.Action, text)}
			e.tok[v] = ec
			if !trace.IsEmpty() {
				if e.mine == nil {
					e.mine = map[pcommon.TraceID][]echo{}
				}
				e.mine[trace] = append(e.mine[trace], ec)
			}
		}
	}
}

// selfEvident reports whether the rules take the secret text on its own, whole (an API key of
// a known family, found by its prefix and shape; an IBAN a credential word stood before): its
// repeats are then found where they stand,
// and only a secret found by its context (a password after its key name, a value after a
// credential word) is looked for in the other strings.
func selfEvident(r *redact.Redactor, text string) bool {
	for _, f := range r.Find(text) {
		if f.Start == 0 && f.End == len(text) {
			return true
		}
	}
	return false
}

// add takes remembered echoes into the set.
func (e *echoes) add(ecs []echo) {
	for _, ec := range ecs {
		if _, ok := e.tok[ec.value]; !ok {
			if e.tok == nil {
				e.tok = map[string]echo{}
			}
			e.tok[ec.value] = ec
		}
	}
}

// prepare orders the set longest first (a secret holding another is replaced whole) and reports
// whether it holds anything.
func (e *echoes) prepare() bool {
	e.vals = e.vals[:0]
	for _, ec := range e.tok {
		if ec.token != "" {
			e.vals = append(e.vals, ec)
		}
	}
	slices.SortFunc(e.vals, func(a, b echo) int {
		if d := len(b.value) - len(a.value); d != 0 {
			return d
		}
		return strings.Compare(a.value, b.value)
	})
	return len(e.vals) > 0
}

// replace returns s with every occurrence of a secret of the set replaced by its token, counting
// each in t per rule. Cost: one substring search per secret of the set.
func (e *echoes) replace(s string, t *tally) (string, int) {
	n := 0
	for _, ec := range e.vals {
		if len(s) < len(ec.value) {
			continue
		}
		var c int
		s, c = replaceForm(s, ec.value, ec.token)
		if c == 0 {
			continue
		}
		n += c
		if t.perRule == nil {
			t.perRule = map[string]int64{}
		}
		t.perRule[ec.rule] += int64(c)
	}
	return s, n
}

// replaceForm replaces every occurrence of v in s by token, except one whose first byte an odd
// run of backslashes before it escapes: inside JSON that byte is part of an escape, not of the
// secret (`\\nZq8...` is a newline and "Zq8...", `\\\\u0026` a backslash and "u0026"), and
// replacing it would break the escape. It returns how many it replaced.
func replaceForm(s, v, token string) (string, int) {
	var sb strings.Builder
	n, prev := 0, 0
	for at := 0; ; {
		j := strings.Index(s[at:], v)
		if j < 0 {
			break
		}
		a := at + j
		at = a + 1
		k := a
		for k > 0 && s[k-1] == '\\' {
			k--
		}
		if (a-k)%2 == 1 {
			continue
		}
		if n == 0 {
			sb.Grow(len(s))
		}
		sb.WriteString(s[prev:a])
		sb.WriteString(token)
		prev = a + len(v)
		at = prev
		n++
	}
	if n == 0 {
		return s, 0
	}
	sb.WriteString(s[prev:])
	return sb.String(), n
}

// value replaces the secrets of the set in v (strings, text bytes, nested slices and maps) in
// place and returns how many it replaced; ignored keys of a map are left as they are.
func (e *echoes) value(v pcommon.Value, ignored func(string) bool, t *tally) int {
	switch v.Type() {
	case pcommon.ValueTypeStr:
		out, n := e.replace(v.Str(), t)
		if n > 0 {
			v.SetStr(out)
		}
		return n
	case pcommon.ValueTypeBytes:
		b := v.Bytes().AsRaw()
		if !utf8.Valid(b) {
			return 0
		}
		out, n := e.replace(string(b), t)
		if n > 0 {
			v.SetEmptyBytes().FromRaw([]byte(out))
		}
		return n
	case pcommon.ValueTypeSlice:
		n := 0
		sl := v.Slice()
		for i := 0; i < sl.Len(); i++ {
			n += e.value(sl.At(i), ignored, t)
		}
		return n
	case pcommon.ValueTypeMap:
		n, _ := e.attrs(v.Map(), ignored, t, false)
		return n
	}
	return 0
}

// attrs replaces the secrets of the set in the values of m and returns how many it replaced,
// with keys also per attribute key.
func (e *echoes) attrs(m pcommon.Map, ignored func(string) bool, t *tally, keys bool) (int, map[string]int64) {
	total := 0
	var per map[string]int64
	m.Range(func(k string, v pcommon.Value) bool {
		if ignored(k) {
			return true
		}
		n := e.value(v, ignored, t)
		total += n
		if keys && n > 0 {
			if per == nil {
				per = map[string]int64{}
			}
			per[k] += int64(n)
		}
		return true
	})
	return total, per
}

// name replaces the secrets of the set in a name through set and returns how many it replaced.
func (e *echoes) name(s string, set func(string), t *tally) int {
	out, n := e.replace(s, t)
	if n > 0 {
		set(out)
	}
	return n
}

// secretMemory remembers, per trace, the secrets found in its earlier requests (at most
// maxSecretsPerTrace each, for the most recently seen traces: an LRU of the configured size).
// It holds the values in clear in the collector's memory, as the request being processed does;
// nothing of it is written anywhere.
type secretMemory struct {
	mu    sync.Mutex
	cache *lru.Cache[pcommon.TraceID, []echo]
}

// memories holds the secret memory of each agent_redaction configuration, shared by the
// processors the collector builds from it (one per signal: a password given in a span and
// repeated in a log record of the trace, as the OpenAI instrumentations write messages, is one
// secret). Keyed by the *Config the factory is given, which is the same for every pipeline of a
// component id; counted, so the last processor's shutdown forgets it.
var memories = struct {
	mu sync.Mutex
	m  map[*Config]*sharedMemory
}{m: map[*Config]*sharedMemory{}}

type sharedMemory struct {
	mem  *secretMemory
	refs int
}

// acquireMemory returns cfg's shared memory (nil when repeated_secret_traces is 0).
func acquireMemory(cfg *Config) *secretMemory {
	memories.mu.Lock()
	defer memories.mu.Unlock()
	sm, ok := memories.m[cfg]
	if !ok {
		sm = &sharedMemory{mem: newSecretMemory(cfg.RepeatedSecretTraces)}
		memories.m[cfg] = sm
	}
	sm.refs++
	return sm.mem
}

// releaseMemory drops one processor's hold on cfg's memory.
func releaseMemory(cfg *Config) {
	memories.mu.Lock()
	defer memories.mu.Unlock()
	if sm, ok := memories.m[cfg]; ok {
		if sm.refs--; sm.refs <= 0 {
			delete(memories.m, cfg)
		}
	}
}

// newSecretMemory returns a memory of size traces, or nil for 0 (repeats are then replaced
// within a request only).
func newSecretMemory(size int) *secretMemory {
	if size <= 0 {
		return nil
	}
	c, _ := lru.New[pcommon.TraceID, []echo](size) // errors only for size <= 0
	return &secretMemory{cache: c}
}

// recall adds to e what is remembered for each trace of traces.
func (m *secretMemory) recall(e *echoes, traces map[pcommon.TraceID]struct{}) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for id := range traces {
		if ecs, ok := m.cache.Get(id); ok {
			e.add(ecs)
		}
	}
}

// remember keeps what e found in this request for its traces, and returns how many values it
// could not keep because their trace already holds maxSecretsPerTrace (the first ones found are
// kept: they are the ones a later request is likeliest to repeat, the credentials the run was
// given).
func (m *secretMemory) remember(e *echoes) (dropped int) {
	if m == nil || len(e.mine) == 0 {
		return 0
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for id, found := range e.mine {
		prev, _ := m.cache.Peek(id)
		next := slices.Clone(prev)
		for _, ec := range found {
			if slices.ContainsFunc(next, func(x echo) bool { return x.value == ec.value }) {
				continue
			}
			if len(next) >= maxSecretsPerTrace {
				dropped++
				continue
			}
			next = append(next, ec)
		}
		m.cache.Add(id, next)
	}
	return dropped
}
