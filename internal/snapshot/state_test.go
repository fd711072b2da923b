package snapshot

import (
	"cmp"
	"fmt"
	"maps"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
)

func posCmp(a, b Pos) int {
	if c := cmp.Compare(a.File, b.File); c != 0 {
		return c
	}
	return cmp.Compare(a.Offset, b.Offset)
}

var testCfg = Config{Compare: CompareValues, ComparePos: posCmp}

func ik(k int) Key { return Key{Cmp: []any{int64(k)}, Raw: []any{int64(k)}} }

func at(n int) Pos { return Pos{File: "b.000001", Offset: uint64(n)} }

func TestClassify(t *testing.T) {
	s := New(testCfg)
	s.Add("t")
	ins := Change{Pos: at(1), Kind: Insert, After: Row{Key: ik(5)}}
	if v := s.Classify("t", ins); v != Suppress {
		t.Fatalf("pending table: %v", v)
	}
	if s.Held() != 0 {
		t.Fatal("a pending table holds nothing")
	}
	s.Start("t", at(1), true)
	s.Delivered("t", ik(10))
	upd := func(a, b int) Change {
		return Change{Pos: at(2), Kind: Update, Before: Row{Key: ik(a)}, After: Row{Key: ik(b)}}
	}
	for _, c := range []struct {
		ch   Change
		want Verdict
	}{
		{Change{Pos: at(2), Kind: Insert, After: Row{Key: ik(10)}}, Deliver},
		{Change{Pos: at(2), Kind: Insert, After: Row{Key: ik(11)}}, Suppress},
		{Change{Pos: at(2), Kind: Delete, Before: Row{Key: ik(3)}}, Deliver},
		{Change{Pos: at(2), Kind: Delete, Before: Row{Key: ik(30)}}, Suppress},
		{upd(1, 2), Deliver},
		{upd(1, 20), AsDelete},
		{upd(20, 1), AsInsert},
		{upd(20, 21), Suppress},
	} {
		if v := s.Classify("t", c.ch); v != c.want {
			t.Errorf("%+v: %v, want %v", c.ch, v, c.want)
		}
	}
	if s.Held() != 5 {
		t.Errorf("held %d, want 5", s.Held())
	}
	if v := s.Classify("other", ins); v != Deliver {
		t.Errorf("a table not under snapshot: %v", v)
	}
}

func TestAttachWaitsFoldsAndDiscards(t *testing.T) {
	s := New(testCfg)
	s.Add("t")
	s.Start("t", at(5), true)
	hi := ik(10)
	c := &Chunk{Table: "t", Hi: &hi, At: at(7), Rows: []Row{{Key: ik(1), Data: "a"}, {Key: ik(4), Data: "b"}, {Key: ik(10), Data: "c"}}}
	if o, _ := s.Attach(c, at(6)); o != Wait {
		t.Fatalf("before its position: %v", o)
	}
	s.Classify("t", Change{Pos: at(7), Kind: Insert, After: Row{Key: ik(2), Data: "in the read"}})
	s.Classify("t", Change{Pos: at(8), Kind: Update, Before: Row{Key: ik(1), Data: "a"}, After: Row{Key: ik(3), Data: "a2"}})
	s.Classify("t", Change{Pos: at(8), Kind: Update, Before: Row{Key: ik(4), Data: "b"}, After: Row{Key: ik(40), Data: "out"}})
	s.Classify("t", Change{Pos: at(9), Kind: Insert, After: Row{Key: ik(6), Data: "new"}})
	s.Classify("t", Change{Pos: at(9), Kind: Delete, Before: Row{Key: ik(10), Data: "c"}})
	o, rows := s.Attach(c, at(9))
	if o != Ready {
		t.Fatalf("outcome %v", o)
	}
	var got []string
	for _, r := range rows {
		got = append(got, fmt.Sprintf("%v=%v", r.Key.Cmp[0], r.Data))
	}
	if want := []string{"3=a2", "6=new"}; !slices.Equal(got, want) {
		t.Fatalf("folded %v, want %v", got, want)
	}
	s.Finish(c)
	if b, ok := s.Active("t"); !ok || b.Cmp[0] != int64(10) {
		t.Fatalf("boundary %v %v", b, ok)
	}
	if s.Held() != 4 {
		t.Fatalf("held %d after the chunk at 7, want 4", s.Held())
	}
	early := &Chunk{Table: "t", Lo: &hi, At: at(4)}
	if o, _ := s.Attach(early, at(9)); o != Discard {
		t.Fatalf("a chunk read before the held changes begin: %v", o)
	}
	stale := &Chunk{Table: "t", At: at(9)}
	if o, _ := s.Attach(stale, at(9)); o != Discard {
		t.Fatalf("a chunk of an old boundary: %v", o)
	}
	last := &Chunk{Table: "t", Lo: &hi, At: at(7)} // 4 moved to 40 at 8
	if o, rows := s.Attach(last, at(9)); o != Ready || len(rows) != 1 {
		t.Fatalf("last chunk: %v %v", o, rows)
	}
	s.Finish(last)
	if !s.Done("t") || s.Held() != 0 {
		t.Fatal("not done after the last chunk")
	}
}

func TestCompareDecimal(t *testing.T) {
	order := []string{"-100", "-2.5", "-2.25", "-0.001", "0", "-0.0", "0.000", ".5", "0.50", "1", "001.0001", "10", "99.99", "100"}
	for i, a := range order {
		for j, b := range order {
			want := cmp.Compare(i, j)
			eq := map[string]int{"0": 1, "-0.0": 1, "0.000": 1, ".5": 2, "0.50": 2}
			if eq[a] != 0 && eq[a] == eq[b] {
				want = 0
			}
			if got := CompareValues([]any{Decimal(a)}, []any{Decimal(b)}); got != want {
				t.Errorf("%s vs %s: %d, want %d", a, b, got, want)
			}
		}
	}
	if CompareValues([]any{int64(-1)}, []any{uint64(0)}) >= 0 || CompareValues([]any{uint64(1 << 63)}, []any{int64(1)}) <= 0 {
		t.Error("int64 against uint64")
	}
}

func TestTokenRoundTrip(t *testing.T) {
	s := New(testCfg)
	for _, n := range []string{"a.t1", "a.t2", "a.t3", "b.x", "c.done"} {
		s.Add(n)
	}
	s.Start("a.t1", at(1), true)
	s.Start("a.t2", at(1), true)
	s.Delivered("a.t2", Key{Cmp: []any{"k"}, Raw: []any{[]byte("k\x00é"), int64(-5), uint64(7), nil}})
	s.Start("c.done", at(1), false)
	s.Finish(&Chunk{Table: "c.done", At: at(1)})
	b := s.Append(nil)
	saved, err := Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	want := Saved{Cursor: "a.t2", Tables: []SavedTable{
		{Name: "a.t1"},
		{Name: "a.t2", Bound: &Key{Raw: []any{[]byte("k\x00é"), int64(-5), uint64(7), nil}}},
		{Name: "a.t3"}, {Name: "b.x"}, {Name: "c.done", Done: true},
	}}
	if fmt.Sprint(saved.Cursor, saved.Tables[1].Bound.Raw, len(saved.Tables)) != fmt.Sprint(want.Cursor, want.Tables[1].Bound.Raw, len(want.Tables)) {
		t.Fatalf("parsed %+v", saved)
	}
	r := Restore(testCfg, saved, at(9))
	if got := r.Append(nil); string(got) != string(b) {
		t.Fatalf("restored state encodes differently:\n%x\n%x", got, b)
	}
	if !r.Pending("a.t1") || !r.Done("c.done") {
		t.Fatal("states not restored")
	}
	if _, ok := r.Active("a.t2"); !ok {
		t.Fatal("boundary not restored")
	}
	for i := range b {
		if _, err := Parse(b[:i]); err == nil {
			t.Fatalf("truncated at %d parses", i)
		}
	}
}

func FuzzParse(f *testing.F) {
	s := New(testCfg)
	s.Add("a.b")
	s.Start("a.b", at(1), true)
	s.Delivered("a.b", Key{Raw: []any{int64(3), []byte("x")}})
	f.Add(s.Append(nil))
	f.Add([]byte{1, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		saved, err := Parse(b)
		if err != nil {
			return
		}
		// What parses encodes back to a token with the same progress.
		again, err := Parse(Restore(testCfg, saved, at(1)).Append(nil))
		if err != nil || !reflect.DeepEqual(again, saved) {
			t.Fatalf("%x parses as %#v, encodes back as %#v (%v)", b, saved, again, err)
		}
	})
}

// The reference model for the property test: a server whose tables are
// maps from key to a version, a binlog of transactions, and chunk reads
// that see the committed state of an earlier position (the binlog is
// written before a commit is visible).
type model struct {
	rng     *rand.Rand
	tables  []string
	keys    int
	history []map[string]map[int]int // state after each event; history[0] initial
	log     [][]mchange              // log[i-1]: the changes of event i
}

type mchange struct {
	table         string
	kind          Kind
	before, after int
	bval, aval    int
}

func (m *model) cur() map[string]map[int]int { return m.history[len(m.history)-1] }

func clone(st map[string]map[int]int) map[string]map[int]int {
	out := map[string]map[int]int{}
	for n, t := range st {
		out[n] = maps.Clone(t)
	}
	return out
}

// write appends one event of a few row changes.
func (m *model) write(version int) {
	st := clone(m.cur())
	var ev []mchange
	for range 1 + m.rng.IntN(3) {
		tn := m.tables[m.rng.IntN(len(m.tables))]
		t := st[tn]
		k := m.rng.IntN(m.keys)
		v, ok := t[k]
		switch {
		case !ok:
			t[k] = version
			ev = append(ev, mchange{table: tn, kind: Insert, after: k, aval: version})
		case m.rng.IntN(3) == 0:
			delete(t, k)
			ev = append(ev, mchange{table: tn, kind: Delete, before: k, bval: v})
		default:
			k2 := k
			if m.rng.IntN(2) == 0 {
				k2 = m.rng.IntN(m.keys)
				if _, taken := t[k2]; taken {
					k2 = k
				}
			}
			delete(t, k)
			t[k2] = version
			ev = append(ev, mchange{table: tn, kind: Update, before: k, bval: v, after: k2, aval: version})
		}
		version++
	}
	m.history = append(m.history, st)
	m.log = append(m.log, ev)
}

// read is a chunk of table tn after lo (nil: from the start) as of event c.
func (m *model) read(tn string, lo *Key, n, c int) *Chunk {
	t := m.history[c][tn]
	keys := slices.Sorted(maps.Keys(t))
	ch := &Chunk{Table: tn, Lo: lo, At: at(c)}
	for _, k := range keys {
		if lo != nil && int64(k) <= lo.Cmp[0].(int64) {
			continue
		}
		if len(ch.Rows) == n {
			hi := ch.Rows[n-1].Key
			ch.Hi = &hi
			break
		}
		ch.Rows = append(ch.Rows, Row{Key: ik(k), Data: t[k]})
	}
	return ch
}

// consumer folds what is delivered and keeps the first rule broken.
type consumer struct {
	rows map[string]map[int]int
	err  error
}

func (c *consumer) put(tn string, k, v int, why string) {
	if old, ok := c.rows[tn][k]; ok && c.err == nil {
		c.err = fmt.Errorf("%s of %s key %d, already present (%d)", why, tn, k, old)
	}
	c.rows[tn][k] = v
}

func (c *consumer) take(tn string, k, v int, why string) {
	if old, ok := c.rows[tn][k]; (!ok || old != v) && c.err == nil {
		c.err = fmt.Errorf("%s of %s key %d=%d: folded %d present=%v", why, tn, k, v, old, ok)
	}
	delete(c.rows[tn], k)
}

// TestPropertyAgainstModel drives the state with random interleavings of
// writes, stream reads, chunk reads (at the current or the previous
// position) and crashes (after any delivery, a chunk's rows included), and
// checks the consumer's fold against the model's tables.
func TestPropertyAgainstModel(t *testing.T) {
	for seed := range uint64(400) {
		if err := runModel(seed, false); err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
	}
}

// TestPropertyNegativeControl shows the property test catches a state
// whose chunks are taken as read at the stream's point, with no held
// change folded in.
func TestPropertyNegativeControl(t *testing.T) {
	failed := 0
	for seed := range uint64(50) {
		if runModel(seed, true) != nil {
			failed++
		}
	}
	if failed < 25 {
		t.Fatalf("a state without folding failed %d seeds of 50", failed)
	}
}

func runModel(seed uint64, noFold bool) error {
	rng := rand.New(rand.NewPCG(seed, 7))
	m := &model{rng: rng, tables: []string{"s.a", "s.b"}, keys: 40}
	init := map[string]map[int]int{}
	for _, tn := range m.tables {
		init[tn] = map[int]int{}
		for k := range m.keys {
			if rng.IntN(2) == 0 {
				init[tn][k] = -k - 1
			}
		}
	}
	m.history = append(m.history, init)
	c := &consumer{rows: map[string]map[int]int{}}
	for _, tn := range m.tables {
		c.rows[tn] = map[int]int{}
	}
	chunkRows := 1 + rng.IntN(6)
	st := New(testCfg)
	for _, tn := range m.tables {
		st.Add(tn)
	}
	streamed := 0 // events consumed
	inflight := map[string]*Chunk{}
	version := 1
	crash := func() error {
		saved, err := Parse(st.Append(nil))
		if err != nil {
			return err
		}
		st = Restore(testCfg, saved, at(streamed))
		for _, tb := range saved.Tables {
			if tb.Bound != nil {
				st.SetBoundCmp(tb.Name, tb.Bound.Raw)
			}
		}
		inflight = map[string]*Chunk{}
		return nil
	}
	deliver := func(ch mchange, v Verdict) {
		switch {
		case v == Suppress:
		case v == AsInsert:
			c.put(ch.table, ch.after, ch.aval, "insert (moved in)")
		case v == AsDelete:
			c.take(ch.table, ch.before, ch.bval, "delete (moved out)")
		case ch.kind == Insert:
			c.put(ch.table, ch.after, ch.aval, "insert")
		case ch.kind == Delete:
			c.take(ch.table, ch.before, ch.bval, "delete")
		default:
			c.take(ch.table, ch.before, ch.bval, "update")
			c.put(ch.table, ch.after, ch.aval, "update")
		}
	}
	// attach delivers a ready chunk row by row, with a crash after a row
	// at random; it reports whether the chunk was delivered whole.
	attach := func(tn string, ch *Chunk) (bool, error) {
		if noFold {
			ch = &Chunk{Table: ch.Table, Lo: ch.Lo, Hi: ch.Hi, At: at(streamed), Rows: ch.Rows}
		}
		o, rows := st.Attach(ch, at(streamed))
		if o == Wait {
			return false, nil
		}
		delete(inflight, tn)
		if o == Discard {
			return false, nil
		}
		for _, r := range rows {
			c.put(tn, int(r.Key.Cmp[0].(int64)), r.Data.(int), "read")
			st.Delivered(tn, r.Key)
			if rng.IntN(10) == 0 {
				return false, crash()
			}
		}
		st.Finish(ch)
		return true, nil
	}
	for steps := 0; ; steps++ {
		if c.err != nil {
			return c.err
		}
		if steps > 50000 {
			return fmt.Errorf("no end after %d steps: streamed %d of %d, inflight %v, tables %v done a=%v b=%v", steps, streamed, len(m.log), len(inflight), st.Tables(), st.Done("s.a"), st.Done("s.b"))
		}
		// A done table sorting at or before the cursor leaves the token,
		// and a restored state then no longer covers it.
		if len(st.Tables()) == 0 && streamed == len(m.log) && len(m.log) > 30 {
			break
		}
		switch r := rng.IntN(10); {
		case r < 3 && len(m.log) < 200:
			m.write(version)
			version += 3
		case r < 6 && streamed < len(m.log):
			streamed++
			for _, ch := range m.log[streamed-1] {
				sc := Change{Pos: at(streamed), Kind: ch.kind, Before: Row{Key: ik(ch.before), Data: ch.bval}, After: Row{Key: ik(ch.after), Data: ch.aval}}
				deliver(ch, st.Classify(ch.table, sc))
			}
			if rng.IntN(8) == 0 {
				if err := crash(); err != nil {
					return err
				}
			}
		case r < 8:
			tn := m.tables[rng.IntN(len(m.tables))]
			if _, ok := st.Active(tn); inflight[tn] != nil || !ok && !st.Pending(tn) {
				continue
			}
			if st.Pending(tn) {
				st.Start(tn, at(streamed), true)
			}
			bound, _ := st.Active(tn)
			// The read sees the committed state: the last event, or the
			// one before it (written to the binlog, not yet visible).
			seen := len(m.log)
			if seen > 0 && rng.IntN(3) == 0 {
				seen--
			}
			inflight[tn] = m.read(tn, bound, chunkRows, seen)
		default:
			for _, tn := range m.tables {
				if ch := inflight[tn]; ch != nil {
					if _, err := attach(tn, ch); err != nil {
						return err
					}
				}
			}
		}
	}
	final := m.cur()
	for _, tn := range m.tables {
		if !maps.Equal(final[tn], c.rows[tn]) {
			return fmt.Errorf("%s: folded %v\nwant %v", tn, c.rows[tn], final[tn])
		}
	}
	return nil
}

// TestFinishKeeping: a chunk of the next range read before the chunk
// delivered (two readers on one table) attaches with the changes after
// its own read folded in when Finish kept them; Finish alone lets them
// go, and the chunk must be read again.
func TestFinishKeeping(t *testing.T) {
	for _, keep := range []bool{true, false} {
		s := New(testCfg)
		s.Add("t")
		s.Start("t", at(5), true)
		b1, b2 := ik(10), ik(20)
		first := &Chunk{Table: "t", Hi: &b1, At: at(9), Rows: []Row{{Key: ik(1), Data: "a"}}}
		second := &Chunk{Table: "t", Lo: &b1, Hi: &b2, At: at(6), Rows: []Row{{Key: ik(15), Data: "x"}}}
		s.Classify("t", Change{Pos: at(7), Kind: Update, Before: Row{Key: ik(15), Data: "x"}, After: Row{Key: ik(15), Data: "y"}})
		if o, _ := s.Attach(first, at(9)); o != Ready {
			t.Fatalf("first: %v", o)
		}
		if keep {
			k := at(6)
			s.FinishKeeping(first, &k)
		} else {
			s.Finish(first)
		}
		o, rows := s.Attach(second, at(9))
		if !keep {
			if o != Discard {
				t.Fatalf("without keeping: %v, want Discard", o)
			}
			continue
		}
		if o != Ready || len(rows) != 1 || rows[0].Data != "y" {
			t.Fatalf("kept: %v %+v, want the update at 7 folded in", o, rows)
		}
	}
}
