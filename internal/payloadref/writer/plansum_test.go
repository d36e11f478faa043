// SPDX-License-Identifier: Apache-2.0

package writer

import (
	"crypto/sha256"
	"fmt"
	"reflect"
	"testing"
)

// TestPlanSplitSum: given the value's digest (as Put has it), planSplitSum plans exactly the tree
// planSplit plans by hashing the value itself. planSplit now calls planSplitSum, so the trees are
// also checked against the value: every reference's digest is the SHA-256 of its bytes.
func TestPlanSplitSum(t *testing.T) {
	for _, n := range []int{1, 2, 10, 100, 300} {
		data := conversation("c", n)
		sum := sha256.Sum256(data)
		want := planSplit(data, 256, 64)
		got := planSplitSum(data, sum, 256, 64)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%d messages: planSplitSum differs from planSplit", n)
		}
		if n >= 2 && got.sum != sum {
			t.Fatalf("%d messages: root digest %x, want %x", n, got.sum, sum)
		}
		if got != nil {
			checkDigests(t, data, *got)
		}
	}
}

// checkDigests fails t unless every reference in n's tree names the SHA-256 of its bytes of data.
func checkDigests(t *testing.T, data []byte, n node) {
	t.Helper()
	if n.isRef && n.sum != sha256.Sum256(data[n.span.start:n.span.end]) {
		t.Fatalf("part %v (manifest %v): digest %x is not its bytes'", n.span, n.manifest, n.sum)
	}
	for _, c := range n.children {
		checkDigests(t, data, c)
	}
}

// BenchmarkPutHashing is the CPU Put spends before it writes anything on a value it splits (a
// resent conversation of 20 to 100 messages): "before" hashes the value, then plans the split
// (planSplit hashes the value again for the root manifest); "after" hands the digest to
// planSplitSum. Same run, same values.
//
//	go test -run '^$' -bench PutHashing -benchmem ./internal/payloadref/
func BenchmarkPutHashing(b *testing.B) {
	for _, n := range []int{20, 100} {
		data := conversation("c", n)
		b.Run(fmt.Sprintf("before/%dmsgs", n), func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				sum := sha256.Sum256(data)
				_ = sum
				if planSplit(data, 256, 64) == nil {
					b.Fatal("not split")
				}
			}
		})
		b.Run(fmt.Sprintf("after/%dmsgs", n), func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				sum := sha256.Sum256(data)
				if planSplitSum(data, sum, 256, 64) == nil {
					b.Fatal("not split")
				}
			}
		})
	}
}
