// SPDX-License-Identifier: Apache-2.0

package agentguardconnector // import "github.com/runagain/runagain/connector/agentguardconnector"

import (
	"fmt"

	"github.com/hashicorp/golang-lru/v2/simplelru"

	"github.com/runagain/runagain/internal/genai"
)

// contextPressureDetector raises KindContextPressure when, within context_pressure.window,
// more than context_pressure.threshold of at least context_pressure.min_responses responses of
// a model (those with finish reasons) stopped for one of context_pressure.finish_reasons; at
// most once per window per model. The alert names the truncated responses in the window.
type contextPressureDetector struct {
	cfg     ContextPressureConfig
	reasons map[string]bool
	models  *simplelru.LRU[string, *rateWindow] // by gen_ai.response.model or request model
}

func newContextPressureDetector(cfg ContextPressureConfig) (*contextPressureDetector, error) {
	models, err := simplelru.NewLRU[string, *rateWindow](max(cfg.MaxModels, 1), nil)
	if err != nil {
		return nil, fmt.Errorf("context_pressure.max_models: %w", err)
	}
	d := &contextPressureDetector{cfg: cfg, models: models, reasons: map[string]bool{}}
	for _, r := range cfg.FinishReasons {
		d.reasons[r] = true
	}
	return d, nil
}

func (d *contextPressureDetector) observe(c *call) *alert {
	if c.kind != genai.KindLLM {
		return nil
	}
	reasons := genai.FinishReasons(c.attrs)
	if len(reasons) == 0 {
		return nil
	}
	cfg := d.cfg
	model := genai.Model(c.attrs)
	hit := false
	for _, r := range reasons {
		hit = hit || d.reasons[r]
	}
	w, ok := d.models.Get(model)
	if !ok {
		w = newRateWindow(cfg.Window, cfg.Window)
		d.models.Add(model, w)
	}
	total, hits := w.add(c.end, hit)
	if !hit {
		return nil
	}
	w.remember(c.hit())
	share := float64(hits) / float64(total)
	if total < cfg.MinResponses || share <= cfg.Threshold {
		return nil
	}
	if w.lastAlert != 0 && c.end-w.lastAlert < int64(cfg.Window) {
		return nil
	}
	w.lastAlert = c.end
	return &alert{
		kind: KindContextPressure, service: c.service, agent: c.agent, session: c.s.id, at: c.ref,
		subject: kv{genai.AttrRequestModel, model}, hits: w.inWindow(c.end - int64(cfg.Window)),
		evidence: []evidence{
			{"runagain.alert.responses", int64(total)},
			{"runagain.alert.truncated", int64(hits)},
			{"runagain.alert.share", share},
			{"runagain.alert.threshold", cfg.Threshold},
			{"runagain.alert.window_s", cfg.Window.Seconds()},
		},
		message: fmt.Sprintf("context pressure: %d of %d responses of model %s (%.0f%%) within %s stopped at the token limit",
			hits, total, model, share*100, cfg.Window),
	}
}
