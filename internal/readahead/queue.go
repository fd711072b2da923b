// Package readahead is the read-ahead pipeline of the root package's
// sources, the server source (syncer_source.go) and the directory source
// (dir_stream.go) alike: a Queue hands the parsed events from the reading
// goroutine to the stream's in batches, and a Decoder decodes their rows
// on a pool of workers meanwhile (with internal/rows), the stream waiting
// for an event's rows before it serves the event.
package readahead

import (
	"errors"
	"sync"

	"github.com/go-mysql-org/go-mysql/replication"

	"github.com/binlogstream/binlogstream/internal/tablemap"
)

// Queue hands go-mysql's decoded events from its reading goroutine
// (HandleEvent, go-mysql's SynchronousEventHandler) to the streamer's
// goroutine (Take) in batches: the reader appends under a lock, the
// consumer takes everything queued at once, so a handoff costs a lock per
// event and a wakeup per batch instead of a channel operation (and a
// wakeup whenever the consumer is ahead) per event. Order is kept; the
// queue holds at most max events and maxBytes of binlog (header sizes; one
// larger event is let in alone), the reader waits beyond that.
type Queue struct {
	mu        sync.Mutex
	buf       []*replication.BinlogEvent
	bytes     int64 // EventSize sum of buf
	max       int
	maxBytes  int64
	err       error // terminal: the dump's error or ErrClosed
	takerWait bool  // Take is waiting for events
	feedWait  bool  // HandleEvent is waiting for room

	ready chan struct{} // wakes Take (cap 1)
	room  chan struct{} // wakes HandleEvent (cap 1)
	done  chan struct{} // closed with the first error
}

// ErrClosed ends a Queue (and the waits of a Decoder) when the stream is
// closed.
var ErrClosed = errors.New("binlogstream: stream closed")

// NewQueue returns a queue of at most max events and maxBytes of binlog.
func NewQueue(max int, maxBytes int64) *Queue {
	return &Queue{
		buf:      make([]*replication.BinlogEvent, 0, min(max, 1024)),
		max:      max,
		maxBytes: maxBytes,
		ready:    make(chan struct{}, 1),
		room:     make(chan struct{}, 1),
		done:     make(chan struct{}),
	}
}

func wake(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// HandleEvent queues e, waiting while the queue is full. After the queue
// failed it returns the error, which ends go-mysql's dump.
func (q *Queue) HandleEvent(e *replication.BinlogEvent) error {
	size := int64(0)
	if e.Header != nil {
		size = int64(e.Header.EventSize)
	}
	if tm, ok := e.Event.(*replication.TableMapEvent); ok {
		tablemap.FixCompressedMeta(tm, e.RawData) // before the parser reads its rows
	}
	q.mu.Lock()
	for len(q.buf) > 0 && (len(q.buf) >= q.max || q.bytes+size > q.maxBytes) && q.err == nil {
		q.feedWait = true
		q.mu.Unlock()
		select {
		case <-q.room:
		case <-q.done:
		}
		q.mu.Lock()
	}
	if err := q.err; err != nil {
		q.mu.Unlock()
		return err
	}
	q.buf = append(q.buf, e)
	q.bytes += size
	w := q.takerWait
	q.takerWait = false
	q.mu.Unlock()
	if w {
		wake(q.ready)
	}
	return nil
}

// Fail ends the queue with err (the first error wins). Events queued
// before it are still taken first.
func (q *Queue) Fail(err error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.err == nil {
		q.err = err
		close(q.done)
	}
}

// Take returns every queued event in order, reusing spare (emptied) as the
// queue's next buffer, waiting until there is one, the queue failed, or
// cancel is closed (then it returns nil, nil).
func (q *Queue) Take(spare []*replication.BinlogEvent, cancel <-chan struct{}) ([]*replication.BinlogEvent, error) {
	return q.TakeOrWake(spare, cancel, nil)
}

// TakeOrWake is Take that also returns nil, nil when woken is closed
// while the queue is empty.
func (q *Queue) TakeOrWake(spare []*replication.BinlogEvent, cancel, woken <-chan struct{}) ([]*replication.BinlogEvent, error) {
	for {
		q.mu.Lock()
		if len(q.buf) > 0 {
			got := q.buf
			q.buf, q.bytes = spare[:0], 0
			w := q.feedWait
			q.feedWait = false
			q.mu.Unlock()
			if w {
				wake(q.room)
			}
			return got, nil
		}
		if err := q.err; err != nil {
			q.mu.Unlock()
			return nil, err
		}
		q.takerWait = true
		q.mu.Unlock()
		select {
		case <-q.ready:
		case <-q.done:
		case <-cancel:
			return nil, nil
		case <-woken:
			return nil, nil
		}
	}
}
