package main

import (
	"context"
	"errors"
	"sync"

	"github.com/binlogstream/binlogstream"
)

// gate lets the verifier stop the applier between two source
// transactions and let it go on up to an exact binlog position, so that
// the target is read holding exactly the source's transactions up to a
// chunk's position.
//
// The applier calls enter before it handles an event and leave after.
// The verifier holds the applier (hold: it stops at its next transaction
// boundary), reads a source chunk at a position P that is therefore at
// or after everything the target holds, then aligns it (align: the
// applier goes on while its next event starts before P and stops at the
// boundary where the stream reaches P), reads the target and releases
// it. While the verifier holds it the applier is between two source
// transactions, handling no event, so its target connection is the
// verifier's to use.
type gate struct {
	mu   sync.Mutex
	cond *sync.Cond

	// The applier's side.
	busy     bool                  // handling an event
	boundary bool                  // after the last event handled, no source transaction is open
	done     binlogstream.Position // End of the last event handled
	waiting  bool                  // an event waits in enter
	next     binlogstream.Position // its Start
	nextEnd  binlogstream.Position // its End (its Start for a snapshot read or a Progress)
	enters   uint64                // events entered

	// The verifier's side.
	want     bool // hold the applier at its next boundary
	hasUntil bool // ... and let it go on while its next event starts before until
	until    binlogstream.Position
	held     bool  // the verifier has the applier
	err      error // the stream ended
}

// errStreamEnded is the gate's error once the stream stopped.
var errStreamEnded = errors.New("the stream stopped before the verification reached its position")

// newGate returns a gate whose applier is between transactions at done.
func newGate(done binlogstream.Position) *gate {
	g := &gate{boundary: true, done: done}
	g.cond = sync.NewCond(&g.mu)
	return g
}

// wait waits for the next change of the gate, or ctx's end.
func (g *gate) wait(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	stop := context.AfterFunc(ctx, func() {
		g.mu.Lock()
		g.cond.Broadcast()
		g.mu.Unlock()
	})
	g.cond.Wait()
	stop()
	return ctx.Err()
}

// enter is the applier's: it waits while the verifier holds it or wants
// it stopped here, then marks it busy with the event from start to end.
func (g *gate) enter(ctx context.Context, start, end binlogstream.Position) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.waiting, g.next, g.nextEnd = true, start, end
	g.cond.Broadcast()
	for g.stopHere() {
		if err := g.wait(ctx); err != nil {
			g.waiting = false
			return err
		}
	}
	g.waiting, g.busy = false, true
	g.enters++
	g.cond.Broadcast()
	return nil
}

// stopHere says whether the applier, about to handle the waiting event,
// must wait. Going on up to until, it handles every event that ends at
// or before until: a transaction's events that end there, and the
// snapshot reads and Progress events at until, which hold what the
// source held there.
func (g *gate) stopHere() bool {
	switch {
	case g.held:
		return true
	case !g.want || !g.boundary:
		return false
	case g.hasUntil:
		return g.nextEnd.Compare(g.until) > 0
	default:
		return true
	}
}

// awaitEnter waits until an event enters after the call.
func (g *gate) awaitEnter(ctx context.Context) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	n := g.enters
	for g.enters == n {
		if g.err != nil {
			return g.err
		}
		if err := g.wait(ctx); err != nil {
			return err
		}
	}
	return nil
}

// leave is the applier's, after the event: end is the event's End,
// boundary whether no source transaction is open after it.
func (g *gate) leave(end binlogstream.Position, boundary bool) {
	g.mu.Lock()
	g.busy, g.boundary, g.done = false, boundary, end
	g.cond.Broadcast()
	g.mu.Unlock()
}

// close ends the stream's side: every wait of the verifier returns err.
func (g *gate) close(err error) {
	g.mu.Lock()
	if err == nil {
		err = errStreamEnded
	}
	g.err = err
	g.cond.Broadcast()
	g.mu.Unlock()
}

// stopped says whether the applier is stopped at a boundary.
func (g *gate) stopped() bool { return !g.busy && g.boundary }

// hold stops the applier at its next transaction boundary (at once when
// it is at one) and returns the release that lets it go.
func (g *gate) hold(ctx context.Context) (release func(), err error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.want, g.hasUntil = true, false
	for !g.stopped() {
		if g.err != nil {
			g.want = false
			return nil, g.err
		}
		if err := g.wait(ctx); err != nil {
			g.want = false
			g.cond.Broadcast()
			return nil, err
		}
	}
	g.held = true
	return g.release, nil
}

// release lets the applier go on.
func (g *gate) release() {
	g.mu.Lock()
	g.want, g.hasUntil, g.held = false, false, false
	g.cond.Broadcast()
	g.mu.Unlock()
}

// align takes a held applier to exactly at: it lets it go on while its
// next event starts before at and stops it at the boundary where the
// stream reaches at. It returns true with the applier held there, or
// false with it held where it is (the position it holds, past at) when
// it was already past at. An applier idle at at (nothing streamed after
// it) is there already; one idle before at waits for the stream to get
// there (the next event, or the next Progress on a heartbeat).
func (g *gate) align(ctx context.Context, at binlogstream.Position) (binlogstream.Position, bool, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for {
		if g.stopped() {
			switch {
			case g.done.Compare(at) > 0:
				g.held = true
				return g.done, false, nil
			case g.waiting && g.next.Compare(at) < 0 && g.nextEnd.Compare(at) > 0:
				g.held = true // at is inside the waiting event: no boundary there
				return g.next, false, nil
			case g.waiting && g.nextEnd.Compare(at) > 0, !g.waiting && g.done == at:
				g.held = true
				return at, true, nil
			}
		}
		if g.err != nil {
			return g.done, false, g.err
		}
		g.held, g.want, g.hasUntil, g.until = false, true, true, at
		g.cond.Broadcast()
		if err := g.wait(ctx); err != nil {
			return g.done, false, err
		}
	}
}
