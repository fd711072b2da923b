package binlogstream_test

import (
	"context"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/replication"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/binlogstream/binlogstream"
	th "github.com/binlogstream/binlogstream/testhelpers"
)

// dirSrc is a DirSource over the files of a test binlog; Binlog lets the
// GTID helpers know where the binlog ends.
type dirSrc struct {
	*binlogstream.DirSource
	bl *th.Binlog
}

func (d dirSrc) Binlog() *th.Binlog { return d.bl }

// writeDir writes bl's files (and, with index, a mysql-bin.index) to a new
// directory and returns a DirSource over it.
func writeDir(t *testing.T, bl *th.Binlog, index bool) dirSrc {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, bl.WriteDir(dir))
	if index {
		var idx strings.Builder
		for _, f := range bl.Files {
			idx.WriteString("./" + f.Name + "\n")
		}
		base := strings.TrimSuffix(bl.Files[0].Name, filepath.Ext(bl.Files[0].Name))
		require.NoError(t, os.WriteFile(filepath.Join(dir, base+".index"), []byte(idx.String()), 0o644))
	}
	return dirSrc{newDirSource(t, dir), bl}
}

func newDirSource(t *testing.T, dir string) *binlogstream.DirSource {
	t.Helper()
	src, err := binlogstream.NewDirSource(binlogstream.DirConfig{Dir: dir, PollInterval: time.Millisecond, HeartbeatPeriod: 5 * time.Millisecond})
	require.NoError(t, err)
	return src
}

// dirScenarios are the crash scenarios plus what only files have: no
// checksums, and MySQL's compressed transactions.
func dirScenarios(t *testing.T) []scenario {
	out := scenarios(false)
	for _, f := range []th.Flavor{th.MySQL, th.MariaDB} {
		out = append(out, scenario{name: string(f) + "/no-checksum", bl: th.NewBuilder(f, th.Checksum(false), th.MaxRowsPerEvent(2)).
			Txn(func(t *th.Txn) { t.Insert(users, userRows(1, 5)...) }).
			Rotate().
			DDL("app", "ALTER TABLE users ADD COLUMN x INT").
			Txn(func(t *th.Txn) { t.Update(users, userRows(1, 1)[0], userRows(9, 1)[0]) }).Build()})
	}
	return out
}

func deliveries(bl *th.Binlog) int {
	return wireScenario{bl: bl}.deliveries()
}

// TestDirSourceMatchesDump: a DirSource over a binlog's files delivers
// what a server's dump of it does (the fake source), tokens included.
func TestDirSourceMatchesDump(t *testing.T) {
	payload := wireScenarios(t)[4]
	all := append(dirScenarios(t), scenario{name: payload.name, bl: payload.bl})
	for _, sc := range all {
		t.Run(sc.name, func(t *testing.T) {
			n := deliveries(sc.bl)
			want := stream(t, sc.source(), sc.start(), n, nil)
			require.Equal(t, n, want.events)
			for _, index := range []bool{false, true} {
				got := stream(t, writeDir(t, sc.bl, index), sc.start(), n, nil)
				require.ErrorIs(t, got.err, context.Canceled)
				require.Equal(t, want.entries, got.entries)
				require.Equal(t, want.tokens, got.tokens)
			}
			// Rows decoded on the reading goroutine, and on 4 workers.
			for _, workers := range []int{1, 4} {
				src, err := binlogstream.NewDirSource(binlogstream.DirConfig{Dir: writeDir(t, sc.bl, false).Dir(), DecodeWorkers: workers})
				require.NoError(t, err)
				got := stream(t, src, sc.start(), n, nil)
				require.Equal(t, want.entries, got.entries, "%d workers", workers)
				require.Equal(t, want.tokens, got.tokens, "%d workers", workers)
			}
		})
	}
}

// TestDirSourceCrashAtEveryEvent: crash after every event and between
// every two rows, resume from the token on a new DirSource: the
// deliveries are the uninterrupted run's, exactly once.
func TestDirSourceCrashAtEveryEvent(t *testing.T) {
	payload := wireScenarios(t)[4]
	all := append(dirScenarios(t), scenario{name: payload.name, bl: payload.bl})
	for _, sc := range all {
		t.Run(sc.name, func(t *testing.T) {
			src := writeDir(t, sc.bl, false)
			n := deliveries(sc.bl)
			full := stream(t, src, sc.start(), n, nil)
			require.Equal(t, n, full.events)
			for k := 1; k < n; k++ {
				first := stream(t, src, sc.start(), k, nil)
				require.Equal(t, k, first.events)
				rest := stream(t, src, roundTrip(t, first.last), n-k, nil)
				require.ErrorIs(t, rest.err, context.Canceled, "k=%d", k)
				require.Equal(t, full.entries, append(append([]string(nil), first.entries...), rest.entries...), "crash after event %d", k)

				for r := 1; r < full.changes[k-1]; r++ {
					tok := full.tokens[k-1]
					crash := errors.New("crash mid-event")
					b := stream(t, src, sc.start(), -1, func(i int, ev binlogstream.Event) error {
						if i == k {
							tok = ev.ResumeAfterRows(r)
							return crash
						}
						return nil
					})
					require.ErrorIs(t, b.err, crash)
					c := stream(t, src, roundTrip(t, tok), n-k+1, nil)
					head := full.entries[:len(b.entries)+r]
					require.Equal(t, full.entries, append(append([]string(nil), head...), c.entries...), "crash after row %d of event %d", r, k)
				}
			}
		})
	}
}

// TestDirSourceGTIDCrashAtEveryEvent: GTID mode over files, both flavors
// and MySQL's compressed transactions: the same deliveries as the server
// dump, and a crash after every event resumes exactly.
func TestDirSourceGTIDCrashAtEveryEvent(t *testing.T) {
	compressed, err := th.CompressTransactions(gtidWorkload(th.MySQL, 2))
	require.NoError(t, err)
	for _, c := range []struct {
		name string
		f    th.Flavor
		bl   *th.Binlog
	}{
		{"mysql", th.MySQL, gtidWorkload(th.MySQL, 2)},
		{"mariadb", th.MariaDB, gtidWorkload(th.MariaDB, 2)},
		{"mysql-compressed", th.MySQL, compressed},
	} {
		t.Run(c.name, func(t *testing.T) {
			want := streamGTID(t, th.NewFakeSource(c.bl), gtidStart(t, c.f), -1, nil)
			src := writeDir(t, c.bl, true)
			full := streamGTID(t, src, gtidStart(t, c.f), -1, nil)
			require.Equal(t, want.entries, full.entries)
			require.Equal(t, want.tokens, full.tokens)
			for k := 1; k < full.events; k++ {
				first := streamGTID(t, src, gtidStart(t, c.f), k, nil)
				rest := streamGTID(t, src, roundTrip(t, first.last), -1, nil)
				require.Equal(t, full.entries, append(first.entries, rest.entries...), "crash after event %d", k)
			}
		})
	}
}

// TestDirSourceGTIDStartsAtTheRightFile: a GTID dump opens the newest file
// whose starting state the set contains; a set older than every file is
// refused with ErrNotInDir.
func TestDirSourceGTIDStartsAtTheRightFile(t *testing.T) {
	bl := th.NewBuilder(th.MariaDB, th.FirstGTID(10)).
		Txn(func(t *th.Txn) { t.Insert(users, userRows(1, 1)...) }).
		Rotate().
		Txn(func(t *th.Txn) { t.Insert(users, userRows(2, 1)...) }).Build()
	src := writeDir(t, bl, false)
	// Purged from the directory: the dump must not need it.
	require.NoError(t, os.Remove(filepath.Join(src.Dir(), bl.Files[0].Name)))
	start, err := binlogstream.StartAtGTID("mariadb", "0-1-10")
	require.NoError(t, err)
	r := streamGTID(t, src, start, -1, nil)
	require.ErrorIs(t, r.err, context.Canceled) // caught up
	require.Len(t, r.entries, 5, "GTID, Annotate_rows, Table_map, Write_rows, Xid of 0-1-11")
	assert.Contains(t, r.entries[0], "gtid=0-1-11")

	// A file just created, its Gtid_list not written yet, says nothing
	// about its state: the dump starts at an older file.
	for _, f := range []th.Flavor{th.MySQL, th.MariaDB} {
		bl := gtidWorkload(f, 2)
		dir := writeDir(t, bl, false)
		last := bl.Files[len(bl.Files)-1]
		fdeEnd := 4 + binary.LittleEndian.Uint32(last.Data[4+9:])
		require.NoError(t, os.WriteFile(filepath.Join(dir.Dir(), last.Name), last.Data[:fdeEnd], 0o644))
		want := streamGTID(t, th.NewFakeSource(bl), gtidStart(t, f), -1, nil)
		k := 0 // the events of the transactions before the last file
		for _, e := range bl.Events {
			if e.Group != 0 && e.File != last.Name {
				k++
			}
		}
		r := streamGTID(t, dir, gtidStart(t, f), k, nil)
		require.ErrorIs(t, r.err, context.Canceled)
		require.Equal(t, k, r.events)
		require.Equal(t, want.entries[:len(r.entries)], r.entries, "%s: from the first transaction", f)

		// A newer file with no complete Format_description yet is not a
		// start either.
		require.NoError(t, os.WriteFile(filepath.Join(dir.Dir(), last.Name), last.Data[:10], 0o644))
		r = streamGTID(t, dir, gtidStart(t, f), k, nil)
		require.ErrorIs(t, r.err, context.Canceled)
		require.Equal(t, k, r.events)
		require.Equal(t, want.entries[:len(r.entries)], r.entries, "%s: from the first transaction", f)
	}

	old, err := binlogstream.StartAtGTID("mariadb", "0-1-5")
	require.NoError(t, err)
	refused := stream(t, src, old, -1, nil)
	require.ErrorIs(t, refused.err, binlogstream.ErrNotInDir)
	var fe *binlogstream.FileError
	require.ErrorAs(t, refused.err, &fe)
	assert.False(t, binlogstream.IsRetryable(refused.err))
}

// truncations cuts a binlog's last file at every byte of its last events.
func TestDirSourceTruncatedTailIsNotYetThere(t *testing.T) {
	for _, f := range []th.Flavor{th.MySQL, th.MariaDB} {
		t.Run(string(f), func(t *testing.T) {
			bl := th.NewBuilder(f, th.MaxRowsPerEvent(2)).
				Txn(func(t *th.Txn) { t.Insert(users, userRows(1, 5)...) }).
				Rotate().
				Txn(func(t *th.Txn) { t.Insert(users, userRows(6, 3)...) }).Build()
			n := deliveries(bl)
			full := stream(t, th.NewFakeSource(bl), binlogstream.StartAt(binlogstream.Position{File: bl.Files[0].Name, Offset: 4}), n, nil)
			last := bl.Files[len(bl.Files)-1]
			for cut := len(last.Data) - 1; cut >= 4; cut -= 7 {
				dir := t.TempDir()
				require.NoError(t, bl.WriteDir(dir))
				path := filepath.Join(dir, last.Name)
				require.NoError(t, os.WriteFile(path, last.Data[:cut], 0o644))
				src := newDirSource(t, dir)

				// Stop at the end: everything complete, nothing more.
				st, err := src.Probe(context.Background())
				require.NoError(t, err)
				done := 0
				for i, e := range bl.Events {
					if e.File < last.Name || (e.File == last.Name && int(e.End) <= cut) {
						done = i + 1
					}
				}
				s, err := binlogstream.NewBinlogStreamer(binlogstream.Config{Source: src, Start: binlogstream.StartAt(binlogstream.Position{File: bl.Files[0].Name, Offset: 4})})
				require.NoError(t, err)
				var got []string
				var resume binlogstream.ResumePosition
				s.AddListener(func(_ context.Context, ev binlogstream.Event) error {
					got = append(got, entries(ev)...)
					resume = ev.Resume
					return nil
				})
				s.StopAt(st.Binlog)
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				require.NoError(t, s.Run(ctx), "cut at %d", cut)
				cancel()
				require.NoError(t, s.Close())
				require.Equal(t, full.entries[:len(got)], got, "cut at %d", cut)
				require.Equal(t, full.first[done], len(got), "cut at %d: every complete event, nothing more", cut)

				// The writer goes on: a following stream resumed from
				// there delivers the rest once it is written.
				go func() {
					time.Sleep(10 * time.Millisecond)
					// Appended, as a server writes: rewriting the file
					// would show a reader an empty file for a moment.
					f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
					if err == nil {
						_, _ = f.Write(last.Data[cut:])
						_ = f.Close()
					}
				}()
				rest := stream(t, src, roundTrip(t, resume), n-done, nil)
				require.ErrorIs(t, rest.err, context.Canceled)
				require.Equal(t, full.entries, append(got, rest.entries...), "cut at %d", cut)
			}
		})
	}
}

// TestDirSourceFollowsRotation: a stream caught up at the end of the last
// file goes on into a file created later.
func TestDirSourceFollowsRotation(t *testing.T) {
	bl := th.NewBuilder(th.MariaDB).
		Txn(func(t *th.Txn) { t.Insert(users, userRows(1, 2)...) }).
		Rotate().
		Txn(func(t *th.Txn) { t.Insert(users, userRows(3, 2)...) }).Build()
	n := deliveries(bl)
	full := stream(t, th.NewFakeSource(bl), binlogstream.StartAt(binlogstream.Position{File: bl.Files[0].Name, Offset: 4}), n, nil)
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, bl.Files[0].Name), bl.Files[0].Data, 0o644))
	src := newDirSource(t, dir)
	go func() {
		time.Sleep(20 * time.Millisecond)
		_ = os.WriteFile(filepath.Join(dir, bl.Files[1].Name), bl.Files[1].Data[:30], 0o644) // FDE not complete yet
		time.Sleep(20 * time.Millisecond)
		_ = os.WriteFile(filepath.Join(dir, bl.Files[1].Name), bl.Files[1].Data, 0o644)
	}()
	got := stream(t, src, binlogstream.StartAt(binlogstream.Position{File: bl.Files[0].Name, Offset: 4}), n, nil)
	require.ErrorIs(t, got.err, context.Canceled)
	require.Equal(t, full.entries, got.entries)
	require.Equal(t, full.tokens, got.tokens)
}

// TestDirSourceCorruptEvent: a flipped byte (bad checksum), an impossible
// length, a wrong LogPos and a start off an event boundary are typed
// errors naming the file and the event's offset, never retried.
func TestDirSourceCorruptEvent(t *testing.T) {
	bl := th.NewBuilder(th.MySQL, th.MaxRowsPerEvent(2)).
		Txn(func(t *th.Txn) { t.Insert(users, userRows(1, 5)...) }).Build()
	ev, ok := bl.Nth(replication.WRITE_ROWS_EVENTv2, 2)
	require.True(t, ok)
	start := binlogstream.StartAt(binlogstream.Position{File: bl.Files[0].Name, Offset: 4})
	for _, c := range []struct {
		name   string
		mutate func(b []byte)
		from   binlogstream.ResumePosition
		want   string
	}{
		{"bad checksum", func(b []byte) { b[ev.Start+25] ^= 0x40 }, start, "checksum mismatch"},
		{"impossible length", func(b []byte) { binary.LittleEndian.PutUint32(b[ev.Start+9:], 7) }, start, "impossible event length 7"},
		{"huge length", func(b []byte) { binary.LittleEndian.PutUint32(b[ev.Start+9:], 0xfffffff0) }, start, "impossible event length"},
		{"wrong log_pos", func(b []byte) { binary.LittleEndian.PutUint32(b[ev.Start+13:], ev.End+1) }, start, "not an event boundary"},
		{"off a boundary", func([]byte) {}, binlogstream.StartAt(binlogstream.Position{File: bl.Files[0].Name, Offset: uint64(ev.Start + 3)}), "not an event boundary"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			data := append([]byte(nil), bl.Files[0].Data...)
			c.mutate(data)
			path := filepath.Join(dir, bl.Files[0].Name)
			require.NoError(t, os.WriteFile(path, data, 0o644))
			r := stream(t, newDirSource(t, dir), c.from, -1, nil)
			require.ErrorIs(t, r.err, binlogstream.ErrCorruptEvent)
			var fe *binlogstream.FileError
			require.ErrorAs(t, r.err, &fe)
			assert.Equal(t, path, fe.Path)
			if c.name != "off a boundary" {
				assert.Equal(t, uint64(ev.Start), fe.Offset)
				assert.Less(t, r.events, ev.Index+1, "nothing from the corrupt event on")
			}
			assert.Contains(t, r.err.Error(), c.want)
			assert.Contains(t, r.err.Error(), path)
			assert.False(t, binlogstream.IsRetryable(r.err))
		})
	}
}

// TestDirSourceMissingFile: a position in a file the directory does not
// hold fails at once with ErrNotInDir naming what it holds.
func TestDirSourceMissingFile(t *testing.T) {
	bl := th.NewBuilder(th.MariaDB).Txn(func(t *th.Txn) { t.Insert(users, userRows(1, 1)...) }).Rotate().Build()
	src := writeDir(t, bl, false)
	r := stream(t, src, binlogstream.StartAt(binlogstream.Position{File: "mysql-bin.000009", Offset: 4}), -1, nil)
	require.ErrorIs(t, r.err, binlogstream.ErrNotInDir)
	assert.Contains(t, r.err.Error(), "mysql-bin.000001 to mysql-bin.000002")
	r = stream(t, src, binlogstream.StartAt(binlogstream.Position{File: "mysql-bin.000001", Offset: 1 << 20}), -1, nil)
	require.ErrorIs(t, r.err, binlogstream.ErrNotInDir)
	assert.Contains(t, r.err.Error(), "past the end of the file")

	_, err := binlogstream.NewDirSource(binlogstream.DirConfig{Dir: filepath.Join(t.TempDir(), "nope")})
	require.ErrorIs(t, err, binlogstream.ErrInvalidConfig)
	two := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(two, "a.index"), nil, 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(two, "b.index"), nil, 0o644))
	_, err = newDirSource(t, two).Files()
	require.ErrorIs(t, err, binlogstream.ErrInvalidConfig)
	assert.Contains(t, err.Error(), "set DirConfig.Base")
}

// TestDirSourceProbeExecuted: the executed set at the end of the files is
// the one the builder wrote.
func TestDirSourceProbeExecuted(t *testing.T) {
	for _, f := range []th.Flavor{th.MySQL, th.MariaDB} {
		bl := gtidWorkload(f, 2)
		st, err := writeDir(t, bl, false).Probe(context.Background())
		require.NoError(t, err)
		assert.Equal(t, bl.ExecutedBefore(len(bl.Events)).String(), st.Executed)
		lastFile := bl.Files[len(bl.Files)-1]
		assert.Equal(t, binlogstream.Position{File: lastFile.Name, Offset: uint64(len(lastFile.Data))}, st.Binlog)
		assert.Equal(t, string(f), st.Flavor)
	}
}

// TestDirSourceEveryByteFlipped flips each byte after the
// Format_description of every file, one at a time, in a binlog with
// checksums: streaming to the end of the files (StopAtCurrent) fails with
// ErrCorruptEvent naming that file, after delivering only what the clean
// files give before the flipped event; never a silent difference, never a
// stop short of the corrupt event.
func TestDirSourceEveryByteFlipped(t *testing.T) {
	if testing.Short() {
		t.Skip("thousands of streams")
	}
	for _, f := range []th.Flavor{th.MySQL, th.MariaDB} {
		t.Run(string(f), func(t *testing.T) {
			bl := th.NewBuilder(f, th.MaxRowsPerEvent(2)).
				Txn(func(t *th.Txn) { t.Insert(users, userRows(1, 3)...) }).
				Rotate().
				DDL("app", "ALTER TABLE users ADD COLUMN x INT").
				Txn(func(t *th.Txn) { t.Delete(users, userRows(1, 2)...) }).Build()
			start := binlogstream.StartAt(binlogstream.Position{File: bl.Files[0].Name, Offset: 4})
			run := func(src binlogstream.Source) run {
				s, err := binlogstream.NewBinlogStreamer(binlogstream.Config{Source: src, Start: start})
				require.NoError(t, err)
				var r run
				s.AddListener(func(_ context.Context, ev binlogstream.Event) error {
					r.entries = append(r.entries, entries(ev)...)
					r.events++
					return nil
				})
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				if _, err := s.StopAtCurrent(ctx); err != nil {
					r.err = err
				} else {
					r.err = s.Run(ctx)
				}
				require.NoError(t, s.Close())
				return r
			}
			clean := run(writeDir(t, bl, false))
			require.NoError(t, clean.err)
			dir := t.TempDir()
			require.NoError(t, bl.WriteDir(dir))
			src := newDirSource(t, dir)
			flips := 0
			for _, file := range bl.Files {
				path := filepath.Join(dir, file.Name)
				fdeEnd := 4 + int(binary.LittleEndian.Uint32(file.Data[4+9:]))
				for off := fdeEnd; off < len(file.Data); off++ {
					data := append([]byte(nil), file.Data...)
					data[off] ^= 0x5a
					require.NoError(t, os.WriteFile(path, data, 0o644))
					// To the end of the files: refused, at the latest when
					// the stream reaches the flipped event.
					stopped := run(src)
					require.ErrorIs(t, stopped.err, binlogstream.ErrCorruptEvent, "%s byte %d", file.Name, off)
					// Following: the same.
					r := stream(t, src, start, clean.events, nil)
					require.ErrorIs(t, r.err, binlogstream.ErrCorruptEvent, "%s byte %d", file.Name, off)
					assert.Contains(t, r.err.Error(), path)
					require.Equal(t, clean.entries[:len(r.entries)], append([]string{}, r.entries...), "%s byte %d", file.Name, off)
					for _, e := range bl.Events {
						if e.File == file.Name && int(e.Start) <= off && off < int(e.End) {
							assert.LessOrEqual(t, r.events, e.Index, "%s byte %d: nothing from the flipped event on", file.Name, off)
						}
					}
					flips++
				}
				require.NoError(t, os.WriteFile(path, file.Data, 0o644))
			}
			t.Logf("%d flipped bytes", flips)
		})
	}
}

// TestDirSourceFlavor: read from the files; a configured flavor the files
// contradict is refused.
func TestDirSourceFlavor(t *testing.T) {
	bl := th.Seed001(th.MariaDB)
	dir := writeDir(t, bl, false).Dir()
	f, err := newDirSource(t, dir).Flavor()
	require.NoError(t, err)
	assert.Equal(t, "mariadb", f)
	src, err := binlogstream.NewDirSource(binlogstream.DirConfig{Dir: dir, Flavor: "mysql"})
	require.NoError(t, err)
	_, err = src.Flavor()
	require.ErrorIs(t, err, binlogstream.ErrInvalidConfig)
	assert.Contains(t, err.Error(), "written by mariadb")
	empty, err := binlogstream.NewDirSource(binlogstream.DirConfig{Dir: t.TempDir(), Flavor: "mysql"})
	require.NoError(t, err)
	f, err = empty.Flavor()
	require.NoError(t, err, "nothing to contradict it yet")
	assert.Equal(t, "mysql", f)
}

// TestDirSourceLargeEvent: an event several times the read buffer (a
// 1.2 MB rows event), whole and while it is being written.
func TestDirSourceLargeEvent(t *testing.T) {
	rows := make([]th.Row, 4000)
	for i := range rows {
		rows[i] = th.Row{int64(i), int32(i % 3), strings.Repeat(string(rune('a'+i%26)), 290)}
	}
	bl := th.NewBuilder(th.MariaDB, th.MaxRowsPerEvent(len(rows))).
		Txn(func(t *th.Txn) { t.Insert(orders, rows...) }).
		Txn(func(t *th.Txn) { t.Delete(orders, rows[:2]...) }).Build()
	big, ok := bl.Nth(replication.WRITE_ROWS_EVENTv1, 1)
	require.True(t, ok)
	require.Greater(t, big.End-big.Start, uint32(1<<20))
	n := deliveries(bl)
	start := binlogstream.StartAt(binlogstream.Position{File: bl.Files[0].Name, Offset: 4})
	want := stream(t, th.NewFakeSource(bl), start, n, nil)

	dir := t.TempDir()
	path := filepath.Join(dir, bl.Files[0].Name)
	data := bl.Files[0].Data
	require.NoError(t, os.WriteFile(path, data[:big.Start+(big.End-big.Start)/2], 0o644))
	go func() {
		time.Sleep(30 * time.Millisecond)
		_ = os.WriteFile(path, data, 0o644)
	}()
	got := stream(t, newDirSource(t, dir), start, n, nil)
	require.ErrorIs(t, got.err, context.Canceled)
	require.Equal(t, want.entries, got.entries)
	require.Equal(t, want.tokens, got.tokens)
}

// TestDirSourceStopAtCurrentAfterRotateToAnotherName: when the last file
// ends with a Rotate event naming a file of another name (a binlog copied
// from a server whose log_basename changed, or renamed), StopAtCurrent
// still ends the run at the end of the files present at start, whether
// that name sorts before or after the file's, and wherever the run starts.
func TestDirSourceStopAtCurrentAfterRotateToAnotherName(t *testing.T) {
	for _, c := range []struct{ file, rotatesTo string }{
		{"mdev-bin", "master-bin"}, // the next name sorts before the file's
		{"a-bin", "z-bin"},         // and after
	} {
		for _, f := range []th.Flavor{th.MySQL, th.MariaDB} {
			t.Run(string(f)+"/"+c.file+"-to-"+c.rotatesTo, func(t *testing.T) {
				bl := th.NewBuilder(f, th.FileBase(c.rotatesTo)).
					Txn(func(t *th.Txn) { t.Insert(users, userRows(1, 3)...) }).
					Rotate().Build()
				name := c.file + ".000001"
				dir := t.TempDir()
				data := bl.Files[0].Data
				require.NoError(t, os.WriteFile(filepath.Join(dir, name), data, 0o644))
				end := binlogstream.Position{File: name, Offset: uint64(len(data))}
				next := binlogstream.Position{File: c.rotatesTo + ".000002", Offset: 4}
				st, err := newDirSource(t, dir).Probe(context.Background())
				require.NoError(t, err)
				assert.Equal(t, end, st.Binlog)
				assert.Equal(t, next, st.NextBinlog)
				// From the first event, from the end, and from the position
				// the Rotate names (a resume token taken after it).
				for _, from := range []binlogstream.Position{{File: name, Offset: 4}, end, next} {
					s, err := binlogstream.NewBinlogStreamer(binlogstream.Config{Source: newDirSource(t, dir), Start: binlogstream.StartAt(from)})
					require.NoError(t, err)
					rows := 0
					s.AddListener(func(_ context.Context, ev binlogstream.Event) error {
						rows += binlogstream.RowChanges(ev.BinlogEvent)
						return nil
					})
					ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
					target, err := s.StopAtCurrent(ctx)
					require.NoError(t, err)
					assert.Equal(t, end.String(), target, "the end of the last file present")
					require.NoError(t, s.Run(ctx), "from %s: Run must end at the target, not wait for %s.000002", from, c.rotatesTo)
					cancel()
					if from.File == name && from.Offset == 4 {
						assert.Equal(t, 3, rows)
						assert.Equal(t, next, s.ResumePosition().Streamed)
					} else {
						assert.Zero(t, rows)
					}
					require.NoError(t, s.Close())
				}
			})
		}
	}
}
