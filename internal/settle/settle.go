// SPDX-License-Identifier: Apache-2.0

// Package settle waits until a running collector's tiered sending queues have delivered what
// they held, read from the collector's own metrics (the core exporterhelper gauge
// otelcol_exporter_queue_size, Prometheus text). `runagain delete --settle` uses it to erase
// again what was still queued when its first pass ran.
package settle

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/confmap/provider/envprovider"
	"go.opentelemetry.io/collector/confmap/provider/fileprovider"
	"go.opentelemetry.io/collector/confmap/provider/yamlprovider"
)

// QueueSizeMetric is the collector's own gauge of an exporterhelper sending queue: how many
// requests it holds, those being batched or written included (the persistent queue counts an
// item until its batch is delivered). Core exporterhelper, otelcol_exporter_queue_size.
const QueueSizeMetric = "otelcol_exporter_queue_size"

// Poll is how often the collector's metrics are read while waiting for its queues.
const Poll = 50 * time.Millisecond

// DefaultTelemetryPort is config/default.yaml's service::telemetry port (RUNAGAIN_TELEMETRY_PORT).
const DefaultTelemetryPort = "8888"

// MetricsURL is where the running collector publishes its own metrics: --collector-metrics,
// else the Prometheus pull reader of --config's service::telemetry (resolved as the collector
// resolves it), else config/default.yaml's (127.0.0.1, $RUNAGAIN_TELEMETRY_PORT or 8888). "" when
// --config has no such reader.
func MetricsURL(ctx context.Context, flag, configPath string) (string, error) {
	if flag != "" {
		return flag, nil
	}
	if configPath == "" {
		port := os.Getenv("RUNAGAIN_TELEMETRY_PORT")
		if port == "" {
			port = DefaultTelemetryPort
		}
		return "http://" + net.JoinHostPort("127.0.0.1", port) + "/metrics", nil
	}
	r, err := confmap.NewResolver(confmap.ResolverSettings{
		URIs:              []string{"file:" + configPath},
		ProviderFactories: []confmap.ProviderFactory{fileprovider.NewFactory(), envprovider.NewFactory(), yamlprovider.NewFactory()},
		DefaultScheme:     "env",
	})
	if err != nil {
		return "", fmt.Errorf("--config %s: %w", configPath, err)
	}
	conf, err := r.Resolve(ctx)
	if err != nil {
		return "", fmt.Errorf("--config %s: %w", configPath, err)
	}
	var tel struct {
		Metrics struct {
			Readers []struct {
				Pull *struct {
					Exporter struct {
						Prometheus *struct {
							Host string `mapstructure:"host"`
							Port any    `mapstructure:"port"`
						} `mapstructure:"prometheus"`
					} `mapstructure:"exporter"`
				} `mapstructure:"pull"`
			} `mapstructure:"readers"`
		} `mapstructure:"metrics"`
	}
	sub, err := conf.Sub("service::telemetry")
	if err != nil {
		return "", nil
	}
	if err := sub.Unmarshal(&tel, confmap.WithIgnoreUnused()); err != nil {
		return "", fmt.Errorf("--config %s: service::telemetry: %w", configPath, err)
	}
	for _, rd := range tel.Metrics.Readers {
		if rd.Pull == nil || rd.Pull.Exporter.Prometheus == nil {
			continue
		}
		p := rd.Pull.Exporter.Prometheus
		if p.Port == nil || p.Port == "" {
			return "", fmt.Errorf("--config %s: service::telemetry::metrics::readers: the prometheus reader has no port (give --collector-metrics)", configPath)
		}
		host := p.Host
		if host == "" || host == "0.0.0.0" || host == "::" {
			host = "127.0.0.1"
		}
		return "http://" + net.JoinHostPort(host, fmt.Sprint(p.Port)) + "/metrics", nil
	}
	return "", nil
}

// TieredQueueSizes reads the collector's metrics at url and returns the size of each sending
// queue of the tiered exporter (exporter label tiered/..., or the contrib ClickHouse hot tier's
// clickhouse/tiered_...), keyed by exporter and signal. An empty map: the collector has none.
func TieredQueueSizes(ctx context.Context, client *http.Client, url string) (map[string]float64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s: %s", url, resp.Status)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", url, err)
	}
	sizes := map[string]float64{}
	fam := fams[QueueSizeMetric]
	if fam == nil {
		return sizes, nil
	}
	for _, m := range fam.GetMetric() {
		var exp, sig string
		for _, l := range m.GetLabel() {
			switch l.GetName() {
			case "exporter":
				exp = l.GetValue()
			case "data_type":
				sig = l.GetValue()
			}
		}
		if !strings.HasPrefix(exp, "tiered/") && !strings.HasPrefix(exp, "clickhouse/tiered_") {
			continue
		}
		sizes[exp+" "+sig] = m.GetGauge().GetValue()
	}
	return sizes, nil
}

// ErrNoConfirmation: the collector's queues could not be watched (no metrics, or no tiered queue
// in them); the caller waits its whole bound instead.
var ErrNoConfirmation = errors.New("cannot watch the collector's sending queues")

// WaitDelivered returns once every sending queue of the tiered exporter has read empty at
// least once since it was called: then every record queued before the call has reached its tier
// (an empty queue holds nothing waiting, batching or being written). It polls the collector's
// metrics at url every Poll, for at most limit; a scrape that fails is tried again at the
// next poll. When no scrape showed a tiered queue within limit (no collector there, or its
// metrics hold none), it returns ErrNoConfirmation (wrapped, with the reason), having waited limit
// out; when limit passes with queues not yet seen empty, it returns those.
func WaitDelivered(ctx context.Context, url string, limit time.Duration) (pending []string, err error) {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	if url == "" {
		<-ctx.Done()
		if errors.Is(ctx.Err(), context.Canceled) {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("%w: --config has no Prometheus reader under service::telemetry::metrics (give --collector-metrics)", ErrNoConfirmation)
	}
	client := &http.Client{Timeout: 2 * time.Second}
	seenEmpty := map[string]bool{}
	var lastErr error
	t := time.NewTicker(Poll)
	defer t.Stop()
	for {
		sizes, err := TieredQueueSizes(ctx, client, url)
		switch {
		case err != nil:
			// a scrape the bound cut is the reason only when there is no other (a collector
			// that never answers within it)
			if ctx.Err() == nil || lastErr == nil {
				lastErr = fmt.Errorf("collector metrics: %w", err)
			}
		case len(sizes) == 0:
			lastErr = fmt.Errorf("no tiered exporter queue in %s", url)
		}
		for k, v := range sizes {
			if !seenEmpty[k] {
				seenEmpty[k] = v == 0
			}
		}
		pending = pending[:0]
		for k, ok := range seenEmpty {
			if !ok {
				pending = append(pending, k)
			}
		}
		if len(pending) == 0 && len(seenEmpty) > 0 {
			return nil, nil
		}
		select {
		case <-ctx.Done():
			switch {
			case errors.Is(ctx.Err(), context.Canceled):
				return pending, ctx.Err()
			case len(seenEmpty) == 0:
				return nil, fmt.Errorf("%w: %w", ErrNoConfirmation, lastErr)
			}
			sort.Strings(pending)
			return pending, nil
		case <-t.C:
		}
	}
}
