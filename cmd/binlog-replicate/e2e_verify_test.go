package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/client"
	"github.com/stretchr/testify/require"

	"github.com/binlogstream/binlogstream"
	"github.com/binlogstream/binlogstream/cmd/internal/metrics/metricstest"
	"github.com/binlogstream/binlogstream/testhelpers/mariadb"
)

// verifyN is the rows of each table of the verification tests. Keys 1 to
// verifyN/2 are the workload's, the others the tampering's: a change the
// workload makes to a tampered row would stop the applier (divergence),
// which is another test's subject.
var verifyN = 100000

func init() {
	if v, err := strconv.Atoi(os.Getenv("VERIFY_ROWS")); err == nil {
		verifyN = v // a smaller run while working on the verifier
	}
}

// verifySchema creates the four tables: an integer key, a
// case-insensitive VARCHAR key, a composite key, and every value family.
func verifySchema(t *testing.T, src *mariadb.Server, n int) {
	src.Exec(t, "CREATE DATABASE d", "USE d",
		"CREATE TABLE ti (id INT NOT NULL PRIMARY KEY, v VARCHAR(40) CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci, n BIGINT)",
		"CREATE TABLE tv (k VARCHAR(32) CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci NOT NULL PRIMARY KEY, v VARCHAR(12), n INT)",
		"CREATE TABLE tc (a INT NOT NULL, b VARCHAR(16) NOT NULL, note TEXT, PRIMARY KEY (a, b))",
		"CREATE TABLE tf (id BIGINT NOT NULL PRIMARY KEY, i BIGINT, u BIGINT UNSIGNED, dec_ DECIMAL(12,3), f FLOAT, g DOUBLE, "+
			"c CHAR(10) CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci, tx TEXT, b VARBINARY(16), bl BLOB, dt DATE, tm TIME(6), "+
			"dtm DATETIME(6), ts TIMESTAMP(6) NULL, j JSON, e ENUM('x','y','z'), st SET('p','q','r'), bt BIT(12), n VARCHAR(5) NULL)",
		fmt.Sprintf("INSERT INTO ti SELECT seq, CONCAT('value ', seq), seq FROM seq_1_to_%d", n),
		fmt.Sprintf("INSERT INTO tv SELECT CONCAT('k', LPAD(seq, 7, '0')), CONCAT('v', seq %% 1000), seq FROM seq_1_to_%d", n),
		fmt.Sprintf("INSERT INTO tc SELECT seq, CONCAT('b', seq %% 5), REPEAT('n', seq %% 50) FROM seq_1_to_%d", n),
		fmt.Sprintf("INSERT INTO tf SELECT seq, -7*CAST(seq AS SIGNED), 18446744073709551615 - seq, seq/7, seq/3, seq/3, CONCAT('c', seq %% 999), "+
			"REPEAT('t', seq %% 40), UNHEX(HEX(seq)), REPEAT(CHAR(seq %% 256), 3), '2024-01-01' + INTERVAL seq %% 3000 DAY, "+
			"SEC_TO_TIME(seq %% 80000) + INTERVAL seq MICROSECOND, '2024-01-01 00:00:00' + INTERVAL seq SECOND + INTERVAL seq MICROSECOND, "+
			"FROM_UNIXTIME(1700000000 + seq), JSON_OBJECT('n', seq), 1 + seq %% 3, seq %% 8, seq %% 4096, IF(seq %% 2, NULL, '') "+
			"FROM seq_1_to_%d", n))
}

// verifyTables is --tables for them.
const verifyTables = "d.ti,d.tv,d.tc,d.tf"

func tvKey(i int) string { return fmt.Sprintf("k%07d", i) }

// verifyWorkload writes the workload's keys (1 to n/2) until ctx ends:
// updates, deletes, inserts and primary key moves on every table, some in
// multi-table transactions.
func verifyWorkload(ctx context.Context, s *mariadb.Server, n int, seed uint64, stmts *atomic.Int64) error {
	c, err := conn(s)
	if err != nil {
		return err
	}
	defer c.Close()
	if _, err := c.Execute("USE d"); err != nil {
		return err
	}
	rnd := rand.New(rand.NewPCG(seed, 2))
	hot := n/2 - 30
	for i := 0; ctx.Err() == nil; i++ {
		x := 1 + rnd.IntN(hot)
		var sql []string
		switch i % 9 {
		case 0:
			sql = []string{fmt.Sprintf("UPDATE ti SET n = n + 1, v = CONCAT(LEFT(v, 20), 'u') WHERE id BETWEEN %d AND %d", x, x+20)}
		case 1:
			sql = []string{"BEGIN",
				fmt.Sprintf("DELETE FROM ti WHERE id = %d", x),
				fmt.Sprintf("UPDATE tv SET n = n - 1, v = 'upd' WHERE k BETWEEN '%s' AND '%s'", tvKey(x), tvKey(x+10)),
				fmt.Sprintf("INSERT INTO tc VALUES (%d, 'w%d', 'new')", 20*n+i, i),
				"COMMIT"}
		case 2: // primary key moves: moved keys never move again
			sql = []string{fmt.Sprintf("UPDATE ti SET id = id + %d WHERE id BETWEEN %d AND %d", 10*n, x, x+5)}
		case 3:
			sql = []string{fmt.Sprintf("UPDATE tv SET k = CONCAT('m', k) WHERE k = '%s'", tvKey(x))}
		case 4:
			sql = []string{fmt.Sprintf("INSERT INTO ti SELECT %d + seq, 'ins', seq FROM seq_1_to_%d", 20*n+i*100, 1+rnd.IntN(50))}
		case 5:
			sql = []string{fmt.Sprintf("UPDATE tc SET note = CONCAT('u', %d), b = CONCAT(b, 'x') WHERE a BETWEEN %d AND %d AND LENGTH(b) < 10", i, x, x+3)}
		case 6:
			sql = []string{fmt.Sprintf("DELETE FROM tv WHERE k = '%s'", tvKey(x+1))}
		case 7:
			sql = []string{fmt.Sprintf("UPDATE tf SET i = i + 1, g = g * 1.5, dtm = dtm + INTERVAL 1 MICROSECOND, j = JSON_OBJECT('w', %d) WHERE id BETWEEN %d AND %d", i, x, x+10)}
		case 8:
			sql = []string{"BEGIN",
				fmt.Sprintf("DELETE FROM tf WHERE id = %d", x),
				fmt.Sprintf("INSERT INTO tf (id, i, c) VALUES (%d, %d, 'w')", 20*n+i, i),
				fmt.Sprintf("DELETE FROM tc WHERE a = %d", x),
				"COMMIT"}
		}
		for _, q := range sql {
			if _, err := c.Execute(q); err != nil {
				if ctx.Err() != nil {
					return nil
				}
				return fmt.Errorf("%s: %w", q, err)
			}
			stmts.Add(1)
		}
		time.Sleep(time.Duration(rnd.IntN(3)) * time.Millisecond)
	}
	return nil
}

// reportKey is a difference as the report names it.
type reportKey struct{ table, key, diff, columns string }

// tamper changes the target behind the replicator's back, in the
// tampering's keys (n/2 to n, fresh ones each call: used), and returns
// the differences a verification must report: rows changed, deleted and
// added, and changes only a byte comparison sees (a letter's case, a
// trailing space, a microsecond, a DOUBLE's last bit).
func tamper(t *testing.T, tgt *mariadb.Server, n int, rnd *rand.Rand, used map[int]bool) map[reportKey]bool {
	pick := func() int {
		for {
			i := n/2 + 1 + rnd.IntN(n/2)
			if !used[i] {
				used[i] = true
				return i
			}
		}
	}
	want := map[reportKey]bool{}
	var sql []string
	add := func(table, key, diff, cols string, q string) {
		want[reportKey{table, key, diff, cols}] = true
		sql = append(sql, q)
	}
	for range 2 {
		i := pick()
		add("d.ti", fmt.Sprintf(`{"id":%d}`, i), "changed", "n", fmt.Sprintf("UPDATE d.ti SET n = n + 1 WHERE id = %d", i))
		i = pick()
		add("d.ti", fmt.Sprintf(`{"id":%d}`, i), "missing", "", fmt.Sprintf("DELETE FROM d.ti WHERE id = %d", i))
		i = pick()
		add("d.ti", fmt.Sprintf(`{"id":%d}`, 5*n+i), "extra", "", fmt.Sprintf("INSERT INTO d.ti VALUES (%d, 'extra', 0)", 5*n+i))
		i = pick()
		add("d.ti", fmt.Sprintf(`{"id":%d}`, i), "changed", "v", fmt.Sprintf("UPDATE d.ti SET v = UPPER(v) WHERE id = %d", i))

		i = pick()
		add("d.tv", fmt.Sprintf(`{"k":"%s"}`, tvKey(i)), "changed", "v", fmt.Sprintf("UPDATE d.tv SET v = CONCAT(v, ' ') WHERE k = '%s'", tvKey(i)))
		i = pick()
		add("d.tv", fmt.Sprintf(`{"k":"%s"}`, tvKey(i)), "missing", "", fmt.Sprintf("DELETE FROM d.tv WHERE k = '%s'", tvKey(i)))
		i = pick()
		add("d.tv", fmt.Sprintf(`{"k":"x%s"}`, tvKey(i)), "extra", "", fmt.Sprintf("INSERT INTO d.tv VALUES ('x%s', 'e', 0)", tvKey(i)))
		i = pick() // the key's case: one row to the collation, two strings to a byte comparison
		add("d.tv", fmt.Sprintf(`{"k":"%s"}`, tvKey(i)), "changed", "k", fmt.Sprintf("UPDATE d.tv SET k = UPPER(k) WHERE k = '%s'", tvKey(i)))

		i = pick()
		add("d.tc", fmt.Sprintf(`{"a":%d,"b":"b%d"}`, i, i%5), "changed", "note", fmt.Sprintf("UPDATE d.tc SET note = 'tampered' WHERE a = %d", i))
		i = pick()
		add("d.tc", fmt.Sprintf(`{"a":%d,"b":"b%d"}`, i, i%5), "missing", "", fmt.Sprintf("DELETE FROM d.tc WHERE a = %d", i))
		i = pick()
		add("d.tc", fmt.Sprintf(`{"a":%d,"b":"extra"}`, i), "extra", "", fmt.Sprintf("INSERT INTO d.tc VALUES (%d, 'extra', '')", i))

		i = pick()
		add("d.tf", fmt.Sprintf(`{"id":%d}`, i), "changed", "dtm", fmt.Sprintf("UPDATE d.tf SET dtm = dtm + INTERVAL 1 MICROSECOND WHERE id = %d", i))
		i = pick()
		add("d.tf", fmt.Sprintf(`{"id":%d}`, i), "changed", "g", fmt.Sprintf("UPDATE d.tf SET g = g + g * 2.3e-16 WHERE id = %d", i))
		i = pick()
		add("d.tf", fmt.Sprintf(`{"id":%d}`, i), "changed", "c", fmt.Sprintf("UPDATE d.tf SET c = UPPER(c) WHERE id = %d", i))
		i = pick()
		add("d.tf", fmt.Sprintf(`{"id":%d}`, i), "missing", "", fmt.Sprintf("DELETE FROM d.tf WHERE id = %d", i))
	}
	tgt.Exec(t, sql...)
	return want
}

// readReport reads a report file: its differences and summary lines.
func readReport(t *testing.T, path string) (diffs []reportKey, summaries []summaryLine) {
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var l struct {
			diffLine
			Summary bool `json:"summary"`
		}
		require.NoError(t, json.Unmarshal(sc.Bytes(), &l), "line %q", sc.Text())
		if l.Summary {
			var s summaryLine
			require.NoError(t, json.Unmarshal(sc.Bytes(), &s))
			summaries = append(summaries, s)
			continue
		}
		diffs = append(diffs, reportKey{l.Table, string(l.Key), l.Diff, strings.Join(l.Columns, ",")})
	}
	require.NoError(t, sc.Err())
	return diffs, summaries
}

// requireExactly checks that got holds each of want once and nothing else.
func requireExactly(t *testing.T, want map[reportKey]bool, got []reportKey) (falsePositives, misses int) {
	t.Helper()
	seen := map[reportKey]int{}
	for _, d := range got {
		seen[d]++
		if !want[d] {
			falsePositives++
			t.Errorf("reported, not tampered: %+v", d)
		} else if seen[d] > 1 {
			t.Errorf("reported twice: %+v", d)
		}
	}
	for d := range want {
		if seen[d] == 0 {
			misses++
			t.Errorf("tampered, not reported: %+v", d)
		}
	}
	return falsePositives, misses
}

// trxWatch is what longestTrx saw.
type trxWatch struct {
	longest time.Duration
	who     string
	seen    int   // transactions seen, over every poll
	polls   int   // polls that answered
	err     error // the first poll's connection or query error
}

// trxPoll is longestTrx's pause between two reads of INNODB_TRX. InnoDB
// fills that table from a cache that it refreshes only once nobody has
// read it for 100 ms: polled faster, it shows the transactions of an
// earlier moment for as long as the polls go on (a transaction long
// committed keeps aging, and one begun since is never seen).
const trxPoll = 150 * time.Millisecond

// longestTrx polls INNODB_TRX on each server every poll until ctx ends
// and returns the oldest transaction it saw of a connection of the
// server's user, with its description, and how many polls answered and
// transactions they saw: a watch that saw nothing proves nothing.
// trx_started has whole seconds: an age is at most a second over the
// true one.
func longestTrx(ctx context.Context, users map[*mariadb.Server]string, poll time.Duration) func() trxWatch {
	var mu sync.Mutex
	var w trxWatch
	var wg sync.WaitGroup
	fail := func(err error) {
		mu.Lock()
		if w.err == nil {
			w.err = err
		}
		mu.Unlock()
	}
	for s, user := range users {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := conn(s)
			if err != nil {
				fail(err)
				return
			}
			defer c.Close()
			for ctx.Err() == nil {
				r, err := c.Execute("SELECT TIMESTAMPDIFF(MICROSECOND, x.trx_started, NOW(6)), CONCAT_WS(' ', x.trx_mysql_thread_id, x.trx_id, x.trx_state, " +
					"'started', x.trx_started, 'rows', x.trx_rows_modified, p.USER, p.HOST, p.COMMAND, p.INFO, x.trx_query) " +
					"FROM information_schema.INNODB_TRX x JOIN information_schema.PROCESSLIST p ON p.ID = x.trx_mysql_thread_id " +
					"WHERE p.USER = '" + user + "' AND p.ID <> CONNECTION_ID() ORDER BY x.trx_started")
				if err != nil {
					if ctx.Err() == nil {
						fail(err)
					}
					return
				}
				mu.Lock()
				w.polls++
				w.seen += r.RowNumber()
				if r.RowNumber() > 0 {
					us, _ := r.GetInt(0, 0)
					desc, _ := r.GetString(0, 1)
					if d := time.Duration(us) * time.Microsecond; d > w.longest {
						w.longest, w.who = d, s.Addr()+": "+desc+" at "+time.Now().Format("15:04:05.000")
					}
				}
				mu.Unlock()
				time.Sleep(poll)
			}
		}()
	}
	return func() trxWatch {
		wg.Wait()
		mu.Lock()
		defer mu.Unlock()
		return w
	}
}

// TestLongestTrx: longestTrx sees a transaction of 2 s that begins and
// ends while it polls, and gives its age to within InnoDB's whole
// seconds. The negative control, before it, polls with no pause: the
// cached table it keeps reading is that of its first read, before its
// transaction, and it sees none (in one of up to three runs).
func TestLongestTrx(t *testing.T) {
	mariadb.Require(t)
	s := mariadb.Start(t, mariadb.Options{})
	s.Exec(t, "CREATE DATABASE d", "CREATE TABLE d.t (id INT PRIMARY KEY)")
	c, err := conn(s)
	require.NoError(t, err)
	defer c.Close()
	measure := func(poll time.Duration, id int) (time.Duration, string) {
		t.Helper()
		ctx, stop := context.WithCancel(context.Background())
		defer stop()
		longest := longestTrx(ctx, map[*mariadb.Server]string{s: "root"}, poll)
		time.Sleep(500 * time.Millisecond)
		for _, q := range []string{"BEGIN", fmt.Sprintf("INSERT INTO d.t VALUES (%d)", id)} {
			_, err := c.Execute(q)
			require.NoError(t, err)
		}
		time.Sleep(2 * time.Second)
		_, err = c.Execute("COMMIT")
		require.NoError(t, err)
		time.Sleep(500 * time.Millisecond)
		stop()
		w := longest()
		require.NoError(t, w.err)
		return w.longest, w.who
	}
	// Polling with no pause keeps the cache from refreshing only while no
	// gap between polls outlasts its refresh interval: on a loaded
	// machine one can, so the control gets up to three runs to show it.
	var bad time.Duration
	var badWho string
	for id := 1; id <= 3; id++ {
		if bad, badWho = measure(0, id); bad < time.Second {
			break
		}
		t.Logf("polled with no pause, run %d saw the transaction (%v): a gap let the cache refresh", id, bad)
	}
	time.Sleep(300 * time.Millisecond) // the cache idle: the next read refreshes it
	got, who := measure(trxPoll, 4)
	t.Logf("polled with no pause: %v (%s); every %v: %v (%s)", bad, badWho, trxPoll, got, who)
	require.Less(t, bad, time.Second, "polled with no pause, INNODB_TRX should stay as it was before the transaction")
	require.GreaterOrEqual(t, got, 1500*time.Millisecond)
	require.Less(t, got, 3500*time.Millisecond)
}

// checksums is CHECKSUM TABLE of each table.
func checksums(t *testing.T, s *mariadb.Server, tables string) []string {
	var out []string
	for _, tb := range strings.Split(tables, ",") {
		out = append(out, s.Query(t, "CHECKSUM TABLE "+tb)[0][1])
	}
	return out
}

// TestReplicateVerifyFindsExactly: binlog-replicate copies four tables
// of 100k rows while a workload writes them; rows are tampered with on
// the target, behind its back, in ten rounds. Each round's --verify
// --stop-at-current, run while the workload goes on, reports exactly the
// tampered keys with their kind and columns (no false positive, no
// miss): without --repair exit 3, and the next round finds them again
// with its own; with --repair exit 0, every one repaired. At the end
// CHECKSUM TABLE agrees on both sides. The negative control reads the
// target "now" instead of at the source chunk's position, under the same
// writes, and reports false differences. The longest transaction of the
// verifications' connections on either server stays under 5 s.
func TestReplicateVerifyFindsExactly(t *testing.T) {
	mariadb.Require(t)
	src := mariadb.Start(t, mariadb.Options{})
	tgt := mariadb.Start(t, mariadb.Options{ServerID: 2})
	n := verifyN
	verifySchema(t, src, n)
	r := &rig{src: src, tgt: tgt, args: []string{"--tables", verifyTables, "--chunk", "2000", "--snapshot-readers", "2",
		"--checkpoint-interval", "200ms", "--heartbeat", "200ms"}}
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d, source %s, target %s", seed, src.Addr(), tgt.Addr())
	rnd := rand.New(rand.NewPCG(seed, 3))

	ctx, stopWork := context.WithCancel(context.Background())
	defer stopWork()
	var stmts atomic.Int64
	workErr := make(chan error, 1)
	go func() { workErr <- verifyWorkload(ctx, src, n, seed, &stmts) }()

	// The copy, under the writes.
	res := r.run(t, "--snapshot-only")
	require.Equal(t, 0, res.code, res.stderr)

	// The negative control: the same tables, with the replicator
	// streaming, read on the target "now".
	cmd, _ := r.start(t)
	naive, passes := 0, 0
	for deadline := time.Now().Add(30 * time.Second); naive == 0 && time.Now().Before(deadline); passes++ {
		naive = naiveDifferences(t, src, tgt, "d.ti")
	}
	require.NoError(t, cmd.Process.Kill())
	_ = cmd.Wait()
	t.Logf("negative control: %d false differences reading the target now, in %d passes", naive, passes)
	require.Positive(t, naive, "reading the target now under writes must find false differences")

	// The verifications' connections: repl on the source, root on the
	// target (the workload's are root on the source).
	trxCtx, stopTrx := context.WithCancel(ctx)
	longest := longestTrx(trxCtx, map[*mariadb.Server]string{src: mariadb.ReplUser, tgt: "root"}, trxPoll)
	used := map[int]bool{}
	report := filepath.Join(t.TempDir(), "report.jsonl")
	var falsePositives, misses int
	left := map[reportKey]bool{} // a round without --repair leaves its differences to the next
	for round := range 10 {
		want := tamper(t, tgt, n, rnd, used)
		for k := range left {
			want[k] = true
		}
		repair := round%2 == 1
		extra := []string{"--verify", "--stop-at-current", "--verify-report", report}
		if repair {
			extra = append(extra, "--repair")
		}
		before := stmts.Load()
		res := r.run(t, extra...)
		got, sums := readReport(t, report)
		fp, miss := requireExactly(t, want, got)
		falsePositives, misses = falsePositives+fp, misses+miss
		require.Len(t, sums, 1, res.stderr)
		t.Logf("round %d: %d tampered, %d reported, %d chunks, %d rereads, repaired %d, longest read %d ms, %d statements meanwhile",
			round, len(want), len(got), sums[0].Chunks, sums[0].Rereads, sums[0].Repaired, sums[0].LongestReadMS, stmts.Load()-before)
		if repair {
			require.Equal(t, 0, res.code, res.stderr)
			require.Equal(t, len(want), sums[0].Repaired)
			left = map[reportKey]bool{}
		} else {
			require.Equal(t, 3, res.code, res.stderr)
			require.Contains(t, res.stderr, "the verification found differences")
			require.Zero(t, sums[0].Repaired)
			left = want
		}
		select {
		case err := <-workErr:
			t.Fatalf("workload: %v", err)
		default:
		}
	}
	t.Logf("false positives %d, misses %d over 10 rounds", falsePositives, misses)

	stopTrx()
	stopWork()
	require.NoError(t, <-workErr)
	w := longest()
	t.Logf("longest transaction on either server: %v (%s); %d polls saw %d transactions", w.longest, w.who, w.polls, w.seen)
	require.NoError(t, w.err)
	require.Positive(t, w.seen, "the watch saw no transaction of the run's connections")
	require.Less(t, w.longest, 5*time.Second)
	res = r.run(t, "--stop-at-current")
	require.Equal(t, 0, res.code, res.stderr)
	if !slices.Equal(checksums(t, src, verifyTables), checksums(t, tgt, verifyTables)) {
		for _, tb := range strings.Split(verifyTables, ",") {
			a, b := dump(t, src, tb, "1"), dump(t, tgt, tb, "1")
			for i := range min(len(a), len(b)) {
				if a[i] != b[i] {
					t.Logf("%s first difference:\n%s\n%s", tb, a[i], b[i])
					break
				}
			}
		}
		for _, c := range []string{"id", "i", "u", "dec_", "CAST(f AS DOUBLE)", "HEX(g)", "HEX(c)", "tx", "b", "bl", "dt", "tm", "dtm", "ts", "j", "e", "st", "bt+0", "n", "ISNULL(n)", "ISNULL(ts)", "ISNULL(j)", "ISNULL(bt)", "ISNULL(f)", "ISNULL(c)"} {
			q := "SELECT BIT_XOR(CRC32(CONCAT_WS('|', id, " + c + "))) FROM d.tf"
			if a, b := src.QueryValue(t, q), tgt.QueryValue(t, q); a != b {
				t.Logf("tf column %s differs", c)
			}
		}
		t.Log(src.Query(t, "SHOW CREATE TABLE d.tf"), tgt.Query(t, "SHOW CREATE TABLE d.tf"))
		t.Fatal("CHECKSUM TABLE differs")
	}
}

// naiveDifferences verifies table with the library, reading the target
// at "now" (whatever the replicator has applied) and calling that the
// source read's position: the naive verifier.
func naiveDifferences(t *testing.T, src, tgt *mariadb.Server, table string) int {
	source, err := binlogstream.NewSyncerSource(binlogstream.SyncerConfig{
		DSN: binlogstream.DSN{User: mariadb.ReplUser, Password: mariadb.ReplPassword, Host: src.Host(), Port: uint16(src.Port())}, ServerID: 1077,
	})
	require.NoError(t, err)
	c, err := client.Connect(tgt.SocketPath(), "root", "", "")
	require.NoError(t, err)
	defer c.Close()
	vt, err := binlogstream.NewVerifyTarget(c)
	require.NoError(t, err)
	res, err := binlogstream.VerifyTable(context.Background(), binlogstream.VerifyConfig{
		Source: source, Table: table, ChunkRows: 2000,
		ReadTarget: func(_ context.Context, r binlogstream.VerifyRange) ([][]any, binlogstream.Position, error) {
			rows, err := vt.Read(r)
			return rows, r.At, err
		},
	})
	require.NoError(t, err)
	return len(res.Differences)
}

// TestReplicateVerifyKilled: --verify --repair is SIGKILLed at random
// times while it verifies; each restart verifies from the start. The
// report file lists every tampered key exactly once (a line written
// before its repair committed is not written again when the restart
// finds the row still different), and the final run repairs what is
// left: --verify-only then finds the copy identical. --verify-only
// refuses a source written after the target's checkpoint.
func TestReplicateVerifyKilled(t *testing.T) {
	mariadb.Require(t)
	src := mariadb.Start(t, mariadb.Options{})
	tgt := mariadb.Start(t, mariadb.Options{ServerID: 2})
	n := 20000 // rows a table: enough for a verification to outlast a few kills
	verifySchema(t, src, n)
	r := &rig{src: src, tgt: tgt, args: []string{"--tables", verifyTables, "--chunk", "200"}}
	res := r.run(t, "--stop-at-current")
	require.Equal(t, 0, res.code, res.stderr)

	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rnd := rand.New(rand.NewPCG(seed, 4))
	want := tamper(t, tgt, n, rnd, map[int]bool{})
	report := filepath.Join(t.TempDir(), "report.jsonl")
	args := []string{"--verify", "--repair", "--stop-at-current", "--verify-report", report}
	// Each run is killed a moment after it reports a difference not in
	// the file yet: between a line and its repair's commit, or later.
	kills, lines, finished := 0, 0, false
	for kills < 8 && !finished {
		cmd := exec.Command(binary(t), r.baseArgs(args...)...)
		stderr := &metricstest.Log{}
		cmd.Stderr = stderr
		require.NoError(t, cmd.Start())
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		require.Eventually(t, func() bool {
			b, _ := os.ReadFile(report) // none yet, or being written
			return bytes.Count(b, []byte("\n")) > lines || len(exited) > 0
		}, 60*time.Second, 2*time.Millisecond)
		select {
		case err := <-exited:
			t.Logf("finished before the kill: %v", err)
		case <-time.After(time.Duration(rnd.IntN(200)) * time.Millisecond):
			require.NoError(t, cmd.Process.Kill())
			<-exited
		}
		if finished = cmd.ProcessState.ExitCode() == 0; finished {
			break
		}
		kills++
		got, _ := readReport(t, report)
		lines = len(got)
		t.Logf("kill %d: %d lines so far; %s", kills, len(got), lastLine(stderr.String()))
	}
	require.GreaterOrEqual(t, kills, 2)
	if !finished {
		res = r.run(t, args...)
		require.Equal(t, 0, res.code, res.stderr)
	}
	got, sums := readReport(t, report)
	fp, miss := requireExactly(t, want, got)
	require.Zero(t, fp+miss)
	require.Len(t, sums, 1)
	t.Logf("%d kills; %d differences reported once each; the last run repaired %d", kills, len(got), sums[0].Repaired)

	res = r.run(t, "--verify-only", "--verify-report", report)
	require.Equal(t, 0, res.code, res.stderr)
	got, sums = readReport(t, report)
	require.Empty(t, got, "a finished report starts afresh")
	require.Len(t, sums, 1)
	require.Zero(t, sums[0].Differences)
	require.Equal(t, checksums(t, src, verifyTables), checksums(t, tgt, verifyTables))

	// --verify-only against a target that has not applied everything.
	src.Exec(t, "UPDATE d.ti SET n = -n WHERE id = 1")
	res = r.run(t, "--verify-only")
	require.Equal(t, 1, res.code, res.stderr)
	require.Contains(t, res.stderr, "--verify-only: the target's checkpoint is at position ")
	require.Contains(t, res.stderr, "run with --stop-at-current first")

	// Caught up, with one row tampered: exit 3, the row on stderr.
	res = r.run(t, "--stop-at-current")
	require.Equal(t, 0, res.code, res.stderr)
	tgt.Exec(t, "UPDATE d.ti SET v = 'x' WHERE id = 2")
	res = r.run(t, "--verify-only")
	require.Equal(t, 3, res.code, res.stderr)
	require.Contains(t, res.stderr, `{"table":"d.ti","key":{"id":2},"diff":"changed","columns":["v"],"at":"`)
	require.Contains(t, res.stderr, `"summary":true,"tables":4,`)
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	return s[strings.LastIndexByte(s, '\n')+1:]
}

// TestReplicateVerifyOnlyAfterSnapshotOnly: on a source nothing writes,
// --snapshot-only leaves a checkpoint whose snapshot is complete (the
// last table's end carried by no event), so --verify-only takes the
// copy at once and finds it identical.
func TestReplicateVerifyOnlyAfterSnapshotOnly(t *testing.T) {
	mariadb.Require(t)
	src := mariadb.Start(t, mariadb.Options{})
	tgt := mariadb.Start(t, mariadb.Options{ServerID: 2})
	src.Exec(t, "CREATE DATABASE v", "USE v", "CREATE TABLE t (id INT PRIMARY KEY, a INT)", "INSERT INTO t SELECT seq, seq FROM seq_1_to_5000")
	r := &rig{src: src, tgt: tgt, args: []string{"--tables", "v.t"}}
	res := r.run(t, "--snapshot-only")
	require.Equal(t, 0, res.code, res.stderr)
	token, err := binlogstream.ParseResumePosition(tgt.QueryValue(t, "SELECT token FROM binlogstream.checkpoint"))
	require.NoError(t, err)
	require.False(t, token.SnapshotPending(), "the checkpoint after --snapshot-only: %s", token)
	res = r.run(t, "--verify-only")
	require.Equal(t, 0, res.code, res.stderr)
	require.Contains(t, res.stderr, `{"summary":true,"tables":1,"chunks":6,"rows":5000,"differences":0,`)
}
