package publish_test

import (
	"context"
	"fmt"
	"strconv"
	"testing"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	natstest "github.com/binlogstream/binlogstream/testhelpers/nats"
)

// consume is what docs/publish.md shows a consumer of a binlog-publish
// stream: an ordered consumer from a stream sequence (1 for the first
// message; a restart passes its last handled sequence + 1), read with the
// Messages iterator, which keeps a batch of messages in flight (a loop of
// Next on the consumer asks the server for each message in turn). handle
// gets each message's stream sequence and payload (binlog-tail's line);
// the consumer keeps the sequence with what it did with the line, as
// binlog-tail keeps the resume token. It returns once it handled the
// stream's last message at the time it started (drained), or on an error.
func consume(ctx context.Context, js jetstream.JetStream, stream string, from uint64,
	handle func(seq uint64, payload []byte) error) error {
	cons, err := js.OrderedConsumer(ctx, stream, jetstream.OrderedConsumerConfig{
		DeliverPolicy: jetstream.DeliverByStartSequencePolicy, OptStartSeq: from,
	})
	if err != nil {
		return err
	}
	info, err := js.Stream(ctx, stream)
	if err != nil {
		return err
	}
	last := info.CachedInfo().State.LastSeq
	if from > last {
		return nil // nothing new
	}
	it, err := cons.Messages()
	if err != nil {
		return err
	}
	defer it.Stop()
	for {
		msg, err := it.Next(jetstream.NextContext(ctx))
		if err != nil {
			return err
		}
		md, err := msg.Metadata()
		if err != nil {
			return err
		}
		if err := handle(md.Sequence.Stream, msg.Data()); err != nil {
			return err
		}
		if md.Sequence.Stream >= last {
			return nil
		}
	}
}

// Example_consume reads a binlog-publish stream named BINLOG from where
// the last run stopped (the sequence it kept, 0 before any).
func Example_consume() {
	var js jetstream.JetStream // jetstream.New(nc) on a connection to the cluster
	var saved uint64           // the last handled sequence, kept with the effects
	if js == nil {
		return // the example needs a cluster; TestConsumeExample runs it
	}
	err := consume(context.Background(), js, "BINLOG", saved+1, func(seq uint64, line []byte) error {
		fmt.Printf("%d %s", seq, line) // apply the line, then keep seq with it
		saved = seq
		return nil
	})
	if err != nil {
		fmt.Println(err)
	}
}

// TestConsumeExample: consume reads every message once, in order, and a
// consumer that stops part-way and resumes from its kept sequence + 1
// reads the rest, nothing twice.
func TestConsumeExample(t *testing.T) {
	c := natstest.StartCluster(t, 3)
	js, err := jetstream.New(c.Connect(t))
	require.NoError(t, err)
	ctx := t.Context()
	_, err = js.CreateStream(ctx, jetstream.StreamConfig{Name: "BINLOG", Subjects: []string{"binlog.>"}})
	require.NoError(t, err)
	const n = 3000
	for i := 1; i <= n; i++ {
		_, err := js.Publish(ctx, "binlog.app.t", []byte(`{"type":"insert","row":{"id":`+strconv.Itoa(i)+"}}\n"))
		require.NoError(t, err)
	}
	var got []uint64
	stopAt := uint64(1234)
	errStop := fmt.Errorf("crash")
	err = consume(ctx, js, "BINLOG", 1, func(seq uint64, _ []byte) error {
		got = append(got, seq)
		if seq == stopAt {
			return errStop
		}
		return nil
	})
	require.ErrorIs(t, err, errStop)
	require.NoError(t, consume(ctx, js, "BINLOG", got[len(got)-1]+1, func(seq uint64, line []byte) error {
		got = append(got, seq)
		assert.Contains(t, string(line), `"id":`+strconv.FormatUint(seq, 10)+"}")
		return nil
	}))
	require.Len(t, got, n)
	for i, seq := range got {
		require.EqualValues(t, i+1, seq, "in order, once each")
	}
	require.NoError(t, consume(ctx, js, "BINLOG", n+1, func(uint64, []byte) error {
		t.Fatal("nothing after the last message")
		return nil
	}))
}
