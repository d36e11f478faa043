// SPDX-License-Identifier: Apache-2.0

package agentguardconnector // import "github.com/runagain/runagain/connector/agentguardconnector"

import (
	"fmt"

	"github.com/hashicorp/golang-lru/v2/simplelru"

	"github.com/runagain/runagain/internal/genai"
)

// toolErrorDetector raises KindToolErrorSpike when, within tool_errors.window, a tool of a
// service failed in at least tool_errors.threshold of at least tool_errors.min_calls calls and
// at least tool_errors.baseline_factor times its decayed baseline error rate; at most once per
// window per tool. The alert names the failed calls of every session in the window.
type toolErrorDetector struct {
	cfg   ToolErrorsConfig
	tools *simplelru.LRU[string, *rateWindow] // by service "\x00" tool
}

func newToolErrorDetector(cfg ToolErrorsConfig) (*toolErrorDetector, error) {
	tools, err := simplelru.NewLRU[string, *rateWindow](max(cfg.MaxTools, 1), nil)
	if err != nil {
		return nil, fmt.Errorf("tool_errors.max_tools: %w", err)
	}
	return &toolErrorDetector{cfg: cfg, tools: tools}, nil
}

func (d *toolErrorDetector) observe(c *call) *alert {
	if c.kind != genai.KindTool {
		return nil
	}
	cfg := d.cfg
	key := c.service + "\x00" + c.tool
	w, ok := d.tools.Get(key)
	if !ok {
		w = newRateWindow(cfg.Window, cfg.BaselineHalfLife)
		d.tools.Add(key, w)
	}
	isErr := c.errType != ""
	base := w.baseRate(cfg.MinCalls)
	total, hits := w.add(c.end, isErr)
	if !isErr {
		return nil
	}
	w.remember(c.hit())
	rate := float64(hits) / float64(total)
	if total < cfg.MinCalls || rate < cfg.Threshold || rate < cfg.BaselineFactor*base {
		return nil
	}
	if w.lastAlert != 0 && c.end-w.lastAlert < int64(cfg.Window) {
		return nil
	}
	w.lastAlert = c.end
	return &alert{
		kind: KindToolErrorSpike, service: c.service, agent: c.agent, session: c.s.id, at: c.ref,
		subject: kv{genai.AttrToolName, c.tool}, hits: w.inWindow(c.end - int64(cfg.Window)),
		evidence: []evidence{
			{"runagain.alert.calls", int64(total)},
			{"runagain.alert.errors", int64(hits)},
			{"runagain.alert.error_rate", rate},
			{"runagain.alert.baseline_error_rate", base},
			{"runagain.alert.threshold", cfg.Threshold},
			{"runagain.alert.window_s", cfg.Window.Seconds()},
		},
		message: fmt.Sprintf("tool error spike: tool %s failed %d of %d calls (%.0f%%) within %s; its baseline error rate is %.0f%%",
			c.tool, hits, total, rate*100, cfg.Window, base*100),
	}
}
