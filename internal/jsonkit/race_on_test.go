//go:build race

package jsonkit

// raceEnabled: the race detector makes sync.Pool drop items, so allocation counts are not checked.
const raceEnabled = true
