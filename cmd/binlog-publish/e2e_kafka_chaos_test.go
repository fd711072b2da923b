package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/binlogstream/binlogstream/testhelpers/mariadb"
)

// chaosBigRows is how many rows d.big holds when the snapshot begins.
const chaosBigRows = 100_000

// chaosWrites runs, until stop, what the Kafka chaos test publishes
// besides workload: updates, deletes and inserts of d.big (under the
// snapshot), DDL (a table d.s_N created, filled, altered and updated)
// and, once, a transaction of 30,000 rows.
func chaosWrites(t *testing.T, s *mariadb.Server, stop <-chan struct{}) (ddl int) {
	for i := 1; ; i++ {
		select {
		case <-stop:
			return ddl
		default:
		}
		var sql []string
		switch {
		case i == 5:
			sql = []string{"USE d", "INSERT INTO w SELECT 1000000, seq, 30000, 'big' FROM seq_0_to_29999"}
		case i%7 == 0:
			n := i / 7
			sql = []string{"USE d", fmt.Sprintf("CREATE TABLE s_%d (k INT PRIMARY KEY, v INT)", n),
				fmt.Sprintf("INSERT INTO s_%d SELECT seq, seq FROM seq_1_to_20", n),
				fmt.Sprintf("ALTER TABLE s_%d ADD COLUMN x INT NOT NULL DEFAULT 7", n),
				fmt.Sprintf("UPDATE s_%d SET v = v + 1, x = x + k", n)}
			ddl++
		default:
			k := 1 + rand.IntN(chaosBigRows)
			sql = []string{"USE d", fmt.Sprintf("UPDATE big SET v = v + 1 WHERE k BETWEEN %d AND %d", k, k+50),
				fmt.Sprintf("DELETE FROM big WHERE k = %d", k+60),
				fmt.Sprintf("INSERT INTO big VALUES (%d, 0) ON DUPLICATE KEY UPDATE v = v + 100", chaosBigRows+i)}
		}
		if err := s.TryExec(sql...); err != nil {
			t.Logf("chaos writes: %v", err)
		}
		time.Sleep(time.Duration(50+rand.IntN(100)) * time.Millisecond)
	}
}

// TestKafkaExactThroughKills: --format debezium --snapshot into Kafka
// while a live workload writes (small and large transactions, DDL, and
// writes to the 100,000-row table being snapshotted), the publisher
// SIGKILLed at random 20 times. A read_committed consumer then finds
// every binlog change event exactly once (those binlog-tail --format
// debezium writes, byte for byte), each partition in binlog order, each
// snapshot row read at most once, and the fold of each table's topic by
// key equal to the table.
func TestKafkaExactThroughKills(t *testing.T) {
	s, _ := setupSource(t)
	s.Exec(t, "USE d", "CREATE TABLE big (k INT PRIMARY KEY, v INT)",
		fmt.Sprintf("INSERT INTO big SELECT seq, 0 FROM seq_1_to_%d", chaosBigRows))
	file, pos := s.MasterStatus(t)
	start := fmt.Sprintf("%s:%d", file, pos)
	k := startKafka(t)
	args := k.args(s, start, "--format", "debezium", "--snapshot")

	stopWorkload := startWorkload(t, s)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var ddl int
	wg.Go(func() { ddl = chaosWrites(t, s, stop) })
	var once sync.Once
	halt := func() {
		once.Do(func() {
			close(stop)
			wg.Wait()
		})
	}
	t.Cleanup(halt)

	began := time.Now()
	kills := 0
	p := startPublisher(t, args...)
	for kills < 20 {
		time.Sleep(time.Duration(300+rand.IntN(1700)) * time.Millisecond)
		select {
		case err := <-p.done:
			t.Fatalf("binlog-publish exited: %v: %s", err, p.stderr.String())
		default:
		}
		p.kill()
		kills++
		p = startPublisher(t, args...)
	}
	txns := stopWorkload()
	halt()
	p.kill()
	kills++
	finish(t, args)
	took := time.Since(began)

	recs := k.records(t)
	want := tailOutput(t, "--dsn", s.DSN(mariadb.ReplUser), "--start", start, "--format", "debezium", "--topic-prefix", k.prefix)
	// A change to a row the snapshot reads later is left out (the read
	// has it): binlog-tail's events are checked for duplicates and order,
	// and the folds for losses.
	problems, reads := checkDebezium(want, recs, false)
	require.Empty(t, problems)
	folds := foldTopics(recs)
	tables := []string{"w", "big"}
	for n := 1; n <= ddl; n++ {
		tables = append(tables, fmt.Sprintf("s_%d", n))
	}
	for _, tbl := range tables {
		topic := k.prefix + ".d." + tbl
		got := folds[topic]
		rows := s.QueryMaps(t, "SELECT * FROM d."+tbl)
		wantRows := map[string]map[string]string{}
		for _, r := range rows {
			wantRows[rowKey(tbl, r)] = r
		}
		require.Equal(t, len(wantRows), len(got), "topic %s folded by key: %d rows, the table %d", topic, len(got), len(wantRows))
		for key, after := range got {
			assert.Equal(t, wantRows[key], after, "topic %s key %s", topic, key)
		}
	}
	assert.GreaterOrEqual(t, reads, chaosBigRows/2, "snapshot reads")
	t.Logf("%d workload transactions, %d DDL tables, a 30,000-row transaction, %d-row snapshot: %d records (%d snapshot reads), "+
		"exact through %d SIGKILLs; %s", txns, ddl, chaosBigRows, len(recs), reads, kills, took.Round(time.Millisecond))
}

// rowKey is the fold's key of a table row, as the Debezium key writes it.
func rowKey(table string, r map[string]string) string {
	if table == "w" {
		return fmt.Sprintf(`{"txn":%s,"k":%s}`, r["txn"], r["k"])
	}
	return fmt.Sprintf(`{"k":%s}`, r["k"])
}

// envelope is a Debezium record's value, as far as the checks read it.
type envelope struct {
	Op    string                     `json:"op"`
	After map[string]json.RawMessage `json:"after"`
}

// checkDebezium compares the records with binlog-tail --format debezium's
// lines: every record but a snapshot read is one of them, once, each
// partition in their order; each snapshot read's key comes once; with
// all, every one of them is a record.
func checkDebezium(want []byte, recs []*kgo.Record, all bool) (problems []string, reads int) {
	type rec struct{ topic, key, value string }
	index := map[rec][]int{}
	n := 0
	for _, l := range bytes.Split(want, []byte("\n")) {
		if len(l) == 0 {
			continue
		}
		var e struct {
			Topic      string
			Key, Value json.RawMessage
			Progress   bool
		}
		if err := json.Unmarshal(l, &e); err != nil || e.Progress {
			continue
		}
		r := rec{e.Topic, string(e.Key), string(e.Value)}
		if r.value == "null" {
			r.value = ""
		}
		if r.key == "null" {
			r.key = ""
		}
		index[r] = append(index[r], n)
		n++
	}
	readKeys := map[rec]bool{}
	last := map[string]int{}
	for _, kr := range recs {
		r := rec{kr.Topic, string(kr.Key), string(kr.Value)}
		var env envelope
		if kr.Value != nil {
			_ = json.Unmarshal(kr.Value, &env)
		}
		if env.Op == "r" {
			reads++
			k := rec{kr.Topic, string(kr.Key), ""}
			if readKeys[k] {
				problems = append(problems, fmt.Sprintf("%s: snapshot read twice: %s", kr.Topic, kr.Key))
			}
			readKeys[k] = true
			continue
		}
		idx := index[r]
		if len(idx) == 0 {
			problems = append(problems, fmt.Sprintf("%s/%d@%d: duplicated, or not binlog-tail's: %s %.200s", kr.Topic, kr.Partition, kr.Offset, kr.Key, kr.Value))
			continue
		}
		index[r] = idx[1:]
		part := fmt.Sprintf("%s/%d", kr.Topic, kr.Partition)
		if j, ok := last[part]; ok && idx[0] <= j {
			problems = append(problems, fmt.Sprintf("%s@%d: out of binlog order: %s", part, kr.Offset, kr.Key))
		}
		last[part] = idx[0]
	}
	missing := 0
	for r, idx := range index {
		missing += len(idx)
		if len(idx) > 0 && missing <= 5 {
			problems = append(problems, fmt.Sprintf("missing: %s %s %.200s", r.topic, r.key, r.value))
		}
	}
	if missing > 0 {
		problems = append(problems, fmt.Sprintf("%d change events missing of %d", missing, n))
	}
	if !all {
		problems = slices.DeleteFunc(problems, func(p string) bool { return strings.Contains(p, "missing") })
	}
	sort.Strings(problems)
	if len(problems) > 20 {
		problems = append(problems[:20], fmt.Sprintf("... and %d more", len(problems)-20))
	}
	return problems, reads
}

// foldTopics folds each topic's records by key, in partition order: a
// tombstone or delete removes the key, any other event sets its after
// image, each value as text.
func foldTopics(recs []*kgo.Record) map[string]map[string]map[string]string {
	out := map[string]map[string]map[string]string{}
	for _, r := range recs {
		if r.Key == nil {
			continue // a statement's
		}
		m := out[r.Topic]
		if m == nil {
			m = map[string]map[string]string{}
			out[r.Topic] = m
		}
		var env envelope
		if r.Value != nil {
			_ = json.Unmarshal(r.Value, &env)
		}
		if r.Value == nil || env.Op == "d" {
			delete(m, string(r.Key))
			continue
		}
		row := map[string]string{}
		for c, v := range env.After {
			row[c] = strings.Trim(string(v), `"`)
		}
		m[string(r.Key)] = row
	}
	return out
}

// buildTagged builds binlog-publish with a build tag.
func buildTagged(t *testing.T, tag string) string {
	bin := filepath.Join(t.TempDir(), "binlog-publish-"+tag)
	out, err := exec.Command("go", "build", "-tags", tag, "-o", bin, ".").CombinedOutput()
	require.NoError(t, err, "%s", out)
	return bin
}
