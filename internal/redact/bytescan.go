// SPDX-License-Identifier: Apache-2.0

package redact

import (
	"encoding/binary"
	"math/bits"
	"strings"
	"unsafe"
)

// SWAR (SIMD within a register) constants: a byte of ones in each lane, and each lane's high bit.
const (
	swarOnes = 0x0101010101010101
	swarHigh = 0x8080808080808080
)

// swarBetween returns the high bit of each of the eight byte lanes of x that holds a value v with
// m < v < n (0 <= m <= 127, 0 <= n <= 128), the others 0: the "hasbetween" word trick (see
// nextDigit), exact per lane.
func swarBetween(x, m, n uint64) uint64 {
	return (swarOnes*(127+n) - (x & (swarOnes * 127))) &^ x & ((x & (swarOnes * 127)) + swarOnes*(127-m)) & swarHigh
}

// nextDigit returns the index of the first ASCII digit in s at or after i, or len(s). It tests
// eight bytes at a time with the "hasbetween" word trick (Sean Eron Anderson, Bit Twiddling
// Hacks, "Determine if a word has a byte between m and n"): per lane, (127+n - (x&127)) &^ x &
// ((x&127) + 127-m) has its high bit set exactly when m < x < n, with no borrow or carry between
// lanes for m, n <= 128, so the lowest set high bit is the first digit of the eight. Prose holds
// few digits: this is what lets scanDigitClusters skip it at a few cycles per eight bytes.
func nextDigit(s string, i int) int {
	const m, n = '0' - 1, '9' + 1
	b := unsafe.Slice(unsafe.StringData(s), len(s)) // read only
	for ; i+8 <= len(b); i += 8 {
		x := binary.LittleEndian.Uint64(b[i:]) // one 8-byte load
		if t := swarBetween(x, m, n); t != 0 {
			return i + bits.TrailingZeros64(t)/8
		}
	}
	for ; i < len(s); i++ {
		if c := s[i]; c >= '0' && c <= '9' {
			return i
		}
	}
	return len(s)
}

// nextColon returns the index of the first ':' in s at or after i, or len(s).
func nextColon(s string, i int) int {
	if j := strings.IndexByte(s[i:], ':'); j >= 0 {
		return i + j
	}
	return len(s)
}

// lowerWord turns the bytes A-Z of x (eight lanes) to a-z and leaves the others: the lanes
// holding 'A' < x+1 < 'Z'+2 (hasbetween, see nextDigit) get 0x20 added, which is 0x80 >> 2.
func lowerWord(x uint64) uint64 {
	const m, n = 'A' - 1, 'Z' + 1
	return x | swarBetween(x, m, n)>>2
}

// plainJSONBody reports whether s holds no byte that a JSON string literal must escape (a
// control byte, '"' or '\\'), eight bytes at a time with the "hasless" and "haszero" word tests
// of Bit Twiddling Hacks (exact as tests of the whole word: a borrow only marks lanes above a
// lane that matches).
func plainJSONBody(s string) bool {
	b := unsafe.Slice(unsafe.StringData(s), len(s)) // read only
	i := 0
	for ; i+8 <= len(b); i += 8 {
		x := binary.LittleEndian.Uint64(b[i:])
		q, bs := x^(swarOnes*'"'), x^(swarOnes*'\\')
		if (x-swarOnes*0x20)&^x&swarHigh != 0 || (q-swarOnes)&^q&swarHigh != 0 || (bs-swarOnes)&^bs&swarHigh != 0 {
			return false
		}
	}
	for ; i < len(b); i++ {
		if c := b[i]; c < 0x20 || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}
