// SPDX-License-Identifier: Apache-2.0

package proxy

import (
	"context"
	"fmt"
	"os"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// Emit queues extra spans (the run's root span) for the sink.
func (r *Recorder) Emit(td ptrace.Traces) { r.out <- td }

func (r *Recorder) sendLoop() {
	defer r.wg.Done()
	for td := range r.out {
		if r.cfg.Sink == nil {
			continue
		}
		if err := r.cfg.Sink.ConsumeTraces(context.Background(), td); err != nil {
			if r.cfg.SpillPath != "" {
				if serr := spill(r.cfg.SpillPath, td); serr == nil {
					err = fmt.Errorf("%w; kept in %s (send it with: runagain import %s)", err, r.cfg.SpillPath, r.cfg.SpillPath)
				} else {
					err = fmt.Errorf("%w; and keeping it in %s failed: %v", err, r.cfg.SpillPath, serr)
				}
			}
			r.cfg.Logger.Printf("runagain proxy: sending %d spans: %v", td.SpanCount(), err)
			r.stats.Lock()
			r.stats.sendErrors++
			r.stats.lastErr = err
			r.stats.Unlock()
		}
	}
}

// spill appends td to path as one OTLP/JSON line.
func spill(path string, td ptrace.Traces) error {
	b, err := (&ptrace.JSONMarshaler{}).MarshalTraces(td)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.Write(append(b, '\n')); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// Stats is what a Recorder did so far.
type Stats struct {
	Exchanges  int
	Traces     []pcommon.TraceID
	SendErrors int
	LastError  error
}

// Stats returns the counts so far.
func (r *Recorder) Stats() Stats {
	r.stats.Lock()
	defer r.stats.Unlock()
	st := Stats{Exchanges: r.stats.exchanges, SendErrors: r.stats.sendErrors, LastError: r.stats.lastErr}
	for t := range r.stats.traces {
		st.Traces = append(st.Traces, t)
	}
	return st
}

// Close waits until every queued span was handed to the sink. Call it after the server stopped.
func (r *Recorder) Close() error {
	close(r.out)
	r.wg.Wait()
	st := r.Stats()
	if st.SendErrors > 0 {
		return fmt.Errorf("%d span batches could not be sent: %w", st.SendErrors, st.LastError)
	}
	return nil
}
