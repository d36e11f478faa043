//go:build linux

// SPDX-License-Identifier: Apache-2.0

package sandbox

import (
	"fmt"
	"net"

	"github.com/google/nftables"
	"github.com/google/nftables/binaryutil"
	"github.com/google/nftables/expr"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// Interface names inside the namespace: the default route points at vethName, whose peer is
// also inside (nothing is connected to the outside at all); the nftables filter drops any packet
// leaving by either.
const (
	vethName, vethPeer = "runagain0", "runagain1"
	tableName          = "runagain_sandbox"
)

// vethAddr is the namespace's only non-loopback address (link-local, never routed anywhere).
var vethAddr = &net.IPNet{IP: net.IPv4(169, 254, 77, 1), Mask: net.CIDRMask(32, 32)}

// setupNamespace runs inside the new network namespace: loopback up, a default route, the two
// listeners on 127.0.0.1, and the nftables table that redirects every TCP connection and every
// UDP datagram to port 53 to them and drops the rest. It returns the listeners' descriptors.
func setupNamespace() (tcpFd, udpFd int, err error) {
	lo, err := netlink.LinkByName("lo")
	if err != nil {
		return -1, -1, fmt.Errorf("loopback: %w", err)
	}
	if err := netlink.LinkSetUp(lo); err != nil {
		return -1, -1, fmt.Errorf("loopback up: %w", err)
	}
	veth := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: vethName}, PeerName: vethPeer}
	if err := netlink.LinkAdd(veth); err != nil {
		return -1, -1, fmt.Errorf("veth %s: %w", vethName, err)
	}
	for _, n := range []string{vethName, vethPeer} {
		l, err := netlink.LinkByName(n)
		if err == nil {
			err = netlink.LinkSetUp(l)
		}
		if err != nil {
			return -1, -1, fmt.Errorf("%s up: %w", n, err)
		}
	}
	link, err := netlink.LinkByName(vethName)
	if err != nil {
		return -1, -1, err
	}
	if err := netlink.AddrAdd(link, &netlink.Addr{IPNet: vethAddr}); err != nil {
		return -1, -1, fmt.Errorf("address on %s: %w", vethName, err)
	}
	def := &net.IPNet{IP: net.IPv4zero, Mask: net.CIDRMask(0, 32)}
	if err := netlink.RouteAdd(&netlink.Route{LinkIndex: link.Attrs().Index, Dst: def, Scope: netlink.SCOPE_LINK, Src: vethAddr.IP}); err != nil {
		return -1, -1, fmt.Errorf("default route: %w", err)
	}
	tcpFd, tcpPort, err := loopbackSocket(unix.SOCK_STREAM)
	if err != nil {
		return -1, -1, err
	}
	udpFd, udpPort, err := loopbackSocket(unix.SOCK_DGRAM)
	if err != nil {
		unix.Close(tcpFd)
		return -1, -1, err
	}
	if err := redirectRules(tcpPort, udpPort); err != nil {
		unix.Close(tcpFd)
		unix.Close(udpFd)
		return -1, -1, fmt.Errorf("nftables: %w", err)
	}
	return tcpFd, udpFd, nil
}

// loopbackSocket binds a socket of typ to 127.0.0.1 on a free port (listening, for TCP).
func loopbackSocket(typ int) (fd, port int, err error) {
	fd, err = unix.Socket(unix.AF_INET, typ|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return -1, 0, err
	}
	if err = unix.Bind(fd, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err == nil && typ == unix.SOCK_STREAM {
		err = unix.Listen(fd, 512)
	}
	var sa unix.Sockaddr
	if err == nil {
		sa, err = unix.Getsockname(fd)
	}
	if err != nil {
		unix.Close(fd)
		return -1, 0, fmt.Errorf("listener on 127.0.0.1: %w", err)
	}
	return fd, sa.(*unix.SockaddrInet4).Port, nil
}

// redirectRules installs, in the namespace's own netfilter:
//
//	table ip runagain_sandbox {
//	  chain redirect { type nat hook output priority dstnat
//	    meta l4proto tcp redirect to :TCP
//	    meta l4proto udp udp dport 53 redirect to :UDP }
//	  chain only_loopback { type filter hook postrouting priority filter
//	    oifname != "lo" drop }
//	}
//	table ip6 runagain_sandbox { chain only_loopback { ... the same drop } }
func redirectRules(tcpPort, udpPort int) error {
	c, err := nftables.New()
	if err != nil {
		return err
	}
	t4 := c.AddTable(&nftables.Table{Family: nftables.TableFamilyIPv4, Name: tableName})
	nat := c.AddChain(&nftables.Chain{Name: "redirect", Table: t4, Type: nftables.ChainTypeNAT,
		Hooknum: nftables.ChainHookOutput, Priority: nftables.ChainPriorityNATDest})
	c.AddRule(&nftables.Rule{Table: t4, Chain: nat, Exprs: []expr.Any{
		&expr.Meta{Key: expr.MetaKeyL4PROTO, Register: 1},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{unix.IPPROTO_TCP}},
		&expr.Immediate{Register: 1, Data: binaryutil.BigEndian.PutUint16(uint16(tcpPort))},
		&expr.Redir{RegisterProtoMin: 1},
	}})
	c.AddRule(&nftables.Rule{Table: t4, Chain: nat, Exprs: []expr.Any{
		&expr.Meta{Key: expr.MetaKeyL4PROTO, Register: 1},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{unix.IPPROTO_UDP}},
		&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseTransportHeader, Offset: 2, Len: 2},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: binaryutil.BigEndian.PutUint16(53)},
		&expr.Immediate{Register: 1, Data: binaryutil.BigEndian.PutUint16(uint16(udpPort))},
		&expr.Redir{RegisterProtoMin: 1},
	}})
	t6 := c.AddTable(&nftables.Table{Family: nftables.TableFamilyIPv6, Name: tableName})
	for _, t := range []*nftables.Table{t4, t6} {
		// postrouting, not output: the output hook's interface is the one routed to before the
		// redirect, postrouting sees the loopback a redirected packet leaves by.
		ch := c.AddChain(&nftables.Chain{Name: "only_loopback", Table: t, Type: nftables.ChainTypeFilter,
			Hooknum: nftables.ChainHookPostrouting, Priority: nftables.ChainPriorityFilter})
		lo := make([]byte, unix.IFNAMSIZ)
		copy(lo, "lo")
		c.AddRule(&nftables.Rule{Table: t, Chain: ch, Exprs: []expr.Any{
			&expr.Meta{Key: expr.MetaKeyOIFNAME, Register: 1},
			&expr.Cmp{Op: expr.CmpOpNeq, Register: 1, Data: lo},
			&expr.Verdict{Kind: expr.VerdictDrop},
		}})
	}
	return c.Flush()
}
