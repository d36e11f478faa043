// SPDX-License-Identifier: Apache-2.0

package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"go.opentelemetry.io/collector/pdata/ptrace"

	fx "github.com/runagain/runagain/internal/fixture"
	"github.com/runagain/runagain/internal/seal"
)

// Sealed originals (issue 19): the collector's agent_redaction keeps, when seal_originals is
// on, the original of every value it redacts, encrypted with its session's data key in
// <data dir>/keys (internal/seal). replay unseals the recorded exchanges it serves; delete
// --session destroys a session's key (delete.go).

// keysDir is where the session keys are: $RUNAGAIN_SEAL_KEY_DIR, else <data dir>/keys (what
// config/default.yaml gives agent_redaction's seal_originals.key_dir).
func keysDir() string {
	if d := os.Getenv("RUNAGAIN_SEAL_KEY_DIR"); d != "" {
		return d
	}
	return filepath.Join(dataDirFlag, "keys")
}

// openKeys opens the key directory, or returns nil when there is none (sealing never used).
// The master key is the local one unless $RUNAGAIN_SEAL_KEEPER_URL names a gocloud.dev/secrets keeper.
func openKeys(ctx context.Context) (*seal.Keys, error) {
	dir := keysDir()
	if !seal.Exists(dir) {
		return nil, nil
	}
	return seal.OpenKeys(ctx, dir, os.Getenv("RUNAGAIN_SEAL_KEEPER_URL"))
}

// unsealForReplay puts the sealed originals of the run's recorded exchanges back, so replay
// serves the exact bytes the agent saw, and says on errOut what it could not give back: originals
// erased with their session's key, and responses redaction changed with no sealed original.
func unsealForReplay(ctx context.Context, td ptrace.Traces, errOut io.Writer) error {
	keys, err := openKeys(ctx)
	if err != nil {
		return fmt.Errorf("sealed originals: %w", err)
	}
	if keys != nil {
		defer keys.Close()
	}
	rep, err := seal.Restore(ctx, keys, td, fx.IsFixture)
	if err != nil {
		return fmt.Errorf("sealed originals: %w", err)
	}
	if rep.Restored > 0 {
		fmt.Fprintf(errOut, "runagain replay: %d redacted values unsealed: serving the exact recorded bytes\n", rep.Restored)
	}
	if len(rep.Erased) > 0 {
		fmt.Fprintf(errOut, "runagain replay: the originals of %d recorded exchanges were erased (their session's key was destroyed by runagain delete --session): "+
			"serving the redacted bytes, which differ from what the agent saw (spans %s)\n", len(rep.Erased), strings.Join(rep.Erased, ", "))
	}
	if len(rep.Differs) > 0 {
		var parts []string
		values := int64(0)
		for _, d := range rep.Differs {
			parts = append(parts, fmt.Sprintf("span %s: %s", d.SpanID, strings.Join(d.Keys, ", ")))
			values += d.Values
		}
		fmt.Fprintf(errOut, "runagain replay: %d recorded responses were changed by redaction and have no sealed originals (%d values): "+
			"they are served redacted and differ from what the agent saw (%s); record with agent_redaction seal_originals enabled for exact replay\n",
			len(rep.Differs), values, strings.Join(parts, "; "))
	}
	return nil
}

const sealRotateLong = `Rotates the master key that wraps the sessions' data keys of sealed originals: every data
key in the key directory is decrypted with the current master key and encrypted again with the
new one (internal/seal Rotate). The sealed originals themselves are not touched, and from then on
only the new master key opens them; erasure per session (delete --session) works as before.

The current master key is found as replay finds it: --keeper-url / $RUNAGAIN_SEAL_KEEPER_URL (a
KMS), $RUNAGAIN_SEAL_KEY, --key-file / $RUNAGAIN_SEAL_KEY_FILE, else <key dir>/master.key. The new
one is exactly one of --new-keeper-url (a gocloud.dev/secrets keeper URL: awskms://, gcpkms://,
azurekeyvault://, hashivault://, base64key://), --new-key-file (created with a random key when
missing; refused inside --data-dir unless --allow-key-in-data-dir) or --new-key-env (the name of
a variable holding a base64 256-bit key).

Stop the collector first (a session key it creates meanwhile would be wrapped by the old key), then
start it with the new key (seal_originals.keeper_url or key_file, or the variable). An interrupted
rotation is finished by running the same command again. Keep the old key until the collector
runs with the new one, then destroy it.`

func init() {
	var keyDir, keeperURL, keyFile, newKeeperURL, newKeyFile, newKeyEnv string
	var allowInDataDir bool
	seal0 := &cobra.Command{
		Use:   "seal",
		Short: "Manage the keys of sealed originals (agent_redaction seal_originals)",
		Args:  cobra.NoArgs,
	}
	rotate := &cobra.Command{
		Use:   "rotate (--new-keeper-url URL | --new-key-file FILE | --new-key-env VAR)",
		Short: "Rewrap every session's data key with a new master key (key rotation)",
		Long:  sealRotateLong,
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			given := 0
			for _, v := range []string{newKeeperURL, newKeyFile, newKeyEnv} {
				if v != "" {
					given++
				}
			}
			if given != 1 {
				return fmt.Errorf("give exactly one of --new-keeper-url, --new-key-file, --new-key-env")
			}
			if newKeyEnv != "" && strings.TrimSpace(os.Getenv(newKeyEnv)) == "" {
				return fmt.Errorf("--new-key-env %s: the variable is empty or unset", newKeyEnv)
			}
			if keyDir == "" {
				keyDir = keysDir()
			}
			cur := seal.Master{KeeperURL: keeperURL, KeyEnv: seal.DefaultKeyEnv, KeyFile: keyFile}
			next := seal.Master{KeeperURL: newKeeperURL, KeyEnv: newKeyEnv, KeyFile: newKeyFile,
				DataDir: dataDirFlag, AllowKeyInDataDir: allowInDataDir}
			r, err := seal.Rotate(contextOf(cmd), keyDir, cur, next)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "%s: %d of %d session keys rewrapped with the new master key (%s)", keyDir, r.Rewrapped, r.Sessions, r.NewKey)
			if skipped := r.Sessions - r.Rewrapped; skipped > 0 {
				fmt.Fprintf(out, "; %d already were", skipped)
			}
			fmt.Fprintln(out)
			fmt.Fprintln(out, "start the collector with the new key (seal_originals.keeper_url / key_file, or $"+seal.DefaultKeyEnv+"), then destroy the old one: it no longer opens the sealed originals")
			return nil
		},
	}
	rotate.Flags().StringVar(&keyDir, "key-dir", "", "the key directory (default $RUNAGAIN_SEAL_KEY_DIR, else <data dir>/keys)")
	rotate.Flags().StringVar(&keeperURL, "keeper-url", os.Getenv("RUNAGAIN_SEAL_KEEPER_URL"), "current master key: a gocloud.dev/secrets keeper URL")
	rotate.Flags().StringVar(&keyFile, "key-file", os.Getenv(seal.DefaultKeyFileEnv), "current master key: its file (default <key dir>/master.key)")
	rotate.Flags().StringVar(&newKeeperURL, "new-keeper-url", "", "new master key: a gocloud.dev/secrets keeper URL")
	rotate.Flags().StringVar(&newKeyFile, "new-key-file", "", "new master key: its file, created with a random key when missing")
	rotate.Flags().StringVar(&newKeyEnv, "new-key-env", "", "new master key: the variable holding it (base64 of 32 bytes)")
	rotate.Flags().BoolVar(&allowInDataDir, "allow-key-in-data-dir", false, "accept a new key file inside --data-dir")
	seal0.AddCommand(rotate)
	rootCmd.AddCommand(seal0)
}
