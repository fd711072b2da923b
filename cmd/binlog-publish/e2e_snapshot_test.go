package main

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/binlogstream/binlogstream/testhelpers/mariadb"
	natstest "github.com/binlogstream/binlogstream/testhelpers/nats"
)

// foldRows folds the payloads of d.s's lines by id: a read or an insert
// puts a row that must be absent, an update's before image and a
// delete's row must equal the row folded so far. It returns the rows
// ("v|pad" by id) and the number of read lines, or the first violation.
func foldRows(payloads [][]byte) (map[string]string, int, error) {
	rows := map[string]string{}
	reads := 0
	for i, p := range payloads {
		var l struct {
			Type, Schema, Table string
			Row, Before         map[string]any
		}
		if err := json.Unmarshal(p, &l); err != nil {
			return nil, 0, fmt.Errorf("message %d: %w", i, err)
		}
		if l.Schema != "d" || l.Table != "s" || l.Type == "table" {
			continue
		}
		id := fmt.Sprint(l.Row["id"])
		text := fmt.Sprintf("%v|%v", l.Row["v"], l.Row["pad"])
		old, had := rows[id]
		switch l.Type {
		case "read", "insert":
			if had {
				return nil, 0, fmt.Errorf("message %d: %s of id %s, which is there already (%s)", i, l.Type, id, old)
			}
			rows[id] = text
			if l.Type == "read" {
				reads++
			}
		case "delete":
			if !had || old != text {
				return nil, 0, fmt.Errorf("message %d: delete of id %s (%s): folded %q, present %v", i, id, text, old, had)
			}
			delete(rows, id)
		case "update":
			bid := fmt.Sprint(l.Before["id"])
			btext := fmt.Sprintf("%v|%v", l.Before["v"], l.Before["pad"])
			if o, ok := rows[bid]; !ok || o != btext {
				return nil, 0, fmt.Errorf("message %d: update of id %s, before %s: folded %q, present %v", i, bid, btext, o, ok)
			}
			delete(rows, bid)
			rows[id] = text
		}
	}
	return rows, reads, nil
}

// snapshotWrites changes d.s at random until stop is closed: updates,
// deletes, inserts and key moves, alone or two and three in one
// transaction.
func snapshotWrites(t *testing.T, s *mariadb.Server, rows int, stop <-chan struct{}) (txns int) {
	rng := rand.New(rand.NewPCG(5, 6))
	next := rows
	for {
		select {
		case <-stop:
			return txns
		default:
		}
		sql := []string{"USE d", "BEGIN"}
		for range 1 + rng.IntN(3) {
			at := 1 + rng.IntN(next)
			switch rng.IntN(5) {
			case 0:
				sql = append(sql, fmt.Sprintf("UPDATE s SET v = v + 1, pad = 'updated' WHERE id BETWEEN %d AND %d", at, at+20))
			case 1:
				sql = append(sql, fmt.Sprintf("DELETE FROM s WHERE id = %d", at))
			case 2:
				next++
				sql = append(sql, fmt.Sprintf("INSERT INTO s VALUES (%d, 1, 'inserted')", next))
			case 3:
				next++
				sql = append(sql, fmt.Sprintf("UPDATE s SET id = %d, pad = 'moved' WHERE id = %d", next, at))
			case 4:
				sql = append(sql, fmt.Sprintf("UPDATE s SET v = v + 1 WHERE id = %d", at))
			}
		}
		if err := s.TryExec(append(sql, "COMMIT")...); err != nil {
			t.Logf("writes: %v", err)
		}
		txns++
		time.Sleep(time.Duration(2+rng.IntN(6)) * time.Millisecond)
	}
}

// streamMsgs returns a func that reports how many messages stream name
// holds now (0 when the server does not answer in time).
func streamMsgs(js jetstream.JetStream, name string) func() uint64 {
	return func() uint64 {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		st, err := js.Stream(ctx, name)
		if err != nil {
			return 0
		}
		return st.CachedInfo().State.Msgs
	}
}

// TestPublishSnapshotThroughKills: binlog-publish --snapshot of a 40,000
// row table under live writes, SIGKILLed five times (the first once the
// stream holds 1,000 to 4,000 messages, the others at random); the fold
// of the stream (every row read once, each change applying to the row
// folded so far) equals the table, and a consumer sampling the stream's
// end never saw half a batch of a source transaction.
func TestPublishSnapshotThroughKills(t *testing.T) {
	const rows = 40000
	s, c, js, _ := setup(t)
	s.Exec(t, "USE d", "CREATE TABLE s (id INT PRIMARY KEY, v INT NOT NULL, pad VARCHAR(40) NOT NULL)",
		fmt.Sprintf("INSERT INTO s SELECT seq, 0, 'initial' FROM seq_1_to_%d", rows))
	args := []string{"--dsn", s.DSN(mariadb.ReplUser), "--nats", c.URLs(), "--stream", "S", "--start", "current",
		"--tables", "d.s", "--snapshot", "--snapshot-chunk-rows", "1000", "--quiet"}

	stop := make(chan struct{})
	var txns int
	var wg sync.WaitGroup
	wg.Go(func() { txns = snapshotWrites(t, s, rows, stop) })
	began := time.Now()
	p := startPublisher(t, args...)
	kills := 0
	var atKills []uint64 // the stream's messages at each kill
	msgsNow := streamMsgs(js, "S")
	for k := range 5 {
		if k == 0 {
			// Mid-snapshot whatever the read speed: once the stream
			// holds 1,000 to 4,000 messages.
			at := 1000 + uint64(rand.IntN(3000))
			deadline := time.Now().Add(time.Minute)
			for msgsNow() < at && time.Now().Before(deadline) {
				time.Sleep(5 * time.Millisecond)
			}
		} else {
			time.Sleep(time.Duration(300+rand.IntN(900)) * time.Millisecond)
		}
		select {
		case err := <-p.done:
			t.Fatalf("binlog-publish exited: %v: %s", err, p.stderr.String())
		default:
		}
		p.kill()
		kills++
		atKills = append(atKills, msgsNow())
		p = startPublisher(t, args...)
	}
	time.Sleep(500 * time.Millisecond)
	close(stop)
	wg.Wait()
	p.kill()
	finish(t, args)
	took := time.Since(began)

	got := natstest.Payloads(t, js, "S")
	folded, reads, err := foldRows(got)
	require.NoError(t, err)
	want := map[string]string{}
	for _, r := range s.Query(t, "SELECT id, v, pad FROM d.s") {
		want[r[0]] = r[1] + "|" + r[2]
	}
	require.True(t, maps.Equal(want, folded), "the fold (%d rows) differs from the table (%d rows)", len(folded), len(want))
	require.NotEmpty(t, atKills)
	require.Less(t, atKills[0], uint64(rows), "the first kill comes during the snapshot")
	t.Logf("%d rows at the start, %d at the end; %d write transactions; %d messages, %d of them reads; %d SIGKILLs at %v messages; %s",
		rows, len(want), txns, len(got), reads, kills, atKills, took.Round(time.Millisecond))
}
