// SPDX-License-Identifier: Apache-2.0

package agentguardconnector // import "github.com/runagain/runagain/connector/agentguardconnector"

import (
	"fmt"

	"github.com/DataDog/sketches-go/ddsketch"
	"github.com/hashicorp/golang-lru/v2/simplelru"
)

// costSpikeDetector raises KindCostSpike once per session when the session's priced cost is
// at least cost_spike.min_cost and more than cost_spike.factor times the median cost of the
// ended sessions of its (agent, service) group, given at least cost_spike.min_sessions of them.
type costSpikeDetector struct {
	cfg    CostSpikeConfig
	groups *simplelru.LRU[string, *baseline] // by agent "\x00" service
}

func newCostSpikeDetector(cfg CostSpikeConfig) (*costSpikeDetector, error) {
	groups, err := simplelru.NewLRU[string, *baseline](max(cfg.MaxGroups, 1), nil)
	if err != nil {
		return nil, fmt.Errorf("cost_spike.max_groups: %w", err)
	}
	return &costSpikeDetector{cfg: cfg, groups: groups}, nil
}

func groupKey(agent, service string) string { return agent + "\x00" + service }

// sessionEnded adds the cost of an ended session with at least one priced call to its group's
// baseline.
func (d *costSpikeDetector) sessionEnded(s *session) {
	if s.priced == 0 {
		return
	}
	key := groupKey(s.agent, s.service)
	b, ok := d.groups.Get(key)
	if !ok {
		b = &baseline{}
		d.groups.Add(key, b)
	}
	b.add(s.cost, d.cfg)
}

func (d *costSpikeDetector) observe(c *call) *alert {
	s := c.s
	if !c.costed || s.costAlerted || s.cost < d.cfg.MinCost {
		return nil
	}
	bl, ok := d.groups.Get(groupKey(s.agent, s.service))
	if !ok || bl.count() < float64(d.cfg.MinSessions) {
		return nil
	}
	med := bl.median()
	if med <= 0 || s.cost <= d.cfg.Factor*med {
		return nil
	}
	s.costAlerted = true
	return &alert{
		kind: KindCostSpike, service: s.service, agent: s.agent, session: s.id, at: c.ref,
		spans: []spanRef{c.ref},
		evidence: []evidence{
			{"runagain.alert.session_cost", s.cost},
			{"runagain.alert.median_cost", med},
			{"runagain.alert.factor", d.cfg.Factor},
			{"runagain.alert.baseline_sessions", int64(bl.count())},
			{"runagain.alert.priced_calls", int64(s.priced)},
		},
		message: fmt.Sprintf("cost spike: session %s has cost %.4f USD, more than %g x the median %.4f USD of %d ended sessions of agent %q in service %q",
			s.id, s.cost, d.cfg.Factor, med, int64(bl.count()), s.agent, s.service),
	}
}

// baseline holds the costs of ended sessions of one (agent, service) group in two DDSketch
// generations of cost_spike.baseline_sessions each; the median is read from their merge
// (relative error cost_spike.relative_accuracy).
type baseline struct {
	cur, prev *ddsketch.DDSketch
	curN      int
	med       float64
	dirty     bool
}

func (b *baseline) add(v float64, cfg CostSpikeConfig) {
	if b.cur == nil {
		b.cur, _ = ddsketch.NewDefaultDDSketch(cfg.RelativeAccuracy)
	}
	_ = b.cur.Add(v)
	b.curN++
	b.dirty = true
	if b.curN >= cfg.BaselineSessions {
		b.prev, b.curN = b.cur, 0
		b.cur, _ = ddsketch.NewDefaultDDSketch(cfg.RelativeAccuracy)
	}
}

func (b *baseline) count() float64 {
	n := 0.0
	if b.cur != nil {
		n += b.cur.GetCount()
	}
	if b.prev != nil {
		n += b.prev.GetCount()
	}
	return n
}

func (b *baseline) median() float64 {
	if b.dirty {
		m := b.cur.Copy()
		if b.prev != nil {
			_ = m.MergeWith(b.prev)
		}
		b.med, _ = m.GetValueAtQuantile(0.5)
		b.dirty = false
	}
	return b.med
}
