package binlogstream_test

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/binlogstream/binlogstream"
)

// readersTables are tables of awkward keys for several readers on one
// table: signed integers across the whole range, unsigned ones above the
// signed range, a VARCHAR in a case- and accent-insensitive collation and
// a composite key.
var readersTables = map[string][]string{"app.si": {"id"}, "app.ui": {"id"}, "app.vk": {"k"}, "app.ck": {"a", "b"}}

// readersUnderWrites snapshots readersTables with cfg while a writer
// updates, deletes, inserts and moves keys of all four, with consumer
// crashes, and returns the fold and the most reads in flight seen on one
// table.
func readersUnderWrites(t *testing.T, readers int, crashes int, noFold bool) (*snapFold, map[string]int, error) {
	srv := snapServer(t)
	srv.Exec(t, "CREATE DATABASE app", "USE app",
		"CREATE TABLE si (id BIGINT PRIMARY KEY, v INT NOT NULL)",
		"CREATE TABLE ui (id BIGINT UNSIGNED PRIMARY KEY, v INT NOT NULL)",
		"CREATE TABLE vk (k VARCHAR(20) COLLATE utf8mb4_general_ci PRIMARY KEY, v INT NOT NULL)",
		"CREATE TABLE ck (a VARCHAR(10) NOT NULL, b BIGINT NOT NULL, v INT NOT NULL, PRIMARY KEY (a, b))",
		// -9e18 .. 9e18 in steps of 9e14, and both ends of BIGINT
		"INSERT INTO si SELECT (CAST(seq AS SIGNED) - 10000) * 900000000000000, 0 FROM seq_0_to_20000",
		"INSERT INTO si VALUES (-9223372036854775808, 0), (9223372036854775807, 0), (-1, 0), (1, 0)",
		// 0 .. 1.8e19, half of them above the signed range
		"INSERT INTO ui SELECT seq * 900000000000000, 0 FROM seq_0_to_20000",
		"INSERT INTO ui VALUES (18446744073709551615, 0), (9223372036854775808, 0)",
		"INSERT INTO vk SELECT CONCAT(ELT(1 + seq % 6, 'a', 'B', 'ä', 'Z', 'é ', '_'), seq), seq FROM seq_1_to_6000",
		"INSERT INTO ck SELECT ELT(1 + seq % 4, 'x', 'Y', 'z', 'ß'), CAST(seq AS SIGNED) - 3000, 0 FROM seq_1_to_6000")
	start := binlogstream.StartAt(masterPos(t, srv))
	src := itSource(t, srv)
	var names []string
	for tn := range readersTables {
		names = append(names, tn)
	}
	pats, err := binlogstream.ParseTablePatterns(strings.Join(names, ","))
	require.NoError(t, err)

	inflight := map[string]int{}
	var mu sync.Mutex
	defer binlogstream.SnapshotInflight(func(tn string, n int) {
		mu.Lock()
		inflight[tn] = max(inflight[tn], n)
		mu.Unlock()
	})()
	if noFold {
		binlogstream.SnapshotNoFold(true)
		defer binlogstream.SnapshotNoFold(false)
	}

	f := newSnapFold(readersTables)
	stopRun, wait := writeAtRandom(t, srv.Conn(t, "root"), rand.New(rand.NewPCG(9, 10)), 4000, func(rng *rand.Rand, i int) []string {
		s := (int64(rng.IntN(20001)) - 10000) * 900000000000000
		u := uint64(rng.IntN(20001)) * 900000000000000
		n := rng.IntN(6000) + 1
		p := []string{"a", "B", "ä", "Z", "é ", "_"}[rng.IntN(6)]
		return []string{
			fmt.Sprintf("UPDATE app.si SET v = v + 1 WHERE id = %d", s),
			fmt.Sprintf("UPDATE app.si SET id = -id - 1 WHERE id = %d", s),
			fmt.Sprintf("DELETE FROM app.si WHERE id = %d", s),
			fmt.Sprintf("INSERT INTO app.si VALUES (%d, 1)", s+int64(i)+1),
			fmt.Sprintf("UPDATE app.ui SET v = v + 1 WHERE id = %d", u),
			fmt.Sprintf("UPDATE app.ui SET id = 18446744073709551615 - id WHERE id = %d", u),
			fmt.Sprintf("DELETE FROM app.ui WHERE id = %d", u),
			fmt.Sprintf("INSERT INTO app.ui VALUES (%d, 1)", u+uint64(i)+1),
			fmt.Sprintf("UPDATE app.vk SET v = v + 1 WHERE k = '%s%d'", p, n),
			fmt.Sprintf("UPDATE app.vk SET k = CONCAT('A', k) WHERE k = '%s%d'", p, n),
			fmt.Sprintf("DELETE FROM app.vk WHERE k = '%s%d'", p, n),
			fmt.Sprintf("INSERT INTO app.vk VALUES ('%sn%d', 1)", p, i),
			fmt.Sprintf("UPDATE app.ck SET b = b + 7000, v = v + 1 WHERE b = %d", n-3000),
			fmt.Sprintf("UPDATE app.ck SET a = 'X' WHERE b BETWEEN %d AND %d", n-3000, n-2970),
			fmt.Sprintf("INSERT INTO app.ck VALUES ('a', %d, 1)", -100000-i),
		}
	})
	cfg := &binlogstream.SnapshotConfig{Tables: pats, ChunkRows: 97, Readers: readers}
	crashed := resumeThroughCrashes(t, src, start, cfg, f, stopRun, rand.New(rand.NewPCG(11, 12)), crashes, 3000)
	wait()
	if f.err != nil {
		return f, inflight, f.err
	}
	for tn, k := range readersTables {
		want := tableRows(t, srv, tn, k)
		if !maps.Equal(want, f.rows[tn]) {
			return f, inflight, fmt.Errorf("%s: the fold (%d rows) differs from the table (%d rows)", tn, len(f.rows[tn]), len(want))
		}
	}
	t.Logf("readers %d: %d reads, %d row changes, %d crashes, most reads in flight per table %v", readers, f.reads, f.changes, crashed, inflight)
	return f, inflight, nil
}

// TestSnapshotReadersOneTable: two readers read chunks of one table at
// once, over awkward keys, under writes and crashes, and fold to the
// table as one reader does.
func TestSnapshotReadersOneTable(t *testing.T) {
	one, inflight1, err := readersUnderWrites(t, 1, 4, false)
	require.NoError(t, err)
	if os.Getenv(binlogstream.SnapshotReadersEnv) == "" {
		// One reader sends the reads of a key of integers ahead, each
		// chained after the one before; the others one at a time.
		for tn, want := range map[string]int{"app.si": binlogstream.SnapshotAheadReads, "app.ui": binlogstream.SnapshotAheadReads, "app.vk": 1, "app.ck": 1} {
			require.Equal(t, want, inflight1[tn], tn)
		}
	}
	two, inflight2, err := readersUnderWrites(t, 2, 4, false)
	require.NoError(t, err)
	for tn := range readersTables {
		require.Equal(t, 2, inflight2[tn], "%s: two reads of one table in flight at once", tn)
	}
	// The same writes from the same seed: the same tables at the end.
	require.Equal(t, one.rows, two.rows)
}

// TestSnapshotReadersNegativeControl: the same with two readers and the
// chunks taken as read at the stream's point (no fold) ends different
// from the table.
func TestSnapshotReadersNegativeControl(t *testing.T) {
	// A run ends different only where a write lands between a chunk's
	// read and the stream's point; up to five runs for one to do so.
	for i := 1; ; i++ {
		_, _, err := readersUnderWrites(t, 2, 0, true)
		if err != nil {
			t.Logf("run %d: %v", i, err)
			return
		}
		require.Less(t, i, 5, "negative control: chunks taken at the stream's point never ended different")
	}
}

// TestSnapshotChainBroken: chunk reads sent ahead whose bound the server
// lost are refused (chunkread.ErrChainBroken) and their tables read again
// from the boundary: under writes and crashes the fold is still the
// tables. The negative control takes those reads as they come: each finds
// no row after the lost bound, ends its table early, and the fold misses
// the rows after it.
func TestSnapshotChainBroken(t *testing.T) {
	var hits atomic.Int64
	undo := binlogstream.SnapshotChainFault(7, false, func() { hits.Add(1) })
	_, _, err := readersUnderWrites(t, 1, 2, false)
	undo()
	require.NoError(t, err)
	require.Positive(t, hits.Load(), "no chained read lost its bound")
	t.Logf("%d chained reads lost their bound and were refused", hits.Load())

	hits.Store(0)
	defer binlogstream.SnapshotChainFault(7, true, func() { hits.Add(1) })()
	_, _, err = readersUnderWrites(t, 1, 2, false)
	require.Positive(t, hits.Load())
	require.Error(t, err, "the negative control: reads from a lost bound taken as they come")
	t.Logf("negative control: %v", err)
}
