package publish

import (
	"context"

	"github.com/nats-io/nats.go"
)

// txn is an ended source transaction waiting for the sender.
type txn struct {
	ctx  context.Context
	msgs []message // in memory; nil when file holds them
	n    int       // messages
	skip int       // its first skip messages are stored already
	// first and last are its first and last messages' tokens; from is
	// the token right before it.
	first, last, from []byte
	units             [][]*nats.Msg // small, in memory: what publishing it sends (units)
	file              *spoolFile    // spilled: its messages, made into units as they go out
}

// newTxn is the transaction of msgs, which come right after the token
// from, cut for batches of max messages, its first skip stored already.
// A small one's messages are made here, by the caller of OnEvent, while
// the sender waits for the publish in flight; a split one's are made a
// unit at a time as the sender publishes them (cutUnits), so that only
// its lines stay in memory, not a message for each.
func newTxn(ctx context.Context, msgs []message, from []byte, skip, max int) txn {
	t := txn{ctx: ctx, msgs: msgs, n: len(msgs), skip: skip, first: msgs[0].token, last: msgs[len(msgs)-1].token, from: from}
	if !t.split(max) {
		t.units = units(msgs, from, max, skip)
	}
	return t
}

// split reports whether t goes out as units of its own: more messages
// than a batch holds, or the rest of a transaction cut into units before.
func (t *txn) split(max int) bool { return t.n > max || t.skip > 0 }

// maxQueued is how many messages of ended transactions wait for the
// sender before OnEvent waits for it: enough for the next batches while
// one is in flight. A larger transaction waits alone.
const maxQueued = 4 * MaxBatch

// endTxn hands the pending transaction to the sender, waiting while the
// queue is full.
func (p *Publisher) endTxn(ctx context.Context) error {
	if p.pending.n == 0 {
		return p.failed()
	}
	t, err := p.pending.txn(ctx, p.lastTok, p.point.Skip, p.batchMax())
	if err != nil {
		return err
	}
	if err := p.wait(ctx, func() bool { return p.queued == 0 || p.queued+t.n <= maxQueued }); err != nil {
		return err
	}
	p.lastTok = t.last
	p.point.Skip = 0
	p.pending.taken(t)
	p.mu.Lock()
	p.queue = append(p.queue, t)
	p.queued += t.n
	if !p.sending {
		p.sending = true
		go p.sender()
	}
	p.mu.Unlock()
	return nil
}

// failed is the sender's error, if it stopped on one.
func (p *Publisher) failed() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.err
}

// wait waits until ready (called with p.mu held) holds, the sender
// failed or ctx is done.
func (p *Publisher) wait(ctx context.Context, ready func() bool) error {
	stop := context.AfterFunc(ctx, func() {
		p.mu.Lock()
		p.cond.Broadcast()
		p.mu.Unlock()
	})
	defer stop()
	p.mu.Lock()
	defer p.mu.Unlock()
	for p.err == nil && ctx.Err() == nil && !ready() {
		p.cond.Wait()
	}
	if p.err != nil {
		return p.err
	}
	return ctx.Err()
}

// sender publishes the queue until it is empty or a publish fails: each
// time, every small transaction queued (up to a batch's worth) as one
// atomic batch, or a large one in its units. The publishes stay one at a
// time: each asserts the sequence the previous one left, which the
// sender knows only once it is acknowledged, so no other publisher's
// messages can come between two of its units.
func (p *Publisher) sender() {
	p.mu.Lock()
	for len(p.queue) > 0 && p.err == nil {
		n := take(p.queue, p.batchMax())
		todo := p.queue[:n:n]
		p.queue = p.queue[n:]
		for _, t := range todo {
			p.queued -= t.n
		}
		p.cond.Broadcast()
		p.mu.Unlock()
		err := p.publishTxns(todo)
		for _, t := range todo {
			t.file.close()
		}
		p.mu.Lock()
		if err != nil {
			p.err = err
		}
	}
	for _, t := range p.queue {
		t.file.close() // not published: the publisher stopped
	}
	p.queue, p.queued, p.sending = nil, 0, false
	p.cond.Broadcast()
	p.mu.Unlock()
}

// take is how many transactions at queue's head the next publish
// takes: one that is split (as every spilled one is), or any one on a
// stream without atomic batches (max 1); else the small ones that fit
// in a batch of max.
func take(queue []txn, max int) int {
	if max <= 1 || queue[0].split(max) {
		return 1
	}
	n, size := 0, 0
	for _, t := range queue {
		if t.split(max) || size+t.n > max {
			break
		}
		n++
		size += t.n
	}
	return n
}

// eachUnit hands send what publishing txns (as take cut them) sends,
// one unit after the other, each once the previous one's send returned:
// a split transaction's units (a spilled one's read from its file only
// then), or one batch of the small ones.
func eachUnit(txns []txn, max int, send func([]*nats.Msg) error) error {
	if len(txns) == 1 {
		t := txns[0]
		switch {
		case t.file != nil:
			return t.file.eachUnit(t.first, t.from, max, t.skip, send)
		case t.units == nil: // split, in memory
			return cutUnits(t.n, sliceReader(t.msgs), t.first, t.from, max, t.skip, send)
		}
		for _, u := range t.units {
			if err := send(u); err != nil {
				return err
			}
		}
		return nil
	}
	batch := make([]*nats.Msg, 0, max)
	for _, t := range txns {
		batch = append(batch, t.units[0]...)
	}
	return send(batch)
}

// publishTxns publishes txns' units, each once the previous one is
// stored.
func (p *Publisher) publishTxns(txns []txn) error {
	// A transaction handed over is published even when the caller's
	// context ends (a stop between transactions): send's retries end
	// after Config.RetryFor.
	ctx := context.WithoutCancel(txns[0].ctx)
	return eachUnit(txns, p.batchMax(), func(u []*nats.Msg) error { return p.sendUnit(ctx, u) })
}

// batchMax is the most messages one publish holds.
func (p *Publisher) batchMax() int {
	if p.atomic {
		return p.cfg.MaxBatch
	}
	return 1
}

// sendUnit marks u's last message with this publisher and publishes u.
func (p *Publisher) sendUnit(ctx context.Context, u []*nats.Msg) error {
	u[len(u)-1].Header.Set(PublisherHeader, p.instance)
	return p.send(ctx, u)
}
