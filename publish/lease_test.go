package publish

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"regexp"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func at(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }

// TestLeaseStateRenews: a holder renews every TTL/3; each renewal moves
// the lease's end to its send time plus TTL less the margin.
func TestLeaseStateRenews(t *testing.T) {
	s := leaseState{ttl: 3 * time.Second}
	s.acquired(7, at(0))
	wait, err := s.next(at(0))
	require.NoError(t, err)
	assert.Equal(t, time.Second, wait)
	require.NoError(t, s.check(at(2399)))
	assert.ErrorIs(t, s.check(at(2400)), ErrLeaseLost)

	wait, err = s.next(at(1000))
	require.NoError(t, err)
	assert.Zero(t, wait)
	require.NoError(t, s.renewed(8, at(1000), at(1010), nil))
	assert.Equal(t, uint64(8), s.rev)
	require.NoError(t, s.check(at(3399)))
	assert.Error(t, s.check(at(3400)))
	wait, err = s.next(at(1010))
	require.NoError(t, err)
	assert.Equal(t, 990*time.Millisecond, wait)
}

// TestLeaseStateRetriesUntilItsEnd: a renewal that fails without an
// answer (no leader, a timeout) is tried again every TTL/10 until the
// lease's end, then the lease is lost.
func TestLeaseStateRetriesUntilItsEnd(t *testing.T) {
	s := leaseState{ttl: 3 * time.Second}
	s.acquired(7, at(0))
	timeout := fmt.Errorf("update: %w", jetstream.ErrNoStreamResponse)
	now := 1000
	for {
		wait, err := s.next(at(now))
		if err != nil {
			assert.ErrorIs(t, err, ErrLeaseLost)
			assert.Contains(t, err.Error(), "not renewed within its TTL of 3s")
			break
		}
		now += int(wait / time.Millisecond)
		if err := s.renewed(0, at(now), at(now+100), timeout); err != nil {
			assert.ErrorIs(t, err, ErrLeaseLost)
			break
		}
		now += 100
		require.Less(t, now, 2500, "the lease must end at 2.4 s")
	}
	assert.GreaterOrEqual(t, now, 2300)
	assert.ErrorIs(t, s.check(at(now)), ErrLeaseLost)
	// Lost for good: a later success does not bring it back.
	assert.Error(t, s.renewed(9, at(now), at(now), nil))
	assert.ErrorIs(t, s.check(at(now)), ErrLeaseLost)

	// A retry that succeeds before the end keeps the lease.
	s = leaseState{ttl: 3 * time.Second}
	s.acquired(7, at(0))
	require.NoError(t, s.renewed(0, at(1000), at(1500), timeout))
	wait, err := s.next(at(1500))
	require.NoError(t, err)
	assert.Equal(t, 0*time.Millisecond, wait) // 1000 + 300 is past
	wait, err = s.next(at(1200))
	require.NoError(t, err)
	assert.Equal(t, 100*time.Millisecond, wait)
	require.NoError(t, s.renewed(8, at(1600), at(1610), nil))
	require.NoError(t, s.check(at(3999)))
}

// TestLeaseStateLostToAnotherHolder: a renewal refused for its revision
// (another publisher created the key after it expired) ends the lease at
// once, even well before its end.
func TestLeaseStateLostToAnotherHolder(t *testing.T) {
	s := leaseState{ttl: 3 * time.Second}
	s.acquired(7, at(0))
	refused := fmt.Errorf("nats: API error: code=400 err_code=10164: %w", jetstream.ErrKeyRevisionMismatch)
	err := s.renewed(0, at(1000), at(1001), refused)
	require.ErrorIs(t, err, ErrLeaseLost)
	assert.Contains(t, err.Error(), "another publisher holds it")
	assert.ErrorIs(t, s.check(at(1002)), ErrLeaseLost)
	_, err = s.next(at(1002))
	assert.ErrorIs(t, err, ErrLeaseLost)
}

// TestLeaseStatePausedHolder: a holder paused past its lease's end (a
// SIGSTOP, a long GC pause) finds it lost on waking, before it tries to
// renew or publish.
func TestLeaseStatePausedHolder(t *testing.T) {
	s := leaseState{ttl: 3 * time.Second}
	s.acquired(7, at(0))
	require.NoError(t, s.check(at(900)))
	wake := at(9000)
	_, err := s.next(wake)
	require.ErrorIs(t, err, ErrLeaseLost)
	assert.ErrorIs(t, s.check(wake), ErrLeaseLost)
}

// holderState is what the simulation drives: leaseState, or the
// negative control.
type holderState interface {
	acquired(rev uint64, sent time.Time)
	next(now time.Time) (time.Duration, error)
	renewed(rev uint64, sent, now time.Time, err error) error
	check(now time.Time) error
}

// naiveLease is the negative control: it holds a lease from its
// acquisition until a renewal is refused, whatever the clock says.
type naiveLease struct {
	ttl   time.Duration
	rev   uint64
	since time.Time
	err   error
}

func (n *naiveLease) acquired(rev uint64, sent time.Time) { n.rev, n.since, n.err = rev, sent, nil }
func (n *naiveLease) check(time.Time) error               { return n.err }
func (n *naiveLease) next(now time.Time) (time.Duration, error) {
	return max(0, n.since.Add(n.ttl/3).Sub(now)), n.err
}
func (n *naiveLease) renewed(rev uint64, sent, _ time.Time, err error) error {
	if errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
		n.err = ErrLeaseLost
	} else if err == nil {
		n.rev, n.since = rev, sent
	}
	return n.err
}

// simKV is one key of a KV bucket with a TTL, as the server keeps it:
// a write lands after it is sent, and the key expires ttl after the
// last write landed.
type simKV struct {
	ttl    time.Duration
	rev    uint64
	landed time.Time
	held   bool
}

func (kv *simKV) present(at time.Time) bool { return kv.held && at.Before(kv.landed.Add(kv.ttl)) }

// write is a Create (rev 0) or an Update at rev, landing at at.
func (kv *simKV) write(at time.Time, rev uint64) (uint64, error) {
	if rev == 0 && kv.present(at) || rev != 0 && (!kv.present(at) || kv.rev != rev) {
		return 0, fmt.Errorf("wrong last sequence: %w", jetstream.ErrKeyRevisionMismatch)
	}
	kv.rev++
	kv.landed, kv.held = at, true
	return kv.rev, nil
}

// simulateLease runs two publishers on one lease for ten minutes of
// simulated time, each paused now and then for up to twice the TTL and
// losing a tenth of its renewals, and counts the 10 ms steps at which
// both were running and both held the lease by their own state: what
// would let two publish at once.
func simulateLease(seed uint64, newState func(ttl time.Duration) holderState) (overlaps, acquisitions int) {
	const ttl = 3 * time.Second
	r := rand.New(rand.NewPCG(seed, 1))
	kv := &simKV{ttl: ttl}
	type proc struct {
		st       holderState
		rev      uint64
		pausedTo time.Time
		wakeAt   time.Time
	}
	procs := []*proc{{}, {}}
	const step = 10 * time.Millisecond
	for now := at(0); now.Before(at(600_000)); now = now.Add(step) {
		holding := 0
		for _, p := range procs {
			if now.Before(p.pausedTo) {
				continue
			}
			if p.st != nil && p.st.check(now) == nil {
				holding++
			}
			if r.IntN(500) == 0 {
				p.pausedTo = now.Add(time.Duration(r.Int64N(int64(2 * ttl))))
				continue
			}
			if now.Before(p.wakeAt) {
				continue
			}
			lat := time.Duration(r.Int64N(int64(50 * time.Millisecond)))
			if p.st == nil {
				if rev, err := kv.write(now.Add(lat), 0); err == nil {
					p.st, p.rev = newState(ttl), rev
					p.st.acquired(rev, now)
					acquisitions++
				}
				p.wakeAt = now.Add(ttl / 10)
				continue
			}
			wait, err := p.st.next(now)
			if err != nil {
				p.st = nil
				continue
			}
			if wait > 0 {
				p.wakeAt = now.Add(wait)
				continue
			}
			rev, err := uint64(0), error(jetstream.ErrNoStreamResponse) // the answer lost
			if r.IntN(10) != 0 {
				rev, err = kv.write(now.Add(lat), p.rev)
			}
			if err == nil {
				p.rev = rev
			}
			if p.st.renewed(rev, now, now.Add(2*lat), err) != nil {
				p.st = nil
			}
			p.wakeAt = now.Add(2 * lat)
		}
		if holding > 1 {
			overlaps++
		}
	}
	return overlaps, acquisitions
}

// TestLeaseSimulation: two publishers paused at random and losing
// renewals never both hold the lease by their own state, while the
// lease changes hands many times; the negative control, a holder that
// trusts its last renewal until one is refused, holds it together with
// the other publisher after a pause.
func TestLeaseSimulation(t *testing.T) {
	total := 0
	for seed := range uint64(20) {
		overlaps, acq := simulateLease(seed, func(ttl time.Duration) holderState { return &leaseState{ttl: ttl} })
		assert.Zero(t, overlaps, "seed %d: steps with two holders", seed)
		assert.Greater(t, acq, 20, "seed %d: the lease must change hands", seed)
		total += acq
	}
	naive := 0
	for seed := range uint64(20) {
		overlaps, _ := simulateLease(seed, func(ttl time.Duration) holderState { return &naiveLease{ttl: ttl} })
		naive += overlaps
	}
	assert.Positive(t, naive, "the negative control must find two holders")
	t.Logf("%d acquisitions over 20 runs, never two holders; negative control: %d steps of 10 ms with two holders", total, naive)
}

// TestLeaseStateRelease: a released lease is not held.
func TestLeaseStateRelease(t *testing.T) {
	s := leaseState{ttl: 3 * time.Second}
	s.acquired(7, at(0))
	s.release()
	err := s.check(at(1))
	assert.ErrorIs(t, err, ErrLeaseLost)
	assert.True(t, errors.Is(err, errReleased))
}

// TestLeaseKey: the default key is a valid KV key, one per stream and
// prefix.
func TestLeaseKey(t *testing.T) {
	valid := regexp.MustCompile(`^[-/_=\.a-zA-Z0-9]+$`)
	seen := map[string]string{}
	for _, c := range [][2]string{{"BINLOG", ""}, {"BINLOG", "binlog"}, {"BINLOG", "a=b"}, {"BINLOG", "a%3Db"}, {"S1", "p.q"}, {"S1.p", "q"}, {"é", "_"}, {"", ""}} {
		k := LeaseKey(c[0], c[1])
		assert.Regexp(t, valid, k, "%q", c)
		assert.True(t, validKey(k), "%q", c)
		if prev, ok := seen[k]; ok && prev != c[0]+"\x00"+c[1] && c[1] != "" && c[1] != DefaultPrefix {
			t.Errorf("%q and %q share the key %s", prev, c, k)
		}
		seen[k] = c[0] + "\x00" + c[1]
	}
	assert.Equal(t, "BINLOG.binlog", LeaseKey("BINLOG", ""))
	assert.Equal(t, "S1.p=2Eq", LeaseKey("S1", "p.q"))
	for _, k := range []string{"", ".a", "a.", "a b", "a*", "a>", "é"} {
		assert.False(t, validKey(k), "%q", k)
	}
	_, err := AcquireLease(t.Context(), LeaseConfig{Key: "a b"})
	assert.ErrorContains(t, err, `lease key "a b"`)
}
