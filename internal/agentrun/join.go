// SPDX-License-Identifier: Apache-2.0

package agentrun

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/runagain/runagain/internal/proctree"
	"github.com/runagain/runagain/internal/proxy"
	"github.com/runagain/runagain/internal/runagainattr"
	"github.com/runagain/runagain/internal/store"
)

// Joiner makes one run of an execution whose agent writes its own trace but ignores
// TRACEPARENT: it follows the command's process tree, and after the command ends it waits for
// the agent's trace in the store and places the exchanges the proxy held in it
// (internal/proxy join.go: by resource or process, then time, model and body). proxy --record,
// rerun, replay and test use it (Hold before the command, then Join or Attempt). A nil *Joiner
// does nothing.
type Joiner struct {
	wait time.Duration
	root proxy.Root
	open func() (store.Reader, error)
	verb string // "proxy", "rerun": the prefix of what Join says
	tree *proctree.Tree
}

// NewJoiner returns a Joiner when wait > 0, root names a run and the command's environment (this
// process's plus env) configures an OpenTelemetry exporter (exportsOTLP): without one the agent
// sends no trace to join, and the caller would wait for nothing. open opens the store the
// collector writes to; verb prefixes the lines Join writes ("runagain VERB: ...").
func NewJoiner(wait time.Duration, root proxy.Root, env []string, open func() (store.Reader, error), verb string) *Joiner {
	if wait <= 0 || root.TraceID.IsEmpty() || !exportsOTLP(append(os.Environ(), env...)) {
		return nil
	}
	return &Joiner{wait: wait, root: root, open: open, verb: verb}
}

// exportsOTLP: OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is set, or
// OTEL_TRACES_EXPORTER names an exporter other than none (the OpenTelemetry SDK environment
// variables of the specification's "Environment Variable Specification").
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

// ResourceEnv is OTEL_RESOURCE_ATTRIBUTES with the execution's trace id
// (runagainattr.ExecutionTraceID) added to this process's: the strongest evidence that a trace
// belongs to the execution. "" for a nil Joiner.
func (j *Joiner) ResourceEnv() string {
	if j == nil {
		return ""
	}
	attr := runagainattr.ExecutionTraceID + "=" + j.root.TraceID.String()
	if v := os.Getenv("OTEL_RESOURCE_ATTRIBUTES"); v != "" {
		return "OTEL_RESOURCE_ATTRIBUTES=" + v + "," + attr
	}
	return "OTEL_RESOURCE_ATTRIBUTES=" + attr
}

// Started follows the command's process tree from pid (Run's started callback).
func (j *Joiner) Started(pid int) {
	if j != nil {
		j.tree = proctree.Watch(pid)
	}
}

// Holder is the proxy side of a join (proxy.Recorder, and proxy.Replayer in rerun mode): it holds
// the exchanges that carry no traceparent (Hold) and sends them once placed.
type Holder interface {
	Hold()
	TakeHeld() []ptrace.Traces
	Emit(td ptrace.Traces)
}

// RecordHolder is the replay side of an attempt's join (proxy.Replayer): its divergence record is
// held until the run it belongs to is known.
type RecordHolder interface {
	HoldRecords()
	ReleaseRecords(trace pcommon.TraceID)
}

// Hold prepares the execution for a join before the command starts: h (nil: none, replay) holds
// its exchanges, rh (nil: none) its divergence record, and the command's environment env gains
// ResourceEnv. It returns env; a nil Joiner returns it unchanged.
func (j *Joiner) Hold(h Holder, rh RecordHolder, env []string) []string {
	if j == nil {
		return env
	}
	if h != nil {
		h.Hold()
	}
	if rh != nil {
		rh.HoldRecords()
	}
	return append(env, j.ResourceEnv())
}

// Pending names the run an attempt will be while its command runs: the agent's trace once joined,
// else trace (the attempt's own).
func (j *Joiner) Pending(trace pcommon.TraceID) string {
	if j == nil {
		return trace.String()
	}
	return "the agent's own trace, joined when it ends (else " + trace.String() + ")"
}

// Attempt ends the join of a rerun, replay or test run after its command ended: it places the
// exchanges h held (Join; h nil: none were recorded, Find) and the attempt's root span root in the
// agent's trace, and releases rh's divergence record (nil: none) into it. It returns the agent's
// trace and true, or false when no join was made (a nil Joiner included): the attempt's run is
// then its own trace, where the records are released.
func (j *Joiner) Attempt(ctx context.Context, h Holder, rh RecordHolder, root ptrace.Traces, start time.Time, errOut io.Writer) (pcommon.TraceID, bool) {
	if j == nil {
		return pcommon.TraceID{}, false
	}
	var jn *proxy.Join
	if h != nil {
		jn = j.Join(ctx, h, start, errOut)
	} else {
		jn = j.Find(ctx, start, errOut)
	}
	var into pcommon.TraceID // empty: the records stay in the attempt's trace
	if jn != nil {
		jn.PlaceRoot(root)
		into = jn.Trace
	}
	if rh != nil {
		rh.ReleaseRecords(into)
	}
	return into, jn != nil
}

// Join waits for the agent's trace, places the held exchanges (in it, or as they were) and sends
// them through h; it returns the join, nil when none was made, and says what it did on errOut.
// start is when the command started. With no exchange held it does not wait: the proxy's run
// then holds nothing the agent's trace needs (see Find).
func (j *Joiner) Join(ctx context.Context, h Holder, start time.Time, errOut io.Writer) *proxy.Join {
	if j == nil {
		return nil
	}
	held := h.TakeHeld()
	var jn *proxy.Join
	if len(held) > 0 {
		jn = j.wait4(ctx, start, errOut)
	} else {
		j.stopTree()
	}
	proxy.SortByStart(held)
	for _, td := range held {
		if jn != nil {
			jn.Place(td)
		}
		h.Emit(td)
	}
	switch {
	case len(held) == 0:
	case jn == nil:
		fmt.Fprintf(errOut, "runagain %s: no trace of the command's own arrived within --join-wait %s; its %d exchanges without traceparent stay in the proxy's run\n", j.verb, j.wait, len(held))
	default:
		how := "inferred: time, model, body"
		switch {
		case jn.Edited > 0 && jn.Edited == jn.Linked:
			how = "inferred: time alone, their requests changed by --set"
		case jn.Edited > 0:
			how += fmt.Sprintf("; %d by time alone, their requests changed by --set", jn.Edited)
		}
		fmt.Fprintf(errOut, "runagain %s: joined the agent's trace %s (by %s): %d exchanges placed under the calls they belong to (%s), %d under the proxy's root\n",
			j.verb, jn.Trace, jn.Evidence, jn.Linked, how, jn.Unlinked)
	}
	return jn
}

// Find waits for the agent's trace without exchanges to place (replay: its exchanges are served,
// not recorded): the caller puts its root span (Join.PlaceRoot) and its records in it. nil when
// none arrived within the wait; it says what it found on errOut.
func (j *Joiner) Find(ctx context.Context, start time.Time, errOut io.Writer) *proxy.Join {
	if j == nil {
		return nil
	}
	jn := j.wait4(ctx, start, errOut)
	if jn == nil {
		fmt.Fprintf(errOut, "runagain %s: no trace of the command's own arrived within --join-wait %s; the attempt stays a run of its own\n", j.verb, j.wait)
	} else {
		fmt.Fprintf(errOut, "runagain %s: joined the agent's trace %s (by %s)\n", j.verb, jn.Trace, jn.Evidence)
	}
	return jn
}

func (j *Joiner) stopTree() map[int]bool {
	if j.tree == nil {
		return map[int]bool{}
	}
	return j.tree.Stop()
}

// wait4 waits up to the join wait for the agent's trace in the store (proxy.WaitJoin).
func (j *Joiner) wait4(ctx context.Context, start time.Time, errOut io.Writer) *proxy.Join {
	pids := j.stopTree()
	r, err := j.open()
	if err != nil {
		fmt.Fprintf(errOut, "runagain %s: not joining the agent's trace: %v\n", j.verb, err)
		return nil
	}
	defer r.Close()
	ex := proxy.Execution{Root: j.root, Pids: pids, Start: start, End: time.Now()}
	jn, err := proxy.WaitJoin(ctx, r, ex, j.wait)
	if err != nil {
		fmt.Fprintf(errOut, "runagain %s: not joining the agent's trace: %v\n", j.verb, err)
	}
	return jn
}
