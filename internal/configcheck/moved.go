// SPDX-License-Identifier: Apache-2.0

package configcheck

import (
	"fmt"
	"sort"
	"strings"
)

// moved lists the settings that components used to carry themselves and that now belong to the
// runagain_storage extension (one configuration per concern: README "Upgrade notes"). Each entry is
// a component type, the path of the setting under the component, and the extension's field that
// replaces it.
var moved = []struct {
	kind, typ, path, to string
}{
	{"processors", "payload_offload", "storage::url", "payloads::url"},
	{"processors", "payload_offload", "storage::dir", "payloads::dir"},
	{"processors", "payload_offload", "storage::pack", "payloads::pack"},
	{"processors", "payload_offload", "dedup_cache_size", "payloads::dedup_cache_size"},
	{"processors", "payload_offload", "compression_level", "payloads::compression_level"},
	{"connectors", "agent_guard", "pricing", "pricing"},
	{"connectors", "agent_guard", "session_keys", "session_keys"},
	{"exporters", "tiered", "session_keys", "session_keys"},
	{"exporters", "tiered", "janitor_interval", "janitor_interval"},
	{"exporters", "tiered", "pricing", "pricing"},
	{"exporters", "tiered", "hot::retention", "hot::retention"},
	{"exporters", "tiered", "hot::sqlite", "hot::sqlite"},
	{"exporters", "tiered", "hot::clickhouse", "hot::clickhouse (endpoint, database, username, password, connection_params, create_schema, cluster_name; the delivery stays under tiered::hot)"},
	{"exporters", "tiered", "warm::retention", "warm::retention"},
	{"exporters", "tiered", "warm::sqlite", "warm::sqlite"},
	{"exporters", "tiered", "warm::clickhouse", "warm::clickhouse"},
	{"exporters", "tiered", "cold::retention", "cold::retention"},
	{"exporters", "tiered", "cold::parquet", "cold::parquet"},
	{"exporters", "tiered", "cold::clickhouse", "cold::clickhouse"},
}

// checkMoved returns one error per moved setting cfg still sets, in field order, naming the
// field and the runagain_storage field that replaces it.
func checkMoved(cfg map[string]any) []error {
	var errs []error
	for _, kind := range []string{"connectors", "exporters", "processors"} {
		comps, ok := cfg[kind].(map[string]any)
		if !ok {
			continue
		}
		ids := make([]string, 0, len(comps))
		for id := range comps {
			ids = append(ids, id)
		}
		sort.Strings(ids)
		for _, id := range ids {
			typ, _, _ := strings.Cut(id, "/")
			for _, m := range moved {
				if m.kind != kind || m.typ != typ || !has(comps[id], m.path) {
					continue
				}
				errs = append(errs, fmt.Errorf("%s::%s::%s: moved to the runagain_storage extension: set `extensions::runagain_storage::%s` "+
					"(and list runagain_storage in service::extensions); see README \"Upgrade notes\"", kind, id, m.path, m.to))
			}
		}
	}
	return errs
}

// has reports whether v, a component's configuration, sets path (keys joined by ::).
func has(v any, path string) bool {
	for _, k := range strings.Split(path, "::") {
		m, ok := v.(map[string]any)
		if !ok {
			return false
		}
		if v, ok = m[k]; !ok {
			return false
		}
	}
	return true
}
