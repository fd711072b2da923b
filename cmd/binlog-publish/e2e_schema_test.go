package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/binlogstream/binlogstream/publish"
	"github.com/binlogstream/binlogstream/testhelpers/mariadb"
	natstest "github.com/binlogstream/binlogstream/testhelpers/nats"
)

// TestPublishSchemaHistoryInStream: under MariaDB's default
// binlog_row_metadata=NO_LOG the column names of a row come from the
// schema history. A publisher restarted after an ALTER reads the history
// back from JetStream, so the rows logged before the ALTER keep their
// names, as binlog-tail's file does. Negative control: the same two runs
// with the history stream deleted in between (a fresh information_schema
// snapshot, newer than the ALTER) publish those rows without names.
func TestPublishSchemaHistoryInStream(t *testing.T) {
	s, c, js, _ := setup(t)
	s.Exec(t, "USE d", "CREATE TABLE s (a INT PRIMARY KEY, b VARCHAR(10))")
	file, pos := s.MasterStatus(t)
	start := file + ":" + strconv.FormatUint(pos, 10)
	s.Exec(t, "USE d", "INSERT INTO s VALUES (1, 'x')")
	// Two streams side by side: their subjects may not overlap.
	prefix := map[string]string{"H": "h", "N": "n"}
	for _, stream := range []string{"H", "N"} {
		finish(t, []string{"--dsn", s.DSN(mariadb.ReplUser), "--nats", c.URLs(), "--stream", stream, "--subject-prefix", prefix[stream], "--start", start, "--quiet"})
	}
	s.Exec(t, "USE d", "INSERT INTO s VALUES (2, 'y')", "ALTER TABLE s ADD COLUMN c INT", "INSERT INTO s VALUES (3, 'z', 3)")
	require.NoError(t, js.DeleteStream(context.Background(), publish.SchemaStreamName("N")))
	for _, stream := range []string{"H", "N"} {
		finish(t, []string{"--dsn", s.DSN(mariadb.ReplUser), "--nats", c.URLs(), "--stream", stream, "--subject-prefix", prefix[stream], "--quiet"})
	}

	rows := func(stream string) map[int]json.RawMessage {
		out := map[int]json.RawMessage{}
		for _, p := range natstest.Payloads(t, js, stream) {
			var line struct {
				Type, Table string
				Row         json.RawMessage
			}
			require.NoError(t, json.Unmarshal(p, &line), "%s", p)
			if line.Type == "insert" && line.Table == "s" {
				out[len(out)+1] = line.Row
			}
		}
		return out
	}
	want := map[int]json.RawMessage{1: json.RawMessage(`{"a":1,"b":"x"}`), 2: json.RawMessage(`{"a":2,"b":"y"}`), 3: json.RawMessage(`{"a":3,"b":"z","c":3}`)}
	assert.Equal(t, want, rows("H"))
	neg := rows("N")
	// Without the history the table's definition before the ALTER is
	// unknown, and so is the ALTER's result: rows until the snapshot's
	// position have no names.
	assert.Equal(t, `[2,"y"]`, string(neg[2]), "without the history, the row before the ALTER has no names")
	assert.Equal(t, `[3,"z",3]`, string(neg[3]))
}

// TestPublishStoresNoSecret: after the six account statement forms,
// which the binlog holds with their secrets in clear, no message of the
// line stream or of the schema history stream (subject, headers or
// payload) holds a secret, while the history does store the account
// statements, masked.
func TestPublishStoresNoSecret(t *testing.T) {
	s, c, js, start := setup(t)
	args := []string{"--dsn", s.DSN(mariadb.ReplUser), "--nats", c.URLs(), "--stream", "S", "--quiet"}
	s.Exec(t, "USE d", "INSERT INTO w VALUES (1, 1, 1, 'before')")
	finish(t, append(args, "--start", start))
	secrets := mariadb.AccountStatements(t, s, "d")
	s.Exec(t, "USE d", "INSERT INTO w VALUES (1, 2, 1, 'after')")
	finish(t, args)

	text := func(stream string) string {
		var b strings.Builder
		for _, m := range natstest.Messages(t, js, stream) {
			fmt.Fprintf(&b, "%s %v %s\n", m.Subject, m.Header, m.Data)
		}
		return b.String()
	}
	lines, history := text("S"), text(publish.SchemaStreamName("S"))
	assert.Contains(t, lines, "after", "the line stream was read")
	assert.Contains(t, lines, `"query":"CREATE USER 'sec1'@'%' IDENTIFIED BY '<secret>'"`)
	assert.Contains(t, history, `CREATE USER 'sec1'@'%' IDENTIFIED BY '\u003csecret\u003e'`, "the history stores the statement, masked")
	for _, sec := range secrets {
		assert.NotContains(t, lines, sec)
		assert.NotContains(t, history, sec)
	}
	t.Logf("line stream %d bytes, schema stream %d bytes: no secret in either", len(lines), len(history))
}
