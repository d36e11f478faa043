//go:build !linux

// SPDX-License-Identifier: Apache-2.0

package proctree

// parentsOf knows no process table here: the set is the root pid alone.
func parentsOf() map[int]int { return nil }
