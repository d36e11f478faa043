// SPDX-License-Identifier: Apache-2.0

package agentguardconnector // import "github.com/runagain/runagain/connector/agentguardconnector"

import (
	"time"

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
