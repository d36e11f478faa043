// SPDX-License-Identifier: Apache-2.0

package agentguardconnector // import "github.com/runagain/runagain/connector/agentguardconnector"

import (
	"fmt"
	"slices"
	"time"

	"github.com/cespare/xxhash/v2"

	"github.com/runagain/runagain/internal/genai"
)

// loopDetector raises KindLoop once per subject (a tool, or an LLM request model) and session,
// by three rules:
//   - RuleRepeatedToolCall: loop.repeats calls of one tool with identical arguments within
//     loop.window;
//   - RuleRepeatedLLMRequest: loop.repeats identical requests (model, system instructions,
//     input messages) within loop.window;
//   - RuleConsecutiveTool: loop.consecutive_tool calls of one tool in a row in the session,
//     whatever the arguments (0 disables).
//
// A session remembers at most loop.max_fingerprints call fingerprints (loopState).
type loopDetector struct {
	cfg     LoopConfig
	scratch []byte // canonical JSON buffer, reused
}

// loopState is the loop detector's state in one session.
type loopState struct {
	// Fingerprints seen once are kept inline (most calls of a healthy session); those seen
	// twice or more in the window get an occurrences record.
	seen []fpSeen
	reps map[uint64]*occurrences
	// alerted holds the subjects that already raised a loop alert in this session.
	alerted map[subject]bool

	lastTool string    // tool of the current run of consecutive calls
	run      int       // length of that run
	runSpans []spanRef // its spans, at most maxRunSpans
}

const maxRunSpans = 64

// subject is what a loop is about: kind 't' (tool name) or 'l' (LLM request model).
type subject struct {
	kind byte
	name string
}

type fpSeen struct {
	fp  uint64
	ts  int64
	ref spanRef
}

// occurrences are the recent end times (ns) and spans of one call fingerprint, at most N.
type occurrences struct {
	times []int64
	spans []spanRef
}

func newLoopDetector(cfg LoopConfig) *loopDetector {
	return &loopDetector{cfg: cfg}
}

func (d *loopDetector) observe(c *call) *alert {
	switch c.kind {
	case genai.KindLLM:
		if req := genai.LLMRequest(c.attrs); req.Recorded() {
			fp := fingerprint("llm", c.reqModel, genai.SystemInstructions(c.attrs).Identity(), req.Identity())
			return d.repeat(c, fp, subject{'l', c.reqModel}, RuleRepeatedLLMRequest, kv{genai.AttrRequestModel, c.reqModel})
		}
	case genai.KindTool:
		var a *alert
		if args := genai.ToolArguments(c.attrs); args.Recorded() {
			a = d.repeat(c, d.argsFingerprint(c.tool, args), subject{'t', c.tool}, RuleRepeatedToolCall, kv{genai.AttrToolName, c.tool})
		}
		// The run of consecutive calls is counted even when the repeat rule alerted (then
		// the tool's subject has alerted and the consecutive rule stays silent).
		if b := d.consecutive(c); a == nil {
			a = b
		}
		return a
	}
	return nil
}

func fingerprint(parts ...string) uint64 {
	var d xxhash.Digest
	d.Reset()
	sep := [1]byte{0}
	for _, p := range parts {
		_, _ = d.WriteString(p)
		_, _ = d.Write(sep[:])
	}
	return d.Sum64()
}

// argsFingerprint hashes a tool call: the tool name and the identity of its arguments, which is
// the content hash of an offloaded value, or the inline JSON in canonical form (members sorted,
// no insignificant whitespace, so key order and spacing do not matter), or the inline text.
func (d *loopDetector) argsFingerprint(tool string, p genai.Payload) uint64 {
	var h xxhash.Digest
	h.Reset()
	sep := [1]byte{0}
	_, _ = h.WriteString("tool")
	_, _ = h.Write(sep[:])
	_, _ = h.WriteString(tool)
	_, _ = h.Write(sep[:])
	switch {
	case p.Ref != "" || p.Value == "":
		_, _ = h.WriteString(p.Identity())
	case p.Value[0] == '{' || p.Value[0] == '[':
		if b, ok := canonicalJSON(d.scratch[:0], p.Value); ok {
			_, _ = h.Write(b)
			d.scratch = b[:0]
		} else {
			_, _ = h.WriteString(p.Value)
		}
	default:
		_, _ = h.WriteString(p.Value)
	}
	_, _ = h.Write(sep[:])
	return h.Sum64()
}

// repeat counts one call with fingerprint fp and returns an alert when loop.repeats of them
// fell within loop.window and subj0 has not alerted in the session yet.
func (d *loopDetector) repeat(c *call, fp uint64, subj0 subject, rule string, subj kv) *alert {
	cfg := d.cfg
	s, ls, ts, ref := c.s, &c.s.loop, c.end, c.ref
	win := int64(cfg.Window)
	o, ok := ls.reps[fp]
	if !ok {
		k := slices.IndexFunc(ls.seen, func(e fpSeen) bool { return e.fp == fp })
		if k >= 0 && ls.seen[k].ts < ts-win {
			ls.seen[k] = fpSeen{fp, ts, ref} // the earlier call left the window
			return nil
		}
		if k < 0 {
			if len(ls.seen)+len(ls.reps) >= cfg.MaxFingerprints {
				ls.prune(ts - win)
				if len(ls.seen)+len(ls.reps) >= cfg.MaxFingerprints {
					return nil
				}
			}
			ls.seen = append(ls.seen, fpSeen{fp, ts, ref})
			if cfg.Repeats > 1 {
				return nil
			}
			k = len(ls.seen) - 1
		}
		// Second occurrence within the window: promote to a record.
		first := ls.seen[k]
		ls.seen[k] = ls.seen[len(ls.seen)-1]
		ls.seen = ls.seen[:len(ls.seen)-1]
		o = &occurrences{times: []int64{first.ts}, spans: []spanRef{first.ref}}
		if first.ts == ts && first.ref == ref {
			o.times, o.spans = o.times[:0], o.spans[:0]
		}
		if ls.reps == nil {
			ls.reps = map[uint64]*occurrences{}
		}
		ls.reps[fp] = o
	}
	o.times = append(o.times, ts)
	o.spans = append(o.spans, ref)
	drop := 0
	for drop < len(o.times) && o.times[drop] < ts-win {
		drop++
	}
	if extra := len(o.times) - drop - cfg.Repeats; extra > 0 {
		drop += extra
	}
	if drop > 0 {
		o.times = append(o.times[:0], o.times[drop:]...)
		o.spans = append(o.spans[:0], o.spans[drop:]...)
	}
	if len(o.times) < cfg.Repeats || ls.alerted[subj0] {
		return nil
	}
	ls.markAlerted(subj0)
	kindWord := "tool " + subj.v + " called"
	if rule == RuleRepeatedLLMRequest {
		kindWord = "the same request sent to model " + subj.v
	}
	return &alert{
		kind: KindLoop, rule: rule, service: s.service, agent: c.agent, session: s.id, at: ref,
		subject: subj, spans: append([]spanRef(nil), o.spans...),
		evidence: []evidence{
			{"runagain.alert.count", int64(len(o.times))},
			{"runagain.alert.threshold", int64(cfg.Repeats)},
			{"runagain.alert.window_s", cfg.Window.Seconds()},
			{"runagain.alert.first_ts", time.Unix(0, o.times[0]).UTC().Format(time.RFC3339Nano)},
		},
		message: fmt.Sprintf("loop: %s %d times with identical input within %s in session %s", kindWord, len(o.times), cfg.Window, s.id),
	}
}

// consecutive counts the run of calls of c's tool and returns an alert when it reaches
// loop.consecutive_tool and the tool has not alerted in the session yet.
func (d *loopDetector) consecutive(c *call) *alert {
	m := d.cfg.ConsecutiveTool
	if m == 0 {
		return nil
	}
	ls, name := &c.s.loop, c.tool
	if ls.lastTool == name {
		ls.run++
	} else {
		ls.lastTool, ls.run, ls.runSpans = name, 1, ls.runSpans[:0]
	}
	if len(ls.runSpans) < maxRunSpans {
		ls.runSpans = append(ls.runSpans, c.ref)
	}
	subj := subject{'t', name}
	if ls.run < m || ls.alerted[subj] {
		return nil
	}
	ls.markAlerted(subj)
	return &alert{
		kind: KindLoop, rule: RuleConsecutiveTool, service: c.s.service, agent: c.agent, session: c.s.id, at: c.ref,
		subject: kv{genai.AttrToolName, name}, spans: append([]spanRef(nil), ls.runSpans...),
		evidence: []evidence{
			{"runagain.alert.count", int64(ls.run)},
			{"runagain.alert.threshold", int64(m)},
		},
		message: fmt.Sprintf("loop: tool %s called %d times in a row in session %s", name, ls.run, c.s.id),
	}
}

// prune forgets fingerprints whose last call ended before cutoff.
func (ls *loopState) prune(cutoff int64) {
	ls.seen = slices.DeleteFunc(ls.seen, func(e fpSeen) bool { return e.ts < cutoff })
	for k, v := range ls.reps {
		if v.times[len(v.times)-1] < cutoff {
			delete(ls.reps, k)
		}
	}
}

func (ls *loopState) markAlerted(subj subject) {
	if ls.alerted == nil {
		ls.alerted = map[subject]bool{}
	}
	ls.alerted[subj] = true
}
