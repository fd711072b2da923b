package main

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/binlogstream/binlogstream"
)

// gateEvent is one event of a fake stream: [start, end), and whether a
// source transaction is open after it.
type gateEvent struct {
	start, end uint64
	inTxn      bool
}

func pos(o uint64) binlogstream.Position { return binlogstream.Position{File: "b.000001", Offset: o} }

// fakeApplier feeds events through the gate as the applier does and
// records which it handled.
type fakeApplier struct {
	g       *gate
	mu      sync.Mutex
	handled []uint64 // ends of the handled events
	feed    chan gateEvent
	done    chan error
}

func startFake(t *testing.T, g *gate) *fakeApplier {
	f := &fakeApplier{g: g, feed: make(chan gateEvent), done: make(chan error, 1)}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go func() {
		for ev := range f.feed {
			if err := g.enter(ctx, pos(ev.start), pos(ev.end)); err != nil {
				f.done <- err
				return
			}
			f.mu.Lock()
			f.handled = append(f.handled, ev.end)
			f.mu.Unlock()
			g.leave(pos(ev.end), !ev.inTxn)
		}
		f.done <- nil
	}()
	return f
}

// send hands events to the applier without waiting for their handling.
func (f *fakeApplier) send(evs ...gateEvent) {
	go func() {
		for _, ev := range evs {
			f.feed <- ev
		}
	}()
}

func (f *fakeApplier) ends() []uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]uint64(nil), f.handled...)
}

// txn is a source transaction from a to b in three events, the last
// ending it.
func txn(a, b uint64) []gateEvent {
	m := a + (b-a)/2
	return []gateEvent{{a, a + 1, true}, {a + 1, m, true}, {m, b, false}}
}

func events(txns ...[]gateEvent) []gateEvent {
	var out []gateEvent
	for _, t := range txns {
		out = append(out, t...)
	}
	return out
}

// TestGateAlignsAtTheSourcePosition: held, then aligned to 300, the
// applier handles every event of the transactions up to it, none after,
// and stays there until released; then it goes on.
func TestGateAlignsAtTheSourcePosition(t *testing.T) {
	ctx := context.Background()
	g := newGate(pos(100))
	f := startFake(t, g)
	release, err := g.hold(ctx)
	require.NoError(t, err)
	f.send(events(txn(100, 200), txn(200, 300), []gateEvent{{300, 300, false}}, txn(300, 400))...)
	time.Sleep(20 * time.Millisecond)
	require.Empty(t, f.ends(), "a held applier handles nothing")

	at, ok, err := g.align(ctx, pos(300))
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, pos(300), at)
	// The Progress at 300 changes nothing: handled or not, the
	// target is at 300.
	got := f.ends()
	require.Equal(t, []uint64{101, 150, 200, 201, 250, 300}, got[:6])
	for _, end := range got {
		require.LessOrEqual(t, end, uint64(300))
	}
	time.Sleep(20 * time.Millisecond)
	require.Len(t, f.ends(), len(got), "an aligned applier waits for the release")

	release()
	require.Eventually(t, func() bool { return len(f.ends()) == 10 }, 5*time.Second, time.Millisecond)
}

// TestGateHoldsOnlyAtABoundary: a hold asked in the middle of a source
// transaction takes effect after its last event.
func TestGateHoldsOnlyAtABoundary(t *testing.T) {
	ctx := context.Background()
	g := newGate(pos(100))
	f := startFake(t, g)
	f.send(txn(100, 200)[0])
	require.Eventually(t, func() bool { return len(f.ends()) == 1 }, 5*time.Second, time.Millisecond)
	held := make(chan func())
	go func() {
		release, err := g.hold(ctx)
		if err == nil {
			held <- release
		}
	}()
	select {
	case <-held:
		t.Fatal("held inside a source transaction")
	case <-time.After(20 * time.Millisecond):
	}
	f.send(append(txn(100, 200)[1:], txn(200, 300)...)...)
	release := <-held
	require.Equal(t, []uint64{101, 150, 200}, f.ends(), "held right after the transaction's end")
	release()
}

// TestGateIdle: an applier idle exactly at the position is aligned at
// once; one idle before it waits for the stream to get there; one past
// it is reported where it is, not aligned.
func TestGateIdle(t *testing.T) {
	ctx := context.Background()
	g := newGate(pos(100))
	f := startFake(t, g)
	f.send(txn(100, 200)...)
	require.Eventually(t, func() bool { return len(f.ends()) == 3 }, 5*time.Second, time.Millisecond)

	release, err := g.hold(ctx)
	require.NoError(t, err)
	at, ok, err := g.align(ctx, pos(200))
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, pos(200), at)
	release()

	release, err = g.hold(ctx)
	require.NoError(t, err)
	aligned := make(chan bool, 1)
	go func() {
		_, ok, _ := g.align(ctx, pos(300))
		aligned <- ok
	}()
	time.Sleep(20 * time.Millisecond)
	require.Empty(t, aligned, "aligned before the stream reached the position")
	f.send(txn(200, 300)...)
	require.True(t, <-aligned)
	require.Equal(t, uint64(300), f.ends()[len(f.ends())-1])
	release()

	release, err = g.hold(ctx)
	require.NoError(t, err)
	at, ok, err = g.align(ctx, pos(250))
	require.NoError(t, err)
	require.False(t, ok, "the applier is past 250")
	require.Equal(t, pos(300), at)
	release()
}

// TestGateStreamEnded: a verifier waiting for a position the stream
// never reaches gets the gate's error once the stream stops.
func TestGateStreamEnded(t *testing.T) {
	ctx := context.Background()
	g := newGate(pos(100))
	_ = startFake(t, g)
	release, err := g.hold(ctx)
	require.NoError(t, err)
	errc := make(chan error, 1)
	go func() {
		_, _, err := g.align(ctx, pos(900))
		errc <- err
	}()
	time.Sleep(20 * time.Millisecond)
	g.close(nil)
	require.ErrorIs(t, <-errc, errStreamEnded)
	release()
}
