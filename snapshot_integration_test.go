package binlogstream_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/client"
	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"
	"github.com/stretchr/testify/require"

	"github.com/binlogstream/binlogstream"
	"github.com/binlogstream/binlogstream/testhelpers/mariadb"
)

// Snapshots while streaming, on real MariaDB: every output is folded into
// a map by key (a read or an insert puts the row, an update's before
// image must equal the folded row, a delete's row must be present) that
// must end equal to the table.

func snapServer(t *testing.T) *mariadb.Server {
	t.Helper()
	return mariadb.Start(t, mariadb.Options{BinlogRowEventMaxSize: 1024,
		ExtraArgs: append([]string{"--binlog-row-metadata=FULL"}, snapServerArgs...)})
}

// snapFold folds a stream's output by key and checks the rules.
type snapFold struct {
	keyCols map[string][]string // table -> key columns
	rows    map[string]map[string]string
	reads   int
	changes int
	err     error
	hist    map[string][]string
	// inTxn: the events delivered so far leave a source transaction
	// open; readsInTxn counts the reads delivered inside one.
	inTxn      bool
	readsInTxn int
}

func newSnapFold(keys map[string][]string) *snapFold {
	f := &snapFold{keyCols: keys, rows: map[string]map[string]string{}}
	for tn := range keys {
		f.rows[tn] = map[string]string{}
	}
	return f
}

func (f *snapFold) fail(format string, args ...any) {
	if f.err == nil {
		f.err = fmt.Errorf(format, args...)
	}
}

func (f *snapFold) note(k, what string) {
	if f.hist == nil {
		f.hist = map[string][]string{}
	}
	f.hist[k] = append(f.hist[k], what)
}

// rowText renders a row as tableRows does: a long unique key's hidden
// hash column (which a read has Absent and SELECT * leaves out) is not in it.
func rowText(tbl *binlogstream.Table, vals []any) string {
	parts := make([]string, 0, len(vals))
	for i, v := range vals {
		if i < len(tbl.Columns) && strings.HasPrefix(tbl.Columns[i].Name, "DB_ROW_HASH_") {
			continue
		}
		parts = append(parts, "")
		i := len(parts) - 1
		switch x := v.(type) {
		case []byte:
			parts[i] = string(x)
		default:
			parts[i] = fmt.Sprint(x)
		}
	}
	return strings.Join(parts, "|")
}

func (f *snapFold) key(tn string, tbl *binlogstream.Table, vals []any) string {
	var k []string
	for _, c := range f.keyCols[tn] {
		i := tbl.Column(c)
		if i < 0 {
			f.fail("%s: no column %s in the event's table", tn, c)
			return ""
		}
		k = append(k, fmt.Sprint(vals[i]))
	}
	return strings.Join(k, "|")
}

// apply folds one event; it returns the key of a read row ("" otherwise).
func (f *snapFold) apply(ev binlogstream.Event) string {
	switch e := ev.Event.(type) {
	case *replication.MariadbGTIDEvent:
		f.inTxn = e.Flags&replication.BINLOG_MARIADB_FL_STANDALONE == 0
	case *replication.QueryEvent:
		switch strings.ToUpper(strings.TrimSpace(string(e.Query))) {
		case "BEGIN":
			f.inTxn = true
		case "COMMIT":
			f.inTxn = false
		}
	case *replication.XIDEvent:
		f.inTxn = false
	case *binlogstream.SnapshotRead:
		if f.inTxn {
			f.readsInTxn++
		}
	}
	if ev.Table == nil {
		return ""
	}
	tn := ev.Table.Schema + "." + ev.Table.Name
	m := f.rows[tn]
	if m == nil {
		return ""
	}
	switch e := ev.Event.(type) {
	case *binlogstream.SnapshotRead:
		vals := ev.RowValues(0)
		k := f.key(tn, ev.Table, vals)
		if _, ok := m[k]; ok {
			f.fail("read of %s %s: already present", tn, k)
		}
		m[k] = rowText(ev.Table, vals)
		f.note(k, fmt.Sprintf("read at %v", ev.Start))
		f.reads++
		return k
	case *replication.RowsEvent:
		kind := binlogstream.RowKind(ev.Header.EventType)
		step := 1
		if kind == "update" {
			step = 2
		}
		for i := 0; i+step <= len(e.Rows); i += step {
			f.changes++
			vals := ev.RowValues(i)
			k := f.key(tn, ev.Table, vals)
			switch kind {
			case "insert":
				f.note(k, fmt.Sprintf("insert %v-%v %v", ev.Start, ev.End, ev.Header.EventType))
				if old, ok := m[k]; ok {
					f.fail("insert of %s %s: present as %s: %v", tn, k, old, f.hist[k])
				}
				m[k] = rowText(ev.Table, vals)
			case "delete":
				f.note(k, fmt.Sprintf("delete %v-%v %v", ev.Start, ev.End, ev.Header.EventType))
				if old, ok := m[k]; !ok || old != rowText(ev.Table, vals) {
					f.fail("delete of %s %s=%s: folded %q present=%v: %v", tn, k, rowText(ev.Table, vals), old, ok, f.hist[k])
				}
				delete(m, k)
			case "update":
				if old, ok := m[k]; !ok || old != rowText(ev.Table, vals) {
					f.fail("update of %s %s, before image %s: folded %q present=%v: %v", tn, k, rowText(ev.Table, vals), old, ok, f.hist[k])
				}
				delete(m, k)
				after := ev.RowValues(i + 1)
				f.note(f.key(tn, ev.Table, after), fmt.Sprintf("update-to %v-%v from %s", ev.Start, ev.End, k))
				m[f.key(tn, ev.Table, after)] = rowText(ev.Table, after)
			}
		}
	}
	return ""
}

// tableRows reads a table as the fold renders it.
func tableRows(t *testing.T, s *mariadb.Server, tn string, keys []string) map[string]string {
	t.Helper()
	cols := s.Query(t, "SELECT COLUMN_NAME FROM information_schema.COLUMNS WHERE CONCAT(TABLE_SCHEMA,'.',TABLE_NAME) = '"+tn+"' ORDER BY ORDINAL_POSITION")
	idx := map[string]int{}
	for i, c := range cols {
		idx[c[0]] = i
	}
	out := map[string]string{}
	for _, r := range s.Query(t, "SELECT * FROM "+tn) {
		var k []string
		for _, c := range keys {
			k = append(k, r[idx[c]])
		}
		out[strings.Join(k, "|")] = strings.Join(r, "|")
	}
	return out
}

// snapRun is one streamer run of a snapshot test.
type snapRun struct {
	token binlogstream.ResumePosition
	err   error
	stats binlogstream.SnapshotStats
}

// runSnapshot streams from start with cfg.Snapshot until stop says so
// (then StopAtCurrent: everything up to the server's current position,
// the snapshot complete) or the listener's crash hook fails the run.
// Every acknowledged event's Resume is the persisted token.
func runSnapshot(t *testing.T, src binlogstream.Source, start binlogstream.ResumePosition, snap *binlogstream.SnapshotConfig,
	f *snapFold, crash func(ev binlogstream.Event) bool, stop <-chan struct{}, onRead func(k string)) snapRun {
	t.Helper()
	s, err := binlogstream.NewBinlogStreamer(binlogstream.Config{Source: src, Start: start, Snapshot: snap})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	run := snapRun{token: start}
	errCrash := errors.New("crash")
	s.AddListener(func(_ context.Context, ev binlogstream.Event) error {
		if crash != nil && crash(ev) {
			return errCrash
		}
		if k := f.apply(ev); k != "" && onRead != nil {
			onRead(k)
		}
		run.token = ev.Resume
		return nil
	})
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	if testing.Verbose() {
		tick := time.NewTicker(2 * time.Second)
		defer tick.Stop()
		go func() {
			for range tick.C {
				t.Logf("snapshot %+v, stream %+v", s.SnapshotStats(), s.Stats())
			}
		}()
	}
	select {
	case run.err = <-done:
	case <-stop:
		if _, err := s.StopAtCurrent(ctx); err != nil {
			run.err = err
			break
		}
		run.err = <-done
	}
	run.stats = s.SnapshotStats()
	_ = s.Close()
	if errors.Is(run.err, errCrash) {
		run.err = errCrash
	}
	return run
}

// writeAtRandom runs n statements on c in a goroutine, each picked at
// random (rng) from those stmts gives for step i; a duplicate key is
// expected. done is closed after the last one (the stream then runs to
// the server's position); wait waits for the goroutine.
func writeAtRandom(t *testing.T, c *client.Conn, rng *rand.Rand, n int, stmts func(rng *rand.Rand, i int) []string) (done <-chan struct{}, wait func()) {
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		defer close(stop)
		for i := range n {
			qs := stmts(rng, i)
			if _, err := c.Execute(qs[rng.IntN(len(qs))]); err != nil && !strings.Contains(err.Error(), "Duplicate") {
				t.Error(err)
				return
			}
		}
	})
	return stop, wg.Wait
}

// resumeThroughCrashes snapshots from start into f until a run ends with
// no error, each run resuming from the last token the one before
// acknowledged: while fewer than maxCrashes runs crashed, a run crashes
// at an event with a chance of one in oneIn (rng). It stops at the
// fold's first error (f.err) and returns the crashes.
func resumeThroughCrashes(t *testing.T, src binlogstream.Source, start binlogstream.ResumePosition, cfg *binlogstream.SnapshotConfig,
	f *snapFold, stop <-chan struct{}, rng *rand.Rand, maxCrashes, oneIn int) int {
	t.Helper()
	token, crashes := start, 0
	for {
		crash := func(binlogstream.Event) bool { return crashes < maxCrashes && rng.IntN(oneIn) == 0 }
		run := runSnapshot(t, src, token, cfg, f, crash, stop, nil)
		if f.err != nil {
			return crashes
		}
		token = run.token
		if run.err == nil {
			return crashes
		}
		require.Equal(t, "crash", run.err.Error())
		crashes++
	}
}

// writer runs random writes against app.big aimed around the key the
// snapshot reads (cursor), until stop is closed.
func writer(c *client.Conn, seed uint64, cursor *atomic.Int64, stop <-chan struct{}, n *atomic.Int64, errs chan<- error) {
	rng := rand.New(rand.NewPCG(seed, 1))
	next := int64(1_000_000_000) + int64(seed)*10_000_000
	low := -int64(seed+1) * 10_000_000
	for {
		select {
		case <-stop:
			return
		default:
		}
		at := cursor.Load() + int64(rng.IntN(6000)) - 3000
		var q string
		switch rng.IntN(9) {
		case 0, 1:
			q = fmt.Sprintf("UPDATE app.big SET v = v + 1 WHERE id = %d", at)
		case 2:
			q = fmt.Sprintf("DELETE FROM app.big WHERE id = %d", at)
		case 3:
			next++
			q = fmt.Sprintf("INSERT INTO app.big VALUES (%d, 1, 'above')", next)
		case 4:
			low--
			q = fmt.Sprintf("INSERT INTO app.big VALUES (%d, 1, 'below')", low)
		case 5: // a key moved up, across the boundary
			next++
			q = fmt.Sprintf("UPDATE app.big SET id = %d WHERE id = %d", next, at)
		case 6: // a key moved down, across the boundary
			low--
			q = fmt.Sprintf("UPDATE app.big SET id = %d, pad = 'moved' WHERE id = %d", low, at)
		case 7: // many rows, split over rows events
			q = fmt.Sprintf("UPDATE app.big SET v = v + 1, pad = 'multi-row update' WHERE id BETWEEN %d AND %d", at, at+60)
		case 8:
			q = fmt.Sprintf("DELETE FROM app.big WHERE id BETWEEN %d AND %d", at, at+15)
		}
		if _, err := c.Execute(q); err != nil && !strings.Contains(err.Error(), "Duplicate") && !strings.Contains(err.Error(), "Deadlock") {
			errs <- err
			return
		}
		n.Add(1)
	}
}

// trxSampler samples information_schema.INNODB_TRX every 110 ms (the
// server refreshes the table only when it was not read for 100 ms) until
// stop is closed, and records the largest age the server reports for a
// transaction of user's connections. trx_started has whole seconds, so
// an age is up to a second more than the transaction's.
func trxSampler(c *client.Conn, user string, stop <-chan struct{}, reported *atomic.Int64, samples, hits *int, wg *sync.WaitGroup) {
	defer wg.Done()
	for {
		select {
		case <-stop:
			return
		case <-time.After(110 * time.Millisecond):
		}
		*samples++
		r, err := c.Execute("SELECT TIMESTAMPDIFF(MICROSECOND, t.trx_started, NOW(6)) FROM information_schema.INNODB_TRX t " +
			"JOIN information_schema.PROCESSLIST p ON p.ID = t.trx_mysql_thread_id WHERE p.USER = '" + user + "'")
		if err != nil {
			continue
		}
		*hits += r.RowNumber()
		for i := range r.RowNumber() {
			if v, err := r.GetInt(i, 0); err == nil && v*1000 > reported.Load() {
				reported.Store(v * 1000)
			}
		}
	}
}

// snapshotUnderWrites snapshots app.big (rows rows) while three writers
// aim at the keys around the one being read, with crashes of the
// consumer at random points, and returns the first fold error, if any.
func snapshotUnderWrites(t *testing.T, rows, crashes int) error {
	srv := snapServer(t)
	srv.Exec(t, "CREATE DATABASE app",
		"CREATE TABLE app.big (id BIGINT PRIMARY KEY, v INT NOT NULL, pad VARCHAR(40) NOT NULL)",
		"USE app", fmt.Sprintf("INSERT INTO app.big SELECT seq, 0, 'initial' FROM seq_1_to_%d", rows))
	start := binlogstream.StartAt(masterPos(t, srv))
	src := itSource(t, srv)
	pats, err := binlogstream.ParseTablePatterns("app.big")
	require.NoError(t, err)
	snap := &binlogstream.SnapshotConfig{Tables: pats, ChunkRows: 2000}
	f := newSnapFold(map[string][]string{"app.big": {"id"}})

	var cursor, writes, reported atomic.Int64
	stopWrites, stopSample := make(chan struct{}), make(chan struct{})
	errs := make(chan error, 4)
	var wwg, swg sync.WaitGroup
	for i := range 3 {
		c := srv.Conn(t, "root")
		wwg.Add(1)
		go func() { defer wwg.Done(); writer(c, uint64(i), &cursor, stopWrites, &writes, errs) }()
	}
	swg.Add(1)
	var samples, hits int
	go trxSampler(srv.Conn(t, "root"), srv.ReplUser(), stopSample, &reported, &samples, &hits, &swg)
	// The sampler stops before the test's cleanup closes its connection,
	// on every return.
	stopSampling := sync.OnceFunc(func() { close(stopSample); swg.Wait() })
	defer stopSampling()

	began := time.Now()
	// The writes stop once most of the table was read; then the stream
	// runs to the server's position.
	var read atomic.Int64
	stopRun := make(chan struct{})
	go func() {
		for read.Load() < int64(rows)*2/3 {
			time.Sleep(20 * time.Millisecond)
		}
		close(stopWrites)
		wwg.Wait()
		close(stopRun)
	}()
	// Crash the consumer at random points, chunks included, then resume
	// from the last token it acknowledged.
	rng := rand.New(rand.NewPCG(1, 2))
	crashed, token := 0, start
	var last snapRun
	for {
		var crash func(ev binlogstream.Event) bool
		if crashed < crashes {
			crash = func(binlogstream.Event) bool { return rng.IntN(rows/20) == 0 }
		}
		last = runSnapshot(t, src, token, snap, f, crash, stopRun, func(k string) {
			var id int64
			_, _ = fmt.Sscan(k, &id)
			cursor.Store(id)
			read.Add(1)
		})
		if f.err != nil {
			read.Store(int64(rows))
			wwg.Wait()
			return f.err
		}
		token = last.token
		if last.err == nil {
			break
		}
		require.Equal(t, "crash", last.err.Error())
		crashed++
	}
	elapsed := time.Since(began)
	stopSampling()
	select {
	case err := <-errs:
		t.Fatal(err)
	default:
	}
	want := tableRows(t, srv, "app.big", []string{"id"})
	if !maps.Equal(want, f.rows["app.big"]) {
		return fmt.Errorf("the fold (%d rows) differs from the table (%d rows)", len(f.rows["app.big"]), len(want))
	}
	if f.readsInTxn > 0 {
		return fmt.Errorf("%d of %d reads were delivered inside a source transaction", f.readsInTxn, f.reads)
	}
	t.Logf("%d rows at the start, %d at the end; %d writes; %d reads, %d row changes delivered; %d crashes; %v; "+
		"snapshot transactions: %d of %d INNODB_TRX samples saw one, oldest %v (trx_started has whole seconds), longest read %v; "+
		"last run: %d chunks, %d read again",
		rows, len(want), writes.Load(), f.reads, f.changes, crashed, elapsed.Round(time.Millisecond), hits, samples,
		time.Duration(reported.Load()).Round(time.Millisecond),
		last.stats.MaxReadAge.Round(time.Millisecond), last.stats.Chunks, last.stats.Rereads)
	return nil
}

func TestSnapshotUnderHeavyWrites(t *testing.T) {
	require.NoError(t, snapshotUnderWrites(t, 300_000, 12))
}

// TestSnapshotNegativeControl shows the heavy-writes fold catches chunks
// delivered without the held-back changes folded in.
func TestSnapshotNegativeControl(t *testing.T) {
	binlogstream.SnapshotNoFold(true)
	defer binlogstream.SnapshotNoFold(false)
	err := snapshotUnderWrites(t, 60_000, 0)
	require.Error(t, err)
	t.Log(err)
}

// TestSnapshotAwkwardTables snapshots, under writes, a VARCHAR key in a
// case-insensitive collation (keys that differ in case and accents), a
// composite key, a table with only a UNIQUE key, and a table empty at the
// start; a table without a usable key is refused by name.
func TestSnapshotAwkwardTables(t *testing.T) {
	srv := snapServer(t)
	srv.Exec(t, "CREATE DATABASE app", "USE app",
		"CREATE TABLE vk (k VARCHAR(20) COLLATE utf8mb4_general_ci PRIMARY KEY, v INT NOT NULL)",
		"CREATE TABLE ck (a VARCHAR(10) NOT NULL, b INT NOT NULL, v INT NOT NULL, PRIMARY KEY (a, b))",
		"CREATE TABLE uk (id INT NOT NULL, u VARCHAR(10) NOT NULL, v INT NOT NULL, UNIQUE KEY ku (u))",
		"CREATE TABLE empty (id INT PRIMARY KEY, v INT NOT NULL)",
		// a long unique key: its hidden hash column ends the row images
		"CREATE TABLE lu (id INT PRIMARY KEY, t TEXT, v INT NOT NULL, UNIQUE (t))",
		"CREATE TABLE nokey (x INT, y INT)",
		"CREATE TABLE nullkey (x INT, y INT, UNIQUE KEY (x))",
		"INSERT INTO vk SELECT CONCAT(ELT(1 + seq % 6, 'a', 'B', 'ä', 'Z', 'é ', '_'), seq), seq FROM seq_1_to_3000",
		"INSERT INTO ck SELECT ELT(1 + seq % 4, 'x', 'Y', 'z', 'ß'), seq, 0 FROM seq_1_to_3000",
		"INSERT INTO uk SELECT seq, CONCAT('u', seq), 0 FROM seq_1_to_3000",
		"INSERT INTO lu SELECT seq, CONCAT('t', seq), 0 FROM seq_1_to_3000")
	keys := map[string][]string{"app.vk": {"k"}, "app.ck": {"a", "b"}, "app.uk": {"u"}, "app.empty": {"id"}, "app.lu": {"id"}}
	start := binlogstream.StartAt(masterPos(t, srv))
	src := itSource(t, srv)

	pats, err := binlogstream.ParseTablePatterns("app.nokey")
	require.NoError(t, err)
	refused := runSnapshot(t, src, start, &binlogstream.SnapshotConfig{Tables: pats}, newSnapFold(nil), nil, nil, nil)
	require.Error(t, refused.err)
	require.Contains(t, refused.err.Error(), "`app`.`nokey`")
	pats, err = binlogstream.ParseTablePatterns("app.nullkey")
	require.NoError(t, err)
	refused = runSnapshot(t, src, start, &binlogstream.SnapshotConfig{Tables: pats}, newSnapFold(nil), nil, nil, nil)
	require.ErrorContains(t, refused.err, "`app`.`nullkey`")

	pats, err = binlogstream.ParseTablePatterns("app.vk,app.ck,app.uk,app.empty,app.lu")
	require.NoError(t, err)
	f := newSnapFold(keys)
	stopRun, wait := writeAtRandom(t, srv.Conn(t, "root"), rand.New(rand.NewPCG(3, 4)), 3000, func(rng *rand.Rand, i int) []string {
		n := rng.IntN(3000) + 1
		p := []string{"a", "B", "ä", "Z", "é ", "_"}[rng.IntN(6)]
		return []string{
			fmt.Sprintf("UPDATE app.vk SET v = v + 1 WHERE k = '%s%d'", p, n),
			fmt.Sprintf("UPDATE app.vk SET k = UPPER(k) WHERE k = '%s%d'", p, n),
			fmt.Sprintf("UPDATE app.vk SET k = CONCAT('A', k) WHERE k = '%s%d'", p, n),
			fmt.Sprintf("DELETE FROM app.vk WHERE k = '%s%d'", p, n),
			fmt.Sprintf("INSERT INTO app.vk VALUES ('%sn%d', 1)", p, i),
			fmt.Sprintf("UPDATE app.ck SET b = b + 5000, v = v + 1 WHERE b = %d", n),
			fmt.Sprintf("UPDATE app.ck SET a = 'X' WHERE b BETWEEN %d AND %d", n, n+30),
			fmt.Sprintf("INSERT INTO app.ck VALUES ('a', %d, 1)", 100000+i),
			fmt.Sprintf("UPDATE app.uk SET u = CONCAT('v', id), v = v + 1 WHERE id = %d", n),
			fmt.Sprintf("DELETE FROM app.uk WHERE id = %d", n),
			fmt.Sprintf("INSERT INTO app.empty VALUES (%d, 1)", i),
			fmt.Sprintf("UPDATE app.empty SET id = id + 100000 WHERE id = %d", rng.IntN(i+1)),
			fmt.Sprintf("UPDATE app.lu SET t = CONCAT(t, 'x'), v = v + 1 WHERE id = %d", n),
			fmt.Sprintf("UPDATE app.lu SET id = id + 100000 WHERE id = %d", n),
			fmt.Sprintf("DELETE FROM app.lu WHERE id = %d", n),
		}
	})
	cfg := &binlogstream.SnapshotConfig{Tables: pats, ChunkRows: 50}
	crashes := resumeThroughCrashes(t, src, start, cfg, f, stopRun, rand.New(rand.NewPCG(5, 6)), 10, 800)
	wait()
	require.NoError(t, f.err)
	for tn, k := range keys {
		want := tableRows(t, srv, tn, k)
		for key, row := range want {
			if f.rows[tn][key] != row {
				t.Errorf("%s %s: table %q, fold %q: %v", tn, key, row, f.rows[tn][key], f.hist[key])
			}
		}
		for key, row := range f.rows[tn] {
			if _, ok := want[key]; !ok {
				t.Errorf("%s %s: not in the table, fold %q: %v", tn, key, row, f.hist[key])
				num := strings.TrimLeft(key, "aABbZzé _äÄ")
				for k2, h := range f.hist {
					if strings.HasSuffix(k2, num) {
						t.Logf("  %s: %v (table %q)", k2, h, want[k2])
					}
				}
			}
		}
	}
	t.Logf("%d reads, %d row changes, %d crashes", f.reads, f.changes, crashes)
}

// TestSnapshotCrashesMatchUninterrupted crashes a snapshot's consumer at
// random events, inside chunks included, and resumes it from its last
// token each time: what it acknowledged, in order, is what one run
// without crashes delivers. The binlog is written before the runs, so
// both read the same rows.
func TestSnapshotCrashesMatchUninterrupted(t *testing.T) {
	srv := snapServer(t)
	srv.Exec(t, "CREATE DATABASE app", "USE app",
		"CREATE TABLE t (id INT PRIMARY KEY, v INT NOT NULL)",
		"CREATE TABLE other (id INT PRIMARY KEY, v INT NOT NULL)",
		"INSERT INTO t SELECT seq, 0 FROM seq_1_to_20000")
	start := binlogstream.StartAt(masterPos(t, srv))
	srv.Exec(t, "USE app",
		"UPDATE t SET v = v + 1 WHERE id % 7 = 0",
		"DELETE FROM t WHERE id % 11 = 0",
		"INSERT INTO t SELECT seq, 2 FROM seq_20001_to_21000",
		"UPDATE t SET id = id + 100000 WHERE id % 13 = 0",
		"INSERT INTO other SELECT seq, 0 FROM seq_1_to_500",
		"UPDATE other SET v = 1")
	src := itSource(t, srv)
	pats, err := binlogstream.ParseTablePatterns("app.t")
	require.NoError(t, err)
	cfg := &binlogstream.SnapshotConfig{Tables: pats, ChunkRows: 500}
	stopped := make(chan struct{})
	close(stopped)

	entries := func(out *[]string) func(ev binlogstream.Event) bool {
		return func(ev binlogstream.Event) bool {
			switch e := ev.Event.(type) {
			case *binlogstream.SnapshotRead:
				*out = append(*out, "read "+rowText(ev.Table, ev.RowValues(0)))
			case *replication.RowsEvent:
				for i := range e.Rows {
					*out = append(*out, binlogstream.RowKind(ev.Header.EventType)+" "+rowText(ev.Table, ev.RowValues(i)))
				}
			}
			return false
		}
	}
	var want []string
	run := runSnapshot(t, src, start, cfg, newSnapFold(nil), entries(&want), stopped, nil)
	require.NoError(t, run.err)

	var got []string
	rng := rand.New(rand.NewPCG(7, 8))
	token, crashes := start, 0
	for {
		var pending []string
		record := entries(&pending)
		crash := func(ev binlogstream.Event) bool {
			if crashes < 25 && rng.IntN(400) == 0 {
				return true
			}
			// Acknowledged: kept.
			record(ev)
			got = append(got, pending...)
			pending = pending[:0]
			return false
		}
		run := runSnapshot(t, src, token, cfg, newSnapFold(nil), crash, stopped, nil)
		token = run.token
		if run.err == nil {
			break
		}
		require.Equal(t, "crash", run.err.Error())
		crashes++
	}
	t.Logf("%d entries uninterrupted, %d with %d crashes", len(want), len(got), crashes)
	require.GreaterOrEqual(t, crashes, 5)
	require.Equal(t, len(want), len(got))
	require.Equal(t, want, got)
	t.Logf("%d entries, %d crashes", len(want), crashes)
}

// TestSnapshotReadsBetweenTransactions: chunks are delivered between
// source transactions, never inside one, so a consumer that commits at
// each transaction's end (a target transaction, an atomic batch) never
// holds a chunk's rows inside a source transaction, and a transaction
// replayed after a crash holds the same lines. Transactions of several
// statements and rows events run while a table is read; the negative
// control attaches chunks after any event and finds reads inside them.
func TestSnapshotReadsBetweenTransactions(t *testing.T) {
	run := func(t *testing.T) *snapFold {
		srv := snapServer(t)
		srv.Exec(t, "CREATE DATABASE app", "USE app",
			"CREATE TABLE t (id INT PRIMARY KEY, v INT NOT NULL, pad VARCHAR(40) NOT NULL)",
			"INSERT INTO t SELECT seq, 0, 'initial' FROM seq_1_to_30000")
		start := binlogstream.StartAt(masterPos(t, srv))
		pats, err := binlogstream.ParseTablePatterns("app.t")
		require.NoError(t, err)
		f := newSnapFold(map[string][]string{"app.t": {"id"}})
		stopWrites, stopRun := make(chan struct{}), make(chan struct{})
		var read atomic.Int64
		var wg sync.WaitGroup
		for w := range 3 { // three writers keep the stream busy, mostly inside transactions
			c := srv.Conn(t, "root")
			wg.Go(func() {
				rng := rand.New(rand.NewPCG(3, uint64(w)))
				for i := 0; ; i++ {
					select {
					case <-stopWrites:
						return
					default:
					}
					at := rng.IntN(30000)
					for _, q := range []string{"BEGIN",
						fmt.Sprintf("UPDATE app.t SET v = v + 1, pad = 'several rows events' WHERE id BETWEEN %d AND %d", at, at+40),
						fmt.Sprintf("INSERT INTO app.t VALUES (%d, 1, 'inserted')", 100000+w*1000000+i),
						fmt.Sprintf("DELETE FROM app.t WHERE id = %d", rng.IntN(30000)),
						"COMMIT"} {
						if _, err := c.Execute(q); err != nil {
							if strings.Contains(err.Error(), "Deadlock") || strings.Contains(err.Error(), "Lock wait") {
								_, _ = c.Execute("ROLLBACK")
								break
							}
							t.Errorf("%s: %v", q, err)
							return
						}
					}
				}
			})
		}
		go func() {
			for read.Load() < 20000 {
				time.Sleep(20 * time.Millisecond)
			}
			close(stopWrites)
			wg.Wait()
			close(stopRun)
		}()
		r := runSnapshot(t, itSource(t, srv), start, &binlogstream.SnapshotConfig{Tables: pats, ChunkRows: 300}, f, nil, stopRun,
			func(string) { read.Add(1) })
		require.NoError(t, r.err)
		require.NoError(t, f.err)
		require.Equal(t, tableRows(t, srv, "app.t", []string{"id"}), f.rows["app.t"])
		return f
	}
	f := run(t)
	require.Zero(t, f.readsInTxn, "reads delivered inside a source transaction")
	t.Logf("%d reads, %d row changes, none of the reads inside a source transaction", f.reads, f.changes)

	// The negative control: a chunk lands inside a transaction when its
	// read comes back after the stream passed its position, mid-way
	// through a transaction. Under it every chunk attaches at the first
	// event past its read's position, so the stream's lag behind the
	// server cannot hide it; up to ten runs for one to do so.
	undo := binlogstream.SnapshotAttachAnywhere()
	defer undo()
	for i := 1; ; i++ {
		nf := run(t)
		if nf.readsInTxn > 0 {
			t.Logf("negative control, run %d: %d of %d reads inside a source transaction", i, nf.readsInTxn, nf.reads)
			break
		}
		require.Less(t, i, 10, "negative control: chunks attached after any event never landed inside a transaction")
	}
}

// TestSnapshotIdleServer: a snapshot of a server no one writes to ends
// (StopAtCurrent returns) in file and GTID mode: with no event to
// deliver, the heartbeats give the stream its point in the binlog.
func TestSnapshotIdleServer(t *testing.T) {
	for _, gtid := range []bool{false, true} {
		t.Run(map[bool]string{false: "file", true: "gtid"}[gtid], func(t *testing.T) {
			srv := snapServer(t)
			srv.Exec(t, "CREATE DATABASE app", "USE app", "CREATE TABLE t (id INT PRIMARY KEY, v INT NOT NULL)",
				"INSERT INTO t SELECT seq, seq FROM seq_1_to_5000")
			start := binlogstream.StartAt(masterPos(t, srv))
			if gtid {
				var err error
				start, err = binlogstream.StartAtGTID(mysql.MariaDBFlavor, srv.GTIDBinlogPos(t))
				require.NoError(t, err)
			}
			pats, err := binlogstream.ParseTablePatterns("app.t")
			require.NoError(t, err)
			f := newSnapFold(map[string][]string{"app.t": {"id"}})
			stop := make(chan struct{})
			close(stop)
			began := time.Now()
			r := runSnapshot(t, itSource(t, srv), start, &binlogstream.SnapshotConfig{Tables: pats, ChunkRows: 1000}, f, nil, stop, nil)
			require.NoError(t, r.err)
			require.NoError(t, f.err)
			require.Equal(t, tableRows(t, srv, "app.t", []string{"id"}), f.rows["app.t"])
			t.Logf("%d reads in %v", f.reads, time.Since(began).Round(time.Millisecond))
		})
	}
}

// TestSnapshotIdleServerWithoutHeartbeats: a snapshot of an idle server
// ends without the help of a heartbeat (the period is an hour), in file
// and GTID mode: each chunk read that comes back while nothing is queued
// is attached at once, a GTID-mode dump that delivered nothing takes its
// point from the server's binlog end, and StopAtCurrent returns after
// the last chunk.
func TestSnapshotIdleServerWithoutHeartbeats(t *testing.T) {
	for _, gtid := range []bool{false, true} {
		t.Run(map[bool]string{false: "file", true: "gtid"}[gtid], func(t *testing.T) {
			srv := snapServer(t)
			srv.Exec(t, "CREATE DATABASE app", "USE app", "CREATE TABLE t (id INT PRIMARY KEY, v INT NOT NULL)",
				"INSERT INTO t SELECT seq, seq FROM seq_1_to_5000")
			src, err := binlogstream.NewSyncerSource(binlogstream.SyncerConfig{
				DSN:      binlogstream.DSN{User: srv.ReplUser(), Password: srv.ReplPassword(), Host: srv.Host(), Port: uint16(srv.Port())},
				ServerID: 1001, Flavor: mysql.MariaDBFlavor, HeartbeatPeriod: time.Hour, ReadTimeout: 2 * time.Hour,
			})
			require.NoError(t, err)
			start := binlogstream.StartAt(masterPos(t, srv))
			if gtid {
				start, err = binlogstream.StartAtGTID(mysql.MariaDBFlavor, srv.GTIDBinlogPos(t))
				require.NoError(t, err)
			}
			pats, err := binlogstream.ParseTablePatterns("app.t")
			require.NoError(t, err)
			s, err := binlogstream.NewBinlogStreamer(binlogstream.Config{Source: src, Start: start,
				Snapshot: &binlogstream.SnapshotConfig{Tables: pats, ChunkRows: 1000}})
			require.NoError(t, err)
			defer s.Close()
			f := newSnapFold(map[string][]string{"app.t": {"id"}})
			// SnapshotComplete: false before Run and through the reads
			// (the last one's listener may see it true), true after.
			require.False(t, s.SnapshotComplete(), "before Run")
			var completeAt []int
			reads := 0
			s.AddListener(func(_ context.Context, ev binlogstream.Event) error {
				if _, ok := ev.Event.(*binlogstream.SnapshotRead); ok {
					reads++
					if s.SnapshotComplete() {
						completeAt = append(completeAt, reads)
					}
				}
				f.apply(ev)
				return nil
			})
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			_, err = s.StopAtCurrent(ctx)
			require.NoError(t, err)
			require.NoError(t, s.Run(ctx), "Run returns at the stop target, with no heartbeat in 30 s")
			require.NoError(t, f.err)
			require.Equal(t, tableRows(t, srv, "app.t", []string{"id"}), f.rows["app.t"])
			require.Subset(t, []int{5000}, completeAt, "complete before the last read")
			require.True(t, s.SnapshotComplete())
		})
	}
}
