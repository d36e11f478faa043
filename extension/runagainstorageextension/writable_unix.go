//go:build unix

// SPDX-License-Identifier: Apache-2.0

package runagainstorageextension // import "github.com/runagain/runagain/extension/runagainstorageextension"

import "golang.org/x/sys/unix"

// canWrite is access(2) W_OK for the process: EACCES for a missing permission, EROFS for a
// read-only file system (root included).
func canWrite(path string) error { return unix.Access(path, unix.W_OK) }
