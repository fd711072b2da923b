package main

import (
	"context"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/binlogstream/binlogstream/publish"
	th "github.com/binlogstream/binlogstream/testhelpers"
	"github.com/binlogstream/binlogstream/testhelpers/mariadb"
	natstest "github.com/binlogstream/binlogstream/testhelpers/nats"
)

// TestPublishWithoutAtomicBatches: an existing R3 stream that does not
// allow atomic batches is used as it is: binlog-publish says so on
// stderr and publishes each message on its own (its id, the expected
// last sequence), and after three SIGKILLs under the workload the stream
// still equals binlog-tail's lines. Transactions of several messages
// carry the Binlog-Txn headers.
func TestPublishWithoutAtomicBatches(t *testing.T) {
	s, c, js, start := setup(t)
	ctx := context.Background()
	_, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "NA", Subjects: []string{"binlog.>"}, Replicas: 3})
	require.NoError(t, err)
	args := []string{"--dsn", s.DSN(mariadb.ReplUser), "--nats", c.URLs(), "--stream", "NA", "--start", start}

	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() { workload(t, s, stop) })
	p := startPublisher(t, args...)
	for i := range 3 {
		time.Sleep(time.Duration(700+300*i) * time.Millisecond)
		p.kill()
		require.Contains(t, p.stderr.String(), "stream NA does not allow atomic batches: each message is published on its own")
		p = startPublisher(t, args...)
	}
	close(stop)
	wg.Wait()
	p.kill()
	finish(t, append(args, "--quiet"))

	want := reference(t, s, start)
	msgs := natstest.Messages(t, js, "NA")
	got := make([][]byte, len(msgs))
	split := 0
	for i, m := range msgs {
		got[i] = m.Data
		if n, _ := strconv.Atoi(m.Header.Get(publish.TxnCountHeader)); n > 1 {
			split++
		}
	}
	require.Empty(t, natstest.Diff(want, got))
	assert.Positive(t, split, "messages of transactions published over several publishes")
	t.Logf("%d messages equal to binlog-tail's lines, %d of them with the transaction headers; 3 SIGKILLs", len(got), split)
}

// TestPublishRefusesForeignStream: a stream whose subjects do not hold
// P.> is refused at startup with one line naming them and what to do,
// before any server is contacted.
func TestPublishRefusesForeignStream(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a NATS server")
	}
	c := natstest.StartCluster(t, 3)
	js, err := jetstream.New(c.Connect(t))
	require.NoError(t, err)
	_, err = js.CreateStream(context.Background(), jetstream.StreamConfig{Name: "O", Subjects: []string{"orders.>", "binlog.app.*"}})
	require.NoError(t, err)
	cmd := exec.Command(th.Command(t, "binlog-publish"), "--dsn", "u:pw@tcp(127.0.0.1:1)/", "--nats", c.URLs(), "--stream", "O")
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee, "%s", out)
	assert.Equal(t, 1, ee.ExitCode())
	assert.Equal(t, 1, strings.Count(string(out), "\n"), "%s", out)
	assert.Contains(t, string(out), `binlog-publish: stream O has the subjects ["orders.>" "binlog.app.*"], which do not hold binlog.>: use another --stream or --subject-prefix`)
	// The same stream takes a prefix it holds.
	info, err := js.Stream(context.Background(), "O")
	require.NoError(t, err)
	assert.Zero(t, info.CachedInfo().State.Msgs)
}
