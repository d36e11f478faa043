// SPDX-License-Identifier: Apache-2.0

package agentrun

import (
	"context"
	"errors"
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

// CheckJoinWait checks --join-wait for a command run with env: a negative wait is an error; a
// wait of 0 while the command's environment configures an OTLP exporter returns a warning to
// print (verb prefixes it): an agent whose SDK ignores TRACEPARENT then makes a run of its own
// beside the proxy's, each counting the same calls. "" when there is nothing to say.
func CheckJoinWait(verb string, wait time.Duration, env []string) (warning string, err error) {
	switch {
	case wait < 0:
		return "", fmt.Errorf("--join-wait %s: want 0 (no join) or a positive duration such as 10s", wait)
	case wait == 0 && exportsOTLP(append(os.Environ(), env...)):
		return fmt.Sprintf("runagain %s: --join-wait 0: the command's own trace is not joined; an agent whose SDK ignores TRACEPARENT gives a second run beside this one, counting the same calls", verb), nil
	}
	return "", nil
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

// Holders is one Holder over several (the proxy's HTTP exchanges and the MCP broker's): Hold and
// TakeHeld go to each, and Emit sends a batch through the one that held it. nil entries are
// skipped; with none left it returns nil.
func Holders(hs ...Holder) Holder {
	var m multiHolder
	for _, h := range hs {
		if h != nil {
			m.hs = append(m.hs, h)
		}
	}
	if len(m.hs) == 0 {
		return nil
	}
	return &m
}

type multiHolder struct {
	hs    []Holder
	owner map[ptrace.Traces]Holder
}

func (m *multiHolder) Hold() {
	for _, h := range m.hs {
		h.Hold()
	}
}

func (m *multiHolder) TakeHeld() []ptrace.Traces {
	var out []ptrace.Traces
	m.owner = map[ptrace.Traces]Holder{}
	for _, h := range m.hs {
		for _, td := range h.TakeHeld() {
			m.owner[td] = h
			out = append(out, td)
		}
	}
	return out
}

func (m *multiHolder) Emit(td ptrace.Traces) {
	if h, ok := m.owner[td]; ok {
		h.Emit(td)
		return
	}
	m.hs[0].Emit(td)
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

// Pending names the run an attempt will be while its command runs: trace (the attempt's own), or
// the agent's trace once joined.
func (j *Joiner) Pending(trace pcommon.TraceID) string {
	if j == nil {
		return trace.String()
	}
	return trace.String() + ", or the agent's own trace if it sends one (joined when the command ends)"
}

// Attempt ends the join of a rerun, replay or test run after its command ended: it places the
// exchanges h held (Join; h nil: none were recorded, Find) and the attempt's root span root in the
// agent's trace, and releases rh's divergence record (nil: none) into it. It returns the agent's
// trace and true, or false when no join was made (a nil Joiner included, or the agent's spans
// already in the attempt's trace): the attempt's run is then its own trace, where the records are
// released.
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
// start is when the command started. It waits even when no exchange was held (every request
// carried a traceparent, or none was made): the caller's root span, with the command and the
// recording's settings, still belongs in the agent's trace, or the execution would be two runs.
// It does not wait when the agent's spans are in the execution's own trace (proxy.ErrOwnTrace).
func (j *Joiner) Join(ctx context.Context, h Holder, start time.Time, errOut io.Writer) *proxy.Join {
	if j == nil {
		return nil
	}
	jn, own := j.wait4(ctx, start, errOut)
	held := h.TakeHeld()
	proxy.SortByStart(held)
	for _, td := range held {
		if jn != nil {
			jn.Place(td)
		}
		h.Emit(td)
	}
	switch {
	case own:
	case jn == nil && len(held) == 0:
		fmt.Fprintf(errOut, "runagain %s: no trace of the command's own arrived within --join-wait %s; the run is the proxy's own trace\n", j.verb, j.wait)
	case jn == nil:
		fmt.Fprintf(errOut, "runagain %s: no trace of the command's own arrived within --join-wait %s; its %d exchanges without traceparent stay in the proxy's run\n", j.verb, j.wait, len(held))
	case len(held) == 0:
		fmt.Fprintf(errOut, "runagain %s: joined the agent's trace %s (by %s): no exchange without traceparent to place\n", j.verb, jn.Trace, jn.Evidence)
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
// none arrived within the wait, or the agent's spans are in the attempt's own trace; it says what
// it found on errOut.
func (j *Joiner) Find(ctx context.Context, start time.Time, errOut io.Writer) *proxy.Join {
	if j == nil {
		return nil
	}
	jn, own := j.wait4(ctx, start, errOut)
	switch {
	case own:
	case jn == nil:
		fmt.Fprintf(errOut, "runagain %s: no trace of the command's own arrived within --join-wait %s; the attempt stays a run of its own\n", j.verb, j.wait)
	default:
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

// wait4 waits up to the join wait for the agent's trace in the store (proxy.WaitJoin); own is
// true when the agent's spans are in the execution's own trace (proxy.ErrOwnTrace).
func (j *Joiner) wait4(ctx context.Context, start time.Time, errOut io.Writer) (jn *proxy.Join, own bool) {
	pids := j.stopTree()
	r, err := j.open()
	if err != nil {
		fmt.Fprintf(errOut, "runagain %s: not joining the agent's trace: %v\n", j.verb, err)
		return nil, false
	}
	defer r.Close()
	ex := proxy.Execution{Root: j.root, Pids: pids, Start: start, End: time.Now()}
	// Say what the pause is when it lasts (the agent's last batches take a moment to arrive).
	stop, said := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(said)
		select {
		case <-time.After(time.Second):
			fmt.Fprintf(errOut, "runagain %s: waiting up to %s for the command's own trace to reach the store (--join-wait)\n", j.verb, j.wait)
		case <-stop:
		}
	}()
	jn, err = proxy.WaitJoin(ctx, r, ex, j.wait)
	close(stop)
	<-said // errOut is written by one goroutine at a time
	switch {
	case errors.Is(err, proxy.ErrOwnTrace):
		return nil, true
	case err != nil:
		fmt.Fprintf(errOut, "runagain %s: not joining the agent's trace: %v\n", j.verb, err)
	}
	return jn, false
}
