//go:build !linux

// SPDX-License-Identifier: Apache-2.0

package sandbox

import (
	"context"
	"fmt"
	"runtime"
)

func available() error {
	return fmt.Errorf("the network sandbox needs Linux network namespaces; not available on %s", runtime.GOOS)
}

func run(context.Context, Config) (Result, error) { return Result{}, available() }

func initChild() {}
