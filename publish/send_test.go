package publish

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// queueOf is a queue of transactions of these sizes cut for batches of
// max, their tokens distinct across the queue; a negative size is a
// transaction of -size messages resumed with its first MaxBatch stored.
func queueOf(sizes []int, max int) []txn {
	var q []txn
	for i, n := range sizes {
		msgs, from, skip := queueTxn(i, n)
		q = append(q, newTxn(context.Background(), msgs, from, skip, max))
	}
	return q
}

// queueTxn is the i-th transaction of queueOf, of size n.
func queueTxn(i, n int) (msgs []message, from []byte, skip int) {
	if n < 0 {
		n, skip = -n, MaxBatch
	}
	msgs = testTxn(n)
	for j := range msgs {
		tok := []byte(fmt.Sprintf("t%d.%d", i, j))
		msgs[j].token, msgs[j].data = tok, append(tok, '\n')
		msgs[j].subject = fmt.Sprintf("p.d.t%d", j%3)
	}
	return msgs, []byte(fmt.Sprintf("from%d", i)), skip
}

// spooledQueueOf is queueOf with every transaction made by a spool of
// limit bytes in dir, as Publisher.endTxn makes it.
func spooledQueueOf(t *testing.T, sizes []int, max int, dir string, limit int64) []txn {
	var q []txn
	s := newSpool(dir, limit)
	for i, n := range sizes {
		msgs, from, skip := queueTxn(i, n)
		for _, m := range msgs {
			require.NoError(t, s.add(m))
		}
		tx, err := s.txn(context.Background(), from, skip, max)
		require.NoError(t, err)
		s.taken(tx)
		q = append(q, tx)
	}
	return q
}

// closeQueue closes the spool files of q.
func closeQueue(q []txn) {
	for _, tx := range q {
		tx.file.close()
	}
}

// publishOrder is what a sender publishes for queue, unit by unit, with
// the cutter given (take, or a naive one).
func publishOrder(queue []txn, max int, cut func([]txn, int) int) [][]*nats.Msg {
	var out [][]*nats.Msg
	for len(queue) > 0 {
		n := cut(queue, max)
		err := eachUnit(queue[:n], max, func(u []*nats.Msg) error {
			out = append(out, u)
			return nil
		})
		if err != nil {
			panic(err)
		}
		queue = queue[n:]
	}
	return out
}

// sameUnits reports where got differs from want: unit sizes, subjects,
// payloads or any header.
func sameUnits(want, got [][]*nats.Msg) error {
	if len(got) != len(want) {
		return fmt.Errorf("%d units, want %d", len(got), len(want))
	}
	for k := range want {
		if len(got[k]) != len(want[k]) {
			return fmt.Errorf("unit %d: %d messages, want %d", k, len(got[k]), len(want[k]))
		}
		for j, w := range want[k] {
			g := got[k][j]
			if g.Subject != w.Subject || string(g.Data) != string(w.Data) || !maps.EqualFunc(g.Header, w.Header, slices.Equal) {
				return fmt.Errorf("unit %d message %d: %s %q %v, want %s %q %v", k, j, g.Subject, g.Data, g.Header, w.Subject, w.Data, w.Header)
			}
		}
	}
	return nil
}

// checkUnits reports how the units published for queue break what a
// consumer relies on: every message once and in order; a unit of at
// most max messages that ends at the end of a transaction, or at a
// multiple of max messages into a transaction it splits; a unit holding
// more than one transaction holds only whole ones.
func checkUnits(queue []txn, max int, us [][]*nats.Msg) error {
	var want []string
	ends := map[string]bool{}  // the MsgIDs of transactions' last messages
	starts := map[string]int{} // MsgID -> index in its transaction
	for _, t := range queue {
		for j, m := range t.msgs[t.skip:] {
			id := MsgID(m.token)
			want = append(want, id)
			starts[id] = t.skip + j
		}
		ends[MsgID(t.msgs[len(t.msgs)-1].token)] = true
	}
	i := 0
	for k, u := range us {
		if len(u) > max {
			return fmt.Errorf("unit %d holds %d messages", k, len(u))
		}
		for j, m := range u {
			id := m.Header.Get(jetstream.MsgIDHeader)
			if i >= len(want) || id != want[i] {
				return fmt.Errorf("unit %d message %d: not the next line", k, j)
			}
			i++
			if j < len(u)-1 && ends[id] && m.Header.Get(TxnHeader) != "" {
				return fmt.Errorf("unit %d holds the end of a split transaction and more", k)
			}
			if j > 0 && starts[id] == 0 && u[j-1].Header.Get(TxnHeader) != "" || starts[id] > 0 && j == 0 && u[0].Header.Get(TxnHeader) == "" {
				return fmt.Errorf("unit %d message %d: a transaction starts or ends inside another's unit", k, j)
			}
		}
		last := u[len(u)-1]
		if !ends[last.Header.Get(jetstream.MsgIDHeader)] {
			idx, _ := strconv.Atoi(last.Header.Get(TxnIndexHeader))
			if last.Header.Get(TxnHeader) == "" || (idx+1)%max != 0 {
				return fmt.Errorf("unit %d ends inside a transaction, not at a multiple of %d", k, max)
			}
		}
	}
	if i != len(want) {
		return fmt.Errorf("%d of %d messages published", i, len(want))
	}
	return nil
}

// TestSenderKeepsTransactionsWhole: random queues of small, exactly
// full, split and resumed transactions, cut by take and published by
// unitsOf, keep every transaction whole in one unit or in units of
// MaxBatch of its own, and small ones go out together. The negative
// control, a cutter that fills batches without looking at transactions,
// is caught by the same check.
//
// Every queue (every third without atomic batches) also goes through a
// spool of 1 byte, so that every transaction spills to a file and a
// split one is read back a unit at a time: the units, subjects, payloads
// and headers are the in-memory ones.
func TestSenderKeepsTransactionsWhole(t *testing.T) {
	sizes := []int{1, 1, 1, 2, 5, 50, 400, 999, 1000, 1001, 2500, -2300}
	r := rand.New(rand.NewPCG(3, 4))
	dir := t.TempDir()
	combined, spooled := 0, 0
	for i := range 60 {
		var q []int
		for range 1 + r.IntN(10) {
			q = append(q, sizes[r.IntN(len(sizes))])
		}
		queue := queueOf(q, MaxBatch)
		us := publishOrder(queue, MaxBatch, take)
		require.NoError(t, checkUnits(queue, MaxBatch, us), "sizes %v", q)
		if len(us) < len(q) {
			combined++ // some transactions shared a batch
		}
		sq := spooledQueueOf(t, q, MaxBatch, dir, 1)
		require.NoError(t, sameUnits(us, publishOrder(sq, MaxBatch, take)), "sizes %v, spooled", q)
		for _, tx := range sq {
			if tx.file != nil {
				spooled++
			}
		}
		closeQueue(sq)
		// Without atomic batches every message is a unit of its own.
		single := queueOf(q, 1)
		singleUnits := publishOrder(single, 1, take)
		require.NoError(t, checkUnits(single, 1, singleUnits), "sizes %v", q)
		if i%3 == 0 {
			sq = spooledQueueOf(t, q, 1, dir, 1)
			require.NoError(t, sameUnits(singleUnits, publishOrder(sq, 1, take)), "sizes %v, spooled", q)
			closeQueue(sq)
		}
	}
	assert.Greater(t, spooled, 30, "split transactions read back from spool files")
	assert.Positive(t, combined)
	assert.Len(t, publishOrder(queueOf([]int{1, 5, 50, 400, 2}, MaxBatch), MaxBatch, take), 1, "small transactions share a batch")
	assert.Len(t, publishOrder(queueOf([]int{600, 600}, MaxBatch), MaxBatch, take), 2, "a transaction is never cut to fill a batch")

	naive := func(q []txn, max int) int {
		// Everything queued, then cut into full batches below.
		return len(q)
	}
	naiveOrder := func(queue []txn, max int) [][]*nats.Msg {
		n := naive(queue, max)
		var all []*nats.Msg
		for _, t := range queue[:n] {
			for _, u := range t.units {
				all = append(all, u...)
			}
		}
		var out [][]*nats.Msg
		for len(all) > 0 {
			k := min(max, len(all))
			out = append(out, all[:k])
			all = all[k:]
		}
		return out
	}
	q := queueOf([]int{600, 600}, MaxBatch)
	assert.Error(t, checkUnits(q, MaxBatch, naiveOrder(q, MaxBatch)), "the naive cutter splits a transaction of 600 over two batches")
}
