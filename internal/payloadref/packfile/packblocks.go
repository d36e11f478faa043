// SPDX-License-Identifier: Apache-2.0

package packfile

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"slices"
	"sync"

	"github.com/klauspost/compress/zstd"

	"github.com/runagain/runagain/internal/payloadref/ref"
)

// BlockPacker writes a v2 pack (see pack.go) to w: objects are added in order, gathered into
// blocks of about blockSize original bytes, each block compressed as one zstd frame and written
// when it is full; finish writes the last block and the trailer. Its size bound (size) is exact
// for the written blocks and counts the blocks not compressed yet at their original length (a
// zstd frame of incompressible bytes is a few bytes longer: blockSlack). The first write error is
// kept and returned by finish.
//
// A packer made by NewAsyncBlockPacker compresses and writes its full blocks on a goroutine of its
// own, in order, so that add (called under the pack writer's lock on the request path) only
// copies bytes: compressing a 128 KiB block took a few hundred microseconds during which every
// other Put waited. finish waits for that goroutine.
type BlockPacker struct {
	enc       *zstd.Encoder
	blockSize int
	w         io.Writer
	cur       []byte // the open block's original bytes
	Entries   []Entry
	open      int // index of the first entry of the open block

	bg     chan pendingBlock // async: full blocks to compress; nil compresses in add
	bgDone chan struct{}
	free   chan []byte // async: block buffers compressed and written, for the next blocks

	mu      sync.Mutex // guards what follows (the async goroutine writes them)
	n       int64      // bytes of finished blocks, plus queued blocks' original bytes and slack
	written int64      // bytes written to w
	err     error      // first write error
	located []blockLoc // async: where each finished block went, applied to entries by finish
}

// pendingBlock is a full block queued for compression: its original bytes and its entries.
type pendingBlock struct {
	raw        []byte
	first, end int
}

// blockLoc is where a compressed block went: entries [first, end) lie in it.
type blockLoc struct {
	first, end int
	off        int64
	zlen       uint32
}

// blockSlack bounds what a zstd frame adds to incompressible input (frame header, block
// headers (zstd's are at most 128 KiB: a few per block), checksum), per started block.
const blockSlack = 64

// asyncBlockQueue is how many full blocks may wait for compression before add waits (back
// pressure: about 1 MiB of original bytes at the default block size).
const asyncBlockQueue = 8

// NewBlockPacker returns a BlockPacker writing the pack to w, compressing each block with enc
// as it fills (blocks of blockSize original bytes; DefaultBlockSize when not positive).
func NewBlockPacker(enc *zstd.Encoder, blockSize int, w io.Writer) *BlockPacker {
	if blockSize <= 0 {
		blockSize = DefaultBlockSize
	}
	return &BlockPacker{enc: enc, blockSize: blockSize, w: w}
}

// NewAsyncBlockPacker is a BlockPacker whose blocks are compressed and written on its own
// goroutine (see BlockPacker); Finish must be called to end it.
func NewAsyncBlockPacker(enc *zstd.Encoder, blockSize int, w io.Writer) *BlockPacker {
	p := NewBlockPacker(enc, blockSize, w)
	p.bg, p.bgDone = make(chan pendingBlock, asyncBlockQueue), make(chan struct{})
	p.free = make(chan []byte, asyncBlockQueue+1)
	go p.compressLoop()
	return p
}

// compressLoop compresses and writes queued blocks in order until bg is closed.
func (p *BlockPacker) compressLoop() {
	defer close(p.bgDone)
	var z []byte
	for b := range p.bg {
		z = p.enc.EncodeAll(b.raw, z[:0])
		// This goroutine is w's only writer: the write runs without p.mu, so that size (on the
		// request path) never waits for the disk.
		p.mu.Lock()
		failed := p.err != nil
		p.mu.Unlock()
		var err error
		if !failed {
			_, err = p.w.Write(z)
		}
		p.mu.Lock()
		if p.err == nil {
			p.err = err
		}
		p.written += int64(len(z))
		p.n += int64(len(z)) - int64(len(b.raw)+blockSlack)
		p.located = append(p.located, blockLoc{first: b.first, end: b.end, off: p.written - int64(len(z)), zlen: uint32(len(z))})
		p.mu.Unlock()
		if cap(b.raw) <= 2*p.blockSize { // not one grown by a large object
			select { // its bytes are compressed and written: the buffer can hold another block
			case p.free <- b.raw[:0]:
			default:
			}
		}
	}
}

// writeLocked writes a compressed block at p.written (p.mu held).
func (p *BlockPacker) writeLocked(z []byte) {
	if p.err == nil {
		_, p.err = p.w.Write(z)
	}
	p.written += int64(len(z))
}

// Add appends object k's original bytes.
func (p *BlockPacker) Add(k ref.Object, raw []byte) {
	if len(p.cur) > 0 && len(p.cur)+len(raw) > p.blockSize {
		p.flushBlock()
	}
	if len(p.Entries) == cap(p.Entries) {
		// Doubled by hand: append grows large slices by a quarter, and a pack's entries (some
		// 100,000) were copied about 25 times on the request path.
		es := make([]Entry, len(p.Entries), max(1024, 2*cap(p.Entries)))
		copy(es, p.Entries)
		p.Entries = es
	}
	p.Entries = append(p.Entries, Entry{Object: k, InOff: int64(len(p.cur)), Raw: int64(len(raw))})
	p.cur = append(p.cur, raw...)
	if len(p.cur) >= p.blockSize {
		p.flushBlock()
	}
}

// flushBlock compresses the open block (or, async, queues it).
func (p *BlockPacker) flushBlock() {
	if len(p.cur) == 0 {
		return
	}
	if p.bg != nil {
		b := pendingBlock{raw: p.cur, first: p.open, end: len(p.Entries)}
		p.mu.Lock()
		p.n += int64(len(b.raw) + blockSlack)
		p.mu.Unlock()
		p.bg <- b
		p.open = len(p.Entries)
		select {
		case p.cur = <-p.free:
		default:
			p.cur = make([]byte, 0, p.blockSize+p.blockSize/4)
		}
		return
	}
	z := p.enc.EncodeAll(p.cur, make([]byte, 0, len(p.cur)/2+blockSlack))
	p.mu.Lock()
	off := p.written
	p.writeLocked(z)
	p.n += int64(len(z))
	p.mu.Unlock()
	for i := p.open; i < len(p.Entries); i++ {
		p.Entries[i].Off, p.Entries[i].ZLen = off, uint32(len(z))
	}
	p.open = len(p.Entries)
	p.cur = p.cur[:0]
}

// Size bounds the pack's size if it were finished now with n more original bytes in m more objects.
func (p *BlockPacker) Size(n, m int) int64 {
	open := len(p.cur) + n
	blocks := 1 + open/p.blockSize
	p.mu.Lock()
	done := p.n
	p.mu.Unlock()
	return done + int64(open+blocks*blockSlack) + int64(len(p.Entries)+m)*entrySizeV2 + fanoutSize + FooterSize
}

// Finish writes the open block and the trailer and returns the entries (in block order). An
// async packer's goroutine ends here.
func (p *BlockPacker) Finish() ([]Entry, error) {
	p.flushBlock()
	if p.bg != nil {
		close(p.bg)
		<-p.bgDone
		p.bg = nil
		for _, l := range p.located {
			for i := l.first; i < l.end; i++ {
				p.Entries[i].Off, p.Entries[i].ZLen = l.off, l.zlen
			}
		}
		p.located = nil
	}
	if p.err == nil {
		_, p.err = p.w.Write(encodeTrailerV2(p.Entries))
	}
	return p.Entries, p.err
}

// PackBytes builds a whole v2 pack in memory: fill adds the objects.
func PackBytes(enc *zstd.Encoder, blockSize int, fill func(bp *BlockPacker) error) ([]byte, []Entry, error) {
	var buf bytes.Buffer
	bp := NewBlockPacker(enc, blockSize, &buf)
	if err := fill(bp); err != nil {
		return nil, nil, err
	}
	es, err := bp.Finish()
	return buf.Bytes(), es, err
}

// encodeTrailerV2 returns the v2 trailer and footer for entries (their offsets final), the
// trailer starting where the blocks end: at max(entry block end).
func encodeTrailerV2(entries []Entry) []byte {
	var off int64
	for _, e := range entries {
		off = max(off, e.Off+int64(e.ZLen))
	}
	sorted := slices.Clone(entries)
	slices.SortFunc(sorted, func(a, b Entry) int {
		if c := bytes.Compare(a.Sum[:], b.Sum[:]); c != 0 {
			return c
		}
		return boolCmp(a.Manifest, b.Manifest)
	})
	t := make([]byte, 0, len(sorted)*entrySizeV2+fanoutSize+FooterSize)
	var fanout [256]uint32
	for _, e := range sorted {
		var b [entrySizeV2]byte
		copy(b[:32], e.Sum[:])
		b[32] = kindByte(e.Manifest, false)
		binary.BigEndian.PutUint64(b[33:41], uint64(e.Off))
		binary.BigEndian.PutUint32(b[41:45], e.ZLen)
		binary.BigEndian.PutUint32(b[45:49], uint32(e.InOff))
		binary.BigEndian.PutUint32(b[49:53], uint32(e.Raw))
		t = append(t, b[:]...)
		fanout[e.Sum[0]]++
	}
	var n uint32
	for i := range fanout {
		n += fanout[i]
		t = binary.BigEndian.AppendUint32(t, n)
	}
	return appendFooter(t, off, packMagicV2)
}

func boolCmp(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	}
	return -1
}

// fanoutRange returns the entries (first, end) of a v2 trailer whose digest starts with b, from
// the trailer's fanout (its last fanoutSize bytes).
func fanoutRange(fanout []byte, b byte) (lo, hi int) {
	if b > 0 {
		lo = int(binary.BigEndian.Uint32(fanout[4*(int(b)-1):]))
	}
	return lo, int(binary.BigEndian.Uint32(fanout[4*int(b):]))
}

// decodeEntriesV2 parses v2 entries (a run of entrySizeV2 records) and checks that each block
// lies before the trailer at trailerOff.
func decodeEntriesV2(t []byte, trailerOff int64) ([]Entry, error) {
	if len(t)%entrySizeV2 != 0 {
		return nil, fmt.Errorf("pack trailer: %d bytes of entries", len(t))
	}
	out := make([]Entry, len(t)/entrySizeV2)
	for i := range out {
		b := t[i*entrySizeV2:]
		e := &out[i]
		copy(e.Sum[:], b[:32])
		if b[32] > kindManifest {
			return nil, fmt.Errorf("pack trailer: entry %d: kind %d", i, b[32])
		}
		e.Manifest = b[32] == kindManifest
		e.Off = int64(binary.BigEndian.Uint64(b[33:41]))
		e.ZLen = binary.BigEndian.Uint32(b[41:45])
		e.InOff = int64(binary.BigEndian.Uint32(b[45:49]))
		e.Raw = int64(binary.BigEndian.Uint32(b[49:53]))
		if e.Off < 0 || e.Off+int64(e.ZLen) > trailerOff {
			return nil, fmt.Errorf("pack trailer: entry %d: block at %d+%d outside the blocks", i, e.Off, e.ZLen)
		}
	}
	return out, nil
}

// decodeTrailerV2 parses a whole v2 trailer (checked against crc) into its entries, in block order.
func decodeTrailerV2(t []byte, crc uint32, trailerOff int64) ([]Entry, error) {
	if crc32.Checksum(t, castagnoli) != crc {
		return nil, errors.New("pack trailer: checksum mismatch")
	}
	if len(t) < fanoutSize {
		return nil, fmt.Errorf("pack trailer: %d bytes", len(t))
	}
	n := int(binary.BigEndian.Uint32(t[len(t)-4:]))
	if len(t) != n*entrySizeV2+fanoutSize {
		return nil, fmt.Errorf("pack trailer: %d bytes for %d entries", len(t), n)
	}
	out, err := decodeEntriesV2(t[:n*entrySizeV2], trailerOff)
	if err != nil {
		return nil, err
	}
	sortBlockOrder(out)
	return out, nil
}

// sortBlockOrder sorts entries as they lie in the pack (block, then offset in the block).
func sortBlockOrder(es []Entry) {
	slices.SortStableFunc(es, func(a, b Entry) int {
		if a.Off != b.Off {
			return cmpInt(a.Off, b.Off)
		}
		return cmpInt(a.InOff, b.InOff)
	})
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// ObjectBytes returns the original bytes of every entry of a whole pack of either version (data
// holds it whole), in pack order, to yield; dec decodes frames and blocks. Entries of a v1 pack
// are frames (or raw staging records); entries of a v2 pack share blocks, each decoded once.
func ObjectBytes(r io.ReaderAt, entries []Entry, dec *zstd.Decoder, yield func(e Entry, raw []byte) error) error {
	var blockOff int64 = -1
	var block []byte
	for _, e := range entries {
		var z []byte
		if e.InOff < 0 || e.Off != blockOff {
			z = make([]byte, e.ZLen)
			if _, err := r.ReadAt(z, e.Off); err != nil {
				return fmt.Errorf("reading %s at %d: %w", e.Name(), e.Off, err)
			}
		}
		var raw []byte
		switch {
		case e.InOff < 0 && e.RawRec:
			raw = z
		case e.InOff < 0:
			var err error
			if raw, err = dec.DecodeAll(z, nil); err != nil {
				return fmt.Errorf("decompressing %s: %w", e.Name(), err)
			}
		default:
			if e.Off != blockOff {
				var err error
				if block, err = dec.DecodeAll(z, block[:0]); err != nil {
					return fmt.Errorf("decompressing the block at %d: %w", e.Off, err)
				}
				blockOff = e.Off
			}
			if e.InOff+e.Raw > int64(len(block)) {
				return fmt.Errorf("%s: [%d, +%d) outside its %d byte block", e.Name(), e.InOff, e.Raw, len(block))
			}
			raw = block[e.InOff : e.InOff+e.Raw]
		}
		if err := yield(e, raw); err != nil {
			return err
		}
	}
	return nil
}

// Repack returns a whole pack (old, either version) rewritten in the v2 layout without the
// objects in skip, and its entries.
func Repack(old []byte, skip map[ref.Object]bool, enc *zstd.Encoder, dec *zstd.Decoder, blockSize int) ([]byte, []Entry, error) {
	if len(old) < FooterSize {
		return nil, nil, ErrNoFooter
	}
	off, n, crc, version, err := DecodeFooter(old[len(old)-FooterSize:], int64(len(old)))
	if err != nil {
		return nil, nil, err
	}
	entries, err := decodeAnyTrailer(old[off:off+int64(n)], crc, off, version)
	if err != nil {
		return nil, nil, err
	}
	return PackBytes(enc, blockSize, func(bp *BlockPacker) error {
		return ObjectBytes(bytes.NewReader(old), entries, dec, func(e Entry, raw []byte) error {
			if !skip[e.Object] {
				bp.Add(e.Object, raw)
			}
			return nil
		})
	})
}

// BlockWindow is the zstd window for blocks of n bytes: the power of two at least 2n (at least
// 64 KiB, at most 8 MiB).
func BlockWindow(n int) int {
	w := 64 << 10
	for w < 2*n && w < 8<<20 {
		w <<= 1
	}
	return w
}
