// SPDX-License-Identifier: Apache-2.0

package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// Attributes of a recorded run's root span (proxy --record, rerun, test) naming how the proxy
// reached the upstreams, so that replay, rerun and test reuse them by default.
const (
	AttrProxyRoutes    = "runagain.proxy.routes"     // []string: each --route NAME=URL given
	AttrProxyConnectTo = "runagain.proxy.connect_to" // []string: each --connect-to HOST:PORT=ADDR:PORT
	AttrProxyMITM      = "runagain.proxy.mitm"       // bool: HTTPS was intercepted (--mitm)
)

// stamp writes o's routes, --connect-to and --mitm on the root span of td (its first span).
func (o *proxyOptions) stamp(td ptrace.Traces) {
	if td.ResourceSpans().Len() == 0 || td.ResourceSpans().At(0).ScopeSpans().Len() == 0 ||
		td.ResourceSpans().At(0).ScopeSpans().At(0).Spans().Len() == 0 {
		return
	}
	a := td.ResourceSpans().At(0).ScopeSpans().At(0).Spans().At(0).Attributes()
	putStrs := func(k string, vs []string) {
		s := a.PutEmptySlice(k)
		for _, v := range vs {
			s.AppendEmpty().SetStr(v)
		}
	}
	putStrs(AttrProxyRoutes, o.routes)
	if len(o.connectTo) > 0 {
		putStrs(AttrProxyConnectTo, o.connectTo)
	}
	a.PutBool(AttrProxyMITM, o.mitm)
}

// recordedSettings reads what stamp wrote from a recorded run's spans; found is false for a run
// recorded before these attributes existed, or imported.
func recordedSettings(td ptrace.Traces) (routes, connectTo []string, mitm, found bool) {
	strs := func(v pcommon.Value) []string {
		var out []string
		if v.Type() == pcommon.ValueTypeSlice {
			for i := 0; i < v.Slice().Len(); i++ {
				out = append(out, v.Slice().At(i).AsString())
			}
		}
		return out
	}
	rss := td.ResourceSpans()
	for i := 0; i < rss.Len(); i++ {
		sss := rss.At(i).ScopeSpans()
		for j := 0; j < sss.Len(); j++ {
			spans := sss.At(j).Spans()
			for k := 0; k < spans.Len(); k++ {
				a := spans.At(k).Attributes()
				m, ok := a.Get(AttrProxyMITM)
				if !ok {
					continue
				}
				if v, ok := a.Get(AttrProxyRoutes); ok {
					routes = strs(v)
				}
				if v, ok := a.Get(AttrProxyConnectTo); ok {
					connectTo = strs(v)
				}
				return routes, connectTo, m.Bool(), true
			}
		}
	}
	return nil, nil, false, false
}

// reuseRecorded makes o use the recording's routes, --connect-to and --mitm where the command
// line does not say otherwise (a --route of the same name replaces the recorded one; --mitm=false
// turns interception off), and returns the sentence saying so ("" when nothing is reused).
func (o *proxyOptions) reuseRecorded(cmd *cobra.Command, td ptrace.Traces) string {
	routes, connectTo, mitm, found := recordedSettings(td)
	if !found {
		return ""
	}
	var used []string
	given := map[string]bool{}
	for _, r := range o.routes {
		if name, _, ok := strings.Cut(r, "="); ok {
			given[strings.Trim(strings.TrimSpace(name), "/")] = true
		}
	}
	var kept, overridden []string
	for _, r := range routes {
		name, _, _ := strings.Cut(r, "=")
		if given[strings.Trim(strings.TrimSpace(name), "/")] {
			overridden = append(overridden, name)
			continue
		}
		kept = append(kept, r)
	}
	if len(routes) > 0 {
		o.routes = append(kept, o.routes...)
	}
	if len(kept) > 0 {
		used = append(used, "--route "+strings.Join(kept, " --route "))
	}
	if len(connectTo) > 0 {
		o.connectTo = append(append([]string(nil), connectTo...), o.connectTo...)
		used = append(used, "--connect-to "+strings.Join(connectTo, " --connect-to "))
	}
	if mitm && !cmd.Flags().Changed("mitm") {
		o.mitm = true
		used = append(used, "--mitm")
	}
	note := ""
	if len(overridden) > 0 {
		note = fmt.Sprintf("; the recording's route %s replaced by the command line's", strings.Join(overridden, ", "))
	}
	if len(used) == 0 && len(overridden) == 0 {
		return "the recording used the default routes and no --mitm"
	}
	if len(used) == 0 {
		return strings.TrimPrefix(note, "; ")
	}
	return fmt.Sprintf("reusing the recording's %s (a --route of the same name overrides)%s", strings.Join(used, " "), note)
}
