// SPDX-License-Identifier: Apache-2.0

package proxy

import (
	"encoding/json"
	"fmt"
	"net/url"
	"regexp"
	"strconv"
	"strings"
)

// A --set may start with a call selector, SELECTOR:PATH=VALUE, where SELECTOR is one or more
// comma-separated terms:
//
//	step=N      the N-th LLM call of the run (1-based, as `runagain show --step N` counts)
//	api=NAME    calls of one API: chat (Chat Completions), responses (OpenAI Responses),
//	            messages (Anthropic Messages), gemini (generateContent)
//
// e.g. --set 'step=2:messages[0].content=hi' or --set 'api=responses:instructions=Be brief'.
var selectorRE = regexp.MustCompile(`^((?:step|api)=[A-Za-z0-9_-]+(?:,(?:step|api)=[A-Za-z0-9_-]+)*):`)

// APIs a selector can name, by the request path they are sent to.
var selectorAPIs = map[string]func(path string) bool{
	"chat":      func(p string) bool { return strings.HasSuffix(p, "/chat/completions") },
	"responses": func(p string) bool { return strings.HasSuffix(p, "/responses") },
	"messages":  func(p string) bool { return strings.HasSuffix(p, "/messages") },
	"gemini": func(p string) bool {
		return strings.HasSuffix(p, ":generateContent") || strings.HasSuffix(p, ":streamGenerateContent")
	},
}

// splitSelector takes the selector off spec: step (0: any), api ("": any) and the PATH=VALUE rest.
func splitSelector(spec string) (step int, api, rest string, err error) {
	m := selectorRE.FindStringSubmatch(spec)
	if m == nil {
		return 0, "", spec, nil
	}
	for _, term := range strings.Split(m[1], ",") {
		k, v, _ := strings.Cut(term, "=")
		switch k {
		case "step":
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 {
				return 0, "", "", fmt.Errorf("--set %q: step=%s: want an LLM call number from 1", spec, v)
			}
			step = n
		case "api":
			if _, ok := selectorAPIs[v]; !ok {
				return 0, "", "", fmt.Errorf("--set %q: api=%s: want one of chat, responses, messages, gemini", spec, v)
			}
			api = v
		}
	}
	return step, api, spec[len(m[0]):], nil
}

// selects reports whether the edit applies to LLM call number call sent to path.
func (e Edit) selects(call int, path string) bool {
	if e.Step > 0 && call != e.Step {
		return false
	}
	if e.API != "" && !selectorAPIs[e.API](path) {
		return false
	}
	return true
}

// checkEdits marks the recorded LLM requests and checks each edit against the ones it selects
// (past --from-step): it must name a value in at least one of them; where a selected request
// lacks the path it is sent unchanged, and the log says which. A path naming one top-level
// member (temperature) is added where a selected request lacks it, and the log says where. It returns the number of
// recorded LLM requests.
func (r *Replayer) checkEdits(o RerunOptions, st *rerunState) (int, error) {
	type call struct {
		n int
		e *entry
	}
	var calls []call
	for _, e := range r.entries {
		u, err := url.Parse(e.ex.URL)
		if err != nil || !st.isRecordedLLM(e.ex.Method, u) {
			continue
		}
		e.llm = true
		calls = append(calls, call{len(calls) + 1, e})
	}
	for _, ed := range o.Edits {
		var has, lacks, adds []string
		for _, c := range calls {
			u, _ := url.Parse(c.e.ex.URL)
			if (o.FromStep > 0 && c.n <= o.FromStep) || !ed.selects(c.n, u.Path) {
				continue
			}
			if json.Valid(c.e.ex.RequestBody) && ed.exists(c.e.ex.RequestBody) {
				has = append(has, strconv.Itoa(c.n))
				if _, found := ed.path.locate(c.e.ex.RequestBody); !found {
					adds = append(adds, strconv.Itoa(c.n))
				}
			} else {
				lacks = append(lacks, fmt.Sprintf("%d (%s %s)", c.n, c.e.ex.Method, u.Path))
			}
		}
		if len(adds) > 0 {
			r.cfg.Logger.Printf("runagain rerun: --set %s adds %s to recorded LLM call(s) %s, which did not send it", ed.Spec, ed.member, strings.Join(adds, ", "))
		}
		switch {
		case len(calls) == 0:
			// reported by the caller: no LLM request at all
		case len(has) == 0 && len(lacks) == 0:
			return 0, fmt.Errorf("--set %s: selects no recorded LLM call (the run has %d)", ed.Spec, len(calls))
		case len(has) == 0:
			return 0, fmt.Errorf("--set %s: no value at path %s in any LLM request it selects: %s", ed.Spec, ed.Path, strings.Join(lacks, ", "))
		case len(lacks) > 0:
			r.cfg.Logger.Printf("runagain rerun: --set %s applies to recorded LLM call(s) %s; %s have no value at %s and are sent unchanged",
				ed.Spec, strings.Join(has, ", "), strings.Join(lacks, ", "), ed.Path)
		default:
			r.cfg.Logger.Printf("runagain rerun: --set %s applies to recorded LLM call(s) %s", ed.Spec, strings.Join(has, ", "))
		}
	}
	return len(calls), nil
}
