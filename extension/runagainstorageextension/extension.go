// SPDX-License-Identifier: Apache-2.0

package runagainstorageextension // import "github.com/runagain/runagain/extension/runagainstorageextension"

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/extension"
	"go.uber.org/zap"

	"github.com/runagain/runagain/extension/runagainstorageextension/internal/metadata"
	"github.com/runagain/runagain/internal/patterns"
	"github.com/runagain/runagain/internal/payloadref/writer"
	"github.com/runagain/runagain/internal/pins"
	"github.com/runagain/runagain/internal/pricing"
	"github.com/runagain/runagain/internal/store"
)

// Storage is what a component gets from the runagain_storage extension (Find): the writers of
// the configured tiers, the one opened payload store, the price table and the session keys. As
// Jaeger v2's jaeger_storage hands its storage exporter a factory interface, components see
// only this interface; the extension instance (*Extension) keeps its lifecycle and maintenance.
type Storage interface {
	// SessionKeys are the attributes naming a session, first present wins.
	SessionKeys() []string
	// Prices is the one price table (embedded genai-prices with the configured overrides).
	Prices() *pricing.Prices
	// Tiers lists the configured tiers in order hot, warm, cold.
	Tiers() []string
	// HotClickHouse returns the hot tier's ClickHouse settings and retention when the hot tier
	// is on ClickHouse: its writer is the contrib clickhouseexporter, which the tiered exporter
	// creates.
	HotClickHouse() (*ClickHouseConfig, time.Duration, bool)
	// Backend returns the writer of a tier ("hot", "warm", "cold"). It fails when the tier is
	// not configured, is the hot tier on ClickHouse (see HotClickHouse), or the extension is not
	// started.
	Backend(tier string) (Backend, error)
	// PayloadStore is the payload bucket (payloads::url) opened once at Start, with its pack
	// staging area and digest index (payloads::dir): payload_offload writes through it and the
	// retention janitor collects through it. It fails, naming the field, when payloads is not
	// configured or the extension is not started. Callers never close it.
	PayloadStore() (*writer.Store, error)
}

// Extension is a runagain_storage extension instance: it opens the configured backends and
// the payload store at Start (SQLite files, ClickHouse connections, the cold Parquet bucket, the
// payload bucket), runs their retention janitors, and serves components through Storage.
type Extension struct {
	cfg    *Config
	logger *zap.Logger
	now    func() time.Time
	prices *pricing.Prices

	mu       sync.Mutex
	tiers    map[string]*opened // by tier name, set between Start and Shutdown
	payloads *writer.Store      // set between Start and Shutdown when payloads is configured
	locks    []*dirLock         // held between Start and Shutdown
	// chDead is the dead-letter table of a hot tier on ClickHouse (its handle closed with the
	// tiers, as tierQuarantine); set between Start and Shutdown.
	chDead  *chQuarantine
	started bool
	pinMu   sync.Mutex // guards pins only: the janitors read it while Shutdown holds mu
	pins    pins.Source
}

var (
	_ extension.Extension = (*Extension)(nil)
	_ Storage             = (*Extension)(nil)
)

// New builds an Extension for cfg (validated by the caller). now is the ingestion clock (nil:
// time.Now). Backends open at Start. With datasets::url configured, the runs of that dataset
// store are pinned (internal/pins); SetPins replaces the source.
func New(cfg *Config, set component.TelemetrySettings, now func() time.Time) (*Extension, error) {
	prices, err := pricing.New(cfg.Pricing)
	if err != nil {
		return nil, fmt.Errorf("pricing::%w", err)
	}
	if now == nil {
		now = time.Now
	}
	logger := set.Logger
	if logger == nil {
		logger = zap.NewNop()
	}
	s := &Extension{cfg: cfg, logger: logger, now: now, prices: prices}
	if cfg.Datasets.HasValue() {
		s.pins = pins.Bucket(cfg.Datasets.Get().URL)
	}
	return s, nil
}

// Start opens every configured backend and starts the janitors. A backend that cannot be
// opened fails the start with the tier named.
func (s *Extension) Start(ctx context.Context, _ component.Host) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.started {
		return nil
	}
	o := openOptions{logger: s.logger, keys: s.cfg.SessionKeys, prices: s.prices, now: s.now,
		every: s.cfg.JanitorInterval, pins: s.pinSource, noSignatures: s.cfg.FailureSignatures == FailureSignaturesRead,
		memo: patterns.NewMemo(0)}
	if o.every <= 0 {
		o.every = DefaultJanitorInterval
	}
	locks, err := lockDirs(s.cfg.localDataDirs())
	if err != nil {
		return fmt.Errorf("runagain_storage: %w", err)
	}
	tiers := map[string]*opened{}
	fail := func(tier string, err error) error {
		for _, t := range tiers {
			_ = t.close()
		}
		if o.payloads != nil {
			_ = o.payloads.Close()
		}
		unlockAll(locks)
		return fmt.Errorf("runagain_storage: %s tier: %w", tier, err)
	}
	if s.cfg.Payloads.HasValue() {
		ps, err := openPayloads(ctx, s.cfg.Payloads.Get(), s.logger, s.now)
		if err != nil {
			unlockAll(locks)
			return fmt.Errorf("runagain_storage: payloads: %w", err)
		}
		o.payloads = ps
	}
	if s.cfg.Hot.HasValue() && s.cfg.Hot.Get().SQLite.HasValue() {
		t, err := openHotSQLite(s.cfg.Hot.Get(), o)
		if err != nil {
			return fail(store.TierHot, err)
		}
		tiers[store.TierHot] = t
	}
	var chDead *chQuarantine
	if s.cfg.Hot.HasValue() && s.cfg.Hot.Get().ClickHouse.HasValue() {
		q, closeDB, err := openHotQuarantine(s.cfg.Hot.Get())
		if err != nil {
			return fail(store.TierHot, err)
		}
		chDead = q
		tiers[tierQuarantine] = &opened{close: closeDB}
	}
	if s.cfg.Hot.HasValue() {
		t, err := openPayloadJanitor(s.cfg.Hot.Get(), o)
		if err != nil {
			return fail(tierPayloads, err)
		}
		if t != nil {
			tiers[tierPayloads] = t
		}
	}
	if s.cfg.Warm.HasValue() {
		t, err := openWarm(s.cfg.Warm.Get(), o)
		if err != nil {
			return fail(store.TierWarm, err)
		}
		tiers[store.TierWarm] = t
	}
	if s.cfg.Cold.HasValue() {
		t, err := openCold(ctx, s.cfg.Cold.Get(), o)
		if err != nil {
			return fail(store.TierCold, err)
		}
		tiers[store.TierCold] = t
	}
	for _, t := range tiers {
		if t.janitor != nil {
			t.janitor.start()
		}
	}
	s.tiers, s.payloads, s.locks, s.started = tiers, o.payloads, locks, true
	s.chDead = chDead
	return nil
}

// tierPayloads names the payload janitor of a hot tier on ClickHouse among the opened tiers.
const tierPayloads = "payloads"

// tierQuarantine names the handle of a hot tier on ClickHouse's dead-letter table among the
// opened tiers (no backend, no janitor: the table's TTL is the hot retention), so that a failed
// start and Shutdown close it with the rest.
const tierQuarantine = "quarantine"

// Shutdown stops the janitors and closes the backends.
func (s *Extension) Shutdown(context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	var errs []error
	for _, t := range s.tiers {
		if t.janitor != nil {
			t.janitor.stop()
		}
		errs = append(errs, t.close())
	}
	if s.payloads != nil {
		// After the janitors (which collect through it) and every pipeline (extensions shut
		// down last): Close seals and uploads what is staged, as far as the bucket allows.
		errs = append(errs, closePayloads(s.payloads, s.logger))
	}
	unlockAll(s.locks)
	s.tiers, s.payloads, s.locks, s.started = nil, nil, nil, false
	s.chDead = nil
	return errors.Join(errs...)
}

// SessionKeys are the attributes naming a session, first present wins.
func (s *Extension) SessionKeys() []string { return s.cfg.SessionKeys }

// Prices is the one price table (embedded genai-prices with the configured overrides).
func (s *Extension) Prices() *pricing.Prices { return s.prices }

// Tiers lists the configured tiers in order hot, warm, cold.
func (s *Extension) Tiers() []string {
	var out []string
	if s.cfg.Hot.HasValue() {
		out = append(out, store.TierHot)
	}
	if s.cfg.Warm.HasValue() {
		out = append(out, store.TierWarm)
	}
	if s.cfg.Cold.HasValue() {
		out = append(out, store.TierCold)
	}
	return out
}

// HotClickHouse returns the hot tier's ClickHouse settings and retention when the hot tier is
// on ClickHouse: its writer is the contrib clickhouseexporter, which the tiered exporter creates.
func (s *Extension) HotClickHouse() (*ClickHouseConfig, time.Duration, bool) {
	if !s.cfg.Hot.HasValue() || !s.cfg.Hot.Get().ClickHouse.HasValue() {
		return nil, 0, false
	}
	return s.cfg.Hot.Get().ClickHouse.Get(), s.cfg.Hot.Get().Retention, true
}

// Backend returns the writer of a tier ("hot", "warm", "cold"). It fails when the tier is not
// configured, is the hot tier on ClickHouse (see HotClickHouse), or the extension is not started.
func (s *Extension) Backend(tier string) (Backend, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.started {
		return nil, errors.New("runagain_storage: not started")
	}
	t, ok := s.tiers[tier]
	if !ok || t.backend == nil {
		return nil, fmt.Errorf("runagain_storage: no %s tier with a runagain backend configured", tier)
	}
	return t.backend, nil
}

// SetPins installs the source of pinned runs that every janitor consults before deleting; nil
// removes it. Safe to call at any time. With datasets::url configured, that dataset store's pins
// (pins.Bucket) are installed at creation.
func (s *Extension) SetPins(p pins.Source) {
	s.pinMu.Lock()
	s.pins = p
	s.pinMu.Unlock()
}

func (s *Extension) pinSource() pins.Source {
	s.pinMu.Lock()
	defer s.pinMu.Unlock()
	return s.pins
}

// PayloadStore implements Storage.
func (s *Extension) PayloadStore() (*writer.Store, error) {
	if !s.cfg.Payloads.HasValue() {
		return nil, errors.New("runagain_storage: no payload bucket: set `payloads::url` " +
			"(e.g. file:///var/lib/runagain/blobs?create_dir=true, s3://bucket)")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.started || s.payloads == nil {
		return nil, errors.New("runagain_storage: not started")
	}
	return s.payloads, nil
}

// RunJanitors runs every janitor once, now, and returns how many rows and objects they deleted
// (tests and maintenance).
func (s *Extension) RunJanitors(ctx context.Context) (int64, error) {
	s.mu.Lock()
	var js []*janitor
	for _, name := range []string{store.TierHot, store.TierWarm, store.TierCold, tierPayloads} { // payloads after the hot rows
		if t := s.tiers[name]; t != nil && t.janitor != nil {
			js = append(js, t.janitor)
		}
	}
	s.mu.Unlock()
	var total int64
	var errs []error
	for _, j := range js {
		n, err := j.runOnce(ctx)
		total += n
		errs = append(errs, err)
	}
	return total, errors.Join(errs...)
}

// Find returns the runagain_storage extension a component names (id), or, when id is the zero
// ID, the only one the host has. It returns (nil, nil) when id is zero and the host has none;
// several and no name, or a name the host does not have, is an error naming what to set.
func Find(host component.Host, id component.ID) (Storage, error) {
	if host == nil {
		return nil, nil
	}
	var found []component.ID
	var byID = map[component.ID]Storage{}
	for eid, ext := range host.GetExtensions() {
		if eid.Type() != metadata.Type {
			continue
		}
		st, ok := ext.(Storage)
		if !ok {
			return nil, fmt.Errorf("extension %s is not a runagain_storage extension (%T)", eid, ext)
		}
		found = append(found, eid)
		byID[eid] = st
	}
	if id != (component.ID{}) {
		if st, ok := byID[id]; ok {
			return st, nil
		}
		return nil, fmt.Errorf("storage: extension %q not found: add it under `extensions` and to `service::extensions`", id)
	}
	switch len(found) {
	case 0:
		return nil, nil
	case 1:
		return byID[found[0]], nil
	default:
		return nil, fmt.Errorf("storage: several runagain_storage extensions (%v): name one with `storage`", found)
	}
}
