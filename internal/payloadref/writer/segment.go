// SPDX-License-Identifier: Apache-2.0

package writer

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/cenkalti/backoff/v5"
	"github.com/gofrs/flock"

	"github.com/runagain/runagain/internal/payloadref/packfile"
	"github.com/runagain/runagain/internal/payloadref/ref"
)

// segment is the open pack: a file in the staging area that objects are appended to.
type segment struct {
	id      string
	path    string
	f       *os.File
	size    int64                 // bytes appended: written (written) plus buffered (buf)
	written int64                 // bytes written to f
	buf     []byte                // records appended since the last write, written by sync or seal (guarded by packWriter.mu)
	objects int                   // appended so far (their entries are bp's; stagingEntries derives the records')
	bp      *packfile.BlockPacker // writes the pack as it will be uploaded (objects compressed in blocks) to bf
	bf      *os.File              // <id>.blocks beside the staging file; nil when it could not be made
	opened  time.Time
	sealed  bool // guarded by packWriter.mu; the file is then closed (and was fsynced whole)

	syncMu sync.Mutex // one fsync at a time; concurrent batches share it (group commit)
	synced int64      // bytes known durable, guarded by syncMu
}

// packWriter appends objects to the open segment, seals it at a size or age limit, and uploads
// sealed packs (retrying with backoff until they are in the bucket; never dropping one).
type packWriter struct {
	s       *Store
	dir     string // staging directory
	lock    *flock.Flock
	maxSize int64
	maxAge  time.Duration

	mu     sync.Mutex // the append lock: the open segment
	cur    *segment
	closed bool

	// pmu guards pending (taken inside mu by appends, alone by lookups): a Put's dedup lookups
	// and a Commit's pending pass do not wait behind appends holding mu.
	pmu        sync.RWMutex
	pending    map[ref.Object]packfile.EntryAt // appended, not yet in the index
	maxPending int                             // appends are refused (ErrIndexBacklog) while pending holds this many
	refused    int64                           // appends refused so far, guarded by pmu
	// manifests are the pending manifests (a subset of pending, same pack): what each names and
	// whether a Commit vouched for it yet (see Batch). Guarded by pmu.
	manifests map[ref.Object]pendingManifest

	uploads chan string // sealed pack ids
	stop    chan struct{}
	wg      sync.WaitGroup
	waitMu  sync.Mutex
	waiting map[string]chan struct{} // closed when the pack is uploaded
	puts    int64                    // uploads done (PackStats)
}

func newPackID(now time.Time) string {
	var r [6]byte
	_, _ = rand.Read(r[:])
	return strconv.FormatInt(now.UnixNano(), 16) + "-" + hex.EncodeToString(r[:])
}

// openPackWriter locks the staging area, recovers what a previous process left there (sealing a
// torn open segment at its last complete record) and starts the uploader and the age timer.
func openPackWriter(ctx context.Context, s *Store, dir string) (*packWriter, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("payload staging %s: %w", dir, err)
	}
	lk := flock.New(filepath.Join(dir, "LOCK"))
	ok, err := lk.TryLock()
	if err != nil {
		return nil, fmt.Errorf("payload staging %s: %w", dir, err)
	}
	if !ok {
		return nil, fmt.Errorf("payload staging %s: %w", dir, ErrStagingLocked)
	}
	w := &packWriter{s: s, dir: dir, lock: lk, maxSize: s.opts.PackMaxSize, maxAge: s.opts.PackMaxAge,
		pending: map[ref.Object]packfile.EntryAt{}, manifests: map[ref.Object]pendingManifest{}, maxPending: s.opts.MaxPendingObjects, uploads: make(chan string, 1<<16), stop: make(chan struct{}),
		waiting: map[string]chan struct{}{}}
	ids, err := w.recover(ctx)
	if err != nil {
		_ = lk.Unlock()
		return nil, err
	}
	for _, id := range ids {
		w.waiting[id] = make(chan struct{})
		w.uploads <- id
	}
	w.wg.Add(2)
	go w.uploader()
	go w.ager()
	return w, nil
}

// ErrStagingLocked is wrapped by NewStore's error when another process writes the staging area.
var ErrStagingLocked = errors.New("staging area in use by another process")

// recover seals and indexes every pack file left in the staging area and returns their ids in
// the order they were created.
func (w *packWriter) recover(ctx context.Context) ([]string, error) {
	des, err := os.ReadDir(w.dir)
	if err != nil {
		return nil, err
	}
	var ids []string
	for _, de := range des {
		name := de.Name()
		if strings.HasSuffix(name, ".tmp") || strings.HasSuffix(name, BlocksSuffix) {
			// Temporary, or derived: the blocks of a staged pack are built again from it.
			_ = os.Remove(filepath.Join(w.dir, name))
			continue
		}
		if !strings.HasSuffix(name, ref.PackSuffix) || !ref.ValidPackID(strings.TrimSuffix(name, ref.PackSuffix)) {
			continue
		}
		id := strings.TrimSuffix(name, ref.PackSuffix)
		entries, keep, err := w.recoverOne(id)
		if err != nil {
			return nil, err
		}
		if !keep {
			continue
		}
		var added []packfile.EntryAt
		for _, e := range entries {
			if !e.Manifest {
				added = append(added, packfile.EntryAt{Entry: e, Pack: id})
			}
		}
		// Objects of a crashed process that were fsynced but whose index rows were not committed:
		// index them now (their values may have been acknowledged). Only values: a manifest is
		// indexed once a Commit vouched for what it names (see Batch), and the file does not say
		// which were (an unconfirmed one may name objects collected since); a manifest indexed
		// before the crash keeps its row, and one that was not is written again when needed.
		if _, _, err := w.s.idx.Insert(ctx, added, w.s.now); err != nil {
			return nil, err
		}
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids, nil
}

// recoverOne makes staged pack id whole: a sealed pack is kept as is; an unsealed one is cut after
// its last record that decodes and hashes to its digest, then sealed. keep is false (and the file
// removed) when nothing valid is left.
func (w *packWriter) recoverOne(id string) (entries []packfile.Entry, keep bool, err error) {
	path := filepath.Join(w.dir, id+ref.PackSuffix)
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return nil, false, err
	}
	defer func() { _ = f.Close() }()
	st, err := f.Stat()
	if err != nil {
		return nil, false, err
	}
	if es, err := packfile.ReadLocalTrailer(f, st.Size()); err == nil {
		return es, true, nil
	}
	scanned, _ := packfile.ScanRecords(f, st.Size())
	dec := w.s.dec
	var end int64
	for _, e := range scanned {
		raw, err := packfile.ReadLocalEntry(f, e, dec)
		if err != nil {
			break
		}
		if !e.Manifest && sha256.Sum256(raw) != e.Sum {
			break
		}
		e.Raw = int64(len(raw))
		entries = append(entries, e)
		end = e.Off + int64(e.ZLen)
	}
	if len(entries) == 0 {
		_ = f.Close()
		return nil, false, os.Remove(path)
	}
	if err := f.Truncate(end); err != nil {
		return nil, false, err
	}
	if _, err := f.WriteAt(packfile.EncodeTrailer(entries, end), end); err != nil {
		return nil, false, err
	}
	if err := f.Sync(); err != nil {
		return nil, false, err
	}
	w.s.logger("payloadref: recovered staged pack %s: %d objects (%d bytes cut from a torn tail)", id, len(entries), st.Size()-end)
	return entries, true, nil
}

// lookupPending returns the pack of an object appended but not yet indexed. It does not take
// the append lock.
func (w *packWriter) lookupPending(k ref.Object) (string, bool) {
	w.pmu.RLock()
	e, ok := w.pending[k]
	w.pmu.RUnlock()
	return e.Pack, ok
}

// ErrIndexBacklog is returned (wrapped) by Put when StoreOptions.MaxPendingObjects objects wait
// to be indexed (the digest index cannot be written: a full disk, a lock held too long): new
// objects are refused until the index catches up, so that the objects waiting, which are found
// through memory until they are indexed, do not grow without bound. Nothing already appended is
// dropped: those objects stay readable (their staged pack holds them, and a restart indexes it).
// The processor treats it as any storage failure (retried, then kept inline or the batch refused).
var ErrIndexBacklog = errors.New("payloadref: too many objects wait for the digest index")

// appendObject appends content (raw) as object k to the open segment (opening one, or sealing
// the full one first: when the pack as it will be uploaded, compressed in blocks, could reach
// maxSize) and returns the pack id and true. A concurrent append of the same object returns the
// first one's pack and false (content was not appended: the stored object is the first one's).
// ErrIndexBacklog when maxPending objects wait to be indexed.
// A manifest (k.manifest) is recorded with the locations its parts name (deps) and the Batch
// that appends it (owner), unconfirmed: the indexer leaves it pending until a Commit confirms it
// (see Batch).
func (w *packWriter) appendObject(k ref.Object, content []byte, owner *Batch, deps []ref.Location) (string, bool, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return "", false, errors.New("payloadref: store closed")
	}
	w.pmu.RLock()
	had, ok := w.pending[k]
	full := !ok && w.maxPending > 0 && len(w.pending) >= w.maxPending
	w.pmu.RUnlock()
	if ok {
		return had.Pack, false, nil
	}
	if full {
		w.pmu.Lock()
		w.refused++
		n := len(w.pending)
		w.pmu.Unlock()
		w.s.ix.poke(indexMaxPending) // retry the index now
		return "", false, fmt.Errorf("%w (%d objects, limit %d)", ErrIndexBacklog, n, w.maxPending)
	}
	rec := int64(packfile.RecordHeaderSize + len(content))
	if w.cur != nil && w.cur.objects > 0 && w.cur.bp.Size(len(content), 1) >= w.maxSize {
		if err := w.sealLocked(); err != nil {
			return "", false, err
		}
	}
	if w.cur == nil {
		if err := w.openLocked(); err != nil {
			return "", false, err
		}
	}
	c := w.cur
	// Buffered: the batch's records reach the file in one write at its Commit (sync), which
	// fsyncs them; nothing refers to them durably before (see sync).
	c.buf = packfile.AppendRecordHeader(c.buf, k, len(content), true)
	c.buf = append(c.buf, content...)
	e := packfile.Entry{Object: k, Off: c.size + packfile.RecordHeaderSize, ZLen: uint32(len(content)), Raw: int64(len(content)), InOff: -1, RawRec: true}
	c.size += rec
	c.objects++
	c.bp.Add(k, content)
	w.pmu.Lock()
	w.pending[k] = packfile.EntryAt{Entry: e, Pack: c.id}
	if k.Manifest {
		w.manifests[k] = pendingManifest{pack: c.id, owner: owner, deps: deps}
	}
	w.pmu.Unlock()
	return c.id, true, nil
}

func (w *packWriter) openLocked() error {
	now := w.s.now()
	id := newPackID(now)
	path := filepath.Join(w.dir, id+ref.PackSuffix)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return fmt.Errorf("payloadref: staging: %w", err)
	}
	if d, err := os.Open(w.dir); err == nil { // the new file's directory entry survives a crash
		_ = d.Sync()
		_ = d.Close()
	}
	c := &segment{id: id, path: path, f: f, opened: now}
	// The blocks go to a file as they fill (not fsynced: derived from the staging file, which is
	// the durable copy; rebuilt from it when missing), so memory holds only the open block.
	sink := io.Discard
	if bf, err := os.OpenFile(filepath.Join(w.dir, id+BlocksSuffix), os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644); err == nil {
		c.bf, sink = bf, bf
	}
	c.bp = packfile.NewAsyncBlockPacker(w.s.benc, w.s.opts.PackBlockSize, sink)
	w.cur = c
	return nil
}

// writeBufLocked writes the records buffered in c to its file (w.mu held). After a failed write
// the file is cut back to what was written before and the records stay buffered (the next sync
// or seal writes them again): the bytes a pending object names are either written or still held.
func (w *packWriter) writeBufLocked(c *segment) error {
	if len(c.buf) == 0 {
		return nil
	}
	if _, err := c.f.WriteAt(c.buf, c.written); err != nil {
		_ = c.f.Truncate(c.written)
		return fmt.Errorf("payloadref: staging %s: %w", c.path, err)
	}
	c.written += int64(len(c.buf))
	if cap(c.buf) > 4<<20 {
		c.buf = nil // a large value passed: do not keep its buffer
	} else {
		c.buf = c.buf[:0]
	}
	return nil
}

// stagingEntries returns the staging file's entries (raw records, one after the other from
// offset 0, in append order) of the objects a segment's block packer holds.
func stagingEntries(bes []packfile.Entry) []packfile.Entry {
	out := make([]packfile.Entry, len(bes))
	var off int64
	for i, e := range bes {
		off += packfile.RecordHeaderSize
		out[i] = packfile.Entry{Object: e.Object, Off: off, ZLen: uint32(e.Raw), Raw: e.Raw, InOff: -1, RawRec: true}
		off += e.Raw
	}
	return out
}

// sealLocked writes the open segment's trailer, fsyncs and closes it and queues its upload.
func (w *packWriter) sealLocked() error {
	c := w.cur
	if c == nil {
		return nil
	}
	if c.objects == 0 {
		_, _ = c.bp.Finish()
		_ = c.f.Close()
		_ = os.Remove(c.path)
		if c.bf != nil {
			_ = c.bf.Close()
			_ = os.Remove(c.bf.Name())
		}
		w.cur = nil
		return nil
	}
	if err := w.writeBufLocked(c); err != nil {
		return fmt.Errorf("payloadref: sealing: %w", err)
	}
	t := packfile.EncodeTrailer(stagingEntries(c.bp.Entries), c.size)
	if _, err := c.f.WriteAt(t, c.size); err != nil {
		return fmt.Errorf("payloadref: sealing %s: %w", c.path, err)
	}
	if err := c.f.Sync(); err != nil {
		return fmt.Errorf("payloadref: sealing %s: %w", c.path, err)
	}
	c.sealed = true
	_ = c.f.Close()
	w.cur = nil
	w.waitMu.Lock()
	w.waiting[c.id] = make(chan struct{})
	w.waitMu.Unlock()
	// The pack's last blocks are compressed off the append lock; its upload is queued after.
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		_, err := c.bp.Finish()
		if c.bf != nil {
			if cerr := c.bf.Close(); err != nil || cerr != nil {
				w.s.logger("payloadref: blocks of pack %s (built again at upload): %v", c.id, errors.Join(err, cerr))
				_ = os.Remove(c.bf.Name())
			}
		}
		select {
		case w.uploads <- c.id:
		default:
			// The queue is full (a very long outage): the pack stays staged and is uploaded at the next start.
			w.s.logger("payloadref: upload queue full, pack %s stays staged until restart", c.id)
		}
	}()
	return nil
}

// sync makes every byte appended so far durable and returns how many objects wait to be
// indexed. The fsync runs outside the append lock, and a batch whose bytes another
// batch's fsync already covered does not fsync again (group commit): concurrent batches share
// one fsync instead of queueing behind each other's. Sealed segments were fsynced whole.
func (w *packWriter) sync() (int, error) {
	w.mu.Lock()
	c := w.cur
	var need int64
	if c != nil {
		need = c.size
	}
	w.mu.Unlock()
	w.pmu.RLock()
	out := len(w.pending)
	w.pmu.RUnlock()
	if c == nil {
		return out, nil
	}
	c.syncMu.Lock()
	defer c.syncMu.Unlock()
	if c.synced >= need {
		return out, nil
	}
	w.mu.Lock()
	size, sealed := c.size, c.sealed
	var werr error
	if !sealed {
		werr = w.writeBufLocked(c) // every record appended so far, in one write
	}
	w.mu.Unlock()
	if werr != nil {
		return 0, werr
	}
	if !sealed {
		if err := c.f.Sync(); err != nil {
			w.mu.Lock()
			sealed = c.sealed // sealed (fsynced and closed) meanwhile: durable
			w.mu.Unlock()
			if !sealed {
				return 0, fmt.Errorf("payloadref: fsync %s: %w", c.path, err)
			}
		}
	}
	c.synced = size
	return out, nil
}

// indexed drops committed objects from the pending set.
func (w *packWriter) indexed(es []packfile.EntryAt) {
	w.pmu.Lock()
	defer w.pmu.Unlock()
	for _, e := range es {
		if p, ok := w.pending[e.Object]; ok && p.Pack == e.Pack {
			delete(w.pending, e.Object)
			if e.Manifest {
				delete(w.manifests, e.Object)
			}
		}
	}
}

// SealRequestFile is the file of a staging area whose presence asks the process writing it to seal
// its open segment now (RequestSeal).
const SealRequestFile = "SEAL"

// RequestSeal asks the process writing the pack layout of data directory dir (StoreOptions.Dir)
// to seal its open segment and upload it now rather than at PackMaxAge: an erasure (runagain
// delete) calls it so that the objects it erases are in the bucket, where its next pass removes
// them, within about a second plus the upload. The writer checks for the request every second
// (or every PackMaxAge/4 when shorter). Nothing happens when no process writes dir.
func RequestSeal(dir string) error {
	staging := filepath.Join(dir, packfile.StagingDir)
	if _, err := os.Stat(staging); err != nil {
		return nil // no staging area: nothing to seal
	}
	return os.WriteFile(filepath.Join(staging, SealRequestFile), nil, 0o644)
}

// SealStaged has the packs staged in data directory dir (StoreOptions.Dir) uploaded before it
// returns: when a running process writes the staging area (it holds its lock), it sends a seal
// request (RequestSeal) and waits until every pack staged when it was called has left the
// staging area (uploaded), or ctx ends. It returns how many of them are still staged (0 when
// every one was uploaded, or when no process writes dir: they are uploaded at its next start);
// when ctx ends first, also an error naming that count and ctx's error.
func SealStaged(ctx context.Context, dir string) (int, error) {
	staging := filepath.Join(dir, packfile.StagingDir)
	lk := flock.New(filepath.Join(staging, "LOCK"))
	if ok, err := lk.TryLock(); err != nil || ok {
		if ok {
			_ = lk.Unlock()
		}
		return 0, nil // no writer (or no staging area)
	}
	names, err := packfile.DirNames(staging)
	if err != nil {
		return 0, err
	}
	var staged []string
	for _, n := range names {
		if strings.HasSuffix(n, ref.PackSuffix) {
			staged = append(staged, filepath.Join(staging, n))
		}
	}
	if len(staged) == 0 {
		return 0, nil
	}
	if err := RequestSeal(dir); err != nil {
		return len(staged), err
	}
	t := time.NewTicker(50 * time.Millisecond)
	defer t.Stop()
	for {
		left := 0
		for _, p := range staged {
			if _, err := os.Stat(p); err == nil {
				left++
			}
		}
		if left == 0 {
			return 0, nil
		}
		select {
		case <-ctx.Done():
			return left, fmt.Errorf("payloadref: %d staged packs not uploaded yet: %w", left, ctx.Err())
		case <-t.C:
		}
	}
}

// ager seals the open segment once it is older than maxAge, or when asked (SealRequestFile).
func (w *packWriter) ager() {
	defer w.wg.Done()
	tick := min(w.maxAge/4, time.Second)
	if tick < 10*time.Millisecond {
		tick = 10 * time.Millisecond
	}
	req := filepath.Join(w.dir, SealRequestFile)
	t := time.NewTicker(tick)
	defer t.Stop()
	for {
		select {
		case <-w.stop:
			return
		case <-t.C:
			asked := false
			if _, err := os.Stat(req); err == nil {
				asked = os.Remove(req) == nil
			}
			w.mu.Lock()
			if c := w.cur; c != nil && c.objects > 0 && (asked || w.s.now().Sub(c.opened) >= w.maxAge) {
				if err := w.sealLocked(); err != nil {
					w.s.logger("payloadref: %v", err)
				}
			}
			w.mu.Unlock()
		}
	}
}

// uploader uploads sealed packs in order, each retried with exponential backoff (capped at 30 s)
// until it is in the bucket or the writer stops; a pack that is not uploaded stays staged.
func (w *packWriter) uploader() {
	defer w.wg.Done()
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-w.stop; cancel() }()
	for {
		select {
		case <-w.stop:
			return
		case id := <-w.uploads:
			eb := backoff.NewExponentialBackOff()
			eb.InitialInterval = 100 * time.Millisecond
			eb.MaxInterval = 30 * time.Second
			_, err := backoff.Retry(ctx, func() (struct{}, error) {
				err := w.upload(ctx, id)
				if err != nil {
					w.s.logger("payloadref: uploading pack %s (will retry): %v", id, err)
				}
				return struct{}{}, err
			}, backoff.WithBackOff(eb), backoff.WithMaxElapsedTime(0), backoff.WithMaxTries(0))
			if err != nil {
				return // stopping: the pack stays staged, uploaded at the next start
			}
		}
	}
}

// BlocksSuffix ends the file beside a staged pack holding it in the layout to upload (v2), written
// as its blocks fill; derived from the staging file (removed and built again after a restart).
const BlocksSuffix = ".blocks"

// upload writes staged pack id to the bucket in the v2 layout (its blocks file, or, when there is
// none, built now from the staging file), records it as uploaded and removes the staged files.
// Every object appended so far (this pack's among them) is indexed first.
func (w *packWriter) upload(ctx context.Context, id string) error {
	if err := w.s.ix.flush(ctx, w); err != nil {
		return err
	}
	path := filepath.Join(w.dir, id+ref.PackSuffix)
	blocks := filepath.Join(w.dir, id+BlocksSuffix)
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		_ = os.Remove(blocks)
		w.done(id)
		return nil
	}
	actx, cancel := context.WithTimeout(ctx, w.s.opts.UploadTimeout)
	defer cancel()
	key := w.s.prefix + ref.PackKey(id)
	size, err := packfile.WriteFile(actx, w.s.bucket, key, blocks)
	if errors.Is(err, os.ErrNotExist) {
		var data []byte
		if data, err = w.build(path); err != nil {
			return err
		}
		size = int64(len(data))
		err = packfile.Write(actx, w.s.bucket, key, data)
	}
	if err != nil {
		return err
	}
	if err := w.s.idx.SetPack(ctx, id, true, size, w.s.now()); err != nil {
		return err
	}
	if err := os.Remove(path); err != nil {
		return err
	}
	_ = os.Remove(blocks)
	w.mu.Lock()
	w.puts++
	w.mu.Unlock()
	w.done(id)
	return nil
}

// build returns the v2 pack of a sealed staging file.
func (w *packWriter) build(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	entries, err := packfile.ReadLocalTrailer(f, st.Size())
	if err != nil {
		return nil, fmt.Errorf("staged pack %s: %w", path, err)
	}
	if len(entries) > 0 && entries[0].InOff >= 0 {
		// Already in the v2 layout: uploaded as it is.
		return os.ReadFile(path)
	}
	data, _, err := packfile.PackBytes(w.s.benc, w.s.opts.PackBlockSize, func(bp *packfile.BlockPacker) error {
		return packfile.ObjectBytes(f, entries, w.s.dec, func(e packfile.Entry, raw []byte) error {
			bp.Add(e.Object, raw)
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("staged pack %s: %w", path, err)
	}
	return data, nil
}

func (w *packWriter) done(id string) {
	w.waitMu.Lock()
	if ch, ok := w.waiting[id]; ok {
		close(ch)
		delete(w.waiting, id)
	}
	w.waitMu.Unlock()
}

// flush seals the open segment and waits until every sealed pack of this process is uploaded
// (or ctx ends).
func (w *packWriter) flush(ctx context.Context) error {
	w.mu.Lock()
	err := w.sealLocked()
	w.mu.Unlock()
	if err != nil {
		return err
	}
	w.waitMu.Lock()
	var chs []chan struct{}
	for _, ch := range w.waiting {
		chs = append(chs, ch)
	}
	w.waitMu.Unlock()
	for _, ch := range chs {
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("payloadref: packs still staged: %w", ctx.Err())
		}
	}
	return nil
}

// close seals the open segment, tries to upload what is staged within ctx, and stops. What is not
// uploaded stays staged (durable) and is uploaded at the next start.
func (w *packWriter) close(ctx context.Context) error {
	err := w.flush(ctx)
	if err != nil && ctx.Err() != nil {
		// Not an error: staged packs are durable and the next start uploads them.
		w.s.logger("payloadref: closing with packs still staged in %s (uploaded at the next start): %v", w.dir, err)
		err = nil
	}
	w.mu.Lock()
	w.closed = true
	w.mu.Unlock()
	close(w.stop)
	w.wg.Wait()
	return errors.Join(err, w.lock.Unlock())
}
