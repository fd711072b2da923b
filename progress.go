package binlogstream

import (
	"context"
	"io"
	"time"

	"github.com/go-mysql-org/go-mysql/replication"
)

// Dump writes a line for go-mysql's Dump convention.
func (p *Progress) Dump(w io.Writer) {
	if p.Idle {
		_, _ = io.WriteString(w, "=== Progress (idle) ===\n")
		return
	}
	_, _ = io.WriteString(w, "=== Progress ===\n")
}

// Decode is never called: a Progress is made by the streamer, not parsed.
func (p *Progress) Decode([]byte) error { return nil }

// progressClock decides when a Progress is due. It reads the clock only
// on undelivered moves and heartbeats, never per delivered event.
type progressClock struct {
	every   time.Duration
	now     func() time.Time
	since   time.Time // first undelivered move or idle heartbeat since the last delivery; zero: none
	moved   bool      // the position moved without a delivery since then
	started bool
	last    ResumePosition // the last Resume the listeners got
}

// delivered notes a delivery: the listeners have Resume r.
func (c *progressClock) delivered(r ResumePosition) { c.started, c.moved, c.last = false, false, r }

// observe notes an undelivered move (moved) or a heartbeat and reports
// whether a Progress is due now.
func (c *progressClock) observe(moved bool) bool {
	if c.every <= 0 {
		return false
	}
	now := c.now()
	if !c.started {
		c.started, c.since = true, now
	}
	c.moved = c.moved || moved
	return now.Sub(c.since) >= c.every
}

// maybeProgress delivers a Progress when one is due after an undelivered
// move (moved) or a heartbeat; at is where that put the stream in the
// binlog, the Progress's position in GTID mode.
func (s *BinlogStreamer) maybeProgress(ctx context.Context, listeners []Listener, moved bool, at Position) error {
	if !s.progress.observe(moved) {
		return nil
	}
	idle := !s.progress.moved
	r := s.ResumePosition()
	if !idle && r == s.progress.last {
		// Moves that leave the token as it was (a GTID-mode transaction's
		// filtered rows count no units) tell the listeners nothing.
		return nil
	}
	be := &replication.BinlogEvent{
		Header: &replication.EventHeader{EventType: replication.UNKNOWN_EVENT},
		Event:  &Progress{Idle: idle},
	}
	pos := r.Streamed
	if pos.IsZero() { // GTID mode: the binlog position the stream moved to
		pos = at
	}
	ev := Event{BinlogEvent: be, Start: pos, End: pos, Resume: r, before: r}
	if err := ctx.Err(); err != nil {
		return err
	}
	for _, l := range listeners {
		if err := l(s.lctx, ev); err != nil {
			return &ListenerError{Position: r.Streamed, Err: err}
		}
	}
	s.progress.delivered(r)
	s.progressSent.Add(1)
	return nil
}
