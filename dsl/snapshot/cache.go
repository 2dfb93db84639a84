package snapshot

// The row cache: a derived copy of a snapshot's values that a pass reads
// without decoding Parquet. It sits next to the snapshot, in the state
// directory's snapshots folder (NAME-HASH.rows beside NAME-HASH.parquet),
// and holds, row after row in the snapshot's order, little-endian float64:
//
//	every column, in schema order (numeric ones clamped to their bounds,
//	categorical ones as category indices, len(Categories) for "other"),
//	the label (clamped) if any, the unit index if any, and then the two
//	parts of the Euclidean norm of the numeric columns (rows.StoredNorm),
//
// exactly the values a Parquet scan hands to mechanisms, so a pass gives
// the same bits either way. The header binds the file to its snapshot:
// magic, the snapshot's SHA-256, the row count, the row width, and the
// SHA-256 of the payload. The cache is a deterministic function of the
// immutable (hash-verified) snapshot; before a reader uses it, it checks
// the header against the verified snapshot and recomputes the payload's
// hash (once per process and file: cache_memo.go), and it ignores (and
// removes, when it may) a cache that does not match. Its memory is a read buffer whatever the row count.

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
	"unsafe"

	"github.com/privnotes/privnotes/mechanisms/rows"
)

const (
	cacheMagic  = "PNROWS01"
	cacheHeader = 4096 // bytes before the payload (a page, for aligned reads)
	cacheSuffix = ".rows"
	// cacheReadBytes is the size of one read of the payload.
	cacheReadBytes = 1 << 20
)

// CachePath returns the path of the row cache of the snapshot at path.
func CachePath(path string) string {
	return strings.TrimSuffix(path, filepath.Ext(path)) + cacheSuffix
}

// Discard removes a snapshot file and its row cache (a registration
// that failed after Build keeps neither: both hold the owner's data).
func Discard(path string) error {
	errCache := os.Remove(CachePath(path))
	if err := os.Remove(path); err != nil {
		return err
	}
	if errCache != nil && !os.IsNotExist(errCache) {
		return errCache
	}
	return nil
}

// cacheLayout is where a row's values sit in the cache.
type cacheLayout struct {
	width   int   // values per row
	label   int   // index of the label, or −1
	unit    int   // index of the unit index, or −1
	numeric []int // indices of the numeric columns, whose norm is stored
	norm    int   // index of the norm's big part (rel follows)
}

func layoutOf(info *Info) cacheLayout {
	l := cacheLayout{label: -1, unit: -1}
	for i, c := range info.Columns {
		if c.Kind == Numeric {
			l.numeric = append(l.numeric, i)
		}
	}
	l.width = len(info.Columns)
	if info.Label != "" {
		l.label = l.width
		l.width++
	}
	if info.UserColumn != "" {
		l.unit = l.width
		l.width++
	}
	l.norm = l.width
	l.width += 2
	return l
}

type cacheHead struct {
	snapshot [32]byte
	rows     uint64
	width    uint64
	payload  [32]byte
}

func (h *cacheHead) marshal() []byte {
	b := make([]byte, cacheHeader)
	copy(b, cacheMagic)
	copy(b[8:], h.snapshot[:])
	binary.LittleEndian.PutUint64(b[40:], h.rows)
	binary.LittleEndian.PutUint64(b[48:], h.width)
	copy(b[56:], h.payload[:])
	return b
}

func parseHead(b []byte) (*cacheHead, bool) {
	if len(b) != cacheHeader || string(b[:8]) != cacheMagic {
		return nil, false
	}
	h := &cacheHead{rows: binary.LittleEndian.Uint64(b[40:]), width: binary.LittleEndian.Uint64(b[48:])}
	copy(h.snapshot[:], b[8:40])
	copy(h.payload[:], b[56:88])
	return h, !slices.ContainsFunc(b[88:], func(c byte) bool { return c != 0 })
}

// nativeLE reports whether float64s are little-endian in memory, so that
// the payload can be read into []float64 without conversion.
var nativeLE = func() bool {
	x := uint16(1)
	return *(*byte)(unsafe.Pointer(&x)) == 1
}()

// asBytes views a float64 slice as its bytes.
func asBytes(f []float64) []byte {
	if len(f) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&f[0])), len(f)*8)
}

// WriteCache writes the row cache of the opened snapshot r beside it,
// unless a valid one is already there. It reads the snapshot once through
// DuckDB; the file appears whole or not at all (temporary file, then
// rename) and is read-only. The data owner's registration calls it; a
// reader that finds no cache reads Parquet.
func (r *Reader) WriteCache(ctx context.Context) error {
	dst := CachePath(r.path)
	if r.checkCache(dst) == nil {
		return nil
	}
	l := layoutOf(&r.info)
	var names []string
	for _, c := range r.info.Columns {
		names = append(names, c.Name)
	}
	// Through Parquet, whatever cache this reader found.
	plain, err := r.source(names, false)
	if err != nil {
		return err
	}
	dir := filepath.Dir(r.path)
	f, err := os.CreateTemp(dir, ".pn-rows-")
	if err != nil {
		return fmt.Errorf("snapshot: writing the row cache: %w", err)
	}
	tmp := f.Name()
	ok := false
	defer func() {
		if !ok {
			f.Close()
			os.Remove(tmp)
		}
	}()
	if _, err := f.Write(make([]byte, cacheHeader)); err != nil {
		return fmt.Errorf("snapshot: writing the row cache: %w", err)
	}
	h := sha256.New()
	w := bufio.NewWriterSize(io.MultiWriter(f, h), cacheReadBytes)
	dim := len(names)
	row := make([]float64, l.width)
	feat := make([]float64, len(l.numeric))
	buf := make([]byte, 8*l.width)
	n := uint64(0)
	err = rows.ForEach(ctx, plain, 4096, l.label >= 0, l.unit >= 0, func(b *rows.Batch) error {
		for i := range b.N {
			copy(row, b.Row(i, dim))
			if l.label >= 0 {
				row[l.label] = b.Label[i]
			}
			if l.unit >= 0 {
				row[l.unit] = float64(b.Unit[i])
			}
			for k, j := range l.numeric {
				feat[k] = row[j]
			}
			row[l.norm], row[l.norm+1] = rows.StoredNorm(feat)
			out := asBytes(row)
			if !nativeLE {
				for k, v := range row {
					binary.LittleEndian.PutUint64(buf[8*k:], math.Float64bits(v))
				}
				out = buf
			}
			if _, err := w.Write(out); err != nil {
				return err
			}
			n++
		}
		return nil
	})
	if err == nil {
		err = w.Flush()
	}
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("snapshot: writing the row cache failed")
	}
	if n != uint64(r.info.Rows) {
		return errors.New("snapshot: writing the row cache: rows missing")
	}
	head := cacheHead{rows: n, width: uint64(l.width)}
	if _, err := hex.Decode(head.snapshot[:], []byte(r.info.Hash)); err != nil {
		return fmt.Errorf("snapshot: %w", err)
	}
	copy(head.payload[:], h.Sum(nil))
	if _, err := f.WriteAt(head.marshal(), 0); err != nil {
		return fmt.Errorf("snapshot: writing the row cache: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("snapshot: writing the row cache: %w", err)
	}
	ok = true
	// No fsync: the cache is derived, and a torn file after a crash fails
	// its hash and is removed, so flushing 8·n·width bytes to disk (most
	// of the write's time) buys nothing.
	if err := os.Chmod(tmp, 0o444); err != nil {
		return fmt.Errorf("snapshot: writing the row cache: %w", err)
	}
	if err := os.Rename(tmp, dst); err != nil {
		return fmt.Errorf("snapshot: writing the row cache: %w", err)
	}
	return nil
}

// rowCache is an opened row cache, verified on first use.
type rowCache struct {
	path   string
	layout cacheLayout
	once   sync.Once
	f      *os.File // nil when the cache is absent or invalid
}

// checkCache verifies the cache at path against the snapshot: header,
// size and payload hash. It returns the opened file's error or a
// mismatch.
func (r *Reader) checkCache(path string) error {
	f, err := r.openCache(path)
	if f != nil {
		f.Close()
	}
	return err
}

var errStale = errors.New("the row cache does not match its snapshot")

func (r *Reader) openCache(path string) (*os.File, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	fail := func(err error) (*os.File, error) {
		f.Close()
		return nil, err
	}
	l := layoutOf(&r.info)
	hb := make([]byte, cacheHeader)
	if _, err := io.ReadFull(f, hb); err != nil {
		return fail(errStale)
	}
	head, ok := parseHead(hb)
	want, _ := hex.DecodeString(r.info.Hash)
	if !ok || !bytes.Equal(head.snapshot[:], want) || head.rows != uint64(r.info.Rows) || head.width != uint64(l.width) {
		return fail(errStale)
	}
	st, err := f.Stat()
	if err != nil || st.Size() != cacheHeader+int64(head.rows)*int64(head.width)*8 {
		return fail(errStale)
	}
	key, memo := memoKeyOf(f, head)
	if memo {
		if _, ok := verifiedCaches.Load(key); ok {
			return f, nil // this very file verified before (cache_memo.go)
		}
	}
	started := time.Now()
	payloadHashes.Add(1)
	h := sha256.New()
	if _, err := io.Copy(h, bufio.NewReaderSize(f, cacheReadBytes)); err != nil {
		return fail(errStale)
	}
	if !bytes.Equal(h.Sum(nil), head.payload[:]) {
		return fail(errStale)
	}
	remember(f, head, key, memo, started)
	return f, nil
}

// cacheFile returns the verified cache file, verifying it on the first
// call; nil when there is none or it does not match (then it is removed
// if the process may, so that the owner's next registration rewrites it).
func (r *Reader) cacheFile() *os.File {
	c := r.cache
	c.once.Do(func() {
		f, err := r.openCache(c.path)
		if errors.Is(err, errStale) {
			os.Remove(c.path)
		}
		c.f = f
	})
	return c.f
}

// cacheScan is the plan of a source's pass over the cache: which values
// of a row give each feature, the label and the unit, and whether the
// norms are the features'.
type cacheScan struct {
	idx   []int // features
	ident bool  // idx is 0, 1, …, dim−1
	norms bool
}

func newCacheScan(s *source) *cacheScan {
	l := layoutOf(&s.r.info)
	cs := &cacheScan{}
	for _, c := range s.cols {
		cs.idx = append(cs.idx, slices.IndexFunc(s.r.info.Columns, func(k Column) bool { return k.Name == c.Name }))
	}
	cs.ident = true
	for j, i := range cs.idx {
		cs.ident = cs.ident && i == j
	}
	cs.norms = slices.Equal(cs.idx, l.numeric)
	return cs
}

// useCache reports whether a pass of s reads the cache: the cache must
// be there and valid, and the features must be at least half of the
// columns (reading a few, DuckDB's columnar scan reads less).
func (s *source) useCache() bool {
	if !s.cache || s.r.cache == nil || 2*len(s.cols) < len(s.r.info.Columns) {
		return false
	}
	return s.r.cacheFile() != nil
}

// HasNorms reports whether the source's batches carry stored norms: its
// features are the snapshot's numeric columns, in order, and the row
// cache is valid.
func (s *source) HasNorms() bool {
	return s.cscan.norms && s.useCache()
}

type cacheCursor struct {
	s    *source
	ctx  context.Context
	f    *os.File
	l    cacheLayout
	buf  []float64 // rows read, not yet handed out
	have []float64 // the unconsumed part of buf
	off  int64     // file offset of the next read
	end  int64
	open bool
	err  error // sticky failure
}

func (s *source) scanCache(ctx context.Context, f *os.File) (rows.Cursor, error) {
	if err := s.r.acquire(); err != nil {
		return nil, err
	}
	l := s.r.cache.layout
	per := max(1, cacheReadBytes/(8*l.width))
	return &cacheCursor{s: s, ctx: ctx, f: f, l: l, buf: make([]float64, per*l.width),
		off: cacheHeader, end: cacheHeader + s.r.info.Rows*int64(l.width)*8, open: true}, nil
}

// Next fills dst with the next rows; see rows.Cursor.
func (c *cacheCursor) Next(dst *rows.Batch) error {
	dst.N = 0
	if c.err != nil {
		return c.err
	}
	if err := c.ctx.Err(); err != nil {
		return c.fail(err)
	}
	cs, w := c.s.cscan, c.l.width
	dim := len(cs.idx)
	room := dst.Cap(dim)
	if room < 1 {
		return rows.ErrDim
	}
	labels := c.l.label >= 0 && c.s.label != nil && len(dst.Label) >= room
	units := c.l.unit >= 0 && len(dst.Unit) >= room
	norms := cs.norms && len(dst.NormBig) >= room && len(dst.NormRel) >= room
	for dst.N < room {
		if len(c.have) == 0 {
			if c.off == c.end {
				break
			}
			if err := c.read(); err != nil {
				return c.fail(c.s.r.errRead)
			}
		}
		k := min(room-dst.N, len(c.have)/w)
		for i := range k {
			row := c.have[i*w : (i+1)*w]
			x := dst.X[(dst.N+i)*dim : (dst.N+i+1)*dim]
			if cs.ident {
				copy(x, row[:dim])
			} else {
				for j, at := range cs.idx {
					x[j] = row[at]
				}
			}
			if labels {
				dst.Label[dst.N+i] = row[c.l.label]
			}
			if units {
				dst.Unit[dst.N+i] = int32(row[c.l.unit])
			}
			if norms {
				dst.NormBig[dst.N+i], dst.NormRel[dst.N+i] = row[c.l.norm], row[c.l.norm+1]
			}
		}
		c.have = c.have[k*w:]
		dst.N += k
	}
	if dst.N == 0 {
		return io.EOF
	}
	return nil
}

// read fills buf with the next whole rows of the payload.
func (c *cacheCursor) read() error {
	n := min(int64(len(c.buf))*8, c.end-c.off)
	b := c.buf[:n/8]
	if m, err := c.f.ReadAt(asBytes(b), c.off); m != len(b)*8 {
		if err == nil {
			err = io.ErrUnexpectedEOF
		}
		return err
	}
	if !nativeLE {
		for i := range b {
			b[i] = math.Float64frombits(binary.LittleEndian.Uint64(asBytes(b[i : i+1])))
		}
	}
	c.off += n
	c.have = b
	return nil
}

// fail ends the pass with err, which every later Next returns.
func (c *cacheCursor) fail(err error) error {
	c.Close()
	c.err = err
	return err
}

// Close releases the pass.
func (c *cacheCursor) Close() error {
	if c.open {
		c.open = false
		c.s.r.release()
	}
	if c.err == nil {
		c.err = errors.New("snapshot: Next on a closed cursor")
	}
	return nil
}
