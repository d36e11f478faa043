// SPDX-License-Identifier: Apache-2.0

package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/runagain/runagain/internal/proctree"
	"github.com/runagain/runagain/internal/proxy"
	"github.com/runagain/runagain/internal/runagainattr"
)

// joiner places a recorded command's exchanges in the agent's own trace when its SDK ignores
// TRACEPARENT (internal/proxy join.go); nil when there is nothing to join.
type joiner struct {
	wait time.Duration
	root proxy.Root
	tree *proctree.Tree
}

// newJoiner returns a joiner when wait > 0 and the command's environment (the caller's plus
// env) configures an OpenTelemetry exporter: without one the agent sends no trace to join, and
// proxy --record would wait for nothing.
func newJoiner(wait time.Duration, root proxy.Root, env []string) *joiner {
	if wait <= 0 || root.TraceID.IsEmpty() || !exportsOTLP(append(os.Environ(), env...)) {
		return nil
	}
	return &joiner{wait: wait, root: root}
}

// exportsOTLP: OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is set, or
// OTEL_TRACES_EXPORTER names an exporter other than none.
func exportsOTLP(env []string) bool {
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		switch {
		case (k == "OTEL_EXPORTER_OTLP_ENDPOINT" || k == "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") && v != "":
			return true
		case k == "OTEL_TRACES_EXPORTER" && v != "" && v != "none":
			return true
		}
	}
	return false
}

// resourceEnv is OTEL_RESOURCE_ATTRIBUTES with the execution's trace id added to the caller's.
func (j *joiner) resourceEnv() string {
	attr := runagainattr.ExecutionTraceID + "=" + j.root.TraceID.String()
	if v := os.Getenv("OTEL_RESOURCE_ATTRIBUTES"); v != "" {
		return "OTEL_RESOURCE_ATTRIBUTES=" + v + "," + attr
	}
	return "OTEL_RESOURCE_ATTRIBUTES=" + attr
}

// started follows the command's process tree (nil-safe).
func (j *joiner) started(pid int) {
	if j != nil {
		j.tree = proctree.Watch(pid)
	}
}

// join waits for the agent's trace, places the held exchanges (in it, or as they were) and sends
// them; it returns the join, nil when none was made, and says what it did on errOut.
func (j *joiner) join(ctx context.Context, rec *proxy.Recorder, start time.Time, errOut io.Writer) *proxy.Join {
	if j == nil {
		return nil
	}
	held := rec.TakeHeld()
	pids := map[int]bool{}
	if j.tree != nil {
		pids = j.tree.Stop()
	}
	var jn *proxy.Join
	if len(held) > 0 {
		if r, err := openReader(); err != nil {
			fmt.Fprintf(errOut, "runagain proxy: not joining the agent's trace: %v\n", err)
		} else {
			ex := proxy.Execution{Root: j.root, Pids: pids, Start: start, End: time.Now()}
			jn, err = proxy.WaitJoin(ctx, r, ex, j.wait)
			r.Close()
			if err != nil {
				fmt.Fprintf(errOut, "runagain proxy: not joining the agent's trace: %v\n", err)
			}
		}
	}
	proxy.SortByStart(held)
	for _, td := range held {
		if jn != nil {
			jn.Place(td)
		}
		rec.Emit(td)
	}
	switch {
	case len(held) == 0:
	case jn == nil:
		fmt.Fprintf(errOut, "runagain proxy: no trace of the command's own arrived within --join-wait %s; its %d exchanges without traceparent stay in the proxy's run\n", j.wait, len(held))
	default:
		fmt.Fprintf(errOut, "runagain proxy: joined the agent's trace %s (by %s): %d exchanges placed under the calls they belong to (inferred: time, model, body), %d under the proxy's root\n",
			jn.Trace, jn.Evidence, jn.Linked, jn.Unlinked)
	}
	return jn
}
