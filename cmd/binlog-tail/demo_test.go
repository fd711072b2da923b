package main

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	th "github.com/binlogstream/binlogstream/testhelpers"
)

// TestDemoAccount runs the demo against its fake primary and checks the
// figures of the account: where it stopped and resumed, the drops, the
// reconnect, the naive resume's error over the wire, the equal files.
func TestDemoAccount(t *testing.T) {
	var out bytes.Buffer
	require.NoError(t, runDemo(context.Background(), &out, newFakeDemoServer))
	s := out.String()
	for _, want := range []string{
		"a fake MySQL 8.0.36 primary on 127.0.0.1:",
		"only the last has STMT_END_F",
		"1. Uninterrupted run, binlog-tail --dsn 'repl:xxxxx@tcp(127.0.0.1:",
		"32 lines",
		"2. Crashed run: killed while writing row 2 of 2 of Write_rows #4 at mysql-bin.000001:",
		"like a SIGKILL: the file holds 11 complete lines and ",
		"Streamed mysql-bin.000001:1058, Rows 1:",
		"Safe     mysql-bin.000001:756:",
		"dropped 4 replayed events",
		"wrote 21 new lines",
		"Delete_rows at mysql-bin.000002:",
		"inside the 2-table statement (Table_map x2, Write_rows x2, Delete_rows x2)",
		"4. Meanwhile the resumed run's TCP connection was cut 35 bytes into the 75-byte Delete_rows at mysql-bin.000002:590",
		"Stats().Reconnects 1; dumps the primary served: mysql-bin.000001:756, then mysql-bin.000002:318",
		"Stats(): DroppedAtStart 4, DroppedAfterReconnect 4.",
		"binlog connection lost; reconnecting",
		"5. A naive resume from the last streamed position mysql-bin.000001:1058",
		"*replication.EventError from go-mysql over the wire: table id 5131: invalid table id, no corresponding table map event",
		"6. The resumed file equals the uninterrupted run's byte for byte (32 lines",
		"nothing lost, nothing repeated",
	} {
		assert.Contains(t, s, want)
	}
	assert.NotContains(t, s, "repl-secret", "the DSN's password")
}

// TestDemoCommand: --demo exits 0 with the account on stdout and nothing
// on stderr.
func TestDemoCommand(t *testing.T) {
	var stdout, stderr bytes.Buffer
	require.Equal(t, 0, cli(context.Background(), []string{"--demo"}, &stdout, &stderr), stderr.String())
	assert.Empty(t, stderr.String())
	assert.Contains(t, stdout.String(), "byte for byte")
}

// TestDemoFails: the demo reports a server it cannot start, and a binlog
// without the statements its story needs, instead of printing a story.
func TestDemoFails(t *testing.T) {
	var out bytes.Buffer
	boom := errors.New("no port")
	err := runDemo(context.Background(), &out, func() (*demoServer, error) { return nil, boom })
	require.ErrorIs(t, err, boom)

	err = runDemo(context.Background(), &out, func() (*demoServer, error) {
		srv, err := newFakeDemoServer()
		if err != nil {
			return nil, err
		}
		srv.Binlog = th.Seed001(th.MySQL) // no two-table statement
		return srv, nil
	})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "no two-table statement")
	assert.Empty(t, out.String())
}

// TestStatementsOfDemoBinlog: the demo finds seed 001's statement and the
// two-table one in its binlog.
func TestStatementsOfDemoBinlog(t *testing.T) {
	stmts := statements(demoBinlog())
	var shapes []string
	for i := range stmts {
		shapes = append(shapes, shape(&stmts[i]))
	}
	assert.Equal(t, []string{
		"Table_map, Write_rows",
		"Table_map, Write_rows x5",
		"Table_map, Write_rows",
		"Table_map, Update_rows",
		"Table_map, Delete_rows x2",
		"Table_map x2, Write_rows x2, Delete_rows x2",
	}, shapes)
	assert.True(t, strings.HasPrefix(stmts[1].Maps[0].Desc, "Table_map app_db._other_table_gho"))
}
