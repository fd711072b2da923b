package main

import (
	"bytes"
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
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

// leaseTTL is the tests' --lease-ttl: short, so that a takeover takes
// a few seconds.
const leaseTTL = "2s"

// syncBuffer is a process's stderr, read while it is written.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// leased is a binlog-publish process run with --lease.
type leased struct {
	name   string
	cmd    *exec.Cmd
	stderr syncBuffer
	done   chan struct{}
	err    error
}

func startLeased(t *testing.T, name, bin string, args ...string) *leased {
	p := &leased{name: name, cmd: exec.Command(bin, args...), done: make(chan struct{})}
	p.cmd.Stderr = &p.stderr
	require.NoError(t, p.cmd.Start())
	go func() {
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		_ = p.cmd.Process.Signal(syscall.SIGKILL)
		<-p.done
	})
	return p
}

func (p *leased) signal(sig syscall.Signal) { _ = p.cmd.Process.Signal(sig) }

func (p *leased) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// waitLog waits until p's stderr holds s.
func (p *leased) waitLog(t *testing.T, s string, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !strings.Contains(p.stderr.String(), s) {
		if p.exited() {
			t.Fatalf("%s exited (%v) before logging %q: %s", p.name, p.err, s, p.stderr.String())
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not log %q within %s: %s", p.name, s, d, p.stderr.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// stop sends SIGTERM and waits for a clean exit.
func (p *leased) stop(t *testing.T) {
	t.Helper()
	p.signal(syscall.SIGTERM)
	select {
	case <-p.done:
		require.NoError(t, p.err, "%s: %s", p.name, p.stderr.String())
	case <-time.After(time.Minute):
		t.Fatalf("%s still running a minute after SIGTERM: %s", p.name, p.stderr.String())
	}
}

// lastSeq is the stream's last sequence; 0 when it cannot be read.
func lastSeq(js jetstream.JetStream, stream string) uint64 {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	s, err := js.Stream(ctx, stream)
	if err != nil {
		return 0
	}
	info, err := s.Info(ctx)
	if err != nil {
		return 0
	}
	return info.State.LastSeq
}

// waitGrowth waits until the stream's last sequence is past seq and
// returns when it saw that.
func waitGrowth(t *testing.T, js jetstream.JetStream, stream string, seq uint64, d time.Duration) time.Time {
	t.Helper()
	deadline := time.Now().Add(d)
	for lastSeq(js, stream) <= seq {
		if time.Now().After(deadline) {
			t.Fatalf("stream %s still ends at %d after %s", stream, seq, d)
		}
		time.Sleep(10 * time.Millisecond)
	}
	return time.Now()
}

const (
	logAcquired = "acquired (revision"
	logWaiting  = ": waiting"
)

// leaseArgs are the flags of the lease tests' publishers, all the same
// (one --server-id as well), as a standby's would be.
func leaseArgs(s *mariadb.Server, c *natstest.Cluster, stream, start string) []string {
	return []string{"--dsn", s.DSN(mariadb.ReplUser), "--nats", c.URLs(), "--stream", stream, "--start", start, "--lease", "--lease-ttl", leaseTTL}
}

// TestStandbyTakesOverLease: an active and a standby publisher with one
// lease on one stream under a live workload; the active one is
// SIGKILLed three times, each time the standby takes over within a few
// seconds and a new standby starts; the stream then equals binlog-tail's
// output line for line.
func TestStandbyTakesOverLease(t *testing.T) {
	s, c, js, start := setup(t)
	args := leaseArgs(s, c, "L", start)
	bin := th.Command(t, "binlog-publish")
	stop := make(chan struct{})
	var wwg sync.WaitGroup
	wwg.Go(func() { workload(t, s, stop) })
	defer func() {
		select {
		case <-stop:
		default:
			close(stop)
			wwg.Wait()
		}
	}()

	active := startLeased(t, "publisher 1", bin, args...)
	active.waitLog(t, logAcquired, 30*time.Second)
	standby := startLeased(t, "publisher 2", bin, args...)
	standby.waitLog(t, logWaiting, 30*time.Second)
	waitGrowth(t, js, "L", 0, 30*time.Second)

	var acquired, published []time.Duration
	for round := range 3 {
		time.Sleep(time.Second)
		seq := lastSeq(js, "L")
		active.signal(syscall.SIGKILL)
		<-active.done
		killed := time.Now()
		seq = max(seq, lastSeq(js, "L"))
		standby.waitLog(t, logAcquired, 30*time.Second)
		acquired = append(acquired, time.Since(killed))
		published = append(published, waitGrowth(t, js, "L", seq, 30*time.Second).Sub(killed))
		active = standby
		standby = startLeased(t, "publisher "+string(rune('3'+round)), bin, args...)
		standby.waitLog(t, logWaiting, 30*time.Second)
	}
	close(stop)
	wwg.Wait()
	standby.stop(t)
	active.stop(t)
	assert.Contains(t, active.stderr.String(), "released")
	finish(t, args)

	want := reference(t, s, start)
	got := natstest.Payloads(t, js, "L")
	require.Empty(t, natstest.Diff(want, got))
	for i := range acquired {
		assert.Less(t, published[i], 30*time.Second, "takeover %d", i+1)
	}
	t.Logf("--lease-ttl %s; after each SIGKILL of the active publisher the standby held the lease after %v and published after %v; %d messages equal to binlog-tail's lines",
		leaseTTL, round(acquired), round(published), len(got))
}

func round(ds []time.Duration) []time.Duration {
	out := make([]time.Duration, len(ds))
	for i, d := range ds {
		out[i] = d.Round(time.Millisecond)
	}
	return out
}

// zombie runs the zombie case with the binary bin: the active publisher
// is SIGSTOPped until the standby has taken the lease over and
// published, then SIGCONTed. It returns both processes, the zombie
// running again.
func zombie(t *testing.T, bin string, args []string, js jetstream.JetStream, stream string) (z, standby *leased, tookOver time.Duration) {
	z = startLeased(t, "the active publisher", bin, args...)
	z.waitLog(t, logAcquired, 30*time.Second)
	standby = startLeased(t, "the standby", bin, args...)
	standby.waitLog(t, logWaiting, 30*time.Second)
	waitGrowth(t, js, stream, 0, 30*time.Second)
	time.Sleep(time.Second)

	z.signal(syscall.SIGSTOP)
	stopped := time.Now()
	standby.waitLog(t, logAcquired, 30*time.Second)
	tookOver = time.Since(stopped)
	waitGrowth(t, js, stream, lastSeq(js, stream), 30*time.Second) // the standby published
	time.Sleep(time.Second)
	z.signal(syscall.SIGCONT)
	return z, standby, tookOver
}

// TestZombieLeaseHolderStops: the active publisher SIGSTOPped past its
// lease's end, the standby takes over; SIGCONTed, the old holder (a
// zombie) stops with the lease lost or fenced (exit 1) and the stream
// equals binlog-tail's output line for line.
func TestZombieLeaseHolderStops(t *testing.T) {
	s, c, js, start := setup(t)
	args := leaseArgs(s, c, "Z", start)
	stop := make(chan struct{})
	var wwg sync.WaitGroup
	wwg.Go(func() { workload(t, s, stop) })

	z, standby, tookOver := zombie(t, th.Command(t, "binlog-publish"), args, js, "Z")
	woke := time.Now()
	select {
	case <-z.done:
	case <-time.After(30 * time.Second):
		t.Fatalf("the zombie still runs 30 s after SIGCONT: %s", z.stderr.String())
	}
	exitedAfter := time.Since(woke)
	assert.Equal(t, 1, z.cmd.ProcessState.ExitCode(), "%s", z.stderr.String())
	last := lastLine(z.stderr.String())
	assert.Regexp(t, `^binlog-publish: .*(lost the lease|another publisher wrote to the stream)`, last)
	time.Sleep(time.Second)
	close(stop)
	wwg.Wait()
	standby.stop(t)
	finish(t, args)

	want := reference(t, s, start)
	got := natstest.Payloads(t, js, "Z")
	require.Empty(t, natstest.Diff(want, got))
	t.Logf("the standby held the lease %s after the SIGSTOP; the zombie exited %s after SIGCONT: %q; %d messages equal to binlog-tail's lines",
		tookOver.Round(time.Millisecond), exitedAfter.Round(time.Millisecond), last, len(got))
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

// TestNegativeControlZombieUnguarded: the same zombie case with
// binlog-publish built with the tag binlogstream_unguarded (no lease
// check before a publish, no Nats-Msg-Id, no expected last sequence;
// it still resumes from the stream): the zombie goes on publishing next
// to the new holder and the stream holds lines twice.
func TestNegativeControlZombieUnguarded(t *testing.T) {
	s, c, js, start := setup(t)
	bin := filepath.Join(t.TempDir(), "binlog-publish-unguarded")
	out, err := exec.Command("go", "build", "-tags", "binlogstream_unguarded", "-o", bin, ".").CombinedOutput()
	require.NoError(t, err, "%s", out)
	args := leaseArgs(s, c, "U", start)
	stop := make(chan struct{})
	var wwg sync.WaitGroup
	wwg.Go(func() { workload(t, s, stop) })

	z, standby, _ := zombie(t, bin, args, js, "U")
	time.Sleep(3 * time.Second)
	close(stop)
	wwg.Wait()
	time.Sleep(time.Second)
	z.signal(syscall.SIGKILL)
	standby.signal(syscall.SIGKILL)

	diff := natstest.Diff(reference(t, s, start), natstest.Payloads(t, js, "U"))
	require.Regexp(t, `\([1-9][0-9]* duplicated`, diff, "an unguarded zombie must leave duplicates")
	t.Logf("negative control: %s", diff)
}

// TestLeaseFlags: without the flags there is no lease; --lease-key
// implies --lease.
func TestLeaseFlags(t *testing.T) {
	base := []string{"--dsn", "u@tcp(127.0.0.1:3306)/", "--nats", "nats://127.0.0.1:4222", "--stream", "S"}
	var stderr bytes.Buffer
	o, err := parseFlags(base, &stderr)
	require.NoError(t, err)
	assert.False(t, o.Lease.on)
	o, err = parseFlags(append(base, "--lease-key", "src-1", "--lease-ttl", "3s"), &stderr)
	require.NoError(t, err)
	assert.Equal(t, leaseFlags{on: true, key: "src-1", ttl: 3 * time.Second}, o.Lease)
	o, err = parseFlags(append(base, "--lease"), &stderr)
	require.NoError(t, err)
	assert.Equal(t, leaseFlags{on: true, ttl: publish.DefaultLeaseTTL}, o.Lease)
}
