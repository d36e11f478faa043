// SPDX-License-Identifier: Apache-2.0

// Package pins reads which runs a dataset store pins: the runs retention must never delete
// (DESIGN contract "Reruns and datasets", docs/architecture.md). It knows only the part of the
// dataset store's layout (internal/dataset) that names pinned runs, so that the storage
// extension's janitors can read pins without depending on the dataset feature:
//
//	versions/<name>/<version id>.json   a version manifest: {"cases": [{"trace_id": "<32 hex>"}, ...], ...}
//
// Every trace id of every case of every version of every dataset is pinned.
package pins // import "github.com/runagain/runagain/internal/pins"

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"gocloud.dev/blob"

	"github.com/runagain/runagain/internal/payloadref/ref"
)

// Source says which runs are pinned: trace ids, 32 lowercase hex. An error means "unknown":
// a janitor must then delete nothing (and retry later) rather than delete what may be pinned.
type Source interface {
	Pinned(ctx context.Context) (map[string]bool, error)
}

// Func adapts a function to Source.
type Func func(ctx context.Context) (map[string]bool, error)

// Pinned implements Source.
func (f Func) Pinned(ctx context.Context) (map[string]bool, error) { return f(ctx) }

// Bucket is the Source of the dataset store at url (a gocloud.dev/blob URL, as
// runagain_storage datasets::url): the bucket is opened for each call, so pins added by another
// process (runagain dataset add) count at the next call.
func Bucket(url string) Source {
	return Func(func(ctx context.Context) (map[string]bool, error) {
		b, closeFn, err := ref.OpenBucket(ctx, url)
		if err != nil {
			return nil, fmt.Errorf("dataset store %s: %w", url, err)
		}
		defer func() { _ = closeFn() }()
		return Read(ctx, b)
	})
}

// manifest is the part of a version manifest that pins.
type manifest struct {
	Cases []struct {
		TraceID string `json:"trace_id"`
	} `json:"cases"`
}

// Read returns the trace ids the version manifests of bucket b name (lowercased). An empty or
// absent store pins nothing; a manifest that cannot be read or parsed is an error naming its key.
func Read(ctx context.Context, b *blob.Bucket) (map[string]bool, error) {
	out := map[string]bool{}
	it := b.List(&blob.ListOptions{Prefix: "versions/"})
	for {
		o, err := it.Next(ctx)
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("list versions/: %w", err)
		}
		if o.IsDir || !strings.HasSuffix(o.Key, ".json") {
			continue
		}
		raw, err := b.ReadAll(ctx, o.Key)
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", o.Key, err)
		}
		var m manifest
		if err := json.Unmarshal(raw, &m); err != nil {
			return nil, fmt.Errorf("%s: %w", o.Key, err)
		}
		for _, c := range m.Cases {
			if c.TraceID != "" {
				out[strings.ToLower(c.TraceID)] = true
			}
		}
	}
}
