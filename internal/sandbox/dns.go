// SPDX-License-Identifier: Apache-2.0

package sandbox

import (
	"net"
	"net/netip"
	"strings"
	"sync"

	"github.com/miekg/dns"
)

// poolPrefix is where names get their addresses: 198.18.0.0/15 (RFC 2544 benchmarking), which
// no service on the internet uses, so an address from it is always one of ours.
var poolPrefix = netip.MustParsePrefix("198.18.0.0/15")

// names gives each DNS name one address of the pool and maps it back.
type names struct {
	mu      sync.Mutex
	byName  map[string]netip.Addr
	byAddr  map[netip.Addr]string
	next    netip.Addr
	queries int
}

func newNames() *names {
	return &names{byName: map[string]netip.Addr{}, byAddr: map[netip.Addr]string{}, next: poolPrefix.Addr().Next().Next()}
}

// addr returns name's address (allocating the next one); ok is false once the pool is exhausted.
func (n *names) addr(name string) (netip.Addr, bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if a, ok := n.byName[name]; ok {
		return a, true
	}
	if !poolPrefix.Contains(n.next) {
		return netip.Addr{}, false
	}
	a := n.next
	n.next = a.Next()
	n.byName[name], n.byAddr[a] = a, name
	return a, true
}

// name returns the name a was given to, "" for an address from no query.
func (n *names) name(a netip.Addr) string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.byAddr[a.Unmap()]
}

// ServeDNS answers A queries with the name's pool address ("localhost" and names under it with
// 127.0.0.1), and every other type with an empty NOERROR answer (so clients fall back to IPv4:
// the namespace has no IPv6 route). Nothing is ever asked of a real resolver.
func (n *names) ServeDNS(w dns.ResponseWriter, q *dns.Msg) {
	m := new(dns.Msg)
	m.SetReply(q)
	m.Authoritative = true
	m.RecursionAvailable = true
	for _, qu := range q.Question {
		n.mu.Lock()
		n.queries++
		n.mu.Unlock()
		if qu.Qtype != dns.TypeA || qu.Qclass != dns.ClassINET {
			continue
		}
		name := strings.ToLower(strings.TrimSuffix(qu.Name, "."))
		ip := net.IPv4(127, 0, 0, 1)
		if name != "localhost" && !strings.HasSuffix(name, ".localhost") {
			a, ok := n.addr(name)
			if !ok {
				m.Rcode = dns.RcodeServerFailure
				continue
			}
			ip = a.AsSlice()
		}
		m.Answer = append(m.Answer, &dns.A{Hdr: dns.RR_Header{Name: qu.Name, Rrtype: dns.TypeA, Class: dns.ClassINET, Ttl: 60}, A: ip})
	}
	_ = w.WriteMsg(m)
}
