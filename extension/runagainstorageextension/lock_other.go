//go:build !unix

package runagainstorageextension // import "github.com/runagain/runagain/extension/runagainstorageextension"

import "os"

// Without flock the lock file is written but not enforced.
func flockExclusive(*os.File) error { return nil }

func funlock(*os.File) error { return nil }
