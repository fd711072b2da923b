package publish

import (
	"bytes"
	"context"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/sirupsen/logrus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	natstest "github.com/binlogstream/binlogstream/testhelpers/nats"
)

// syncLog is a logger's output read while it is written.
type syncLog struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *syncLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *syncLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func leaseLogger(out *syncLog) logrus.FieldLogger {
	l := logrus.New()
	l.SetOutput(out)
	l.SetFormatter(&logrus.TextFormatter{DisableTimestamp: true})
	return l
}

// TestLeaseOnCluster: on an R3 bucket of a 3-node cluster, a second
// lease waits while the first is renewed, takes the key within about the
// TTL once the first holder's connection is gone (no release), and the
// first one finds its lease lost; a released lease is taken at once, and
// a lease asking for another TTL than the bucket's uses the bucket's.
func TestLeaseOnCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a 3-node NATS cluster")
	}
	c := natstest.StartCluster(t, 3)
	conn := func() jetstream.JetStream {
		nc, err := nats.Connect(c.URLs())
		require.NoError(t, err)
		t.Cleanup(nc.Close)
		js, err := jetstream.New(nc)
		require.NoError(t, err)
		return js
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const ttl = 2 * time.Second
	jsA := conn()
	var logA, logB, logC syncLog
	a, err := AcquireLease(ctx, LeaseConfig{JetStream: jsA, Key: LeaseKey("S", ""), TTL: ttl, Logger: leaseLogger(&logA)})
	require.NoError(t, err)
	assert.Equal(t, uint64(1), a.Changes())
	// Taking, waiting for and releasing the lease are what a lease does:
	// info. Losing it is a warning.
	assert.Contains(t, logA.String(), `level=info msg="lease binlog-publish-leases/S.binlog acquired`)
	kv, err := conn().KeyValue(ctx, DefaultLeaseBucket)
	require.NoError(t, err)
	st, err := kv.Status(ctx)
	require.NoError(t, err)
	assert.Equal(t, ttl, st.TTL())
	assert.Equal(t, 3, st.(*jetstream.KeyValueBucketStatus).StreamInfo().Config.Replicas)

	got := make(chan *Lease, 1)
	go func() {
		b, err := AcquireLease(ctx, LeaseConfig{JetStream: conn(), Key: LeaseKey("S", ""), TTL: ttl, Logger: leaseLogger(&logB)})
		assert.NoError(t, err)
		got <- b
	}()
	select {
	case <-got:
		t.Fatal("a second lease acquired while the first is renewed")
	case <-time.After(2 * ttl):
	}
	require.NoError(t, a.Check())
	assert.Contains(t, logB.String(), "is held by host=")
	assert.Regexp(t, `(?m)^level=info msg="lease \S+ is held by host=.*: waiting"$`, logB.String())

	killed := time.Now()
	jsA.Conn().Close() // the holder is gone without a release
	a.mu.Lock()
	renewed := a.state.since // the send time of a's last renewal
	a.mu.Unlock()
	var b *Lease
	select {
	case b = <-got:
	case <-time.After(30 * time.Second):
		t.Fatal("the standby did not take the lease within 30 s")
	}
	takeover, acquired := time.Since(killed), time.Now()
	select {
	case <-a.Lost():
	case <-time.After(ttl):
		t.Fatal("the first holder did not find its lease lost")
	}
	assert.ErrorIs(t, a.Check(), ErrLeaseLost)
	assert.Equal(t, uint64(2), a.Changes())
	assert.Regexp(t, `(?m)^level=warning msg="lease \S+ lost: `, logA.String())
	assert.False(t, acquired.Before(renewed.Add(ttl)), "the standby took the lease %s after the holder's last renewal, before the TTL", acquired.Sub(renewed))
	t.Logf("the standby took the lease %s after the holder's connection closed, %s after its last renewal (TTL %s)",
		takeover.Round(time.Millisecond), acquired.Sub(renewed).Round(time.Millisecond), ttl)

	// A release hands the lease over at once; the bucket's TTL wins.
	go func() {
		c, err := AcquireLease(ctx, LeaseConfig{JetStream: conn(), Key: LeaseKey("S", ""), TTL: 7 * time.Second, Logger: leaseLogger(&logC)})
		assert.NoError(t, err)
		got <- c
	}()
	time.Sleep(ttl)
	released := time.Now()
	require.NoError(t, b.Release(ctx))
	assert.ErrorIs(t, b.Check(), ErrLeaseLost)
	assert.Equal(t, uint64(2), b.Changes())
	var lc *Lease
	select {
	case lc = <-got:
	case <-time.After(10 * time.Second):
		t.Fatal("no takeover after a release")
	}
	handover := time.Since(released)
	assert.Less(t, handover, ttl, "a released lease is taken before its TTL")
	assert.Equal(t, ttl, lc.TTL())
	assert.Contains(t, logC.String(), "expires keys after 2s")
	require.NoError(t, lc.Release(ctx))
	assert.Contains(t, logC.String(), `level=info msg="lease binlog-publish-leases/S.binlog released"`)
	t.Logf("after a release, the standby took the lease in %s", handover.Round(time.Millisecond))
}
