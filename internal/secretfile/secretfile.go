// SPDX-License-Identifier: Apache-2.0

// Package secretfile checks that a file holding a key (the redaction HMAC key, the proxy's CA
// private key) is private to its owner, as ssh does for private keys.
package secretfile // import "github.com/runagain/runagain/internal/secretfile"

import (
	"fmt"
	"os"
	"runtime"
)

// CheckPrivate returns an error naming path and its mode when the file can be read, written or
// executed by its group or others (any of the mode bits 0o077); keys are created with mode 0600.
// Windows has no such mode bits and passes.
func CheckPrivate(path string) error {
	if runtime.GOOS == "windows" {
		return nil
	}
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	if m := fi.Mode().Perm(); m&0o077 != 0 {
		return fmt.Errorf("%s is accessible by group or others (mode %04o): a key file must be private to its owner; run `chmod 600 %s`", path, m, path)
	}
	return nil
}
