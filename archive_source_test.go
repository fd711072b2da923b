package binlogstream_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-mysql-org/go-mysql/replication"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/binlogstream/binlogstream"
	th "github.com/binlogstream/binlogstream/testhelpers"
)

// withBinlog tells the GTID helpers where src's binlog ends.
type withBinlog struct {
	binlogstream.Source
	bl *th.Binlog
}

func (w withBinlog) Binlog() *th.Binlog { return w.bl }

// fakeLister lists a fake source's files from the first one not purged.
type fakeLister struct {
	bl     *th.Binlog
	purged int
}

func (l fakeLister) BinaryLogs(context.Context) ([]string, error) {
	var names []string
	for _, f := range l.bl.Files[l.purged:] {
		names = append(names, f.Name)
	}
	return names, nil
}

func (l fakeLister) PurgedGTIDs(context.Context) (string, error) {
	return l.bl.Files[l.purged].StartGTIDs, nil
}

// archiveBinlog has five files, statements split over many rows events.
func archiveBinlog(f th.Flavor) *th.Binlog {
	b := th.NewBuilder(f, th.MaxRowsPerEvent(2))
	for i := 0; i < 5; i++ {
		b.Txn(func(t *th.Txn) { t.Insert(users, userRows(10*i, 5)...) })
		b.DDL("app", "ALTER TABLE users ADD COLUMN x INT")
		if i < 4 {
			b.Rotate()
		}
	}
	return b.Build()
}

// archiveOf writes the files from..to (inclusive) of bl to a new
// directory and returns a DirSource over it.
func archiveOf(t *testing.T, bl *th.Binlog, from, to int) *binlogstream.DirSource {
	t.Helper()
	dir := t.TempDir()
	for _, f := range bl.Files[from : to+1] {
		require.NoError(t, os.WriteFile(filepath.Join(dir, f.Name), f.Data, 0o644))
	}
	return newDirSource(t, dir)
}

// TestArchiveThenLive: the server purged its first files, an archive
// holds them (with or without overlap): a stream from the oldest position
// reads the archive, switches to the server at its first file, and equals
// an uninterrupted run on the unpurged server, crash after every event
// included.
func TestArchiveThenLive(t *testing.T) {
	for _, f := range []th.Flavor{th.MySQL, th.MariaDB} {
		bl := archiveBinlog(f)
		start := binlogstream.StartAt(binlogstream.Position{File: bl.Files[0].Name, Offset: 4})
		n := deliveries(bl)
		full := stream(t, th.NewFakeSource(bl), start, n, nil)
		require.Equal(t, n, full.events)
		for _, c := range []struct {
			name           string
			purged, archTo int
		}{{"no overlap", 3, 2}, {"overlap", 2, 3}, {"all archived", 1, 4}} {
			t.Run(string(f)+"/"+c.name, func(t *testing.T) {
				live := th.NewFakeSource(bl)
				live.Purge(c.purged)
				src, err := binlogstream.NewArchiveSource(binlogstream.ArchiveConfig{
					Archive: archiveOf(t, bl, 0, c.archTo), Live: live, Lister: fakeLister{bl, c.purged}})
				require.NoError(t, err)
				got := stream(t, src, start, n, nil)
				require.ErrorIs(t, got.err, context.Canceled)
				require.Equal(t, full.entries, got.entries)
				require.Equal(t, full.tokens, got.tokens)
				for k := 1; k < n; k++ {
					first := stream(t, src, start, k, nil)
					rest := stream(t, src, roundTrip(t, first.last), n-k, nil)
					require.Equal(t, full.entries, append(append([]string(nil), first.entries...), rest.entries...), "crash after event %d", k)
				}
				opens := live.Opens()
				require.NotEmpty(t, opens)
				for _, o := range opens {
					assert.GreaterOrEqual(t, o, bl.Files[c.purged].Name, "the server is only asked for files it has")
				}
			})
		}
	}
}

// TestArchiveThenLiveGTID: the same in GTID mode: a set older than the
// server's purged state is served by the archive, which hands over at a
// file end with every transaction delivered since.
func TestArchiveThenLiveGTID(t *testing.T) {
	for _, f := range []th.Flavor{th.MySQL, th.MariaDB} {
		bl := archiveBinlog(f)
		full := streamGTID(t, th.NewFakeSource(bl), gtidStart(t, f), -1, nil)
		require.Positive(t, full.events)
		for _, c := range []struct {
			name           string
			purged, archTo int
		}{{"no overlap", 3, 2}, {"overlap", 2, 3}} {
			t.Run(string(f)+"/"+c.name, func(t *testing.T) {
				live := th.NewFakeSource(bl)
				live.Purge(c.purged)
				arch := archiveOf(t, bl, 0, c.archTo)
				src, err := binlogstream.NewArchiveSource(binlogstream.ArchiveConfig{
					Archive: arch, Live: live, Lister: fakeLister{bl, c.purged}})
				require.NoError(t, err)
				w := withBinlog{src, bl}
				refused := streamGTID(t, live, gtidStart(t, f), -1, nil)
				require.Error(t, refused.err, "the server alone cannot serve it")
				got := streamGTID(t, w, gtidStart(t, f), -1, nil)
				require.ErrorIs(t, got.err, context.Canceled)
				require.Equal(t, full.entries, got.entries)
				require.Equal(t, full.tokens, got.tokens)
				for k := 1; k < full.events; k++ {
					first := streamGTID(t, w, gtidStart(t, f), k, nil)
					rest := streamGTID(t, w, roundTrip(t, first.last), -1, nil)
					require.Equal(t, full.entries, append(append([]string(nil), first.entries...), rest.entries...), "crash after event %d", k)
				}
				gtidOpens := 0
				for _, o := range live.Opens() {
					if strings.HasPrefix(o, "gtid") {
						gtidOpens++
					}
				}
				assert.Greater(t, gtidOpens, 1, "the server took over")
			})
		}
	}
}

// TestArchiveEmptyGTID: an empty archive leaves a GTID dump the server
// can serve to the server.
func TestArchiveEmptyGTID(t *testing.T) {
	bl := archiveBinlog(th.MariaDB)
	src, err := binlogstream.NewArchiveSource(binlogstream.ArchiveConfig{
		Archive: newDirSource(t, t.TempDir()), Live: th.NewFakeSource(bl), Lister: fakeLister{bl, 0}})
	require.NoError(t, err)
	want := streamGTID(t, th.NewFakeSource(bl), gtidStart(t, th.MariaDB), -1, nil)
	got := streamGTID(t, withBinlog{src, bl}, gtidStart(t, th.MariaDB), -1, nil)
	require.Equal(t, want.entries, got.entries)
}

// TestArchiveGap: a file neither the archive nor the server has stops the
// stream with ErrNotInDir instead of skipping it.
func TestArchiveGap(t *testing.T) {
	bl := archiveBinlog(th.MariaDB)
	live := th.NewFakeSource(bl)
	live.Purge(3)
	start := binlogstream.StartAt(binlogstream.Position{File: bl.Files[0].Name, Offset: 4})
	for _, archTo := range []int{1, 0} {
		src, err := binlogstream.NewArchiveSource(binlogstream.ArchiveConfig{
			Archive: archiveOf(t, bl, 0, archTo), Live: live, Lister: fakeLister{bl, 3}})
		require.NoError(t, err)
		r := stream(t, src, start, -1, nil)
		require.ErrorIs(t, r.err, binlogstream.ErrNotInDir)
		assert.Contains(t, r.err.Error(), bl.Files[archTo+1].Name)
		assert.Contains(t, r.err.Error(), "neither the server")
	}
	// An archived copy made while the server still wrote the file ends
	// without its Rotate: refused once the server has moved on.
	arch := archiveOf(t, bl, 0, 2)
	for _, e := range bl.Events {
		if e.File == bl.Files[2].Name && e.Type == replication.ROTATE_EVENT {
			require.NoError(t, os.WriteFile(filepath.Join(arch.Dir(), e.File), bl.Files[2].Data[:e.Start], 0o644))
		}
	}
	src, err := binlogstream.NewArchiveSource(binlogstream.ArchiveConfig{Archive: arch, Live: live, Lister: fakeLister{bl, 3}})
	require.NoError(t, err)
	r := stream(t, src, start, -1, nil)
	require.ErrorIs(t, r.err, binlogstream.ErrCorruptEvent)
	assert.Contains(t, r.err.Error(), "the copy is incomplete")

	// In a plain directory, a missing middle file is not skipped either.
	dir := archiveOf(t, bl, 0, 4).Dir()
	require.NoError(t, os.Remove(filepath.Join(dir, bl.Files[2].Name)))
	r = stream(t, newDirSource(t, dir), start, -1, nil)
	require.ErrorIs(t, r.err, binlogstream.ErrNotInDir)
	assert.Contains(t, r.err.Error(), bl.Files[2].Name)
}

// TestArchiveRowless: the schema's DDL scan opens an ArchiveSource's dumps
// with no table's rows decoded: the archive's rows events are read but
// not delivered, everything else is, and the stream moves on to the
// server as it does with rows (the fake server decodes its rows: it
// cannot leave them).
func TestArchiveRowless(t *testing.T) {
	for _, f := range []th.Flavor{th.MySQL, th.MariaDB} {
		bl := archiveBinlog(f)
		const purged, archTo = 3, 2
		inArchive := func(entry string) bool {
			for _, file := range bl.Files[:purged] {
				if strings.Contains(entry, "RowsEventV") && strings.Contains(entry, " end="+file.Name+":") {
					return true
				}
			}
			return false
		}
		newSource := func(t *testing.T) binlogstream.Source {
			live := th.NewFakeSource(bl)
			live.Purge(purged)
			src, err := binlogstream.NewArchiveSource(binlogstream.ArchiveConfig{
				Archive: archiveOf(t, bl, 0, archTo), Live: live, Lister: fakeLister{bl, purged}})
			require.NoError(t, err)
			return binlogstream.Rowless(src)
		}
		without := func(all []string) (out []string) {
			for _, e := range all {
				if !inArchive(e) {
					out = append(out, e)
				}
			}
			return out
		}
		t.Run(string(f)+"/file", func(t *testing.T) {
			start := binlogstream.StartAt(binlogstream.Position{File: bl.Files[0].Name, Offset: 4})
			full := stream(t, th.NewFakeSource(bl), start, deliveries(bl), nil)
			want := without(full.entries)
			require.Less(t, len(want), len(full.entries), "the archive has rows")
			n := 0
			for i := range full.events {
				end := len(full.entries)
				if i+1 < full.events {
					end = full.first[i+1]
				}
				if end == full.first[i] || len(without(full.entries[full.first[i]:end])) > 0 {
					n++
				}
			}
			got := stream(t, newSource(t), start, n, nil)
			require.ErrorIs(t, got.err, context.Canceled)
			require.Equal(t, want, got.entries)
			require.Equal(t, full.tokens[len(full.tokens)-1], got.tokens[len(got.tokens)-1])
		})
		t.Run(string(f)+"/gtid", func(t *testing.T) {
			// With their binlog positions: the archive's rows are those that
			// end in its files.
			var fullEntries, gotEntries []string
			streamGTID(t, th.NewFakeSource(bl), gtidStart(t, f), -1, func(_ int, ev binlogstream.Event) error {
				fullEntries = append(fullEntries, entries(ev)...)
				return nil
			})
			got := streamGTID(t, withBinlog{newSource(t), bl}, gtidStart(t, f), -1, func(_ int, ev binlogstream.Event) error {
				gotEntries = append(gotEntries, entries(ev)...)
				return nil
			})
			require.ErrorIs(t, got.err, context.Canceled)
			want := without(fullEntries)
			require.Less(t, len(want), len(fullEntries), "the archive has rows")
			require.Equal(t, want, gotEntries)
		})
	}
}
