// SPDX-License-Identifier: Apache-2.0

package writer

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/runagain/runagain/internal/payloadref/collect"
)

// TestCrashRecoveryChild is the writer process of TestKill9BetweenStagingAndAck: it writes
// batches until it is killed, printing "ACK n session uri" once a batch's Commit returned nil.
// Between its Put (appended, and fsynced by another batch's Commit or the pack's age) and its
// Commit a batch sleeps a little, so a kill -9 often finds objects staged but not acknowledged.
func TestCrashRecoveryChild(t *testing.T) {
	dir, url := os.Getenv("PAYLOADREF_CRASH_DIR"), os.Getenv("PAYLOADREF_CRASH_URL")
	if dir == "" {
		t.Skip("the writer process of TestKill9BetweenStagingAndAck")
	}
	seed, _ := strconv.ParseUint(os.Getenv("PAYLOADREF_CRASH_SEED"), 10, 64)
	ctx := context.Background()
	s, err := NewStore(ctx, url, StoreOptions{Dir: dir, PackMaxAge: 20 * time.Millisecond, PackMaxSize: 64 << 10})
	if err != nil {
		fmt.Println("ERROR", err)
		os.Exit(2)
	}
	pool := newRacePool()
	var out sync.Mutex
	for g := 0; g < 2; g++ {
		go func(g int) {
			r := rand.New(rand.NewPCG(seed, uint64(g)))
			for {
				session := r.IntN(raceSessions)
				n := pool.pick(r, session)
				for attempt := 0; ; attempt++ {
					b := s.NewBatch()
					res, err := b.Put(ctx, pool.value(n), true)
					if err == nil {
						time.Sleep(time.Duration(r.IntN(3000)) * time.Microsecond)
						err = b.Commit(ctx)
					}
					if err == nil {
						out.Lock()
						fmt.Printf("ACK %d %d %s\n", n, session, res.URI)
						out.Unlock()
						break
					}
					if !errors.Is(err, ErrStale) || attempt > 5 {
						fmt.Println("ERROR", err)
						os.Exit(2)
					}
				}
			}
		}(g)
	}
	select {}
}

// TestKill9BetweenStagingAndAck: a writer process is killed with SIGKILL while its batches are
// between staging and acknowledgement, a random session is erased (Collect with Erase, Grace 0)
// and the next writer process recovers the staging area and deduplicates against what is left,
// round after round. Every payload acknowledged (and not erased) reads back byte for byte after
// every round.
func TestKill9BetweenStagingAndAck(t *testing.T) {
	if testing.Short() {
		t.Skip("starts writer processes")
	}
	const rounds = 10
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	ctx := context.Background()
	url, _ := fileURL(t)
	dir := t.TempDir()
	pool := newRacePool()
	ledger := &raceLedger{}
	r := rand.New(rand.NewPCG(seed, 1))
	var acked, missing, erasedRefs, deleted, keptChildren int
	for round := 0; round < rounds && !t.Failed(); round++ {
		cmd := exec.Command(os.Args[0], "-test.run=^TestCrashRecoveryChild$")
		cmd.Env = append(os.Environ(), "PAYLOADREF_CRASH_DIR="+dir, "PAYLOADREF_CRASH_URL="+url,
			"PAYLOADREF_CRASH_SEED="+strconv.FormatUint(seed+uint64(round), 10))
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan struct{})
		go func() {
			defer close(done)
			sc := bufio.NewScanner(stdout)
			for sc.Scan() {
				f := strings.Fields(sc.Text())
				if len(f) == 4 && f[0] == "ACK" {
					n, _ := strconv.ParseUint(f[1], 10, 64)
					session, _ := strconv.Atoi(f[2])
					ledger.add(raceAck{uri: f[3], n: n, session: session})
					acked++
				} else if len(f) > 0 && f[0] == "ERROR" {
					t.Errorf("round %d: writer: %s", round, sc.Text())
				}
			}
		}()
		time.Sleep(time.Duration(150+r.IntN(250)) * time.Millisecond)
		_ = cmd.Process.Signal(syscall.SIGKILL)
		<-done
		_ = cmd.Wait()

		// The collector (not running) erases a session; its staging area holds what the killed
		// process left, recovered by the next one.
		erased := ledger.erase(r.IntN(raceSessions))
		erasedRefs += len(erased)
		var uris []string
		for _, a := range erased {
			uris = append(uris, a.uri)
		}
		c, err := NewStore(ctx, url, StoreOptions{Dir: dir, CollectOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		staged(t, c) // the killed writer's packs not yet uploaded are read from its staging area
		st, err := c.Collect(ctx, ledger.refs, collect.Options{Erase: true, Erased: liveOf(uris...)})
		_ = c.Close()
		if err != nil {
			t.Fatalf("round %d: collect: %v", round, err)
		}
		deleted += st.ObjectsDeleted
		keptChildren += st.KeptChildren
		missing += checkAcked(t, pool, ledger.snapshot())
	}
	// A last writer recovers and uploads what the last one left staged.
	s, err := NewStore(ctx, url, StoreOptions{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	staged(t, s)
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	_ = s.Close()
	missing += checkAcked(t, pool, ledger.snapshot())
	t.Logf("rounds %d (kill -9 each): acknowledged %d, erased references %d, objects deleted %d, kept for a kept or staged manifest %d, acknowledged missing %d",
		rounds, acked, erasedRefs, deleted, keptChildren, missing)
	if missing != 0 {
		t.Fatalf("%d acknowledged payloads missing", missing)
	}
	if acked == 0 || deleted == 0 {
		t.Fatalf("the test exercised nothing: %d acknowledged, %d objects deleted", acked, deleted)
	}
}
