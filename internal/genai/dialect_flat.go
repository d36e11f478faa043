// SPDX-License-Identifier: Apache-2.0

package genai

import (
	"sort"
	"strconv"
	"strings"

	"go.opentelemetry.io/collector/pdata/pcommon"
)

// flatTree collects the attributes under prefix into a tree: each dotted segment is a map key;
// maps whose keys are all integers are read as arrays by listOf.
func flatTree(attrs pcommon.Map, prefix string) map[string]any {
	var root map[string]any
	attrs.Range(func(k string, v pcommon.Value) bool {
		if !strings.HasPrefix(k, prefix) {
			return true
		}
		if root == nil {
			root = map[string]any{}
		}
		segs := strings.Split(strings.TrimPrefix(k, prefix), ".")
		node := root
		for i, s := range segs {
			if i == len(segs)-1 {
				if _, exists := node[s]; !exists {
					node[s] = v.AsRaw()
				}
				break
			}
			next, ok := node[s].(map[string]any)
			if !ok {
				next = map[string]any{}
				node[s] = next
			}
			node = next
		}
		return true
	})
	return root
}

// listOf returns the entries of an integer-keyed node in numeric order.
func listOf(node any) []map[string]any {
	m, ok := node.(map[string]any)
	if !ok {
		return nil
	}
	type kv struct {
		i int
		v map[string]any
	}
	var items []kv
	for k, v := range m {
		i, err := strconv.Atoi(k)
		if err != nil {
			continue
		}
		if vm, ok := v.(map[string]any); ok {
			items = append(items, kv{i, vm})
		}
	}
	sort.Slice(items, func(a, b int) bool { return items[a].i < items[b].i })
	out := make([]map[string]any, len(items))
	for i, it := range items {
		out[i] = it.v
	}
	return out
}

func sub(m map[string]any, path ...string) any {
	var cur any = m
	for _, p := range path {
		mm, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = mm[p]
	}
	return cur
}
