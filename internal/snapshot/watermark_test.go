package snapshot

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

func row(k int, v string) Row { return Row{Key: ik(k), Data: v} }

func ins(p, k int, v string) Change { return Change{Pos: at(p), Kind: Insert, After: row(k, v)} }
func del(p, k int, v string) Change { return Change{Pos: at(p), Kind: Delete, Before: row(k, v)} }
func upd(p, a int, av string, b int, bv string) Change {
	return Change{Pos: at(p), Kind: Update, Before: row(a, av), After: row(b, bv)}
}

func rowsText(rows []Row) string {
	s := ""
	for _, r := range rows {
		s += fmt.Sprintf("%v=%v ", r.Key.Raw[0], r.Data)
	}
	return s
}

// TestFoldEdges folds the awkward windows into a chunk (10, 20]: the
// result is each key's last change in the window, else the read's row.
func TestFoldEdges(t *testing.T) {
	lo, hi := ik(10), ik(20)
	read := []Row{row(12, "r12"), row(15, "r15"), row(20, "r20")}
	for _, c := range []struct {
		name    string
		changes []Change
		want    string
	}{
		{"no change: the read", nil, "12=r12 15=r15 20=r20 "},
		{"insert then delete inside the window", []Change{ins(1, 13, "a"), del(2, 13, "a")}, "12=r12 15=r15 20=r20 "},
		{"delete then insert again", []Change{del(1, 15, "r15"), ins(2, 15, "b")}, "12=r12 15=b 20=r20 "},
		// The read may already show the insert (it committed before the
		// read): the fold puts the same row, not a second one.
		{"an insert the read already holds", []Change{ins(1, 20, "r20")}, "12=r12 15=r15 20=r20 "},
		{"a delete the read already holds", []Change{del(1, 14, "x")}, "12=r12 15=r15 20=r20 "},
		{"key moved inside the range", []Change{upd(1, 12, "r12", 18, "m")}, "15=r15 18=m 20=r20 "},
		{"key moved out of the range", []Change{upd(1, 15, "r15", 25, "m")}, "12=r12 20=r20 "},
		{"key outside the range enters it", []Change{upd(1, 5, "x", 11, "in")}, "11=in 12=r12 15=r15 20=r20 "},
		{"key moved in, then out again", []Change{upd(1, 30, "x", 14, "in"), upd(2, 14, "in", 31, "out")}, "12=r12 15=r15 20=r20 "},
		{"changes outside the range are ignored", []Change{ins(1, 21, "x"), ins(2, 10, "x"), del(3, 2, "x")}, "12=r12 15=r15 20=r20 "},
		{"last update wins", []Change{upd(1, 12, "r12", 12, "u1"), upd(2, 12, "u1", 12, "u2")}, "12=u2 15=r15 20=r20 "},
		// A multi-row statement split over rows events: each event's rows
		// fold in order, the later event over the earlier.
		{"multi-row statement over two events", []Change{
			upd(1, 12, "r12", 12, "s"), upd(1, 15, "r15", 15, "s"),
			upd(2, 20, "r20", 20, "s"), del(2, 12, "s"),
		}, "15=s 20=s "},
	} {
		f := NewFold(CompareValues, &Chunk{Lo: &lo, Hi: &hi, Rows: read})
		for i := range c.changes {
			f.Apply(&c.changes[i])
		}
		if got := rowsText(f.Rows()); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
	if got := rowsText(read); got != "12=r12 15=r15 20=r20 " {
		t.Errorf("the fold changed its chunk's rows: %q", got)
	}
}

// TestAttachWatermark: a watermark chunk waits for its high watermark,
// folds what follows its low one (not what precedes it), and is read again
// when its low watermark precedes the table's held changes.
func TestAttachWatermark(t *testing.T) {
	s := New(testCfg)
	s.Add("t")
	s.Start("t", at(10), true)
	for _, c := range []Change{
		ins(11, 5, "before-low"), // in the read (logged before its low watermark)
		upd(21, 5, "before-low", 5, "window"),
		ins(22, 6, "window"),
		del(31, 6, "window"), // after the high watermark
	} {
		if v := s.Classify("t", c); v != Suppress {
			t.Fatalf("%+v: %v", c, v)
		}
	}
	low := at(20)
	c := &Chunk{Table: "t", At: at(30), Low: &low, Rows: []Row{row(5, "before-low"), row(7, "r")}}
	if o, _ := s.Attach(c, at(29)); o != Wait {
		t.Fatalf("before its high watermark: %v", o)
	}
	o, rows := s.Attach(c, at(30))
	if o != Ready || rowsText(rows) != "5=window 6=window 7=r " {
		t.Fatalf("at its high watermark: %v %q", o, rowsText(rows))
	}
	if _, rows = s.Attach(c, at(31)); rowsText(rows) != "5=window 7=r " {
		t.Fatalf("after it: %q", rowsText(rows))
	}
	early := at(9)
	if o, _ := s.Attach(&Chunk{Table: "t", At: at(30), Low: &early}, at(31)); o != Discard {
		t.Fatalf("low watermark before the held changes: %v", o)
	}
}

// A history for the property test: transactions of row changes over keys
// 0..keys-1, each transaction at consecutive positions.
type history struct {
	changes []Change
	ends    []int // ends[i]: the position after transaction i
}

func randomHistory(rng *rand.Rand, keys, txns int) history {
	var h history
	state := map[int]string{}
	pos := 100
	for i := range txns {
		for range 1 + rng.IntN(3) {
			pos++
			k := rng.IntN(keys)
			v := fmt.Sprintf("v%d.%d", i, pos)
			old, ok := state[k]
			switch {
			case !ok:
				h.changes = append(h.changes, ins(pos, k, v))
				state[k] = v
			case rng.IntN(3) == 0:
				h.changes = append(h.changes, del(pos, k, old))
				delete(state, k)
			default:
				nk := k
				if rng.IntN(3) == 0 {
					nk = rng.IntN(keys)
				}
				if _, taken := state[nk]; taken && nk != k {
					nk = k
				}
				h.changes = append(h.changes, upd(pos, k, old, nk, v))
				delete(state, k)
				state[nk] = v
			}
		}
		h.ends = append(h.ends, pos)
	}
	return h
}

// stateAt is the table after every change at or before position p.
func (h history) stateAt(p int) map[int]string {
	st := map[int]string{}
	for _, c := range h.changes {
		if int(c.Pos.Offset) > p {
			break
		}
		if c.Kind != Insert {
			delete(st, int(c.Before.Key.Raw[0].(int64)))
		}
		if c.Kind != Delete {
			st[int(c.After.Key.Raw[0].(int64))] = c.After.Data.(string)
		}
	}
	return st
}

// watermarkRead is what a read between the watermarks may return: each
// key as of its own point between low and high (a locking read waits for
// each row's writer, rows one after another), the first n keys after lo.
func (h history) watermarkRead(rng *rand.Rand, keys, lo, n, low, high int) []Row {
	var rows []Row
	var points []int
	for _, e := range append([]int{low}, h.ends...) {
		if e >= low && e <= high {
			points = append(points, e)
		}
	}
	for k := lo + 1; k < keys && len(rows) < n; k++ {
		if v, ok := h.stateAt(points[rng.IntN(len(points))])[k]; ok {
			rows = append(rows, row(k, v))
		}
	}
	return rows
}

// TestWatermarkFoldProperty: over random histories and windows, a chunk
// read anywhere between its watermarks, folded from its low watermark
// and attached at or after its high one, is the table at the attach
// point, key range for key range. The negative controls fold from the
// high watermark (a low watermark taken after the read) and fold nothing
// (the read taken as exact at the attach point), and a read that misses
// a transaction logged before the low watermark is folded from it: all
// go wrong.
func TestWatermarkFoldProperty(t *testing.T) {
	const keys = 30
	wrongLate, wrongNone, wrongLag := 0, 0, 0
	for seed := range uint64(3000) {
		rng := rand.New(rand.NewPCG(seed, 7))
		h := randomHistory(rng, keys, 40)
		li := rng.IntN(len(h.ends) - 1)
		hi := li + rng.IntN(min(6, len(h.ends)-li))
		low, high := h.ends[li], h.ends[hi]
		attach := high
		if rng.IntN(2) == 0 {
			attach = h.ends[hi+rng.IntN(len(h.ends)-hi)]
		}
		lo, n := rng.IntN(keys/2)-1, 1+rng.IntN(12)
		read := h.watermarkRead(rng, keys, lo, n, low, high)

		run := func(from *Pos, readAt Pos) ([]Row, *Key) {
			s := New(testCfg)
			s.Add("t")
			s.Start("t", at(100), true)
			if lo >= 0 {
				s.Delivered("t", ik(lo))
			}
			for _, c := range h.changes {
				if int(c.Pos.Offset) > attach {
					break
				}
				s.Classify("t", c)
			}
			c := &Chunk{Table: "t", At: readAt, Low: from, Rows: read}
			if lo >= 0 {
				k := ik(lo)
				c.Lo = &k
			}
			if len(read) == n {
				k := read[n-1].Key
				c.Hi = &k
			}
			o, rows := s.Attach(c, at(attach))
			if o != Ready {
				t.Fatalf("seed %d: %v", seed, o)
			}
			return rows, c.Hi
		}
		want := func(hiKey *Key) string {
			st := h.stateAt(attach)
			var rows []Row
			for k := lo + 1; k < keys; k++ {
				if v, ok := st[k]; ok && (hiKey == nil || int64(k) <= hiKey.Raw[0].(int64)) {
					rows = append(rows, row(k, v))
				}
			}
			return rowsText(rows)
		}
		lp := at(low)
		got, hiKey := run(&lp, at(high))
		if g, w := rowsText(got), want(hiKey); g != w {
			t.Fatalf("seed %d (low %d high %d attach %d): got %q, want %q", seed, low, high, attach, g, w)
		}
		hp := at(high)
		if late, hk := run(&hp, at(high)); rowsText(late) != want(hk) {
			wrongLate++
		}
		if none, hk := run(nil, at(attach)); rowsText(none) != want(hk) {
			wrongNone++
		}
		// The read missing a transaction logged before the low watermark
		// (a consistent read whose view lags the binlog).
		if li > 0 {
			saved := read
			read = h.watermarkRead(rng, keys, lo, n, h.ends[li-1], h.ends[li-1])
			if lag, hk := run(&lp, at(high)); rowsText(lag) != want(hk) {
				wrongLag++
			}
			read = saved
		}
	}
	if wrongLate == 0 || wrongNone == 0 || wrongLag == 0 {
		t.Fatalf("negative controls: low after the read wrong %d times, no fold %d, a read lagging the low watermark %d", wrongLate, wrongNone, wrongLag)
	}
	t.Logf("negative controls wrong of 3000: low after the read %d, no fold %d, a read lagging the low watermark %d", wrongLate, wrongNone, wrongLag)
}

func TestFoldKeepsOrder(t *testing.T) {
	f := NewFold(CompareValues, &Chunk{})
	for _, k := range []int{5, 1, 9, 3} {
		c := ins(1, k, "x")
		f.Apply(&c)
	}
	keys := []int64{}
	for _, r := range f.Rows() {
		keys = append(keys, r.Key.Raw[0].(int64))
	}
	if !slices.Equal(keys, []int64{1, 3, 5, 9}) {
		t.Fatal(keys)
	}
}
