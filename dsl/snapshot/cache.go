package snapshot

// The row cache: a derived copy of a snapshot's values that a pass reads
// without decoding Parquet. It sits next to the snapshot, in the state
// directory's snapshots folder (NAME-HASH.rows beside NAME-HASH.parquet),
// and holds, in the snapshot's row order, little-endian float64 in
// regions: first every row's columns, in schema order (numeric ones
// clamped to their bounds, categorical ones as category indices,
// len(Categories) for "other"), row after row; then one region of a value
// per row for each of the label (clamped) if any, the unit index if any,
// and the two parts of the Euclidean norm of the numeric columns
// (rows.StoredNorm). The values are exactly those a Parquet scan hands to
// mechanisms, so a pass gives the same bits either way; the regions let a
// pass read a batch's features straight into the batch, and its norms
// into theirs, with one read each and no copy of its own.
//
// The header binds the file to its snapshot: magic, the snapshot's
// SHA-256, the row count, the values per row, and the SHA-256 of the
// payload (of the concatenated SHA-256 of its regions, in file order).
// The cache is a deterministic function of the immutable (hash-verified)
// snapshot; before a reader uses it, it checks the header against the
// verified snapshot and recomputes the payload's hash (once per process
// and file: cache_memo.go), and it ignores (and removes, when it may) a
// cache that does not match. A pass reads it in place through a
// read-only memory map where the platform has one (cachedFile), and
// through a read buffer elsewhere; its memory is bounded either way
// (mapped pages are the page cache's, not the process's).
//
// The cache is built lazily: registration writes none (it would cost a
// full pass and 8·n·width bytes of writes that a dataset read only by
// counts and one-column scans never repays). The first pass that would
// read it (features at least half of the columns: useCache) finds it
// missing, writes it (WriteCache) and reads it; a reader that cannot
// write it (a read-only directory) reads Parquet and notes the owner's
// `privnotes dataset recache` once. A cache that is there but does not
// match is removed and not rewritten by that reader (the next reader of
// the snapshot, finding none, writes it), and `dataset recache` writes
// it at once.

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"
	"unsafe"

	"github.com/privnotes/privnotes/mechanisms/rows"
)

const (
	cacheMagic  = "PNROWS02"
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

// cacheLayout is where a row's values sit in the cache: its columns in
// the first region (cols per row), the other values in regions of one
// value per row, numbered from 1.
type cacheLayout struct {
	width   int   // values per row
	cols    int   // columns, the first region's values per row
	label   int   // region of the label, or −1
	unit    int   // region of the unit index, or −1
	numeric []int // indices of the numeric columns, whose norm is stored
	norm    int   // region of the norm's big part (rel follows)
}

func layoutOf(info *Info) cacheLayout {
	l := cacheLayout{label: -1, unit: -1, cols: len(info.Columns)}
	for i, c := range info.Columns {
		if c.Kind == Numeric {
			l.numeric = append(l.numeric, i)
		}
	}
	regions := 1
	if info.Label != "" {
		l.label = regions
		regions++
	}
	if info.UserColumn != "" {
		l.unit = regions
		regions++
	}
	l.norm = regions
	regions += 2
	l.width = l.cols + regions - 1
	return l
}

// regions returns the number of regions.
func (l cacheLayout) regions() int { return 1 + l.width - l.cols }

// offset returns the file offset of row i's first value in region g, for
// a cache of n rows.
func (l cacheLayout) offset(g int, n, i int64) int64 {
	if g == 0 {
		return cacheHeader + 8*i*int64(l.cols)
	}
	return cacheHeader + 8*(n*int64(l.cols)+int64(g-1)*n+i)
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
// rename) and is read-only. The first pass that would read a missing
// cache calls it (cacheFile), and so does `privnotes dataset recache`;
// a reader that has no cache reads Parquet.
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
	// One buffered writer and hash per region, each at its offset.
	rows64 := r.info.Rows
	ws := make([]*bufio.Writer, l.regions())
	hs := make([]hash.Hash, l.regions())
	for g := range ws {
		hs[g] = sha256.New()
		size := cacheReadBytes
		if g > 0 {
			size = cacheReadBytes / 8
		}
		ws[g] = bufio.NewWriterSize(io.MultiWriter(io.NewOffsetWriter(f, l.offset(g, rows64, 0)), hs[g]), size)
	}
	dim := len(names)
	var vals, feat []float64
	regionVals := make([][]float64, l.regions())
	n := uint64(0)
	write := func(g int, v []float64) error {
		out := asBytes(v)
		if !nativeLE {
			out = make([]byte, 8*len(v))
			for k, x := range v {
				binary.LittleEndian.PutUint64(out[8*k:], math.Float64bits(x))
			}
		}
		_, err := ws[g].Write(out)
		return err
	}
	err = rows.ForEach(ctx, plain, 4096, l.label >= 0, l.unit >= 0, func(b *rows.Batch) error {
		if n+uint64(b.N) > uint64(rows64) {
			return errors.New("more rows than the snapshot's count")
		}
		if err := write(0, b.X[:b.N*dim]); err != nil {
			return err
		}
		for g := 1; g < l.regions(); g++ {
			regionVals[g] = regionVals[g][:0]
		}
		for i := range b.N {
			if l.label >= 0 {
				regionVals[l.label] = append(regionVals[l.label], b.Label[i])
			}
			if l.unit >= 0 {
				regionVals[l.unit] = append(regionVals[l.unit], float64(b.Unit[i]))
			}
			vals = b.Row(i, dim)
			feat = feat[:0]
			for _, j := range l.numeric {
				feat = append(feat, vals[j])
			}
			big, rel := rows.StoredNorm(feat)
			regionVals[l.norm] = append(regionVals[l.norm], big)
			regionVals[l.norm+1] = append(regionVals[l.norm+1], rel)
		}
		for g := 1; g < l.regions(); g++ {
			if err := write(g, regionVals[g]); err != nil {
				return err
			}
		}
		n += uint64(b.N)
		return nil
	})
	for _, w := range ws {
		if err == nil {
			err = w.Flush()
		}
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
	copy(head.payload[:], payloadDigest(hs))
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

// payloadDigest is the SHA-256 of the regions' SHA-256s, in file order.
func payloadDigest(hs []hash.Hash) []byte {
	all := sha256.New()
	for _, h := range hs {
		all.Write(h.Sum(nil))
	}
	return all.Sum(nil)
}

// rowCache is a reader's row cache, verified (and if missing, written)
// on first use.
type rowCache struct {
	path   string
	layout cacheLayout

	mu       sync.Mutex
	resolved bool        // file is final: the cache's state is known
	file     *cachedFile // nil when the cache is absent or invalid
}

// cachedFile is an opened row cache file and, where the platform maps
// files, its read-only memory map, through which it was verified.
//
// Why a pass may use the mapped bytes in place, without a copy. The bytes
// a pass reads are the bytes the verification hashed: the hash reads the
// same mapping (or, on a memo hit, cache_memo.go, the same file by its
// identity), so nothing is used before it is verified, as with reads. A
// later change to the file would show through the mapping, but the cache
// is never changed in place: WriteCache writes a new file, makes it
// read-only (0444) and renames it over the old one, and a mapping keeps
// the inode it mapped (a rename or removal leaves its pages intact). A
// write into the mapped file needs its owner (the data owner, whose state
// directory it is) to make it writable again, or root; such a writer
// could equally change the file between two preads of the read path,
// which is why the memo's argument (cache_memo.go) covers both. One thing
// differs: if that writer truncated the file, a pass reading the lost
// pages would stop the process with SIGBUS where pread returns an error.
// The call fails either way, after its charge, which overstates the
// spend and never understates it. The mapping is PROT_READ: the views
// handed to passes (rows.Viewer) cannot be written.
type cachedFile struct {
	f    *os.File
	data []byte    // the whole file, mapped; nil: read with pread
	vals []float64 // data's payload as float64s (little-endian hosts)
}

// useMap lets tests read the cache through pread, the fallback of
// platforms without memory maps.
var useMap = true

// release drops the mapped pages of the file's bytes [lo, hi) from the
// process's resident set (releasePages; the bytes stay readable, from the
// page cache). The range is cut to whole pages: those before lo's page
// are left alone, and hi's partial page is kept unless hi is the file's
// end, so a caller releasing consecutive ranges releases each page once,
// with the range that ends in it. Releasing a page that is in use, or in
// use by another pass, costs a re-fault and changes no byte.
func (c *cachedFile) release(lo, hi int64) {
	page := int64(os.Getpagesize())
	lo -= lo % page
	if hi < int64(len(c.data)) {
		hi -= hi % page
	}
	c.releasePages(lo, hi)
}

// releaseInner is release for a part of a range that may share its first
// and last pages with other parts in use: only the pages wholly inside
// [lo, hi) are released (the range's release catches the others).
func (c *cachedFile) releaseInner(lo, hi int64) {
	page := int64(os.Getpagesize())
	lo += (page - lo%page) % page
	hi -= hi % page
	c.releasePages(lo, hi)
}

// residentCacheBytes is how much of a mapped cache, from its start, stays
// in the resident set once touched: release leaves those pages alone. A
// released page costs a page fault (and its release) in every later pass,
// about 60 ms of CPU per pass over 880 MB on 2 cores (about as much as
// the copy of the pread path): a cache up to this size is read at the
// speed of memory, a larger one pays for its part beyond it, and the
// resident set stays below this plus a few shards whatever the row
// count. A multiple of every page size; tests lower it.
var residentCacheBytes int64 = 512 << 20

func (c *cachedFile) releasePages(lo, hi int64) {
	lo = max(lo, residentCacheBytes)
	if c.data != nil && lo < hi {
		releasePages(c.data[lo:hi])
	}
}

// close releases the mapping and the file.
func (c *cachedFile) close() {
	if c.data != nil {
		unmapFile(c.data)
		c.data, c.vals = nil, nil
	}
	c.f.Close()
}

// checkCache verifies the cache at path against the snapshot: header,
// size and payload hash. It returns the opened file's error or a
// mismatch.
func (r *Reader) checkCache(path string) error {
	c, err := r.openCache(path)
	if c != nil {
		c.close()
	}
	return err
}

var errStale = errors.New("the row cache does not match its snapshot")

func (r *Reader) openCache(path string) (*cachedFile, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	c := &cachedFile{f: f}
	fail := func(err error) (*cachedFile, error) {
		c.close()
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
	if useMap {
		// The mapping is made before the hash, which reads it: the bytes
		// passes use are those it verified. Without one, passes pread.
		if data, err := mapFile(f, st.Size()); err == nil {
			c.data = data
			if nativeLE && head.rows > 0 {
				c.vals = unsafe.Slice((*float64)(unsafe.Pointer(&data[cacheHeader])), int(head.rows*head.width))
			}
		}
	}
	key, memo, hit := verifiedBefore(f, [2][32]byte{head.snapshot, head.payload})
	if hit {
		return c, nil // this very file verified before (cache_memo.go)
	}
	started := time.Now()
	payloadHashes.Add(1)
	hs := make([]hash.Hash, l.regions())
	for g := range hs {
		hs[g] = sha256.New()
		end := st.Size()
		if g+1 < len(hs) {
			end = l.offset(g+1, int64(head.rows), 0)
		}
		at := l.offset(g, int64(head.rows), 0)
		if c.data != nil {
			// Hashing faults the whole cache in; each piece is released
			// once hashed, so the resident set stays a piece.
			for lo := at; lo < end; lo += hashPieceBytes {
				hi := min(lo+hashPieceBytes, end)
				hs[g].Write(c.data[lo:hi])
				c.release(lo, hi)
			}
			continue
		}
		if _, err := io.Copy(hs[g], bufio.NewReaderSize(io.NewSectionReader(f, at, end-at), cacheReadBytes)); err != nil {
			return fail(errStale)
		}
	}
	if !bytes.Equal(payloadDigest(hs), head.payload[:]) {
		return fail(errStale)
	}
	remember(f, key, memo, started)
	return c, nil
}

// hashPieceBytes is how much of the mapped cache the hash reads before
// releasing it (a multiple of every page size).
const hashPieceBytes = 16 << 20

// cacheFile returns the verified cache file, verifying it on the first
// call; nil when there is none or it does not match (then it is removed
// if the process may, so that the next reader rewrites it). With write
// set, a missing cache is first written (WriteCache, a pass through
// Parquet under ctx); without it, or when ctx ends during the write, a
// missing cache gives nil and the question stays open for a later pass.
func (r *Reader) cacheFile(ctx context.Context, write bool) *cachedFile {
	c := r.cache
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.resolved {
		return c.file
	}
	f, err := r.openCache(c.path)
	if errors.Is(err, os.ErrNotExist) {
		if !write {
			return nil
		}
		// The write is a pass, which takes the reader's lock: c.mu is
		// not held across it (Close takes the reader's lock, then c.mu).
		// Concurrent passes may both write; each renames the same bytes
		// into place.
		c.mu.Unlock()
		werr := r.WriteCache(ctx)
		c.mu.Lock()
		switch {
		case c.resolved: // another pass, or Close, settled it meanwhile
			return c.file
		case werr != nil && ctx.Err() != nil:
			return nil // interrupted: a later pass may write it
		}
		f, err = r.openCache(c.path)
	}
	if errors.Is(err, errStale) {
		os.Remove(c.path)
	}
	if f == nil {
		noteNoCache(c.path)
	}
	c.file, c.resolved = f, true
	return f
}

// CacheNotes receives, once per process and cache file, the note that a
// snapshot's passes read Parquet because its row cache is missing or
// stale (for instance of an older format). It names the file and the
// owner's command that rebuilds it, nothing about the data. Tests
// silence it.
var CacheNotes io.Writer = os.Stderr

var noted sync.Map // cache path → struct{}

func noteNoCache(path string) {
	if _, done := noted.LoadOrStore(path, struct{}{}); done || CacheNotes == nil {
		return
	}
	name := strings.TrimSuffix(filepath.Base(path), cacheSuffix)
	if i := strings.LastIndexByte(name, '-'); i > 0 {
		name = name[:i] // NAME-HASH
	}
	fmt.Fprintf(CacheNotes, "privnotes: snapshot %s has no valid row cache (missing, or of an older format), so its passes decode Parquet, which is slower; the data owner can rebuild it with `privnotes dataset recache %s`\n",
		strings.TrimSuffix(filepath.Base(path), cacheSuffix)+".parquet", name)
}

// Recache rebuilds the row cache of the snapshot at path, registered
// with hash, in the current format: it verifies the snapshot against
// hash first (Open), leaves a valid current cache as it is (rebuilt is
// false), and otherwise writes a new one in its place (WriteCache), for
// instance over a cache of an older format. Nothing but the cache file
// changes.
func Recache(ctx context.Context, path, hash string) (rebuilt bool, err error) {
	r, err := Open(path, hash)
	if err != nil {
		return false, err
	}
	defer r.Close()
	if r.checkCache(CachePath(r.path)) == nil {
		return false, nil
	}
	if err := r.WriteCache(ctx); err != nil {
		return false, err
	}
	return true, r.checkCache(CachePath(r.path))
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

// useCache returns the cache file a pass of s reads, or nil: the features
// must be at least half of the columns (reading a few, DuckDB's columnar
// scan reads less) and the cache valid; with write, a missing one is
// written first (cacheFile).
func (s *source) useCache(ctx context.Context, write bool) *cachedFile {
	if !s.cache || s.r.cache == nil || 2*len(s.cols) < len(s.r.info.Columns) {
		return nil
	}
	return s.r.cacheFile(ctx, write)
}

// HasNorms reports whether the source's batches carry stored norms: its
// features are the snapshot's numeric columns, in order, and the row
// cache is there and valid. It writes no cache (it has no context to
// stop a pass with): before the first pass has written a missing one it
// reports false, and that pass's batches carry no norms unless asked.
func (s *source) HasNorms() bool {
	return s.cscan.norms && s.useCache(context.Background(), false) != nil
}

type cacheCursor struct {
	s      *source
	ctx    context.Context
	file   *cachedFile
	l      cacheLayout
	direct bool      // the features are the columns: read into the batch
	buf    []float64 // rows of columns to pick the features from
	units  []float64 // unit indices as stored
	unit   []int32   // unit indices of the last View
	next   int64     // the next row
	viewAt int64     // the first row of the last view
	done   int64     // rows before next whose mapped pages were released
	n      int64     // rows
	open   bool
	err    error // sticky failure
}

func (s *source) scanCache(ctx context.Context, file *cachedFile) (rows.Cursor, error) {
	if err := s.r.acquire(); err != nil {
		return nil, err
	}
	l := s.r.cache.layout
	c := &cacheCursor{s: s, ctx: ctx, file: file, l: l, n: s.r.info.Rows, open: true,
		direct: s.cscan.ident && len(s.cscan.idx) == l.cols}
	if !c.direct && file.vals == nil {
		c.buf = make([]float64, max(1, cacheReadBytes/(8*l.cols))*l.cols)
	}
	return c, nil
}

// region returns count values of region g from row c.next on, in the
// mapping (capacity cut to them, so that no append can reach further).
func (c *cacheCursor) region(g int, count int64) []float64 {
	at := (c.l.offset(g, c.n, c.next) - cacheHeader) / 8
	return c.file.vals[at : at+count : at+count]
}

// View lends the next rows in place, from the mapped cache; see
// rows.Viewer. It lends only when the features are the snapshot's
// columns in order and the host is little-endian (file.vals); the label
// and norm parts are their regions, the unit indices (stored as float64)
// are converted into a buffer of the cursor's.
func (c *cacheCursor) View(dst *rows.Batch, n int, labels, units bool) error {
	*dst = rows.Batch{}
	if c.err != nil {
		return c.err
	}
	if !c.direct || c.file.vals == nil {
		return rows.ErrNoView
	}
	c.releaseUsed() // the last view ends here
	if n < 1 {
		return rows.ErrDim
	}
	if err := c.ctx.Err(); err != nil {
		return c.fail(err)
	}
	if c.next == c.n {
		return io.EOF
	}
	k := min(int64(n), c.n-c.next)
	dst.X = c.region(0, k*int64(c.l.cols))
	if labels && c.l.label >= 0 && c.s.label != nil {
		dst.Label = c.region(c.l.label, k)
	}
	if units && c.l.unit >= 0 {
		if int64(len(c.unit)) < k {
			c.unit = make([]int32, k)
		}
		for i, v := range c.region(c.l.unit, k) {
			c.unit[i] = int32(v)
		}
		dst.Unit = c.unit[:k:k]
	}
	if c.s.cscan.norms {
		dst.NormBig, dst.NormRel = c.region(c.l.norm, k), c.region(c.l.norm+1, k)
	}
	c.viewAt = c.next
	c.next += k
	dst.N = int(k)
	return nil
}

// Next fills dst with the next rows; see rows.Cursor. Each of the
// batch's parts is one read from its region, straight into the batch
// when the features are the snapshot's columns in order.
func (c *cacheCursor) Next(dst *rows.Batch) error {
	dst.N = 0
	if c.err != nil {
		return c.err
	}
	if err := c.ctx.Err(); err != nil {
		return c.fail(err)
	}
	cs, cols := c.s.cscan, c.l.cols
	dim := len(cs.idx)
	room := dst.Cap(dim)
	if room < 1 {
		return rows.ErrDim
	}
	if c.next == c.n {
		return io.EOF
	}
	k := min(int64(room), c.n-c.next)
	if !c.direct && c.buf != nil {
		k = min(k, int64(len(c.buf)/cols))
	}
	labels := c.l.label >= 0 && c.s.label != nil && len(dst.Label) >= room
	units := c.l.unit >= 0 && len(dst.Unit) >= room
	norms := cs.norms && len(dst.NormBig) >= room && len(dst.NormRel) >= room
	if c.direct {
		if err := c.read(dst.X[:k*int64(dim)], 0); err != nil {
			return c.fail(c.s.r.errRead)
		}
	} else {
		// The rows of columns to pick from: in the mapping, or read.
		var b []float64
		if c.file.vals != nil {
			b = c.region(0, k*int64(cols))
		} else {
			b = c.buf[:k*int64(cols)]
			if err := c.read(b, 0); err != nil {
				return c.fail(c.s.r.errRead)
			}
		}
		for i := range int(k) {
			row, x := b[i*cols:(i+1)*cols], dst.X[i*dim:(i+1)*dim]
			if cs.ident {
				copy(x, row[:dim])
				continue
			}
			for j, at := range cs.idx {
				x[j] = row[at]
			}
		}
	}
	if labels {
		if err := c.read(dst.Label[:k], c.l.label); err != nil {
			return c.fail(c.s.r.errRead)
		}
	}
	if units {
		if int64(len(c.units)) < k {
			c.units = make([]float64, k)
		}
		u := c.units[:k]
		if err := c.read(u, c.l.unit); err != nil {
			return c.fail(c.s.r.errRead)
		}
		for i, v := range u {
			dst.Unit[i] = int32(v)
		}
	}
	if norms {
		if err := c.read(dst.NormBig[:k], c.l.norm); err != nil {
			return c.fail(c.s.r.errRead)
		}
		if err := c.read(dst.NormRel[:k], c.l.norm+1); err != nil {
			return c.fail(c.s.r.errRead)
		}
	}
	c.next += k
	c.releaseUsed() // copied
	dst.N = int(k)
	return nil
}

// releaseUsed releases the mapped pages of the rows the pass has used,
// in every region, so that the process's resident set holds about one
// chunk of the mapping whatever the cache's size; the page cache keeps
// them for the next pass (cachedFile.release). A view's rows are used
// when the next View or Close comes (rows.Viewer: they stay valid until
// then), copied rows at once.
func (c *cacheCursor) releaseUsed() {
	if c.file.vals == nil || c.done == c.next {
		return
	}
	for g := range c.l.regions() {
		c.file.release(c.l.offset(g, c.n, c.done), c.l.offset(g, c.n, c.next))
	}
	c.done = c.next
}

// ReleaseView says the pass no longer reads rows [lo, hi) of the last
// view (rowpass.PairwiseScan calls it as each shard of a lent chunk is
// summed, from several goroutines): their mapped pages leave the
// resident set before the whole view is done, so that it holds a few
// shards instead of a chunk. Pages shared with the rest of the view stay
// until the next View or Close (releaseUsed).
func (c *cacheCursor) ReleaseView(lo, hi int) {
	if c.file.vals == nil || lo < 0 || lo >= hi || c.viewAt+int64(hi) > c.next {
		return
	}
	for g := range c.l.regions() {
		c.file.releaseInner(c.l.offset(g, c.n, c.viewAt+int64(lo)), c.l.offset(g, c.n, c.viewAt+int64(hi)))
	}
}

// read fills dst with region g's values of the rows from c.next on: a
// copy from the mapping when there is one, else preads. A large pread is
// split into pieces read concurrently: copying page-cached data is the
// kernel's work on the reading thread, and a pass is bound by it when one
// thread does it all.
func (c *cacheCursor) read(dst []float64, g int) error {
	if c.file.vals != nil {
		copy(dst, c.region(g, int64(len(dst))))
		return nil
	}
	b, off := asBytes(dst), c.l.offset(g, c.n, c.next)
	parts := min(runtime.GOMAXPROCS(0), len(b)/parallelReadBytes)
	if parts < 2 {
		return c.readPart(b, off, dst)
	}
	errs := make([]error, parts)
	var wg sync.WaitGroup
	per := (len(dst) + parts - 1) / parts
	for i := range parts {
		lo, hi := min(i*per, len(dst)), min((i+1)*per, len(dst))
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = c.readPart(b[8*lo:8*hi], off+int64(8*lo), dst[lo:hi])
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// parallelReadBytes is the least a piece of a concurrent read holds.
const parallelReadBytes = 256 << 10

// readPart reads b (the bytes of dst) at off.
func (c *cacheCursor) readPart(b []byte, off int64, dst []float64) error {
	if m, err := c.file.f.ReadAt(b, off); m != len(b) {
		if err == nil {
			err = io.ErrUnexpectedEOF
		}
		return err
	}
	if !nativeLE {
		for i := range dst {
			dst[i] = math.Float64frombits(binary.LittleEndian.Uint64(asBytes(dst[i : i+1])))
		}
	}
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
		c.releaseUsed()
		c.open = false
		c.s.r.release()
	}
	if c.err == nil {
		c.err = errors.New("snapshot: Next on a closed cursor")
	}
	return nil
}
