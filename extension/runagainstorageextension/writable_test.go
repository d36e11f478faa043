// SPDX-License-Identifier: Apache-2.0

package runagainstorageextension

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/config/configoptional"
)

// sqliteConfig has the hot and warm tiers on the SQLite files hot and warm.
func sqliteConfig(hot, warm string) *Config {
	cfg := NewDefaultConfig()
	cfg.Hot = configoptional.Some(HotConfig{Retention: DefaultHotRetention, SQLite: configoptional.Some(SQLiteConfig{Path: hot})})
	cfg.Warm = configoptional.Some(WarmConfig{Retention: DefaultWarmRetention, SQLite: configoptional.Some(SQLiteConfig{Path: warm})})
	return cfg
}

// TestValidateUnwritableSQLitePath: a SQLite path Start could not create or write fails Validate
// naming the field (a file standing where a directory must be, a directory where the file
// must be); ValidateForReading (the CLI) accepts it; paths whose directories Start will create
// pass.
func TestValidateUnwritableSQLitePath(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "a-file")
	require.NoError(t, os.WriteFile(file, nil, 0o600))

	for name, tc := range map[string]struct {
		hot, warm string
		want      []string
	}{
		"under a regular file": {filepath.Join(file, "hot.db"), filepath.Join(dir, "warm.db"),
			[]string{`hot::sqlite::path "` + filepath.Join(file, "hot.db") + `": stat ` + filepath.Join(file, "hot.db") + `: not a directory`}},
		"deeper under a regular file": {filepath.Join(dir, "hot.db"), filepath.Join(file, "x", "warm.db"),
			[]string{`warm::sqlite::path "` + filepath.Join(file, "x", "warm.db") + `": stat ` + filepath.Join(file, "x", "warm.db") + `: not a directory`}},
		"a directory": {dir, filepath.Join(dir, "warm.db"),
			[]string{`hot::sqlite::path "` + dir + `": is a directory; name the SQLite file in it`}},
		"directories to create": {filepath.Join(dir, "new", "deeper", "hot.db"), filepath.Join(dir, "new", "warm.db"), nil},
		"existing files":        {file, filepath.Join(dir, "warm.db"), nil},
	} {
		t.Run(name, func(t *testing.T) {
			cfg := sqliteConfig(tc.hot, tc.warm)
			require.NoError(t, cfg.ValidateForReading(), "the fields are right")
			assert.Equal(t, tc.want, errorLines(cfg.Validate()))
		})
	}
	assert.NoDirExists(t, filepath.Join(dir, "new"), "Validate creates nothing")
}

// TestValidateReadOnlyFileSystem: on a read-only file system (a tmpfs mounted ro; root too is
// refused there) both an existing SQLite file and one to create fail Validate naming the field.
func TestValidateReadOnlyFileSystem(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting a read-only tmpfs needs root")
	}
	ro := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", ro).CombinedOutput(); err != nil {
		t.Skipf("mounting a tmpfs is not allowed here: %v %s", err, strings.TrimSpace(string(out)))
	}
	t.Cleanup(func() { _ = exec.Command("umount", "-l", ro).Run() })
	existing := filepath.Join(ro, "hot.db")
	require.NoError(t, os.WriteFile(existing, nil, 0o600))
	out, err := exec.Command("mount", "-o", "remount,ro", ro).CombinedOutput()
	require.NoError(t, err, "%s", out)

	cfg := sqliteConfig(existing, filepath.Join(ro, "sub", "warm.db"))
	require.NoError(t, cfg.ValidateForReading())
	assert.Equal(t, []string{
		`hot::sqlite::path "` + existing + `": cannot be written: read-only file system`,
		`warm::sqlite::path "` + filepath.Join(ro, "sub", "warm.db") + `": directory ` + ro + ` cannot be written: read-only file system`,
	}, errorLines(cfg.Validate()))
}

// errorLines are the lines of err's message, nil for no error.
func errorLines(err error) []string {
	if err == nil {
		return nil
	}
	return strings.Split(err.Error(), "\n")
}

// TestValidateProcPath: /proc lets root pass access(2) W_OK but creates no file: a hot SQLite
// path there fails Validate naming the field (it used to pass and fail at Start on the LOCK file).
func TestValidateProcPath(t *testing.T) {
	if fi, err := os.Stat("/proc/self"); err != nil || !fi.IsDir() {
		t.Skip("no /proc here")
	}
	cfg := sqliteConfig("/proc/hot.db", filepath.Join(t.TempDir(), "warm.db"))
	err := cfg.Validate()
	require.Error(t, err)
	assert.Contains(t, err.Error(), `hot::sqlite::path "/proc/hot.db"`)
}
