package main

import (
	"fmt"
	"testing"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/binlogstream/binlogstream/internal/fakeprimary"
	th "github.com/binlogstream/binlogstream/testhelpers"
	natstest "github.com/binlogstream/binlogstream/testhelpers/nats"
)

// TestPublishMySQLFlavor: binlog-publish against a MySQL 8.0 primary (the
// fake primary serving binlogs written as MySQL writes them: GTID events,
// statements split over rows events, compressed Transaction_payload
// events), in file and GTID mode: the stream equals binlog-tail's output
// from the same server.
func TestPublishMySQLFlavor(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a 3-node NATS cluster")
	}
	users := th.Table{ID: 71, Schema: "app", Name: "users", Columns: []th.Column{{Name: "id", Type: th.Int}, {Name: "name", Type: th.Varchar(64)}}}
	rows := func(from, n int) []th.Row {
		out := make([]th.Row, n)
		for i := range out {
			out[i] = th.Row{int32(from + i), fmt.Sprintf("u-%d", from+i)}
		}
		return out
	}
	plain := th.NewBuilder(th.MySQL, th.MaxRowsPerEvent(3)).
		Txn(func(t *th.Txn) { t.Insert(users, rows(1, 10)...) }).
		DDL("app", "ALTER TABLE users ADD COLUMN x INT").
		Rotate().
		Txn(func(t *th.Txn) { t.Update(users, rows(1, 1)[0], rows(20, 1)[0]); t.Delete(users, rows(2, 4)...) }).
		Build()
	compressed, err := th.CompressTransactions(th.NewBuilder(th.MySQL, th.MaxRowsPerEvent(2)).
		Txn(func(t *th.Txn) { t.Insert(users, rows(1, 7)...) }).
		DDL("app", "ALTER TABLE users ADD COLUMN x INT").
		Txn(func(t *th.Txn) { t.Delete(users, rows(1, 3)...) }).Build())
	require.NoError(t, err)

	c := natstest.StartCluster(t, 3)
	js, err := jetstream.New(c.Connect(t))
	require.NoError(t, err)
	for i, sc := range []struct {
		name string
		bl   *th.Binlog
	}{{"plain", plain}, {"compressed", compressed}} {
		for _, gtid := range []bool{false, true} {
			name := fmt.Sprintf("M%d%v", i, gtid)
			t.Run(fmt.Sprintf("%s/gtid=%v", sc.name, gtid), func(t *testing.T) {
				p, err := fakeprimary.Start(sc.bl)
				require.NoError(t, err)
				t.Cleanup(func() { _ = p.Close() })
				src := []string{"--dsn", p.DSN(), "--start", sc.bl.Files[0].Name + ":4"}
				if gtid {
					src = []string{"--dsn", p.DSN(), "--gtid", "--start", "oldest"}
				}
				finish(t, append([]string{"--nats", c.URLs(), "--stream", name, "--subject-prefix", name, "--quiet"}, src...))
				want := tailOutput(t, src...)
				got := natstest.Payloads(t, js, name)
				require.Empty(t, natstest.Diff(want, got))
				require.NotEmpty(t, got)
				t.Logf("%d messages equal to binlog-tail's lines", len(got))
			})
		}
	}
}
