package main

import (
	"context"
	"strings"
	"testing"

	"github.com/go-mysql-org/go-mysql/replication"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/binlogstream/binlogstream"
	"github.com/binlogstream/binlogstream/testhelpers/mariadb"
)

// TestDDLErrorSecretMasked: an account statement that reads as DDL on a
// table --tables matches (d.* matches d.USER) stops the run with the
// statement in the error, its password masked.
func TestDDLErrorSecretMasked(t *testing.T) {
	const pw = "Rq8-replicate-secret-31"
	pats, err := binlogstream.ParseTablePatterns("d.*")
	require.NoError(t, err)
	a := &applier{tables: map[string]*table{}, pats: pats}
	q := &replication.QueryEvent{Schema: []byte("d"), Query: []byte("CREATE USER x IDENTIFIED BY '" + pw + "'")}
	ev := binlogstream.Event{BinlogEvent: &replication.BinlogEvent{
		Header: &replication.EventHeader{EventType: replication.QUERY_EVENT}, Event: q}}
	err = a.listen(context.Background(), ev)
	require.Error(t, err)
	assert.Contains(t, err.Error(), `CREATE USER x IDENTIFIED BY '<secret>'`)
	assert.NotContains(t, err.Error(), pw)
}

// TestReplicateStoresNoSecret: after the six account statement forms,
// which the source's binlog holds with their secrets in clear, no table
// on the target (the replicated ones and binlogstream's state tables, the
// schema history included) and no log line holds a secret, while the
// schema history does store the account statements, masked.
func TestReplicateStoresNoSecret(t *testing.T) {
	mariadb.Require(t)
	src := mariadb.Start(t, mariadb.Options{})
	tgt := mariadb.Start(t, mariadb.Options{ServerID: 2})
	src.Exec(t, "CREATE DATABASE d", "CREATE TABLE d.a (id INT PRIMARY KEY, v VARCHAR(20))", "INSERT INTO d.a VALUES (1, 'one')")
	r := &rig{src: src, tgt: tgt, args: []string{"--tables", "d.a"}}
	res := r.run(t, "--stop-at-current")
	require.Equal(t, 0, res.code, res.stderr)
	secrets := mariadb.AccountStatements(t, src, "d")
	src.Exec(t, "INSERT INTO d.a VALUES (2, 'two')")
	res2 := r.run(t, "--stop-at-current")
	require.Equal(t, 0, res2.code, res2.stderr)
	require.Equal(t, dump(t, src, "d.a", "id"), dump(t, tgt, "d.a", "id"))

	var all strings.Builder
	tables := 0
	for _, db := range tgt.Query(t, "SHOW DATABASES") {
		switch db[0] {
		case "information_schema", "performance_schema", "mysql", "sys":
			continue
		}
		for _, tb := range tgt.Query(t, "SHOW TABLES FROM `"+db[0]+"`") {
			tables++
			for _, row := range tgt.Query(t, "SELECT * FROM `"+db[0]+"`.`"+tb[0]+"`") {
				all.WriteString(strings.Join(row, "\t") + "\n")
			}
		}
	}
	stored := strings.Join(flatten(tgt.Query(t, "SELECT record FROM binlogstream.schema_history")), "\n")
	assert.Contains(t, stored, `CREATE USER 'sec1'@'%' IDENTIFIED BY '\u003csecret\u003e'`, "the history stores the statement, masked")
	assert.Contains(t, stored, `ALTER USER 'sec2'@'%' IDENTIFIED WITH mysql_native_password AS '\u003csecret\u003e'`)
	for _, sec := range secrets {
		assert.NotContains(t, all.String(), sec)
		assert.NotContains(t, res.stderr+res2.stderr, sec)
	}
	t.Logf("%d target tables, %d bytes: no secret in any", tables, all.Len())
}

func flatten(rows [][]string) []string {
	var out []string
	for _, r := range rows {
		out = append(out, r...)
	}
	return out
}
