package snapshot

import "slices"

// A watermark chunk is a read with no exact binlog position (MySQL has no
// binlog_snapshot_position): the reader takes the binlog position just
// before it (Low, the low watermark) and just after it (At, the high
// watermark). The read holds every transaction logged at or before Low
// and none logged after At; of those in between it may hold some, all or
// none, row by row. Folding every change of (Low, at] into the read, in
// binlog order, makes each key's row its state at the stream point at:
// a key that a change of the window touched ends as that key's last
// change left it (the after image, or gone after a delete or a key
// moved away), whatever the read saw of it; a key no change touched is
// as the read saw it, which is its state at Low and so at at. The chunk
// is attached only once the stream reached At, so that every change the
// read may hold is one the fold saw and the consumer was not given. That
// the read holds everything logged at or before Low is the reader's
// part (snapshot_watermark.go: a locking read).

// Fold is a chunk's rows brought forward over the row changes that
// follow its read: a value advanced by Apply, one change at a time in
// binlog order. Each change replaces what the chunk held for the keys it
// touches, within the chunk's key range: a delete removes its key, an
// insert puts its row, an update removes its before key and puts its
// after row (a key moved into the range enters the chunk, one moved out
// leaves it).
type Fold struct {
	cmp  Compare
	c    *Chunk
	rows []Row
	// own: rows is the Fold's copy of c.Rows, made at the first change
	// that touches the chunk (most touch none): c.Rows is never written.
	own bool
}

// NewFold starts folding changes into chunk c's rows, which it leaves as
// they are.
func NewFold(cmp Compare, c *Chunk) *Fold {
	return &Fold{cmp: cmp, c: c, rows: c.Rows}
}

// write makes rows the Fold's own before a change is written into it.
func (f *Fold) write() {
	if !f.own {
		f.rows, f.own = slices.Clone(f.rows), true
	}
}

// Apply folds one row change into the chunk.
func (f *Fold) Apply(ch *Change) {
	if ch.Kind != Insert && f.inRange(ch.Before.Key) {
		if i, ok := f.search(ch.Before.Key); ok {
			f.write()
			f.rows = slices.Delete(f.rows, i, i+1)
		}
	}
	if ch.Kind != Delete && f.inRange(ch.After.Key) {
		i, ok := f.search(ch.After.Key)
		f.write()
		if ok {
			f.rows[i] = ch.After
		} else {
			f.rows = slices.Insert(f.rows, i, ch.After)
		}
	}
}

// Rows is the chunk as folded so far, in key order: c.Rows itself while
// no change touched it.
func (f *Fold) Rows() []Row { return f.rows }

func (f *Fold) inRange(k Key) bool {
	c := f.c
	return (c.Lo == nil || f.cmp(k.Cmp, c.Lo.Cmp) > 0) && (c.Hi == nil || f.cmp(k.Cmp, c.Hi.Cmp) <= 0)
}

func (f *Fold) search(k Key) (int, bool) {
	return slices.BinarySearchFunc(f.rows, k, func(r Row, k Key) int { return f.cmp(r.Key.Cmp, k.Cmp) })
}

// foldFrom is the position after which c's held changes are folded in:
// its low watermark for a watermark read, else the read's own position.
func (c *Chunk) foldFrom() Pos {
	if c.Low != nil {
		return *c.Low
	}
	return c.At
}
