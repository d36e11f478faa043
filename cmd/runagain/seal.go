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
// --session destroys a session's key.

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

func init() {
	var session string
	cmd := &cobra.Command{
		Use:   "delete --session ID",
		Short: "Erase a session's sealed originals by destroying its data key (crypto-shredding)",
		Long: `delete --session destroys the data key with which agent_redaction sealed the originals of the
values it redacted in that session (seal_originals). Every sealed copy of them, in the hot tier,
in exports, packs or backups, can no longer be opened: replay then serves the redacted bytes and
says that the originals were erased. A run without gen_ai.conversation.id or session.id is its own
session: give its trace id. The redacted spans themselves stay until retention removes them.

The keys are in $RUNAGAIN_SEAL_KEY_DIR, else <data dir>/keys.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if session == "" {
				return fmt.Errorf("--session: required")
			}
			dir := keysDir()
			if !seal.Exists(dir) {
				return fmt.Errorf("no session keys in %s: sealing was never enabled there (agent_redaction seal_originals)", dir)
			}
			keys, err := seal.OpenKeys(contextOf(cmd), dir, os.Getenv("RUNAGAIN_SEAL_KEEPER_URL"))
			if err != nil {
				return err
			}
			defer keys.Close()
			ok, err := keys.Destroy(session)
			if err != nil {
				return err
			}
			if !ok {
				fmt.Fprintf(cmd.OutOrStdout(), "session %s: no key (nothing was sealed for it, or it was deleted before)\n", session)
				return nil
			}
			fmt.Fprintf(cmd.OutOrStdout(), "session %s: data key destroyed; its sealed originals can no longer be opened\n", session)
			return nil
		},
	}
	cmd.Flags().StringVar(&session, "session", "", "session id (gen_ai.conversation.id, session.id, or the trace id of a run without one)")
	rootCmd.AddCommand(cmd)
}
