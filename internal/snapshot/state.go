package snapshot

import (
	"slices"
	"sort"
)

// Pos is a place in the binlog between two events.
type Pos struct {
	File   string
	Offset uint64
}

// Kind is what a row change does.
type Kind uint8

// The kinds of row change.
const (
	Insert Kind = iota + 1
	Update
	Delete
)

// Row is one row: its key and the caller's values for it.
type Row struct {
	Key  Key
	Data any
}

// Change is one row change of the stream. Pos is the end of its rows
// event: a chunk read at a position at or after it holds its effect.
// Before is set for updates and deletes, After for inserts and updates.
type Change struct {
	Pos           Pos
	Kind          Kind
	Before, After Row
}

// Verdict says how a row change of the stream reaches the consumer.
type Verdict uint8

const (
	// Deliver: as it is.
	Deliver Verdict = iota
	// AsInsert: an update that moved its row's key into the delivered
	// range, delivered as an insert of the after image.
	AsInsert
	// AsDelete: an update that moved its row's key out of the delivered
	// range, delivered as a delete of the before image.
	AsDelete
	// Suppress: not delivered; a chunk still to come holds its effect.
	Suppress
)

// Outcome says what Attach made of a chunk.
type Outcome uint8

const (
	// Wait: the chunk was read at a position the stream has not reached;
	// attach it again later.
	Wait Outcome = iota
	// Discard: the chunk cannot be placed (read before the table's held
	// changes begin, or for a boundary that is no longer the table's):
	// read it again.
	Discard
	// Ready: deliver the rows Attach returned, then call Finish.
	Ready
)

// Chunk is one read of a table: the rows with keys in (Lo, Hi] (Lo nil:
// from the first key; Hi nil: to the last, the table's last chunk) as the
// server held them at binlog position At, in key order. A watermark read
// (Low set) is not exact at one position: it holds every change logged at
// or before *Low, none logged after At, and any of those in between; the
// changes after *Low are folded into it (see watermark.go).
type Chunk struct {
	Table string
	Lo    *Key
	Hi    *Key
	At    Pos
	Low   *Pos
	Rows  []Row
}

// Config gives State its two orders.
type Config struct {
	// Compare orders keys as the server's index does.
	Compare Compare
	// ComparePos orders binlog positions.
	ComparePos func(a, b Pos) int
}

// State is the snapshot's progress over every table it covers. Its
// methods are called between the stream's events, on one goroutine.
type State struct {
	cfg    Config
	tables map[string]*table
	// cursor is the last table started from the caller's patterns, in name
	// order: every pattern table that sorts after it is still to start.
	cursor string
	// listed is the tables Append writes, by name, once made (listOK):
	// a token is made for every row delivered, and the list changes only
	// when a table is added, started or done.
	listed []listedTable
	listOK bool
}

type listedTable struct {
	name string
	t    *table
}

type status uint8

const (
	pending status = iota // not started: its changes are suppressed
	active                // being read: changes classified against bound
	done                  // read: its changes are delivered
)

type table struct {
	status status
	bound  *Key // every key <= bound was delivered; nil: none yet
	// from: the changes held back since from are all in buf (buf holds
	// every change of the table after from that touched a key above bound).
	from Pos
	buf  []Change
}

// New returns a State covering no table.
func New(cfg Config) *State {
	return &State{cfg: cfg, tables: map[string]*table{}}
}

// Add puts a table under snapshot, not started: until Start its changes
// are suppressed (a chunk read after Start holds their effect). A table
// already covered keeps its progress.
func (s *State) Add(name string) {
	if t := s.tables[name]; t == nil || t.status == done {
		s.tables[name] = &table{}
		s.listOK = false
	}
}

// Start begins reading a pending table at the stream's current point at:
// from then on its changes are classified and held back. fromPatterns
// moves the pattern cursor to name.
func (s *State) Start(name string, at Pos, fromPatterns bool) {
	t := s.tables[name]
	if t == nil {
		t = &table{}
		s.tables[name] = t
	}
	if t.status == pending {
		t.status, t.from, t.buf = active, at, nil
	}
	if fromPatterns && name > s.cursor {
		s.cursor = name
	}
	s.listOK = false
}

// Cursor is the last table started from the caller's patterns ("" none).
func (s *State) Cursor() string { return s.cursor }

// Tables lists the tables under snapshot that are not done, by name.
func (s *State) Tables() []string {
	var out []string
	for n, t := range s.tables {
		if t.status != done {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}

// Pending reports whether name is under snapshot and not started.
func (s *State) Pending(name string) bool {
	t := s.tables[name]
	return t != nil && t.status == pending
}

// Active reports whether name is being read, and its boundary (nil: no
// row delivered yet): the next chunk starts after it.
func (s *State) Active(name string) (bound *Key, ok bool) {
	t := s.tables[name]
	if t == nil || t.status != active {
		return nil, false
	}
	return t.bound, true
}

// Done reports whether name was read completely.
func (s *State) Done(name string) bool {
	t := s.tables[name]
	return t != nil && t.status == done
}

// End ends the snapshot of a table that no longer exists (dropped or
// renamed): nothing is left to read, and its later changes are delivered.
func (s *State) End(name string) {
	if t := s.tables[name]; t != nil {
		t.status, t.bound, t.buf = done, nil, nil
		s.listOK = false
	}
}

// Restart makes every active table continue from its boundary with
// nothing held back, as of the stream point at: the held changes of a
// dropped connection or another server do not place a chunk read later.
func (s *State) Restart(at Pos) {
	for _, t := range s.tables {
		if t.status == active {
			t.from, t.buf = at, nil
		}
	}
}

// in reports whether key k was delivered for t.
func (s *State) in(t *table, k Key) bool {
	return t.bound != nil && s.cfg.Compare(k.Cmp, t.bound.Cmp) <= 0
}

// Classify says how the row change c of table name reaches the consumer,
// and holds it back for the chunks to come when it touches a key not yet
// delivered.
func (s *State) Classify(name string, c Change) Verdict {
	t := s.tables[name]
	if t == nil || t.status == done {
		return Deliver
	}
	if t.status == pending {
		return Suppress
	}
	var v Verdict
	switch c.Kind {
	case Insert:
		v = s.verdict(s.in(t, c.After.Key))
	case Delete:
		v = s.verdict(s.in(t, c.Before.Key))
	default:
		switch b, a := s.in(t, c.Before.Key), s.in(t, c.After.Key); {
		case b && a:
			v = Deliver
		case b:
			v = AsDelete
		case a:
			v = AsInsert
		default:
			v = Suppress
		}
	}
	if v != Deliver {
		t.buf = append(t.buf, c)
	}
	return v
}

func (s *State) verdict(in bool) Verdict {
	if in {
		return Deliver
	}
	return Suppress
}

// Attach places chunk c at the stream's current point at. Ready returns
// the chunk's rows as of at: its read, with the changes held back between
// its position and at applied.
func (s *State) Attach(c *Chunk, at Pos) (Outcome, []Row) {
	t := s.tables[c.Table]
	if t == nil || t.status != active || !s.sameKey(c.Lo, t.bound) {
		return Discard, nil
	}
	if s.cfg.ComparePos(c.At, at) > 0 {
		return Wait, nil
	}
	from := c.foldFrom()
	if s.cfg.ComparePos(from, t.from) < 0 {
		return Discard, nil
	}
	f := NewFold(s.cfg.Compare, c)
	for i := range t.buf {
		ch := &t.buf[i]
		if s.cfg.ComparePos(ch.Pos, from) <= 0 || s.cfg.ComparePos(ch.Pos, at) > 0 {
			continue
		}
		f.Apply(ch)
	}
	rows := f.Rows()
	return Ready, rows
}

func (s *State) sameKey(a, b *Key) bool {
	if a == nil || b == nil {
		return a == b
	}
	return s.cfg.Compare(a.Cmp, b.Cmp) == 0
}

// Delivered records that the row with key k of table name was delivered:
// the table's boundary, for a token taken inside a chunk's delivery.
func (s *State) Delivered(name string, k Key) {
	kk := k
	s.DeliveredAt(name, &kk)
}

// DeliveredAt is Delivered with the key at k, which is not written again
// (a row of the chunk being delivered): no copy is made.
func (s *State) DeliveredAt(name string, k *Key) {
	if t := s.tables[name]; t != nil && t.status == active {
		t.bound = k
	}
}

// Finish records that chunk c, attached Ready, was delivered: the table's
// boundary becomes c.Hi, or the table is done after its last chunk. The
// changes held at or before c.At are let go: later chunks are read at or
// after it.
func (s *State) Finish(c *Chunk) { s.FinishKeeping(c, nil) }

// FinishKeeping is Finish for a table whose later chunks may be read
// before c: the changes held after keep (when before c.At) are kept for
// them, since a read made at or after keep folds in the changes after its
// own position.
func (s *State) FinishKeeping(c *Chunk, keep *Pos) {
	t := s.tables[c.Table]
	if t == nil || t.status != active {
		return
	}
	if c.Hi == nil {
		t.status, t.bound, t.buf = done, nil, nil
		s.listOK = false
		return
	}
	t.bound = c.Hi
	upTo := c.At
	if keep != nil && s.cfg.ComparePos(*keep, upTo) < 0 {
		upTo = *keep
	}
	if s.cfg.ComparePos(upTo, t.from) > 0 {
		t.from = upTo
	}
	k := 0
	for k < len(t.buf) && s.cfg.ComparePos(t.buf[k].Pos, upTo) <= 0 {
		k++
	}
	t.buf = slices.Delete(t.buf, 0, k)
}

// Held is the number of changes held back, over every table.
func (s *State) Held() int {
	n := 0
	for _, t := range s.tables {
		n += len(t.buf)
	}
	return n
}
