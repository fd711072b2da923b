package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/binlogstream/binlogstream"
	"github.com/binlogstream/binlogstream/publish"
	th "github.com/binlogstream/binlogstream/testhelpers"
	"github.com/binlogstream/binlogstream/testhelpers/mariadb"
	natstest "github.com/binlogstream/binlogstream/testhelpers/nats"
)

// BenchmarkRealPublish: a real MariaDB binlog of a mixed workload (benchTxns)
// published into a 3-node JetStream cluster, to an R1 and an R3 stream,
// against the engine's own limit: a bare nats.go async-publish loop of the
// same messages (subjects, payloads, Nats-Msg-Ids) to a stream of the same
// configuration. The contenders alternate in every iteration, each on a
// fresh stream.
//
//   - library-R1, library-R3: publish.Publisher fed the binlog's events,
//     held in memory (formatting, ids, fenced atomic batches), from Open
//     to the last Flush.
//   - command-R1, command-R3: binlog-publish --stop-at-current from the
//     real server, process start included.
//   - lag-R3: binlog-publish running while transactions of the same mix
//     commit at a steady pace; the time from each commit returning to its
//     last row reaching a consumer of the stream, p50 and p99.
//   - kafka: kafka.Publisher into kfake in --format lines and debezium,
//     each against a bare franz-go transactional produce loop of its
//     records (benchKafka).
func BenchmarkRealPublish(b *testing.B) {
	mariadb.Require(b)
	s := mariadb.Start(b, mariadb.Options{})
	s.Exec(b, "CREATE DATABASE d", "USE d",
		"CREATE TABLE t (id INT PRIMARY KEY, a INT, b VARCHAR(40), c VARCHAR(60), d INT)",
		"CREATE TABLE w (txn INT, k INT, n INT, pad VARCHAR(40), PRIMARY KEY (txn, k))")
	file, pos := s.MasterStatus(b)
	start := binlogstream.Position{File: file, Offset: pos}
	t0 := time.Now()
	rows := benchWorkload(b, s)
	end, endPos := s.MasterStatus(b)
	b.Logf("workload: %d transactions, %d row changes, written in %s", len(benchTxns()), rows, time.Since(t0).Round(time.Millisecond))
	events := captureEvents(b, s, start, binlogstream.Position{File: end, Offset: endPos})

	c := natstest.StartCluster(b, 3)
	nc := c.Connect(b)
	js, err := jetstream.New(nc)
	if err != nil {
		b.Fatal(err)
	}
	// The messages the bare loop sends: what the library stores.
	msgs := func() []*nats.Msg {
		runLibrary(b, js, "REF", 1, events, start)
		defer deleteStream(b, js, "REF")
		return natstest.Messages(b, js, "REF")
	}()
	b.Logf("%d messages, %.1f MB of payload", len(msgs), float64(payloadBytes(msgs))/1e6)

	for _, replicas := range []int{1, 3} {
		b.Run(fmt.Sprintf("library-R%d", replicas), func(b *testing.B) {
			compareToBare(b, js, replicas, msgs, rows, func(name string) {
				runLibrary(b, js, name, replicas, events, start)
			})
		})
	}
	bin := th.Command(b, "binlog-publish")
	for _, replicas := range []int{1, 3} {
		b.Run(fmt.Sprintf("command-R%d", replicas), func(b *testing.B) {
			compareToBare(b, js, replicas, msgs, rows, func(name string) {
				createStream(b, js, name, replicas) // used as it is
				cmd := exec.Command(bin, "--dsn", s.DSN(mariadb.ReplUser), "--nats", c.URLs(), "--stream", name,
					"--start", start.String(), "--stop-at-current", "--quiet")
				if out, err := cmd.CombinedOutput(); err != nil {
					b.Fatalf("binlog-publish: %v: %s", err, out)
				}
			})
		})
	}
	b.Run("lag-R3", func(b *testing.B) { benchLag(b, s, c, js, bin) })
	b.Run("kafka", func(b *testing.B) { benchKafka(b, events, start, rows) })
}

// benchTxn is one source transaction of the benchmark's workload.
type benchTxn struct {
	insert int // rows inserted into d.t
	update int // rows of d.t updated
}

// benchTxns is the mixed workload, in a fixed shuffled order: many small
// transactions and a few large ones (three over publish.MaxBatch), so
// that about a quarter of the rows are in transactions of 1 to 5 rows.
func benchTxns() []benchTxn {
	var txns []benchTxn
	add := func(n int, t benchTxn) {
		for range n {
			txns = append(txns, t)
		}
	}
	add(6000, benchTxn{insert: 1})
	add(2000, benchTxn{insert: 5})
	add(1000, benchTxn{insert: 1, update: 1})
	add(300, benchTxn{insert: 50})
	add(100, benchTxn{update: 200})
	add(3, benchTxn{insert: 3000})
	r := rand.New(rand.NewPCG(1, 2))
	r.Shuffle(len(txns), func(i, j int) { txns[i], txns[j] = txns[j], txns[i] })
	return txns
}

// benchWorkload commits benchTxns on d.t and returns the row changes.
func benchWorkload(b *testing.B, s *mariadb.Server) (rows int) {
	c := s.Conn(b, "root")
	if _, err := c.Execute("USE d"); err != nil {
		b.Fatal(err)
	}
	next := 1
	for _, t := range benchTxns() {
		var sql []string
		if t.update > 0 && next > t.update {
			lo := 1 + (next*7919)%(next-t.update)
			sql = append(sql, fmt.Sprintf("UPDATE t SET a = a + 1, b = CONCAT('u-', id) WHERE id BETWEEN %d AND %d", lo, lo+t.update-1))
			rows += t.update
		}
		if t.insert > 0 {
			sql = append(sql, fmt.Sprintf("INSERT INTO t SELECT seq, seq*7, CONCAT('name-', seq), REPEAT(CHAR(97 + seq %% 26), 5 + seq %% 40), seq %% 1000 FROM seq_%d_to_%d",
				next, next+t.insert-1))
			next += t.insert
			rows += t.insert
		}
		if len(sql) > 1 {
			sql = append([]string{"BEGIN"}, append(sql, "COMMIT")...)
		}
		for _, q := range sql {
			if _, err := c.Execute(q); err != nil {
				b.Fatalf("%s: %v", q, err)
			}
		}
	}
	return rows
}

// captureEvents streams the binlog from start to end as binlog-publish
// does (schema snapshot on) and keeps the events.
func captureEvents(b *testing.B, s *mariadb.Server, start, end binlogstream.Position) []binlogstream.Event {
	o := options{DSN: binlogstream.DSN{User: s.ReplUser(), Password: s.ReplPassword(), Host: s.Host(), Port: uint16(s.Port())}, ServerID: 77}
	src, err := binlogstream.NewSyncerSource(o.syncerConfig(o.DSN, mysql.MariaDBFlavor))
	if err != nil {
		b.Fatal(err)
	}
	st, err := binlogstream.NewBinlogStreamer(binlogstream.Config{Source: src, Start: binlogstream.StartAt(start), Schema: &binlogstream.SchemaConfig{Snapshot: true}})
	if err != nil {
		b.Fatal(err)
	}
	st.StopAt(end)
	var events []binlogstream.Event
	st.AddListener(func(_ context.Context, ev binlogstream.Event) error {
		events = append(events, ev)
		return nil
	})
	if err := st.Run(context.Background()); err != nil {
		b.Fatal(err)
	}
	_ = st.Close()
	return events
}

// runLibrary publishes events into a new stream name of replicas.
func runLibrary(b *testing.B, js jetstream.JetStream, name string, replicas int, events []binlogstream.Event, start binlogstream.Position) {
	ctx := context.Background()
	p, err := publish.Open(ctx, publish.Config{JetStream: js, Stream: name, Replicas: replicas})
	if err != nil {
		b.Fatal(err)
	}
	p.StartAt(binlogstream.StartAt(start))
	for _, ev := range events {
		if err := p.OnEvent(ctx, ev); err != nil {
			b.Fatal(err)
		}
	}
	if err := p.Flush(ctx); err != nil {
		b.Fatal(err)
	}
}

// streamConfig is the configuration Open gives a stream it creates.
func streamConfig(name string, replicas int) jetstream.StreamConfig {
	return jetstream.StreamConfig{Name: name, Subjects: []string{publish.DefaultPrefix + ".>"}, Replicas: replicas, AllowAtomicPublish: true}
}

func createStream(b *testing.B, js jetstream.JetStream, name string, replicas int) {
	if _, err := js.CreateStream(context.Background(), streamConfig(name, replicas)); err != nil {
		b.Fatal(err)
	}
}

func deleteStream(b *testing.B, js jetstream.JetStream, name string) {
	if err := js.DeleteStream(context.Background(), name); err != nil {
		b.Fatal(err)
	}
}

// runBare is the engine's limit: msgs async-published to a new stream of
// replicas, with their Nats-Msg-Ids, until every ack is in.
func runBare(b *testing.B, js jetstream.JetStream, name string, replicas int, msgs []*nats.Msg) {
	createStream(b, js, name, replicas)
	futures := make([]jetstream.PubAckFuture, 0, len(msgs))
	for _, m := range msgs {
		// A publisher that has the most acks outstanding waits for one
		// (a loaded machine may take longer than one stall wait).
		f, err := js.PublishMsgAsync(m, jetstream.WithStallWait(time.Minute))
		if err != nil {
			b.Fatal(err)
		}
		futures = append(futures, f)
	}
	select {
	case <-js.PublishAsyncComplete():
	case <-time.After(2 * time.Minute):
		b.Fatal("async publishes not acknowledged after 2 minutes")
	}
	for _, f := range futures {
		select {
		case err := <-f.Err():
			b.Fatal(err)
		case <-f.Ok():
		}
	}
}

// compareToBare runs libRun (which fills the stream it is given) and the bare
// loop in turns, each on a fresh stream, and checks both streams hold
// len(msgs) messages.
func compareToBare(b *testing.B, js jetstream.JetStream, replicas int, msgs []*nats.Msg, rows int, libRun func(name string)) {
	var libTime, bareTime time.Duration
	i := 0
	turn := func(name string, lib bool) {
		// The stream goes even when the turn fails: the next one's
		// subjects would overlap it.
		defer func() { _ = js.DeleteStream(context.Background(), name) }()
		t0 := time.Now()
		if lib {
			libRun(name)
			libTime += time.Since(t0)
		} else {
			runBare(b, js, name, replicas, msgs)
			bareTime += time.Since(t0)
		}
		st, err := js.Stream(context.Background(), name)
		if err != nil {
			b.Fatal(err)
		}
		if got := st.CachedInfo().State.Msgs; got != uint64(len(msgs)) {
			b.Fatalf("stream %s holds %d messages, want %d", name, got, len(msgs))
		}
	}
	for b.Loop() {
		for t := range 2 {
			turn(fmt.Sprintf("B%d_%d_%d", replicas, i, t), (i+t)%2 == 0)
		}
		i++
	}
	n := float64(b.N)
	b.ReportMetric(float64(rows)*n/libTime.Seconds(), "rows/s")
	b.ReportMetric(float64(len(msgs))*n/libTime.Seconds(), "msgs/s")
	b.ReportMetric(float64(len(msgs))*n/bareTime.Seconds(), "bare-msgs/s")
	b.ReportMetric(bareTime.Seconds()/libTime.Seconds(), "x-bare")
	b.ReportMetric(loadAverage(b), "load1")
}

func payloadBytes(msgs []*nats.Msg) (n int) {
	for _, m := range msgs {
		n += len(m.Data)
	}
	return n
}

// loadAverage is the machine's 1-minute load average (0 where there is
// no /proc/loadavg).
func loadAverage(b *testing.B) float64 {
	raw, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	f, err := strconv.ParseFloat(strings.Fields(string(raw))[0], 64)
	if err != nil {
		b.Fatal(err)
	}
	return f
}

// benchLag runs binlog-publish on an R3 stream while benchTxns-sized
// inserts into d.w commit about every 10 ms for lagDuration, and a
// consumer notes when each transaction's last row arrives.
func benchLag(b *testing.B, s *mariadb.Server, c *natstest.Cluster, js jetstream.JetStream, bin string) {
	const lagDuration = 10 * time.Second
	var all []time.Duration
	for i := 0; b.Loop(); i++ {
		name := fmt.Sprintf("LAG%d", i)
		s.Exec(b, "TRUNCATE d.w") // before the publisher's start: ids from 1 again
		createStream(b, js, name, 3)
		p := exec.Command(bin, "--dsn", s.DSN(mariadb.ReplUser), "--nats", c.URLs(), "--stream", name, "--start", "current", "--quiet")
		if err := p.Start(); err != nil {
			b.Fatal(err)
		}
		var mu sync.Mutex
		arrived := map[int]time.Time{}
		st, err := js.Stream(context.Background(), name)
		if err != nil {
			b.Fatal(err)
		}
		cons, err := st.OrderedConsumer(context.Background(), jetstream.OrderedConsumerConfig{})
		if err != nil {
			b.Fatal(err)
		}
		cc, err := cons.Consume(func(m jetstream.Msg) {
			var line struct {
				Type string
				Row  struct{ Txn, K, N int }
			}
			if json.Unmarshal(m.Data(), &line) == nil && line.Type == "insert" && line.Row.K == line.Row.N-1 {
				mu.Lock()
				arrived[line.Row.Txn] = time.Now()
				mu.Unlock()
			}
		})
		if err != nil {
			b.Fatal(err)
		}
		time.Sleep(time.Second) // binlog-publish connected
		conn := s.Conn(b, "root")
		if _, err := conn.Execute("USE d"); err != nil {
			b.Fatal(err)
		}
		committed := map[int]time.Time{}
		txns := benchTxns()
		began := time.Now()
		for id := 1; time.Since(began) < lagDuration; id++ {
			n := max(1, txns[id%len(txns)].insert+txns[id%len(txns)].update)
			q := fmt.Sprintf("INSERT INTO d.w SELECT %d, seq, %d, REPEAT('x', 20) FROM seq_0_to_%d", id, n, n-1)
			if _, err := conn.Execute(q); err != nil {
				b.Fatal(err)
			}
			committed[id] = time.Now()
			time.Sleep(10 * time.Millisecond)
		}
		deadline := time.Now().Add(time.Minute)
		for {
			mu.Lock()
			done := len(arrived) >= len(committed)
			mu.Unlock()
			if done {
				break
			}
			if time.Now().After(deadline) {
				b.Fatalf("%d of %d transactions reached the consumer after a minute", len(arrived), len(committed))
			}
			time.Sleep(50 * time.Millisecond)
		}
		cc.Stop()
		_ = p.Process.Kill()
		_ = p.Wait()
		mu.Lock()
		for id, t := range committed {
			all = append(all, max(0, arrived[id].Sub(t)))
		}
		mu.Unlock()
		deleteStream(b, js, name)
	}
	slices.Sort(all)
	b.ReportMetric(float64(all[len(all)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(all[len(all)*99/100].Microseconds())/1000, "p99-ms")
	b.ReportMetric(float64(len(all)), "txns")
	b.ReportMetric(loadAverage(b), "load1")
}
