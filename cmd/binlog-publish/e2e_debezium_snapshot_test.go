package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/require"

	"github.com/binlogstream/binlogstream/publish"
	th "github.com/binlogstream/binlogstream/testhelpers"
	"github.com/binlogstream/binlogstream/testhelpers/mariadb"
	natstest "github.com/binlogstream/binlogstream/testhelpers/nats"
)

// foldDebezium folds the Debezium records on subject by key, each change
// at most once: a read ("r") or a create ("c") puts a row that must be
// absent, an update's ("u") and a delete's ("d") before image must equal
// the row folded so far, a tombstone must follow the delete of its key,
// and no record may be in the stream twice. It returns the rows ("v|pad"
// by id) and the number of reads, or the first violation.
func foldDebezium(msgs []*nats.Msg, subject string) (map[string]string, int, error) {
	rows := map[string]string{}
	seen := map[string]bool{}
	reads := 0
	text := func(r map[string]any) string { return fmt.Sprintf("%v|%v", r["v"], r["pad"]) }
	for i, m := range msgs {
		if m.Subject != subject {
			continue
		}
		key := m.Header.Get(publish.KeyHeader)
		var k struct{ ID json.Number }
		if err := json.Unmarshal([]byte(key), &k); err != nil {
			return nil, 0, fmt.Errorf("message %d: key %q: %w", i, key, err)
		}
		id := k.ID.String()
		if len(m.Data) == 0 { // a tombstone
			if _, had := rows[id]; had {
				return nil, 0, fmt.Errorf("message %d: tombstone of id %s, which is there", i, id)
			}
			continue
		}
		if seen[string(m.Data)] {
			return nil, 0, fmt.Errorf("message %d: a record twice: %.200s", i, m.Data)
		}
		seen[string(m.Data)] = true
		var v struct {
			Op            string
			Before, After map[string]any
		}
		if err := json.Unmarshal(m.Data, &v); err != nil {
			return nil, 0, fmt.Errorf("message %d: %w", i, err)
		}
		old, had := rows[id]
		switch v.Op {
		case "r", "c":
			if had {
				return nil, 0, fmt.Errorf("message %d: %s of id %s, which is there already (%s)", i, v.Op, id, old)
			}
			rows[id] = text(v.After)
			if v.Op == "r" {
				reads++
			}
		case "u", "d":
			if !had || old != text(v.Before) {
				return nil, 0, fmt.Errorf("message %d: %s of id %s, before %s: folded %q, present %v", i, v.Op, id, text(v.Before), old, had)
			}
			if v.Op == "u" {
				rows[id] = text(v.After)
			} else {
				delete(rows, id)
			}
		default:
			return nil, 0, fmt.Errorf("message %d: op %q", i, v.Op)
		}
	}
	return rows, reads, nil
}

// TestPublishDebeziumSnapshotThroughKills: binlog-publish --nats
// --format debezium --snapshot of a 40,000-row table under live writes
// (updates, deletes, inserts, key moves), SIGKILLed four times, at
// least two of them during the snapshot; every record is in the stream
// once (foldDebezium) and the fold of the table's subject by key equals
// the table. The negative controls: the fold catches a record published
// twice, and the same run with a publisher built without its fencing
// (binlogstream_unfenced) fails it.
func TestPublishDebeziumSnapshotThroughKills(t *testing.T) {
	msgs, want, atKills, note := debeziumSnapshotKills(t, th.Command(t, "binlog-publish"))
	subject := publish.Subject("binlog", "d", "s")
	folded, reads, err := foldDebezium(msgs, subject)
	require.NoError(t, err)
	require.True(t, maps.Equal(want, folded), "the fold (%d rows) differs from the table (%d rows)", len(folded), len(want))
	// A kill is mid-snapshot when the stream then held fewer messages
	// than it does up to the snapshot's last read.
	lastRead := 0
	for i, m := range msgs {
		if m.Subject == subject && bytes.Contains(m.Data, []byte(`"op":"r"`)) {
			lastRead = i + 1
		}
	}
	mid := 0
	for _, k := range atKills {
		if k < uint64(lastRead) {
			mid++
		}
	}
	require.GreaterOrEqual(t, mid, 2, "kills at %v messages, the snapshot's last read at %d", atKills, lastRead)
	t.Logf("%s; %d of them mid-snapshot (its last read at message %d); %d messages, %d of them reads, the fold equal to the table's %d rows",
		note, mid, lastRead, len(msgs), reads, len(want))

	for i, m := range msgs {
		if m.Subject == subject && len(m.Data) > 0 && i > len(msgs)/2 {
			dup := append(append(append([]*nats.Msg(nil), msgs[:i+1]...), m), msgs[i+1:]...)
			_, _, err := foldDebezium(dup, subject)
			require.Error(t, err, "a duplicated record is caught")
			break
		}
	}

	t.Run("unfenced", func(t *testing.T) {
		bin := filepath.Join(t.TempDir(), "binlog-publish-unfenced")
		out, err := exec.Command("go", "build", "-tags", "binlogstream_unfenced", "-o", bin, ".").CombinedOutput()
		require.NoError(t, err, "%s", out)
		msgs, _, _, note := debeziumSnapshotKills(t, bin)
		_, _, err = foldDebezium(msgs, subject)
		require.Error(t, err, "an unfenced publisher SIGKILLed mid-snapshot must publish a change twice")
		t.Logf("negative control: %s; %v", note, err)
	})
}

// snapshotKillRows is the size of the table debeziumSnapshotKills reads.
const snapshotKillRows = 40000

// debeziumSnapshotKills publishes d.s with bin (--format debezium
// --snapshot) under snapshotWrites, SIGKILLs it three times as the
// stream grows by 2,000 to 5,000 messages and once at a random time, and
// finishes the run; it returns the stream's messages, the table (v|pad
// by id), the stream's messages at each kill and a summary.
func debeziumSnapshotKills(t *testing.T, bin string) ([]*nats.Msg, map[string]string, []uint64, string) {
	s, c, js, _ := setup(t)
	s.Exec(t, "USE d", "CREATE TABLE s (id INT PRIMARY KEY, v INT NOT NULL, pad VARCHAR(40) NOT NULL)",
		fmt.Sprintf("INSERT INTO s SELECT seq, 0, 'initial' FROM seq_1_to_%d", snapshotKillRows))
	args := []string{"--dsn", s.DSN(mariadb.ReplUser), "--nats", c.URLs(), "--stream", "DS", "--start", "current",
		"--tables", "d.s", "--snapshot", "--snapshot-chunk-rows", "1000", "--format", "debezium", "--quiet"}
	start := func(args ...string) *publisher { return startBinary(t, bin, args...) }

	stop := make(chan struct{})
	var txns int
	var wg sync.WaitGroup
	wg.Go(func() { txns = snapshotWrites(t, s, snapshotKillRows, stop) })
	began := time.Now()
	p := start(args...)
	var atKills []uint64
	msgsNow := streamMsgs(js, "DS")
	for round := range 4 {
		if round < 3 {
			// Mid-snapshot: once the stream has grown by 2,000 to 5,000
			// messages since the last kill.
			at := msgsNow() + 2000 + uint64(rand.IntN(3000))
			deadline := time.Now().Add(time.Minute)
			for msgsNow() < at && time.Now().Before(deadline) {
				time.Sleep(5 * time.Millisecond)
			}
		} else {
			time.Sleep(time.Duration(300+rand.IntN(700)) * time.Millisecond)
		}
		select {
		case err := <-p.done:
			t.Fatalf("binlog-publish exited: %v: %s", err, p.stderr.String())
		default:
		}
		p.kill()
		atKills = append(atKills, msgsNow())
		p = start(args...)
	}
	time.Sleep(500 * time.Millisecond)
	close(stop)
	wg.Wait()
	p.kill()
	finishBinary(t, bin, args)
	took := time.Since(began)
	require.NotEmpty(t, atKills)

	want := map[string]string{}
	for _, r := range s.Query(t, "SELECT id, v, pad FROM d.s") {
		want[r[0]] = r[1] + "|" + r[2]
	}
	note := fmt.Sprintf("%d rows at the start, %d at the end; %d write transactions; %d SIGKILLs at %v messages; %s",
		snapshotKillRows, len(want), txns, len(atKills)+1, atKills, took.Round(time.Millisecond))
	return natstest.Messages(t, js, "DS"), want, atKills, note
}
