package readahead

import (
	"context"

	"github.com/go-mysql-org/go-mysql/replication"

	"github.com/binlogstream/binlogstream/internal/rows"
)

// Cursor serves a Queue's events one at a time, in order, on the
// consumer's goroutine: it takes a whole batch from the queue at once and
// hands its events out, each once its rows are decoded (Decoder.Wait).
// Both sources' streams are a Cursor over the queue their reader fills.
type Cursor struct {
	Q   *Queue
	Dec *Decoder // nil: the rows come decoded
	// OnWait, when set, is called before and after each wait for a batch,
	// so a watchdog can tell time spent waiting from time spent serving.
	OnWait func()
	// TakeErr, when set, may replace an error of the queue (a watchdog's
	// reason for closing it, say); ctx is Next's.
	TakeErr func(ctx context.Context, err error) error

	batch []*replication.BinlogEvent // batch[pos:] are still to serve; served slots are cleared
	pos   int
	arena *rows.Arena // of the rows of the event Next returned last (RecycleRows)
}

// Next returns the next event, its rows decoded, or the queue's error.
func (c *Cursor) Next(ctx context.Context) (*replication.BinlogEvent, error) {
	ev, _, err := c.NextOrIdle(ctx, nil)
	return ev, err
}

// NextOrIdle is Next that also returns (nil, true, nil) when wake is
// closed while nothing is queued: the reader has handed over every event
// it had. The cursor stays usable.
func (c *Cursor) NextOrIdle(ctx context.Context, wake <-chan struct{}) (*replication.BinlogEvent, bool, error) {
	ev, err := c.take(ctx, wake)
	if err == nil && ev == nil {
		return nil, true, nil
	}
	if err == nil && c.Dec != nil {
		c.arena, err = c.Dec.Wait(ev)
	}
	if err != nil {
		return nil, false, err
	}
	return ev, false, nil
}

// TakeArena returns the arena of the rows of the event Next returned
// last (nil when the source does not recycle), once.
func (c *Cursor) TakeArena() *rows.Arena {
	a := c.arena
	c.arena = nil
	return a
}

// take returns the next event; nil, nil when wake closed first.
func (c *Cursor) take(ctx context.Context, wake <-chan struct{}) (*replication.BinlogEvent, error) {
	if c.pos < len(c.batch) {
		ev := c.batch[c.pos]
		c.batch[c.pos] = nil
		c.pos++
		return ev, nil
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if c.OnWait != nil {
		c.OnWait()
	}
	batch, err := c.Q.TakeOrWake(c.batch, ctx.Done(), wake)
	if c.OnWait != nil {
		c.OnWait()
	}
	if err == nil && batch == nil {
		if err = ctx.Err(); err == nil {
			return nil, nil // woken
		}
	}
	if err != nil {
		if c.TakeErr != nil {
			err = c.TakeErr(ctx, err)
		}
		return nil, err
	}
	c.batch, c.pos = batch, 1
	ev := batch[0]
	batch[0] = nil
	return ev, nil
}
