package sandbox

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net"
	"net/netip"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestMain(m *testing.M) {
	Init()
	if os.Getenv("SANDBOX_TEST_HELPER") != "" {
		helper()
		return
	}
	os.Exit(m.Run())
}

// helper runs inside the sandbox: a name lookup, TCP to that name, to an IP literal of TEST-NET-1
// (RFC 5737; it can only be answered inside the namespace) and to loopback.
func helper() {
	r := &net.Resolver{PreferGo: true}
	addrs, err := r.LookupHost(context.Background(), "tool.example.com")
	fmt.Printf("lookup %v %v\n", addrs, err)
	for _, target := range []string{"tool.example.com:80", "192.0.2.1:9", os.Getenv("SANDBOX_TEST_LOOPBACK")} {
		c, err := net.DialTimeout("tcp", target, 5*time.Second)
		if err != nil {
			fmt.Printf("dial %s: %v\n", target, err)
			continue
		}
		line, err := bufio.NewReader(c).ReadString('\n')
		fmt.Printf("dial %s: %q %v\n", target, line, err)
		c.Close()
	}
	if u, err := net.Dial("udp", "192.0.2.1:9"); err == nil {
		_, err = u.Write([]byte("x"))
		fmt.Printf("udp write: %v\n", err)
	}
}

func TestRunHandsEveryConnectionToFlow(t *testing.T) {
	if err := Available(); err != nil {
		t.Skip(err)
	}
	var mu sync.Mutex
	var seen []string
	cfg := Config{
		Args: []string{os.Args[0]},
		Env:  append(os.Environ(), "SANDBOX_TEST_HELPER=1", "SANDBOX_TEST_LOOPBACK=127.0.0.1:4317"),
		Flow: func(c net.Conn, dst netip.AddrPort, name string) {
			defer c.Close()
			mu.Lock()
			seen = append(seen, dst.String()+" "+name)
			mu.Unlock()
			fmt.Fprintf(c, "served %s %s\n", dst, name)
		},
	}
	var out bytes.Buffer
	cfg.Stdout, cfg.Stderr = &out, &out
	res, err := Run(context.Background(), cfg)
	require.NoError(t, err, out.String())
	require.Equal(t, 0, res.ExitCode, out.String())
	o := out.String()
	assert.Contains(t, o, "lookup [198.18.0.2] <nil>")
	assert.Contains(t, o, `dial tool.example.com:80: "served 198.18.0.2:80 tool.example.com\n"`)
	assert.Contains(t, o, `dial 192.0.2.1:9: "served 192.0.2.1:9 \n"`)
	assert.Contains(t, o, `dial 127.0.0.1:4317: "served 127.0.0.1:4317 \n"`)
	assert.Equal(t, 3, res.Flows)
	assert.GreaterOrEqual(t, res.Queries, 1)
	mu.Lock()
	assert.Len(t, seen, 3)
	mu.Unlock()
	assert.NotContains(t, o, "network is unreachable")
	// Anything but TCP and DNS is dropped inside the namespace: the datagram is refused at once.
	assert.Contains(t, o, "udp write: write udp 169.254.77.1:")
	assert.Contains(t, o, "operation not permitted")
}
