package publish

import (
	"context"
	"encoding/json"
	"os"
	"regexp"
	"testing"

	"github.com/go-mysql-org/go-mysql/replication"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/binlogstream/binlogstream"
	natstest "github.com/binlogstream/binlogstream/testhelpers/nats"
)

// TestStatementSubject: a statement's table token is "_" itself, and no
// table's name gives it: "_" is %5F, "%5F" is %255F.
func TestStatementSubject(t *testing.T) {
	assert.Equal(t, "p.app._", StatementSubject("p", "app"))
	assert.Equal(t, "p._._", StatementSubject("p", ""))
	assert.Equal(t, "p.%5F._", StatementSubject("p", "_"))
	for _, table := range []string{"_", "%5F", "%255F", "__"} {
		assert.NotEqual(t, StatementSubject("p", "app"), Subject("p", "app", table), "table %q", table)
	}
	assert.Equal(t, "p.app.%5F", Subject("p", "app", "_"))
	assert.Equal(t, "p.app.%255F", Subject("p", "app", "%5F"))
}

// TestProgressSubjectAsDocumented: a progress line goes out on the
// subject cmd/binlog-publish/README.md's table gives it. (A real one needs
// a second of other tables' rows in one transaction; the command's
// TestSubjectsAsDocumented checks the other line types on MariaDB.)
func TestProgressSubjectAsDocumented(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a 3-node NATS cluster")
	}
	readme, err := os.ReadFile("../cmd/binlog-publish/README.md")
	require.NoError(t, err)
	m := regexp.MustCompile("(?m)^\\| `progress`[^|]*\\| `P\\.([^`]+)` \\|$").FindSubmatch(readme)
	require.NotNil(t, m, "README.md's subject table has no progress row")
	want := "binlog." + string(m[1])

	c := natstest.StartCluster(t, 3)
	nc, err := nats.Connect(c.URLs())
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	require.NoError(t, err)
	ctx := context.Background()
	p, err := Open(ctx, Config{JetStream: js, Stream: "P"})
	require.NoError(t, err)
	defer p.Close()
	from := binlogstream.StartAt(binlogstream.Position{File: "bin.000001", Offset: 4})
	p.StartAt(from)
	ev := binlogstream.Event{
		BinlogEvent: &replication.BinlogEvent{Header: &replication.EventHeader{EventType: replication.UNKNOWN_EVENT}, Event: &binlogstream.Progress{}},
		Start:       from.Streamed, End: from.Streamed, Resume: from,
	}
	require.NoError(t, p.OnEvent(ctx, ev))
	require.NoError(t, p.Flush(ctx))
	msgs := natstest.Messages(t, js, "P")
	require.Len(t, msgs, 1)
	var l struct{ Type string }
	require.NoError(t, json.Unmarshal(msgs[0].Data, &l))
	assert.Equal(t, "progress", l.Type)
	assert.Equal(t, want, msgs[0].Subject)
}
