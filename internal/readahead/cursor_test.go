package readahead

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCursorServesInOrderThenTheError: a cursor serves every queued
// event once, in order, across batches; waits are reported in pairs;
// the queue's error comes after the events, through TakeErr.
func TestCursorServesInOrderThenTheError(t *testing.T) {
	q := NewQueue(4, 1<<20)
	boom, mapped := errors.New("lost"), errors.New("timed out")
	waits := 0
	c := Cursor{Q: q, OnWait: func() { waits++ }, TakeErr: func(_ context.Context, err error) error {
		if errors.Is(err, boom) {
			return mapped
		}
		return err
	}}
	go func() {
		for i := 1; i <= 10; i++ {
			require.NoError(t, q.HandleEvent(queuedEvent(i)))
		}
		q.Fail(boom)
	}()
	for i := 1; i <= 10; i++ {
		ev, err := c.Next(context.Background())
		require.NoError(t, err)
		assert.EqualValues(t, i, ev.Header.LogPos)
		assert.Nil(t, c.TakeArena(), "no decoder: no arena")
	}
	_, err := c.Next(context.Background())
	assert.ErrorIs(t, err, mapped)
	assert.Zero(t, waits%2, "OnWait brackets every wait")
	assert.GreaterOrEqual(t, waits, 2*3, "10 events in batches of at most 4")

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = (&Cursor{Q: NewQueue(1, 1)}).Next(ctx)
	assert.ErrorIs(t, err, context.Canceled)
}

// TestCursorWakesWhenIdle: NextOrIdle returns idle when woken with
// nothing queued, stays usable, and serves queued events before a wake.
func TestCursorWakesWhenIdle(t *testing.T) {
	q := NewQueue(4, 1<<20)
	c := Cursor{Q: q}
	wake := make(chan struct{})
	close(wake)
	ev, idle, err := c.NextOrIdle(context.Background(), wake)
	require.NoError(t, err)
	assert.True(t, idle)
	assert.Nil(t, ev)

	require.NoError(t, q.HandleEvent(queuedEvent(1)))
	ev, idle, err = c.NextOrIdle(context.Background(), wake)
	require.NoError(t, err)
	assert.False(t, idle, "a queued event comes before the wake")
	assert.EqualValues(t, 1, ev.Header.LogPos)

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, idle, err = c.NextOrIdle(ctx, make(chan struct{}))
	assert.ErrorIs(t, err, context.Canceled)
	assert.False(t, idle)
}
