package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/binlogstream/binlogstream"
	th "github.com/binlogstream/binlogstream/testhelpers"
)

// tablesBinlog: orders changes between long stretches of users traffic,
// one multi-table transaction, rows split two to an event.
func tablesBinlog() (*th.Binlog, int) {
	users := th.Table{ID: 11, Schema: "app", Name: "users", Columns: []th.Column{{Name: "id", Type: th.Int}, {Name: "name", Type: th.Varchar(40)}}}
	orders := th.Table{ID: 12, Schema: "app", Name: "orders", Columns: []th.Column{{Name: "id", Type: th.BigInt}, {Name: "note", Type: th.Varchar(40)}}}
	b := th.NewBuilder(th.MariaDB, th.MaxRowsPerEvent(2))
	id := int32(0)
	userTxns := func(n int) {
		for range n {
			b.Txn(func(x *th.Txn) {
				for range 3 {
					id++
					x.Insert(users, th.Row{id, "u"})
				}
			})
		}
	}
	b.Txn(func(x *th.Txn) { x.Insert(orders, th.Row{int64(1), "a"}, th.Row{int64(2), "b"}, th.Row{int64(3), "c"}) })
	userTxns(10)
	b.Txn(func(x *th.Txn) {
		x.MultiTable(th.Inserted(users, th.Row{int32(900), "m"}), th.Inserted(orders, th.Row{int64(4), "d"}))
	})
	userTxns(10)
	b.Txn(func(x *th.Txn) { x.Delete(orders, th.Row{int64(1), "a"}) })
	userTxns(5)
	return b.Build(), 5 // orders row changes
}

// dataLines are the lines of out that carry data: all but progress lines.
func dataLines(out []byte) []string {
	var keep []string
	for _, l := range strings.SplitAfter(string(out), "\n") {
		if l != "" && !strings.HasPrefix(l, `{"type":"progress"`) {
			keep = append(keep, l)
		}
	}
	return keep
}

// TestTablesFilter: --tables app.orders on binlog files (DirSource with
// the DecodeTable filter) writes the orders lines of an unfiltered run,
// byte for byte, and no users line; progress lines carry the position
// past the users traffic; and a kill at every line boundary and inside
// every line, then a rerun, gives the same data lines.
func TestTablesFilter(t *testing.T) {
	bl, orderRows := tablesBinlog()
	dir := t.TempDir()
	require.NoError(t, bl.WriteDir(dir))
	last := bl.Files[len(bl.Files)-1]
	pats, err := binlogstream.ParseTablePatterns("app.orders")
	require.NoError(t, err)
	config := func(tables binlogstream.TablePatterns) tailConfig {
		var filter func(string, string) bool
		if tables != nil {
			filter = tables.Match
		}
		src, err := binlogstream.NewDirSource(binlogstream.DirConfig{Dir: dir, DecodeTable: filter,
			PollInterval: time.Millisecond, HeartbeatPeriod: 5 * time.Millisecond})
		require.NoError(t, err)
		return tailConfig{Source: src, Start: binlogstream.StartAt(binlogstream.Position{File: bl.Files[0].Name, Offset: 4}),
			Target: binlogstream.Position{File: last.Name, Offset: uint64(len(last.Data))}, ReconnectBackoff: time.Millisecond,
			Tables: tables, progressInterval: time.Nanosecond}
	}
	run := func(path string, tables binlogstream.TablePatterns) []byte {
		res, err := tail(context.Background(), path, config(tables))
		require.NoError(t, err)
		require.True(t, res.Reached)
		out, err := os.ReadFile(path)
		require.NoError(t, err)
		return out
	}
	all := run(filepath.Join(t.TempDir(), "all.jsonl"), nil)
	want := run(filepath.Join(t.TempDir(), "orders.jsonl"), pats)

	var ordersOfAll []string
	for _, l := range dataLines(all) {
		if strings.Contains(l, `"table":"orders"`) {
			ordersOfAll = append(ordersOfAll, l)
		}
	}
	var rows, progress int
	for _, l := range strings.SplitAfter(string(want), "\n") {
		require.NotContains(t, l, `"table":"users"`)
		switch {
		case strings.HasPrefix(l, `{"type":"progress"`):
			progress++
		case strings.HasPrefix(l, `{"type":"insert"`), strings.HasPrefix(l, `{"type":"delete"`):
			rows++
		}
	}
	require.Equal(t, orderRows, rows)
	require.Equal(t, ordersOfAll, dataLines(want), "the orders lines of an unfiltered run")
	require.GreaterOrEqual(t, progress, 2, "a progress line after each stretch of users traffic")
	require.True(t, bytes.HasSuffix(want, []byte("\n")))
	// The file's checkpoint went past the users traffic after the last
	// orders change: the last line is a progress line there.
	lines := strings.SplitAfter(strings.TrimSuffix(string(want), "\n"), "\n")
	lastLine := lines[len(lines)-1]
	require.True(t, strings.HasPrefix(lastLine, `{"type":"progress"`), lastLine)
	ordersOut := filepath.Join(t.TempDir(), "orders.jsonl")
	require.NoError(t, os.WriteFile(ordersOut, want, 0o600))
	f, rec, err := openOutput(ordersOut)
	require.NoError(t, err)
	f.Close()
	require.Greater(t, rec.Resume.Streamed.Offset, uint64(len(last.Data))*9/10, "the checkpoint is near the binlog's end")

	start := 0
	for i, c := range want {
		if c != '\n' {
			continue
		}
		for _, cut := range []int{start, (start + i) / 2, i + 1} {
			path := filepath.Join(t.TempDir(), "out.jsonl")
			require.NoError(t, os.WriteFile(path, want[:cut], 0o600))
			got := run(path, pats)
			require.Equal(t, dataLines(want), dataLines(got), "killed after %d bytes", cut)
		}
		start = i + 1
	}
}

func TestTablesFlag(t *testing.T) {
	var stderr strings.Builder
	o, err := parseFlags([]string{"--dsn", "repl@tcp(127.0.0.1:3306)/", "--out", "x.jsonl", "--tables", "app.orders, app.audit_*"}, &stderr)
	require.NoError(t, err)
	require.True(t, o.Tables.Match("app", "audit_2024"))
	require.False(t, o.Tables.Match("app", "users"))
	_, err = parseFlags([]string{"--dsn", "repl@tcp(127.0.0.1:3306)/", "--out", "x.jsonl", "--tables", "orders"}, &stderr)
	require.ErrorContains(t, err, "want schema.table")
}
