package binlogstream_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/binlogstream/binlogstream"
	th "github.com/binlogstream/binlogstream/testhelpers"
)

// historySecrets are the secrets of secretDDL's statements.
var historySecrets = []string{"Hc1-create-user", "Ha2-alter-user", "Hs3-server", "Hf4-federated"}

// secretDDL is a binlog of account, server and FEDERATED table
// statements that read as DDL, with a row of the FEDERATED table after
// them; it returns the column names that row must carry.
func secretDDL(b *th.Builder) []string {
	b.DDL("", "CREATE DATABASE app")
	b.DDL("app", "CREATE USER 'u'@'%' IDENTIFIED BY 'Hc1-create-user'")
	b.DDL("app", "ALTER USER 'u'@'%' IDENTIFIED VIA ed25519 USING PASSWORD('Ha2-alter-user')")
	b.DDL("app", "CREATE SERVER s FOREIGN DATA WRAPPER mysql OPTIONS (USER 'u', PASSWORD 'Hs3-server')")
	b.DDL("app", "CREATE TABLE f (id INT PRIMARY KEY, v VARCHAR(20)) ENGINE=FEDERATED CONNECTION='mysql://u:Hf4-federated@h:3306/d/t'")
	f := th.Table{ID: 1, Schema: "app", Name: "f", Metadata: th.MetadataNoLog,
		Columns: []th.Column{{Name: "id", Type: th.Int}, {Name: "v", Type: th.Varchar(20)}}}
	b.Txn(func(x *th.Txn) { x.Insert(f, th.Row{int32(1), "a"}) })
	return []string{"id", "v"}
}

// TestSchemaHistoryMasksSecrets: the schema history stores account,
// server and FEDERATED statements with their secrets masked, and still
// knows the FEDERATED table from its masked CREATE. The control: stored
// as the binlog has them, the same file holds every secret.
func TestSchemaHistoryMasksSecrets(t *testing.T) {
	for _, keep := range []bool{false, true} {
		b := th.NewBuilder(th.MariaDB)
		want := secretDDL(b)
		bl := b.Build()
		start := binlogstream.StartAt(binlogstream.Position{File: bl.Files[0].Name, Offset: 4})
		path := filepath.Join(t.TempDir(), "h")
		binlogstream.KeepSecretsInHistory(keep)
		r := streamNames(t, th.NewFakeSource(bl), start, path, len(bl.Events), -1)
		binlogstream.KeepSecretsInHistory(false)
		require.ErrorIs(t, r.err, context.Canceled)
		require.Equal(t, [][]string{want}, r.names)
		file, err := os.ReadFile(path)
		require.NoError(t, err)
		for _, sec := range historySecrets {
			if keep {
				assert.Contains(t, string(file), sec, "the unmasked control")
			} else {
				assert.NotContains(t, string(file), sec)
			}
		}
		if !keep {
			assert.Contains(t, string(file), `CREATE USER 'u'@'%' IDENTIFIED BY '\u003csecret\u003e'`)
			assert.Contains(t, string(file), `CONNECTION='\u003csecret\u003e'`)
		}
	}
}

// TestSchemaHistoryReadsUnmaskedRecords: a history whose records hold
// the statements in clear (written before they were masked) is read as
// it is, and a stream that passes the same statements again takes them
// for the stored ones: no "another binlog" error, nothing appended.
func TestSchemaHistoryReadsUnmaskedRecords(t *testing.T) {
	b := th.NewBuilder(th.MariaDB)
	want := secretDDL(b)
	bl := b.Build()
	start := binlogstream.StartAt(binlogstream.Position{File: bl.Files[0].Name, Offset: 4})
	path := filepath.Join(t.TempDir(), "h")
	binlogstream.KeepSecretsInHistory(true)
	r := streamNames(t, th.NewFakeSource(bl), start, path, len(bl.Events), -1)
	binlogstream.KeepSecretsInHistory(false)
	require.ErrorIs(t, r.err, context.Canceled)
	before, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Contains(t, string(before), historySecrets[0])

	again := streamNames(t, th.NewFakeSource(bl), start, path, len(bl.Events), -1)
	require.ErrorIs(t, again.err, context.Canceled)
	require.Equal(t, [][]string{want}, again.names)
	after, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, string(before), string(after), "the stored records are the stream's: none appended")
}
