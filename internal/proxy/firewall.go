// SPDX-License-Identifier: Apache-2.0

package proxy

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/runagain/runagain/internal/runagainattr"
)

// The side-effect firewall (docs/architecture.md "Side-effect firewall"): in replay, rerun and test an
// unrecorded request that could change the world is refused, even on a host --allow-host lets
// through, unless the host is named with --allow-live-writes.

// RefusalUnrecordedWrite is the Divergence.Refusal of an unrecorded non-safe request to a host
// allowed for reads only.
const RefusalUnrecordedWrite = "unrecorded_write"

// AttrRefusal is set on the divergence record of a request the firewall refused.
const AttrRefusal = runagainattr.ReplayRefusal

// SafeMethod reports whether an HTTP method is safe (RFC 9110, section 9.2.1: GET, HEAD,
// OPTIONS, TRACE): it asks for no change on the server.
func SafeMethod(m string) bool {
	switch strings.ToUpper(m) {
	case http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodTrace:
		return true
	}
	return false
}

// initFirewall adds the --allow-live-writes hosts: allowed for every method.
func (r *Replayer) initFirewall(o ReplayOptions) {
	r.writes = map[string]bool{}
	for _, h := range o.AllowWrites {
		r.allow[strings.ToLower(h)] = true
		r.writes[strings.ToLower(h)] = true
	}
}

// goesLive reports whether a request goes to the network unrecorded: its host is allowed, and
// its method is safe or its host allows live writes. It counts the request as sent live.
func (r *Replayer) goesLive(req *http.Request) bool {
	if !r.allowed(req.URL.Host) {
		return false
	}
	if !SafeMethod(req.Method) && !r.hostIn(r.writes, req.URL.Host) {
		return false // matched against the recording; refused when nothing matches
	}
	r.mu.Lock()
	r.forwarded++
	r.mu.Unlock()
	return true
}

// refusal names why an unmatched request is refused beyond a divergence: "" or
// RefusalUnrecordedWrite (a non-safe request to a host allowed for reads).
func (r *Replayer) refusal(req *http.Request) string {
	if req.Method != http.MethodConnect && !SafeMethod(req.Method) && r.allowed(req.URL.Host) && !r.hostIn(r.writes, req.URL.Host) {
		return RefusalUnrecordedWrite
	}
	return ""
}

func (r *Replayer) hostIn(set map[string]bool, hostport string) bool {
	h := strings.ToLower(hostport)
	if set[h] {
		return true
	}
	if i := strings.LastIndexByte(h, ':'); i > 0 {
		return set[h[:i]]
	}
	return false
}

// firewallMessage is the head of the message of a refused write.
func (d *Divergence) firewallMessage() string {
	host := d.URL
	if i := strings.Index(host, "://"); i >= 0 {
		host = host[i+3:]
	}
	if i := strings.IndexByte(host, '/'); i >= 0 {
		host = host[:i]
	}
	return "runagain replay: request " + strconv.Itoa(d.Request) + " (" + d.Method + " " + d.URL + ") refused by the side-effect firewall: an unrecorded " +
		d.Method + " goes live only with --allow-live-writes " + host
}
