//go:build !race

package jsonkit

const raceEnabled = false
