package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/binlogstream/binlogstream/publish"
	th "github.com/binlogstream/binlogstream/testhelpers"
	"github.com/binlogstream/binlogstream/testhelpers/mariadb"
	natstest "github.com/binlogstream/binlogstream/testhelpers/nats"
)

func TestMain(m *testing.M) {
	code := m.Run()
	mariadb.Cleanup()
	th.CleanupCommand()
	if tailBin.dir != "" {
		os.RemoveAll(tailBin.dir)
	}
	os.Exit(code)
}

// tailBin is binlog-tail, built once per test process.
var tailBin struct {
	once      sync.Once
	dir, path string
	err       error
}

// tailBinary builds binlog-tail, the reference the stream must equal,
// once per test process (TestMain removes it).
func tailBinary(t *testing.T) string {
	t.Helper()
	tailBin.once.Do(func() {
		if tailBin.dir, tailBin.err = os.MkdirTemp("", "binlog-tail-bin-"); tailBin.err != nil {
			return
		}
		tailBin.path = filepath.Join(tailBin.dir, "binlog-tail")
		if out, err := exec.Command("go", "build", "-o", tailBin.path, "../binlog-tail").CombinedOutput(); err != nil {
			tailBin.err = fmt.Errorf("go build binlog-tail: %v\n%s", err, out)
		}
	})
	if tailBin.err != nil {
		t.Fatal(tailBin.err)
	}
	return tailBin.path
}

// workload runs transactions on d.w until stop is closed: each one an
// INSERT of n rows (k = 0..n-1, each row holding n), sometimes an UPDATE
// of the previous one's rows, n mostly small and now and then over
// publish.MaxBatch (a transaction split into several batches).
func workload(t *testing.T, s *mariadb.Server, stop <-chan struct{}) (txns int) {
	return workloadFrom(t, s, 1, stop)
}

// workloadFrom is workload with its transactions numbered from first
// (txn = first, first+1, ...): a second workload on a table another one
// wrote to.
func workloadFrom(t *testing.T, s *mariadb.Server, first int, stop <-chan struct{}) (txns int) {
	return runWorkload(t, s, first, false, stop)
}

// runWorkload is workloadFrom; with keys each transaction's INSERT comes
// after a DELETE of the row k = 0 of the transaction two before it and a
// change of the primary key of its row k = 1 (k becomes -2), so that
// Debezium writes deletes, tombstones and key moves, and each
// transaction still ends with the row k = n-1.
func runWorkload(t *testing.T, s *mariadb.Server, first int, keys bool, stop <-chan struct{}) (txns int) {
	sizes := []int{1, 1, 3, 10, 60, 200, 1200}
	for i := first; ; i++ {
		select {
		case <-stop:
			return i - first
		default:
		}
		n := sizes[rand.IntN(len(sizes))]
		sql := []string{"USE d", fmt.Sprintf("INSERT INTO w SELECT %d, seq, %d, REPEAT('x', 20) FROM seq_0_to_%d", i, n, n-1)}
		if keys {
			sql = []string{"USE d", "BEGIN", fmt.Sprintf("DELETE FROM w WHERE txn = %d AND k = 0", i-2),
				fmt.Sprintf("UPDATE w SET k = -2 WHERE txn = %d AND k = 1", i-2), sql[1], "COMMIT"}
		}
		if i%4 == 0 {
			sql = append(sql, fmt.Sprintf("UPDATE w SET pad = 'u' WHERE txn = %d", i-1))
		}
		// A statement that fails (a connection the loaded machine drops)
		// is left out: the reference is what the binlog holds.
		if err := s.TryExec(sql...); err != nil {
			t.Logf("workload: %v", err)
		}
		time.Sleep(time.Duration(30+rand.IntN(40)) * time.Millisecond)
	}
}

// setup starts MariaDB with d.w and a 3-node JetStream cluster, and
// returns where the binlog stands after the DDL.
func setup(t *testing.T) (*mariadb.Server, *natstest.Cluster, jetstream.JetStream, string) {
	mariadb.Require(t)
	if testing.Short() {
		t.Skip("starts MariaDB and a 3-node NATS cluster")
	}
	s := mariadb.Start(t, mariadb.Options{})
	s.Exec(t, "CREATE DATABASE d", "USE d", "CREATE TABLE w (txn INT, k INT, n INT, pad VARCHAR(40), PRIMARY KEY (txn, k))")
	file, pos := s.MasterStatus(t)
	c := natstest.StartCluster(t, 3)
	js, err := jetstream.New(c.Connect(t))
	require.NoError(t, err)
	return s, c, js, file + ":" + strconv.FormatUint(pos, 10)
}

// publisher is a binlog-publish process.
type publisher struct {
	cmd    *exec.Cmd
	stderr syncBuffer // read while the process runs
	done   chan error
}

func startPublisher(t *testing.T, args ...string) *publisher {
	return startBinary(t, th.Command(t, "binlog-publish"), args...)
}

// startBinary starts bin, a binlog-publish build, with args.
func startBinary(t *testing.T, bin string, args ...string) *publisher {
	p := &publisher{cmd: exec.Command(bin, args...), done: make(chan error, 1)}
	p.cmd.Stderr = &p.stderr
	require.NoError(t, p.cmd.Start())
	go func() { p.done <- p.cmd.Wait() }()
	return p
}

func (p *publisher) kill() {
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
}

// reference is binlog-tail's output for the binlog from start to now.
func reference(t *testing.T, s *mariadb.Server, start string) []byte {
	return tailOutput(t, "--dsn", s.DSN(mariadb.ReplUser), "--start", start)
}

// tailOutput is the output of binlog-tail --stop-at-current with args.
func tailOutput(t *testing.T, args ...string) []byte {
	out := filepath.Join(t.TempDir(), "ref.jsonl")
	cmd := exec.Command(tailBinary(t), append(args, "--out", out, "--stop-at-current", "--server-id", "91", "--quiet")...)
	b, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", b)
	want, err := os.ReadFile(out)
	require.NoError(t, err)
	return want
}

// finish runs binlog-publish up to the server's current position.
func finish(t *testing.T, args []string) {
	finishBinary(t, th.Command(t, "binlog-publish"), args)
}

// finishBinary runs bin, a binlog-publish build, up to the server's
// current position.
func finishBinary(t *testing.T, bin string, args []string) {
	p := startBinary(t, bin, append(args, "--stop-at-current")...)
	select {
	case err := <-p.done:
		require.NoError(t, err, "%s", p.stderr.String())
	case <-time.After(2 * time.Minute):
		p.kill()
		t.Fatalf("binlog-publish --stop-at-current still running after 2 minutes: %s", p.stderr.String())
	}
}

// atomicity samples the stream's last message until stop is closed and
// counts the samples that end inside a transaction other than at a
// batch boundary of a split one: a consumer never sees half a batch.
func atomicity(t *testing.T, js jetstream.JetStream, stream string, stop <-chan struct{}) (samples, torn *atomic.Int64, wg *sync.WaitGroup) {
	samples, torn, wg = &atomic.Int64{}, &atomic.Int64{}, &sync.WaitGroup{}
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			case <-time.After(10 * time.Millisecond):
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			s, err := js.Stream(ctx, stream)
			var m *jetstream.RawStreamMsg
			if err == nil {
				m, err = s.GetLastMsgForSubject(ctx, "binlog.>")
			}
			cancel()
			if err != nil {
				continue // no stream yet, or no leader during a kill
			}
			samples.Add(1)
			if !endsUnit(m) {
				torn.Add(1)
				t.Logf("the stream ends inside a batch at sequence %d: %.200s", m.Sequence, m.Data)
			}
		}
	})
	return samples, torn, wg
}

// endsUnit reports whether m is the last row of its transaction, or the
// last of a batch of a split one.
func endsUnit(m *jetstream.RawStreamMsg) bool {
	if c := m.Header.Get(publish.TxnCountHeader); c != "" {
		i, _ := strconv.Atoi(m.Header.Get(publish.TxnIndexHeader))
		n, _ := strconv.Atoi(c)
		return (i+1)%publish.MaxBatch == 0 || i+1 == n
	}
	var line struct {
		Type  string
		Row   struct{ K, N int }
		After *struct{ K, N int } // a Debezium record's
	}
	if err := json.Unmarshal(m.Data, &line); err != nil {
		return false
	}
	if m.Header.Get(publish.ResumeHeader) != "" {
		return line.After != nil && line.After.K == line.After.N-1
	}
	return line.Type != "table" && line.Row.K == line.Row.N-1
}

// TestPublishExactThroughKills: a live workload published to an R3
// stream while the publisher is SIGKILLed at random, the stream leader's
// server and the MariaDB source are SIGKILLed and restarted; the stream then equals
// binlog-tail's output line for line, and a consumer sampling it during
// the kills never saw half a batch. With --format debezium the workload
// also deletes rows and changes keys, and the stream's records equal
// binlog-tail --format debezium's (dbzStreamDiff).
func TestPublishExactThroughKills(t *testing.T) {
	for _, format := range []string{"lines", "debezium"} {
		t.Run(format, func(t *testing.T) { exactThroughKills(t, format) })
	}
}

func exactThroughKills(t *testing.T, format string) {
	s, c, js, start := setup(t)
	args := []string{"--dsn", s.DSN(mariadb.ReplUser), "--nats", c.URLs(), "--stream", "K", "--start", start, "--quiet", "--format", format}
	dbz := format == "debezium"

	stop := make(chan struct{})
	var txns int
	var wwg sync.WaitGroup
	wwg.Go(func() { txns = runWorkload(t, s, 1, dbz, stop) })
	samples, torn, swg := atomicity(t, js, "K", stop)

	began := time.Now()
	pubKills, leaderKills, sourceKills := 0, 0, 0
	p := startPublisher(t, args...)
	for round := range 8 {
		time.Sleep(time.Duration(500+rand.IntN(1500)) * time.Millisecond)
		if round == 6 {
			s.Kill()
			sourceKills++
			time.Sleep(time.Duration(300+rand.IntN(700)) * time.Millisecond)
			s.Restart(t)
			continue
		}
		if round == 2 || round == 5 {
			leader := c.StreamLeader(t, js, "K")
			leader.Kill()
			leaderKills++
			time.Sleep(time.Duration(300+rand.IntN(700)) * time.Millisecond)
			leader.Restart(t)
			continue
		}
		select {
		case err := <-p.done:
			t.Fatalf("binlog-publish exited: %v: %s", err, p.stderr.String())
		default:
		}
		p.kill()
		pubKills++
		t.Logf("publisher %d killed: %s", pubKills, p.stderr.String())
		p = startPublisher(t, args...)
	}
	close(stop)
	wwg.Wait()
	swg.Wait()
	p.kill()
	pubKills++
	finish(t, args)
	took := time.Since(began)

	var got [][]byte
	if dbz {
		want := tailOutput(t, "--dsn", s.DSN(mariadb.ReplUser), "--start", start, "--format", "debezium")
		msgs := natstest.Messages(t, js, "K")
		require.Empty(t, dbzStreamDiff(t, want, msgs))
		got = make([][]byte, len(msgs))
	} else {
		want := reference(t, s, start)
		got = natstest.Payloads(t, js, "K")
		require.Empty(t, natstest.Diff(want, got))
	}
	assert.Zero(t, torn.Load(), "samples ending inside a batch")
	assert.Positive(t, samples.Load())
	t.Logf("--format %s: %d transactions, %d messages equal to binlog-tail's lines; %d publisher SIGKILLs, %d stream-leader SIGKILLs, %d MariaDB SIGKILLs; "+
		"%d samples of the stream's end, none inside a batch; %s", format, txns, len(got), pubKills, leaderKills, sourceKills, samples.Load(), took.Round(time.Millisecond))
}

// TestNegativeControlUnfenced: the same harness finds the duplicates of
// a publisher built without what makes the stream exact (the build tag
// binlogstream_unfenced: no resume from the stream, no Nats-Msg-Id, no
// expected last sequence), SIGKILLed and restarted.
func TestNegativeControlUnfenced(t *testing.T) {
	s, c, js, start := setup(t)
	bin := filepath.Join(t.TempDir(), "binlog-publish-unfenced")
	out, err := exec.Command("go", "build", "-tags", "binlogstream_unfenced", "-o", bin, ".").CombinedOutput()
	require.NoError(t, err, "%s", out)
	stop := make(chan struct{})
	var wwg sync.WaitGroup
	wwg.Go(func() { workload(t, s, stop) })
	time.Sleep(2 * time.Second)
	close(stop)
	wwg.Wait()

	args := []string{"--dsn", s.DSN(mariadb.ReplUser), "--nats", c.URLs(), "--stream", "N", "--start", start, "--quiet"}
	for range 2 {
		p := startBinary(t, bin, args...)
		require.Eventually(t, func() bool {
			st, err := js.Stream(context.Background(), "N")
			return err == nil && st.CachedInfo().State.Msgs > 2000
		}, time.Minute, 50*time.Millisecond)
		p.kill()
	}
	cmd := exec.Command(bin, append(args, "--stop-at-current")...)
	b, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", b)

	diff := natstest.Diff(reference(t, s, start), natstest.Payloads(t, js, "N"))
	require.NotEmpty(t, diff, "an unfenced publisher restarted after kills must leave duplicates")
	assert.Contains(t, diff, "duplicated")
	t.Logf("negative control: %s", diff)
}

// TestTwoPublishersOneRefuses: two publishers started on one stream at
// once: one stops with the fencing error, and the stream is exact.
func TestTwoPublishersOneRefuses(t *testing.T) {
	s, c, js, start := setup(t)
	args := []string{"--dsn", s.DSN(mariadb.ReplUser), "--nats", c.URLs(), "--stream", "T", "--start", start, "--quiet"}
	stop := make(chan struct{})
	var wwg sync.WaitGroup
	wwg.Go(func() { workload(t, s, stop) })

	a := startPublisher(t, append(args, "--server-id", "501")...)
	b := startPublisher(t, append(args, "--server-id", "502")...)
	var loser, winner *publisher
	select {
	case <-a.done:
		loser, winner = a, b
	case <-b.done:
		loser, winner = b, a
	case <-time.After(time.Minute):
		t.Fatal("both publishers still running after a minute")
	}
	assert.Contains(t, loser.stderr.String(), "another publisher wrote to the stream")
	assert.Equal(t, 1, loser.cmd.ProcessState.ExitCode())
	time.Sleep(time.Second)
	close(stop)
	wwg.Wait()
	winner.kill()
	finish(t, args)

	want := reference(t, s, start)
	got := natstest.Payloads(t, js, "T")
	require.Empty(t, natstest.Diff(want, got))
	t.Logf("refused: %s; %d messages equal to binlog-tail's lines", strings.TrimSpace(loser.stderr.String()), len(got))
}
