// SPDX-License-Identifier: Apache-2.0

package runagainstorageextension // import "github.com/runagain/runagain/extension/runagainstorageextension"

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/gofrs/flock"
)

// LockFile is the name of the lock file the extension holds in each local data directory (the
// directories of the SQLite files) from Start to Shutdown; it holds the owner's process id.
const LockFile = "LOCK"

// ErrLocked is wrapped by the error of Start when another process holds a data directory.
var ErrLocked = errors.New("data directory in use")

// dirLock is one held lock file.
type dirLock struct {
	lk   *flock.Flock
	path string
}

// lockDirs takes an exclusive lock (github.com/gofrs/flock, non-blocking: flock(2) on Unix,
// LockFileEx on Windows, as the payload staging area's lock) on dir/LOCK for each directory of
// dirs and writes this process id into it. A directory held by another process (or by another open
// instance in this one) fails at once with ErrLocked and the holder's pid as recorded in the file.
func lockDirs(dirs []string) ([]*dirLock, error) {
	seen := map[string]bool{}
	var uniq []string
	for _, d := range dirs {
		if abs, err := filepath.Abs(d); err == nil {
			d = abs
		}
		if !seen[d] {
			seen[d] = true
			uniq = append(uniq, d)
		}
	}
	sort.Strings(uniq)
	var held []*dirLock
	for _, d := range uniq {
		l, err := lockDir(d)
		if err != nil {
			unlockAll(held)
			return nil, err
		}
		held = append(held, l)
	}
	return held, nil
}

func lockDir(dir string) (*dirLock, error) {
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, fmt.Errorf("data directory %s: %w", dir, err)
	}
	p := filepath.Join(dir, LockFile)
	lk := flock.New(p, flock.SetFlag(os.O_CREATE|os.O_RDWR), flock.SetPermissions(0o600))
	ok, err := lk.TryLock()
	if err != nil {
		return nil, fmt.Errorf("lock file %s: %w", p, err)
	}
	if !ok {
		holder := "unknown process"
		if b, rerr := os.ReadFile(p); rerr == nil {
			if pid, perr := strconv.Atoi(strings.TrimSpace(string(b))); perr == nil && pid > 0 {
				holder = fmt.Sprintf("pid %d", pid)
				if cmd, cerr := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid)); cerr == nil && len(cmd) > 0 {
					holder += " (" + strings.TrimSpace(strings.ReplaceAll(string(cmd), "\x00", " ")) + ")"
				}
			}
		}
		return nil, fmt.Errorf("%w: %s is locked by %s (lock file %s); stop that collector or give this one its own data directory",
			ErrLocked, dir, holder, p)
	}
	// The holder's pid, for the error above in the next process (best effort: Windows forbids
	// writing a range locked through another handle; the lock is what counts).
	_ = os.WriteFile(p, []byte(strconv.Itoa(os.Getpid())+"\n"), 0o600)
	return &dirLock{lk: lk, path: p}, nil
}

func unlockAll(ls []*dirLock) {
	for _, l := range ls {
		_ = l.lk.Close() // unlocks and closes the file
	}
}
