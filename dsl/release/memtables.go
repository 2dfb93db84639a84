package release

// Data held in memory on the data engine (issue 27, "one path"): a
// dataset of the registry's memory format and a cell's synthetic data are
// loaded into the engine as a memory table (dsl/snapshot's MemoryTable,
// registered by the binary as the snapshot reader is), so that the column
// analyses run their printed statements on them as on a snapshot, and
// clamping, grouping and filtering have one implementation. Rows stay
// available (Data.Rows, Data.Columns) for the mechanisms that need them.
//
// Loading a table costs about 0.1 s (a DuckDB and its lock-down) plus
// about 3 µs a row, so the process keeps the last few tables open
// (memoryTablesCached), each keyed by the dataset's name and a name of
// its content (memContent): for data the store loaded, the registration
// hash it verified them against (ledger.Data.Hash, so the rows are hashed
// once per load) with the column names the table adds; for data that did
// not come from the store (public synthetic data), a SHA-256 of everything
// the table holds. A key that names different content is a different key,
// so a cached table cannot go stale when a dataset is registered again
// (a new registration has a new salt, so a new hash). The cache counts
// tables, not rows or bytes: which tables it keeps depends only on the
// order of calls, never on a dataset's private number of rows (whose
// only effect is the time a load takes, a side channel out of scope as
// every pass's time is).

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"hash"
	"math"
	"sync"

	"github.com/privnotes/privnotes/dsl/ledger"
)

// MemoryRows are the rows of data held in memory, as a memory table
// loads them (dsl/snapshot's MemoryRows, field for field).
type MemoryRows struct {
	// Columns name the numeric columns; X holds N rows of them, row
	// after row, as the registry holds them (centred when the schema
	// says so, not clamped).
	Columns []string
	X       []float64
	N       int
	// Label names the label column (empty for none), Y its values.
	Label string
	Y     []float64
	// UserColumn names the user column of user-level data (empty for
	// row-level data), Users each row's dense user index.
	UserColumn string
	Users      []int32
}

// MemoryTable is rows held in the data engine: private SQL's reader over
// them, and Close. Its table reference has the columns a snapshot of the
// same rows has, and its Query's errors have a fixed text.
type MemoryTable interface {
	SQLReader
	Close() error
}

// MemoryTableOpener loads rows into the data engine.
type MemoryTableOpener func(ctx context.Context, m *MemoryRows) (MemoryTable, error)

var memoryTables MemoryTableOpener

// RegisterMemoryTables sets how data held in memory are loaded into the
// data engine; like RegisterSnapshots, the binary that links the engine
// registers it. A nil opener or a second registration is an error.
func RegisterMemoryTables(open MemoryTableOpener) error {
	snapshotsMu.Lock()
	defer snapshotsMu.Unlock()
	if open == nil {
		return errors.New("release: RegisterMemoryTables with a nil opener")
	}
	if memoryTables != nil {
		return errors.New("release: RegisterMemoryTables called twice")
	}
	memoryTables = open
	return nil
}

func memoryTableOpener() MemoryTableOpener {
	snapshotsMu.Lock()
	defer snapshotsMu.Unlock()
	return memoryTables
}

// memoryTablesCached is how many memory tables the process keeps open.
const memoryTablesCached = 4

// memCache is the process's memory tables.
var memCache = &memTables{max: memoryTablesCached}

// CloseMemoryTables closes the memory tables the process keeps; a table
// a call still reads closes when the call ends. The binary calls it at
// exit, as it closes its snapshot readers.
func CloseMemoryTables() error { return memCache.closeAll() }

// memoryData is dataOf with the rows also in the data engine, when the
// build links one and the schema allows: the column analyses then run
// their statements there (d.SQL). The table is loaded (or taken from the
// cache) when a statement first needs it, so a call that reads rows only
// (PCA, a regression) costs no load.
func memoryData(name string, ld *ledger.Data) (*Data, error) {
	return memoryDataWith(memoryTableOpener(), memCache, name, ld)
}

// memoryDataWith is memoryData with the opener (nil: none) and cache
// given.
func memoryDataWith(open MemoryTableOpener, cache *memTables, name string, ld *ledger.Data) (*Data, error) {
	d, err := dataOf(ld)
	if err != nil {
		return nil, err
	}
	m, ok := memoryRowsOf(ld)
	if open == nil || !ok {
		return d, nil
	}
	lz := &lazyTable{load: func() (SQLReader, func(), error) {
		return cache.acquire(memKey{name: name, content: memContent(ld.Hash, m)}, func() (MemoryTable, error) {
			return open(context.Background(), m)
		})
	}}
	d.SQL, d.close = lz, lz.close
	return d, nil
}

// lazyTable is a memory table's reader that acquires the table from the
// cache on first use. A table that cannot be loaded (the engine refused
// the rows or ran out of memory) makes every statement fail, as a
// snapshot's engine failure does: after the charge, the release is then
// the noise alone.
type lazyTable struct {
	load func() (SQLReader, func(), error)
	once sync.Once
	q    SQLReader
	done func()
	err  error
}

func (l *lazyTable) get() (SQLReader, error) {
	l.once.Do(func() { l.q, l.done, l.err = l.load() })
	return l.q, l.err
}

// Table is the table's reference; it loads the table, which the statement
// printed over the reference will read.
func (l *lazyTable) Table() string {
	q, err := l.get()
	if err != nil {
		return "(SELECT)" // a statement over it fails: a fixed outcome
	}
	return q.Table()
}

func (l *lazyTable) Query(ctx context.Context, stmt string) ([][]any, error) {
	q, err := l.get()
	if err != nil {
		return nil, errMemoryTable
	}
	return q.Query(ctx, stmt)
}

// close ends the data's use of the table (if it was loaded).
func (l *lazyTable) close() error {
	l.once.Do(func() { l.err = errMemoryTable }) // no load after close
	if l.done != nil {
		l.done()
	}
	return nil
}

// errMemoryTable is a failed load's error; its text is fixed, since the
// engine's message could quote the rows.
var errMemoryTable = errors.New("release: the data could not be loaded into the data engine")

// memoryRowsOf is the table of data held in memory, or false when the
// schema has no table the statements could read. These are public facts.
//
// Every producer of data held in memory gives a table: a registration of
// the memory format (Store.Load) has numeric columns, perhaps a label and
// users, and never categorical columns or a matrix's shape (ledger's
// registeredSchema sets neither: --categories and matrices are
// registered as snapshots, which are not loaded into memory); synth_*
// data have numeric columns c1, c2, … (and synth_fedrep's users and
// label); a public table from private_synthesize, which has categorical
// columns, reaches private_sql only, through its own table
// (sql_public.go), and holds no X. So the refusals below guard data no
// producer makes (TestMemoryRegistrationsHaveTables): a matrix schema, or
// categorical columns, whose values ledger.Data has no field for (the
// memory format stores the numeric rows, users and labels only; its rows'
// path cannot read such a column either), or user-level data without
// their users.
func memoryRowsOf(ld *ledger.Data) (*MemoryRows, bool) {
	sc := ld.Schema
	if ld.X == nil || ld.X.IsEmpty() || sc.IsMatrix() || len(sc.Categorical) > 0 {
		return nil, false
	}
	raw := ld.X.RawMatrix()
	if raw.Cols != len(sc.Columns) {
		return nil, false
	}
	m := &MemoryRows{Columns: sc.Columns, N: raw.Rows}
	if raw.Stride == raw.Cols {
		m.X = raw.Data[:raw.Rows*raw.Cols]
	} else {
		m.X = make([]float64, 0, raw.Rows*raw.Cols)
		for i := range raw.Rows {
			m.X = append(m.X, raw.Data[i*raw.Stride:i*raw.Stride+raw.Cols]...)
		}
	}
	if sc.Label != "" && ld.Y != nil {
		m.Label, m.Y = sc.Label, ld.Y
	}
	if sc.Unit == "user" {
		if sc.UserColumn == "" || len(ld.Users) != m.N {
			return nil, false
		}
		m.UserColumn, m.Users = sc.UserColumn, ld.Users
	}
	return m, true
}

// memContent names the content of the memory table of m: registered, the
// store's registration hash (which covers the rows, users and labels) and
// the names the table gives them, which the hash does not cover; else
// memIdentity. The two forms cannot meet: a registered name starts with
// "registered ", a hex digest never does.
func memContent(registration string, m *MemoryRows) string {
	if registration == "" {
		return memIdentity(m)
	}
	h := sha256.New()
	hashNames(h, "privnotes memory table names v1", m)
	return "registered " + registration + " " + hex.EncodeToString(h.Sum(nil))
}

// hashNames writes tag and the names a memory table gives m's data (its
// columns, label and user column) to h, each length-prefixed.
func hashNames(h hash.Hash, tag string, m *MemoryRows) {
	str := func(s string) {
		var n [8]byte
		binary.LittleEndian.PutUint64(n[:], uint64(len(s)))
		h.Write(n[:])
		h.Write([]byte(s))
	}
	str(tag)
	for _, c := range m.Columns {
		str(c)
	}
	str("\x00label")
	str(m.Label)
	str("\x00user")
	str(m.UserColumn)
}

// memIdentity is the SHA-256 of everything a memory table holds: its
// column names and shape, then every value (float64 bits and user
// indices, little-endian).
func memIdentity(m *MemoryRows) string {
	h := sha256.New()
	hashNames(h, "privnotes memory table v1", m)
	var n [8]byte
	binary.LittleEndian.PutUint64(n[:], uint64(m.N))
	h.Write(n[:])
	hashFloats(h, m.X)
	hashFloats(h, m.Y)
	buf := make([]byte, 0, 4096)
	for i, u := range m.Users {
		buf = binary.LittleEndian.AppendUint32(buf, uint32(u))
		if len(buf) == cap(buf) || i == len(m.Users)-1 {
			h.Write(buf)
			buf = buf[:0]
		}
	}
	return hex.EncodeToString(h.Sum(nil))
}

// hashFloats writes the bits of xs to h, a block at a time.
func hashFloats(h hash.Hash, xs []float64) {
	buf := make([]byte, 0, 8192)
	for i, x := range xs {
		buf = binary.LittleEndian.AppendUint64(buf, math.Float64bits(x))
		if len(buf) == cap(buf) || i == len(xs)-1 {
			h.Write(buf)
			buf = buf[:0]
		}
	}
}

// memKey names a memory table: the dataset's name and its content.
type memKey struct{ name, content string }

// memTables is a least-recently-used set of open memory tables. A table
// is loaded once per key even when calls ask for it together; evicted,
// it is closed when its last reader is done.
type memTables struct {
	mu      sync.Mutex
	max     int
	entries []*memEntry // least recently used first
}

type memEntry struct {
	key     memKey
	ready   chan struct{} // closed when t and err are set
	t       MemoryTable
	err     error
	refs    int
	evicted bool
}

// acquire returns the table of key, loading it with load if the cache
// does not hold it, and the function that ends the caller's use of it.
func (c *memTables) acquire(key memKey, load func() (MemoryTable, error)) (SQLReader, func(), error) {
	c.mu.Lock()
	var e *memEntry
	for i, x := range c.entries {
		if x.key == key {
			e = x
			c.entries = append(append(c.entries[:i:i], c.entries[i+1:]...), e)
			break
		}
	}
	fresh := e == nil
	if fresh {
		e = &memEntry{key: key, ready: make(chan struct{})}
		c.entries = append(c.entries, e)
		for len(c.entries) > c.max {
			c.evict(c.entries[0])
		}
	}
	e.refs++
	c.mu.Unlock()
	if fresh {
		t, err := load()
		c.mu.Lock()
		e.t, e.err = t, err
		if err != nil && !e.evicted {
			// A failed load is not kept: the next call tries again.
			c.evict(e)
		}
		close(e.ready)
		c.mu.Unlock()
	}
	<-e.ready
	done := func() { c.done(e) }
	if e.err != nil {
		done()
		return nil, nil, e.err
	}
	var once sync.Once
	return e.t, func() { once.Do(done) }, nil
}

// evict drops e from the cache, closing its table if no call reads it.
// c.mu is held.
func (c *memTables) evict(e *memEntry) {
	for i, x := range c.entries {
		if x == e {
			c.entries = append(c.entries[:i:i], c.entries[i+1:]...)
			break
		}
	}
	e.evicted = true
	c.closeIdle(e)
}

// closeIdle closes an evicted entry's table once it is loaded and no call
// reads it. c.mu is held.
func (c *memTables) closeIdle(e *memEntry) {
	if e.evicted && e.refs == 0 && e.t != nil {
		e.t.Close()
		e.t = nil
	}
}

func (c *memTables) done(e *memEntry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e.refs--
	c.closeIdle(e)
}

func (c *memTables) closeAll() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	for len(c.entries) > 0 {
		c.evict(c.entries[0])
	}
	return nil
}
