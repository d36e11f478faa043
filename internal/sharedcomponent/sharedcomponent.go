// SPDX-License-Identifier: Apache-2.0

// Package sharedcomponent shares one component instance between the pipelines (signals) of one
// component id, as core's go.opentelemetry.io/collector/internal/sharedcomponent does (which
// cannot be imported from outside core). It differs in one point: Start and Shutdown are
// reference counted, so the instance is shut down when the last holder shuts down (an exporter's
// logs instance may still drain its queue after its traces instance has stopped).
package sharedcomponent // import "github.com/runagain/runagain/internal/sharedcomponent"

import (
	"context"
	"sync"

	"go.opentelemetry.io/collector/component"
)

// Map holds the shared instances by key (usually the component.ID).
type Map[K comparable, V component.Component] struct {
	mu         sync.Mutex
	components map[K]*Component[V]
}

// NewMap returns an empty Map.
func NewMap[K comparable, V component.Component]() *Map[K, V] {
	return &Map[K, V]{components: map[K]*Component[V]{}}
}

// LoadOrStore returns a holder of the instance stored under key, creating the instance with
// create when there is none. Every holder must be shut down once.
func (m *Map[K, V]) LoadOrStore(key K, create func() (V, error)) (*Holder[V], error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	c, ok := m.components[key]
	if !ok {
		v, err := create()
		if err != nil {
			return nil, err
		}
		c = &Component[V]{component: v}
		c.remove = func() {
			m.mu.Lock()
			defer m.mu.Unlock()
			if m.components[key] == c {
				delete(m.components, key)
			}
		}
		m.components[key] = c
	}
	c.mu.Lock()
	c.holders++
	c.mu.Unlock()
	return &Holder[V]{c: c}, nil
}

// Values returns the instances currently stored (tests and maintenance).
func (m *Map[K, V]) Values() []V {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]V, 0, len(m.components))
	for _, c := range m.components {
		out = append(out, c.component)
	}
	return out
}

// Component is one shared instance.
type Component[V component.Component] struct {
	component V
	remove    func()

	mu       sync.Mutex
	holders  int
	started  bool
	startErr error
}

// Holder is one user's handle on a shared instance.
type Holder[V component.Component] struct {
	c    *Component[V]
	once sync.Once
}

// Unwrap returns the shared instance.
func (h *Holder[V]) Unwrap() V { return h.c.component }

// Start starts the instance on the first call of any holder; later calls return the first
// call's error.
func (h *Holder[V]) Start(ctx context.Context, host component.Host) error {
	c := h.c
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.started {
		c.started = true
		c.startErr = c.component.Start(ctx, host)
	}
	return c.startErr
}

// Shutdown releases this holder; the last holder to shut down shuts the instance down and
// removes it from the Map.
func (h *Holder[V]) Shutdown(ctx context.Context) error {
	var err error
	h.once.Do(func() {
		c := h.c
		c.mu.Lock()
		c.holders--
		last := c.holders == 0
		c.mu.Unlock()
		if last {
			err = c.component.Shutdown(ctx)
			c.remove()
		}
	})
	return err
}
