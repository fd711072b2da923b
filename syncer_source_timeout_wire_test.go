package binlogstream_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/binlogstream/binlogstream"
	"github.com/binlogstream/binlogstream/internal/fakeprimary"
	th "github.com/binlogstream/binlogstream/testhelpers"
)

func timeoutSource(t *testing.T, p *fakeprimary.Primary, readTimeout time.Duration) binlogstream.Source {
	t.Helper()
	src, err := binlogstream.NewSyncerSource(binlogstream.SyncerConfig{
		DSN:      binlogstream.DSN{User: p.User(), Password: p.Password(), Host: p.Host(), Port: p.Port()},
		ServerID: 4243, Flavor: string(p.Binlog().Flavor),
		HeartbeatPeriod: 50 * time.Millisecond, ReadTimeout: readTimeout,
	})
	require.NoError(t, err)
	return src
}

// TestWireReadTimeout: the server stalls mid-stream, heartbeats included,
// with the connection open. ReadTimeout declares it dead, the streamer
// reconnects from its safe point, and the output is exactly once.
func TestWireReadTimeout(t *testing.T) {
	sc := wireScenarios(t)[1]
	p := startPrimary(t, sc.bl)
	p.InjectFaults(fakeprimary.Fault{AfterEvents: 9, Stall: true})
	go func() { // release the stall for good once the streamer gave up on it
		for len(p.Dumps()) < 2 {
			time.Sleep(time.Millisecond)
		}
		p.Unstall()
	}()
	ref := runWire(t, th.NewFakeSource(sc.bl), sc.start(), len(sc.bl.Events))
	r := runWire(t, timeoutSource(t, p, 300*time.Millisecond), sc.start(), len(sc.bl.Events))
	require.ErrorIs(t, r.err, context.Canceled)
	assert.Equal(t, ref.entries, r.entries)
	assert.Equal(t, uint64(1), r.stats.Reconnects, "the stalled connection was given up once")
}

// TestWireSlowListenerIsNotATimeout: a listener that takes longer than
// ReadTimeout on one event does not make the connection count as dead.
func TestWireSlowListenerIsNotATimeout(t *testing.T) {
	sc := wireScenarios(t)[0]
	p := startPrimary(t, sc.bl)
	s, err := binlogstream.NewBinlogStreamer(binlogstream.Config{Source: timeoutSource(t, p, 200*time.Millisecond), Start: sc.start()})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	n := 0
	s.AddListener(func(context.Context, binlogstream.Event) error {
		if n++; n == 3 {
			time.Sleep(600 * time.Millisecond)
		}
		if n == len(sc.bl.Events) {
			cancel()
		}
		return nil
	})
	require.ErrorIs(t, s.Run(ctx), context.Canceled)
	assert.Equal(t, uint64(0), s.Stats().Reconnects)
	assert.Len(t, p.Dumps(), 1)
}
