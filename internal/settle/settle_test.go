// SPDX-License-Identifier: Apache-2.0

package settle

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// queueMetrics serves the collector's metrics text with the queue sizes of each scrape in turn
// (the last one repeated), as otelcol-runagain prints them (core exporterhelper gauge).
type queueMetrics struct {
	mu      sync.Mutex
	scrapes [][4]int // tiered/warm traces, tiered/cold traces, tiered/warm logs, tiered/cold logs
	n       int
}

func (q *queueMetrics) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	q.mu.Lock()
	s := q.scrapes[min(q.n, len(q.scrapes)-1)]
	q.n++
	q.mu.Unlock()
	fmt.Fprintln(w, "# HELP otelcol_exporter_queue_size Current size of the retry queue (in batches). [Alpha]")
	fmt.Fprintln(w, "# TYPE otelcol_exporter_queue_size gauge")
	fmt.Fprintf(w, "otelcol_exporter_queue_size{data_type=\"traces\",exporter=\"tiered/warm\"} %d\n", s[0])
	fmt.Fprintf(w, "otelcol_exporter_queue_size{data_type=\"traces\",exporter=\"tiered/cold\"} %d\n", s[1])
	fmt.Fprintf(w, "otelcol_exporter_queue_size{data_type=\"logs\",exporter=\"tiered/warm\"} %d\n", s[2])
	fmt.Fprintf(w, "otelcol_exporter_queue_size{data_type=\"logs\",exporter=\"tiered/cold\"} %d\n", s[3])
	// another exporter's queue is not the tiers': it never empties and is not waited for
	fmt.Fprintln(w, "otelcol_exporter_queue_size{data_type=\"metrics\",exporter=\"otlp/upstream\"} 7")
}

func (q *queueMetrics) count() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.n
}

// Each tiered queue has to read empty once, not all at the same scrape: warm empties, fills
// again with new traffic (whose records were not queued before the wait), then cold empties.
func TestWaitQueuesDeliveredEachQueueEmptyOnce(t *testing.T) {
	q := &queueMetrics{scrapes: [][4]int{{2, 2, 1, 0}, {0, 2, 1, 0}, {3, 2, 0, 0}, {3, 0, 1, 0}, {5, 5, 5, 5}}}
	srv := httptest.NewServer(q)
	defer srv.Close()
	pending, err := WaitDelivered(context.Background(), srv.URL, time.Minute)
	require.NoError(t, err)
	assert.Empty(t, pending)
	assert.Equal(t, 4, q.count(), "it returns at the scrape where the last queue read empty")
}

// A queue that never reads empty (a tier whose store is down) is reported once the bound passes.
func TestWaitQueuesDeliveredBound(t *testing.T) {
	q := &queueMetrics{scrapes: [][4]int{{2, 2, 0, 0}, {0, 2, 0, 0}}}
	srv := httptest.NewServer(q)
	defer srv.Close()
	pending, err := WaitDelivered(context.Background(), srv.URL, 300*time.Millisecond)
	require.NoError(t, err)
	assert.Equal(t, []string{"tiered/cold traces"}, pending)
}

// Without the collector's metrics (no collector on that port, or no tiered queue in them) the
// wait cannot be confirmed: the whole bound is waited, and the reason given.
func TestWaitQueuesDeliveredUnconfirmed(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintln(w, "otelcol_exporter_queue_size{data_type=\"metrics\",exporter=\"otlp/upstream\"} 0")
	}))
	_, err := WaitDelivered(context.Background(), srv.URL, 200*time.Millisecond)
	require.ErrorIs(t, err, ErrNoConfirmation)
	assert.Contains(t, err.Error(), "no tiered exporter queue")
	url := srv.URL
	srv.Close()
	_, err = WaitDelivered(context.Background(), url, 200*time.Millisecond)
	require.ErrorIs(t, err, ErrNoConfirmation)
	_, err = WaitDelivered(context.Background(), "", 100*time.Millisecond)
	require.ErrorIs(t, err, ErrNoConfirmation)
}

// The metrics address comes from the collector's own configuration, resolved as it resolves it.
func TestCollectorMetricsURL(t *testing.T) {
	ctx := context.Background()
	t.Setenv("RUNAGAIN_TELEMETRY_PORT", "18888")
	cfg := filepath.Join("..", "..", "config", "default.yaml")
	u, err := MetricsURL(ctx, "", cfg)
	require.NoError(t, err)
	assert.Equal(t, "http://127.0.0.1:18888/metrics", u)
	u, err = MetricsURL(ctx, "", "")
	require.NoError(t, err)
	assert.Equal(t, "http://127.0.0.1:18888/metrics", u, "the embedded default's port without --config")
	u, err = MetricsURL(ctx, "http://10.0.0.1:9999/metrics", cfg)
	require.NoError(t, err)
	assert.Equal(t, "http://10.0.0.1:9999/metrics", u, "--collector-metrics wins")
	gw, err := MetricsURL(ctx, "", filepath.Join("..", "..", "config", "gateway.yaml"))
	require.NoError(t, err)
	assert.Equal(t, "http://127.0.0.1:18888/metrics", gw, "gateway.yaml's reader, its 0.0.0.0 host reached on loopback")
	noPort := filepath.Join(t.TempDir(), "noport.yaml")
	require.NoError(t, os.WriteFile(noPort, []byte("service:\n  telemetry:\n    metrics:\n      readers:\n"+
		"        - pull:\n            exporter:\n              prometheus:\n                host: 127.0.0.1\n"), 0o600))
	_, err = MetricsURL(ctx, "", noPort)
	require.Error(t, err, "a reader without a port is no address (it read http://127.0.0.1:<nil>/metrics)")
	assert.Contains(t, err.Error(), "port")
}

// A scrape that fails (the collector busy, a connection reset) is tried again: the queues are
// still watched, not waited out.
func TestWaitQueuesDeliveredRetriesAFailedScrape(t *testing.T) {
	q := &queueMetrics{scrapes: [][4]int{{1, 1, 0, 0}, {0, 0, 0, 0}}}
	var mu sync.Mutex
	calls := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		calls++
		first := calls == 1
		mu.Unlock()
		if first {
			http.Error(w, "busy", http.StatusServiceUnavailable)
			return
		}
		q.ServeHTTP(w, r)
	}))
	defer srv.Close()
	pending, err := WaitDelivered(context.Background(), srv.URL, time.Minute)
	require.NoError(t, err)
	assert.Empty(t, pending)
	assert.Equal(t, 2, q.count(), "one failed scrape, then the two served ones")
}

// A collector whose metrics never answer within the bound: the reason names the scrape that the
// bound cut (it was lost, the error read "%!w(<nil>)").
func TestWaitQueuesDeliveredHungScrape(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { <-release }))
	defer srv.Close()
	defer close(release)
	_, err := WaitDelivered(context.Background(), srv.URL, 200*time.Millisecond)
	require.ErrorIs(t, err, ErrNoConfirmation)
	assert.NotContains(t, err.Error(), "%!")
	assert.Contains(t, err.Error(), "collector metrics:")
}
