// SPDX-License-Identifier: Apache-2.0

package agentguardconnector // import "github.com/runagain/runagain/connector/agentguardconnector"

import (
	"time"
	"unsafe"

	"go.opentelemetry.io/collector/pdata/pcommon"
)

// session is the per-session state: identity, the cost priced so far (it joins the cost
// baseline of its group when the session ends) and the state each detector keeps per session.
type session struct {
	id, agent, service string
	cost               float64 // USD of the priced LLM calls so far
	priced             int     // priced LLM calls
	lastSeen           time.Time

	loop        loopState // loop detector
	costAlerted bool      // cost spike detector: one alert per session

	bytes int64 // heapBytes when last accounted (state.account)
}

// Sizes (bytes, 64-bit Go) heapBytes adds up. lruEntryBytes is one entry of simplelru's map and
// list (the list element, 48, the map slot of a string key and pointer, 24, and the map's
// per-slot overhead), mapSlotBytes one slot of a Go map of small keys and values with its share
// of the table's control bytes and load factor (7/8).
const (
	sessionBytes   = int64(unsafe.Sizeof(session{}))
	fpSeenBytes    = int64(unsafe.Sizeof(fpSeen{}))
	spanRefBytes   = int64(unsafe.Sizeof(spanRef{}))
	occurBytes     = int64(unsafe.Sizeof(occurrences{}))
	subjectBytes   = int64(unsafe.Sizeof(subject{}))
	lruEntryBytes  = 96
	mapSlotBytes   = 24
	mapHeaderBytes = 48
)

// heapBytes estimates the heap bytes s holds: the struct and its LRU entry, its strings (the
// id counted twice: key and field), and the loop detector's slices and maps by capacity. It is
// an estimate (allocator size classes round up): the heap freed when sessions of the bench's
// shape go is 1.14 times it (TestSessionsMemoryBound allows 0.65-1.35).
func (s *session) heapBytes() int64 {
	n := sessionBytes + lruEntryBytes + int64(2*len(s.id)+len(s.agent)+len(s.service))
	ls := &s.loop
	n += int64(cap(ls.seen))*fpSeenBytes + int64(cap(ls.runSpans))*spanRefBytes + int64(len(ls.lastTool))
	if ls.reps != nil {
		n += mapHeaderBytes + int64(len(ls.reps))*(mapSlotBytes+8)
		for _, o := range ls.reps {
			n += occurBytes + int64(cap(o.times))*8 + int64(cap(o.spans))*spanRefBytes
		}
	}
	if ls.alerted != nil {
		n += mapHeaderBytes
		for subj := range ls.alerted {
			n += subjectBytes + 8 + int64(len(subj.name))
		}
	}
	return n
}

// spanRef names one span.
type spanRef struct {
	trace pcommon.TraceID
	span  pcommon.SpanID
}

// firstDelivery records ref as counted and reports whether it was not counted before (within
// the last cfg.MaxSeenSpans spans).
func (st *state) firstDelivery(ref spanRef) bool {
	if st.seen.Contains(ref) {
		return false
	}
	st.seen.Add(ref, struct{}{})
	return true
}

// session returns the state of e's session, creating it, and marks it seen at now.
func (st *state) session(e *event, now time.Time) *session {
	s, ok := st.sessions.Get(e.session)
	if !ok {
		s = &session{id: e.session, service: e.service}
		st.sessions.Add(e.session, s)
	}
	if s.agent == "" {
		s.agent = e.agent
	}
	if s.service == "" {
		s.service = e.service
	}
	s.lastSeen = now
	return s
}

// endSession runs when a session leaves the LRU (idle expiry or eviction): the detectors that
// learn from ended sessions see it (its cost joins the baseline of its group), then onEnd.
func (st *state) endSession(_ string, s *session) {
	st.bytes -= s.bytes
	for _, d := range st.enders {
		d.sessionEnded(s)
	}
	if st.onEnd != nil {
		st.onEnd(s, !st.expiring)
	}
}

// expire ends sessions last seen before cutoff and returns how many.
func (st *state) expire(cutoff time.Time) int {
	st.expiring = true
	defer func() { st.expiring = false }()
	n := 0
	for {
		_, s, ok := st.sessions.GetOldest()
		if !ok || !s.lastSeen.Before(cutoff) {
			return n
		}
		st.sessions.RemoveOldest()
		n++
	}
}
