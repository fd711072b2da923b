package readahead

import (
	"errors"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/replication"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func queuedEvent(i int) *replication.BinlogEvent {
	return sizedEvent(i, 100)
}

func sizedEvent(i, size int) *replication.BinlogEvent {
	return &replication.BinlogEvent{Header: &replication.EventHeader{LogPos: uint32(i), EventSize: uint32(size)}}
}

// TestEventQueueKeepsOrderAndBound: a producer and a consumer at random
// speeds, events of random sizes; every event arrives once, in order,
// never more than max events or maxBytes queued (but for one larger
// event alone), and the error comes after the events queued before it.
func TestEventQueueKeepsOrderAndBound(t *testing.T) {
	for seed := uint64(0); seed < 20; seed++ {
		r := rand.New(rand.NewPCG(seed, 3))
		const n = 3000
		max, maxBytes := 1+r.IntN(64), int64(500+r.IntN(5000))
		q := NewQueue(max, maxBytes)
		sizes := make([]int, n+1)
		for i := range sizes {
			sizes[i] = 20 + r.IntN(1000)
			if r.IntN(100) == 0 {
				sizes[i] = 10_000 // larger than maxBytes
			}
		}
		boom := errors.New("connection lost")
		go func() {
			pr := rand.New(rand.NewPCG(seed, 4))
			for i := 1; i <= n; i++ {
				if err := q.HandleEvent(sizedEvent(i, sizes[i])); err != nil {
					panic(err)
				}
				if pr.IntN(100) == 0 {
					time.Sleep(time.Duration(pr.IntN(200)) * time.Microsecond)
				}
			}
			q.Fail(boom)
		}()
		var spare []*replication.BinlogEvent
		next := 1
		for {
			got, err := q.Take(spare, nil)
			if err != nil {
				require.ErrorIs(t, err, boom)
				break
			}
			require.NotEmpty(t, got)
			require.LessOrEqual(t, len(got), max, "seed %d: the queue holds at most max", seed)
			var bytes int64
			for _, ev := range got {
				require.Equal(t, uint32(next), ev.Header.LogPos, "seed %d", seed)
				bytes += int64(ev.Header.EventSize)
				next++
			}
			if len(got) > 1 {
				require.LessOrEqual(t, bytes, maxBytes, "seed %d: at most maxBytes queued", seed)
			}
			if r.IntN(50) == 0 {
				time.Sleep(time.Duration(r.IntN(300)) * time.Microsecond)
			}
			clear(got)
			spare = got
		}
		assert.Equal(t, n+1, next, "seed %d: every event, then the error", seed)
	}
}

// TestEventQueueFailFreesBoth: a producer waiting for room and a consumer
// waiting for events both return once the queue fails; a cancelled take
// returns nothing.
func TestEventQueueFailFreesBoth(t *testing.T) {
	q := NewQueue(1, 1<<20)
	require.NoError(t, q.HandleEvent(queuedEvent(1)))
	fed := make(chan error, 1)
	go func() { fed <- q.HandleEvent(queuedEvent(2)) }() // waits: full
	select {
	case err := <-fed:
		t.Fatalf("HandleEvent returned %v on a full queue", err)
	case <-time.After(20 * time.Millisecond):
	}
	got, err := q.Take(nil, nil)
	require.NoError(t, err)
	require.Len(t, got, 1)
	require.NoError(t, <-fed, "room made: the second event is queued")

	got, err = q.Take(nil, nil)
	require.NoError(t, err)
	require.Len(t, got, 1)
	cancel := make(chan struct{})
	close(cancel)
	got, err = q.Take(nil, cancel)
	assert.Nil(t, got)
	assert.NoError(t, err, "cancelled: nothing, no error")

	waiting := make(chan error, 1)
	go func() {
		_, err := q.Take(nil, nil)
		waiting <- err
	}()
	require.NoError(t, q.HandleEvent(queuedEvent(3)))
	require.NoError(t, <-waiting)
	require.NoError(t, q.HandleEvent(queuedEvent(4)))
	go func() { fed <- q.HandleEvent(queuedEvent(5)) }() // waits: full
	go func() {                                          // takes 4 (and 5 if it was queued in time), then waits
		for {
			if _, err := q.Take(nil, nil); err != nil {
				waiting <- err
				return
			}
		}
	}()
	time.Sleep(10 * time.Millisecond)
	q.Fail(ErrClosed)
	q.Fail(errors.New("second error is ignored"))
	assert.ErrorIs(t, <-waiting, ErrClosed)
	err = <-fed
	if err != nil { // it may have found room before the failure
		assert.ErrorIs(t, err, ErrClosed)
	}
	assert.ErrorIs(t, q.HandleEvent(queuedEvent(6)), ErrClosed)
}
