package binlogstream_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/replication"
	"github.com/stretchr/testify/require"

	"github.com/binlogstream/binlogstream"
	th "github.com/binlogstream/binlogstream/testhelpers"
)

// recycledRun streams src from start until stop says so,
// keeping up to window events unreleased and releasing them in a random
// order, as a consumer that writes rows out on other goroutines does. It
// returns the rows of every event as rendered at delivery, checks that an
// event's rows still render the same when it is released (no later event
// was decoded into memory it still held), and counts the distinct arenas.
func recycledRun(t *testing.T, src binlogstream.Source, start binlogstream.ResumePosition, stop func(n int, ev binlogstream.Event) bool,
	window int, seed uint64) (rows []string, arenas int) {
	t.Helper()
	s, err := binlogstream.NewBinlogStreamer(binlogstream.Config{Source: src, Start: start})
	require.NoError(t, err)
	// A guard against a hang only: a run under -race on a loaded machine
	// can take a minute.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	type held struct {
		ev   binlogstream.Event
		text string
	}
	var kept []held
	seen := map[uintptr]bool{}
	rng := rand.New(rand.NewPCG(seed, 1))
	render := func(ev binlogstream.Event) string {
		re := ev.Event.(*replication.RowsEvent)
		out := fmt.Sprintf("%s %#v %#v", ev.End, re.Rows, re.SkippedColumns)
		for i := range re.Rows {
			out += fmt.Sprintf(" %#v", ev.RowValues(i))
		}
		return out
	}
	release := func(i int) {
		h := kept[i]
		require.Equal(t, h.text, render(h.ev), "an event's rows changed before its Release")
		h.ev.Release()
		kept = append(kept[:i], kept[i+1:]...)
	}
	n := 0
	s.AddListener(func(_ context.Context, ev binlogstream.Event) error {
		if _, ok := ev.Event.(*replication.RowsEvent); ok {
			text := render(ev)
			rows = append(rows, text)
			if a := binlogstream.ArenaOf(ev); a != 0 {
				seen[a] = true
			}
			kept = append(kept, held{ev, text})
			for len(kept) > window || len(kept) > 0 && rng.IntN(3) == 0 {
				release(rng.IntN(len(kept)))
			}
		}
		if n++; stop(n, ev) {
			cancel()
		}
		return nil
	})
	require.ErrorIs(t, s.Run(ctx), context.Canceled)
	for len(kept) > 0 {
		release(0)
	}
	return rows, len(seen)
}

// TestRecycleRows: a DirSource that recycles the memory of released
// events' rows delivers the rows one that does not delivers, whether the
// consumer releases each event at once or holds several and releases them
// out of order; rows with NULLs land in memory that held values before.
// Small events are decoded in place, larger ones on the workers.
func TestRecycleRows(t *testing.T) {
	wide := th.Table{ID: 31, Schema: "app", Name: "wide", Columns: []th.Column{{Name: "id", Type: th.BigInt},
		{Name: "a", Type: th.Int}, {Name: "b", Type: th.Varchar(80)}, {Name: "c", Type: th.TinyInt},
		{Name: "d", Type: th.Varchar(10)}, {Name: "e", Type: th.Int, Unsigned: true}}}
	narrow := th.Table{ID: 32, Schema: "app", Name: "narrow", Columns: []th.Column{{Name: "id", Type: th.Int}, {Name: "s", Type: th.Varchar(300)}}}
	wideRow := func(i int) th.Row {
		r := th.Row{int64(i), int32(i * 3), fmt.Sprintf("row-%d-%s", i, "abcdefghijklmnop"[:i%16]), int8(i % 100), "x", int32(i)}
		for c := 1; c < len(r); c++ {
			if (i+c)%(3+c) == 0 {
				r[c] = nil // NULLs move from column to column
			}
		}
		return r
	}
	narrowRow := func(i int) th.Row {
		if i%4 == 0 {
			return th.Row{int32(i), nil}
		}
		return th.Row{int32(i), fmt.Sprintf("%0*d", 1+i%250, i)}
	}
	for _, f := range []th.Flavor{th.MariaDB, th.MySQL} {
		b := th.NewBuilder(f, th.MaxRowsPerEvent(40))
		id := 0
		for txn := range 400 {
			rows := 1 + txn*7%90 // 1 to 90 rows: events of every size
			b.Txn(func(x *th.Txn) {
				var w, n []th.Row
				for range rows {
					id++
					w, n = append(w, wideRow(id)), append(n, narrowRow(id))
				}
				switch txn % 3 {
				case 0:
					x.Insert(wide, w...).Insert(narrow, n...)
				case 1:
					var pairs []th.Row
					for k := range w {
						pairs = append(pairs, w[k], wideRow(id+1000+k))
					}
					x.Update(wide, pairs...).Delete(narrow, n...)
				default:
					x.Delete(wide, w...).Insert(narrow, n...)
				}
			})
		}
		bl := b.Build()
		start := binlogstream.StartAt(binlogstream.Position{File: bl.Files[0].Name, Offset: 4})
		events := deliveries(bl)
		stop := func(n int, _ binlogstream.Event) bool { return n == events }
		t.Run(string(f), func(t *testing.T) {
			open := func(recycle bool) binlogstream.Source {
				dir := t.TempDir()
				require.NoError(t, bl.WriteDir(dir))
				src, err := binlogstream.NewDirSource(binlogstream.DirConfig{Dir: dir, DecodeWorkers: 2, RecycleRows: recycle,
					PollInterval: time.Millisecond, HeartbeatPeriod: 5 * time.Millisecond})
				require.NoError(t, err)
				return src
			}
			want, none := recycledRun(t, open(false), start, stop, 0, 1)
			require.Zero(t, none, "no arena without RecycleRows")
			require.Greater(t, len(want), 1000)
			for _, window := range []int{0, 1, 5, 40} {
				got, arenas := recycledRun(t, open(true), start, stop, window, uint64(window))
				require.Equal(t, want, got, "window %d", window)
				// Memory was reused: the source reads up to 512 events ahead, so a
				// quarter of the events or more went into arenas released before.
				require.Less(t, arenas, len(want)*3/4, "window %d: %d arenas for %d rows events", window, arenas, len(want))
			}
		})
	}
}

// TestReleaseOnce: Release through copies of one Event, or again, frees
// its memory once; a copy kept past a reuse cannot free a later event's.
func TestReleaseOnce(t *testing.T) {
	before, after := binlogstream.ReleaseTwice()
	require.Equal(t, before+1, after)
	var ev binlogstream.Event
	ev.Release() // no arena: nothing to do
}
