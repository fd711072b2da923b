package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/binlogstream/binlogstream/publish"
	"github.com/binlogstream/binlogstream/testhelpers/mariadb"
	natstest "github.com/binlogstream/binlogstream/testhelpers/nats"
)

// dbzMsg is a Debezium record as the stream holds it, or as binlog-tail
// --format debezium's line says it should.
type dbzMsg struct {
	subject, key, value string
	// resume is the token after the record; "" for a line with "skip"
	// (binlog-tail writes the token before its row change there).
	resume string
}

// dbzWant is the records of binlog-tail --format debezium's lines as the
// stream should hold them (docs/publish.md): on the subjects of lines
// (PREFIX.DB.TABLE, a statement's PREFIX.DB._), the value as payload (a
// tombstone's empty), the key in Binlog-Key, the token in Binlog-Resume.
// Progress lines are left out.
func dbzWant(t *testing.T, lines []byte) []dbzMsg {
	var out []dbzMsg
	for _, l := range bytes.Split(lines, []byte("\n")) {
		if len(l) == 0 {
			continue
		}
		var e struct {
			Topic      string
			Key, Value json.RawMessage
			Progress   bool
			Skip       int
			Resume     string
		}
		require.NoError(t, json.Unmarshal(l, &e), "%s", l)
		if e.Progress {
			continue
		}
		m := dbzMsg{key: string(e.Key), value: string(e.Value)}
		if m.key == "null" {
			m.key = ""
		}
		if m.value == "null" {
			m.value = ""
		}
		if e.Skip == 0 {
			m.resume = e.Resume
		}
		if parts := strings.SplitN(e.Topic, ".", 3); len(parts) == 3 {
			m.subject = publish.Subject(parts[0], parts[1], parts[2])
		} else {
			var db struct{ DatabaseName string }
			require.NoError(t, json.Unmarshal(e.Key, &db))
			m.subject = publish.StatementSubject(e.Topic, db.DatabaseName)
		}
		out = append(out, m)
	}
	return out
}

// dbzGot is the records a stream's messages hold, progress messages
// left out.
func dbzGot(msgs []*nats.Msg) []dbzMsg {
	var out []dbzMsg
	for _, m := range msgs {
		if m.Header.Get(publish.ProgressHeader) != "" {
			continue
		}
		out = append(out, dbzMsg{subject: m.Subject, key: m.Header.Get(publish.KeyHeader), value: string(m.Data), resume: m.Header.Get(publish.ResumeHeader)})
	}
	return out
}

// dbzStreamDiff compares a stream's messages with binlog-tail --format
// debezium's lines, record for record: "" when the stream holds each of
// them once, in order, on its subject with its key and token.
func dbzStreamDiff(t *testing.T, want []byte, msgs []*nats.Msg) string {
	w := dbzWant(t, want)
	g := dbzGot(msgs)
	seen := map[dbzMsg]int{}
	dups := 0
	for _, m := range g {
		if seen[m]++; seen[m] == 2 {
			dups++
		}
	}
	for i := range min(len(w), len(g)) {
		if w[i].resume == "" {
			g[i].resume = ""
		}
		if w[i] != g[i] {
			return fmt.Sprintf("%d records, %d messages (%d duplicated); first difference at %d:\nwant %.300q\ngot  %.300q", len(w), len(g), dups, i, w[i], g[i])
		}
	}
	if len(w) != len(g) {
		return fmt.Sprintf("%d records, %d messages (%d duplicated)", len(w), len(g), dups)
	}
	return ""
}

// TestPublishDebeziumLayout: --format debezium on JetStream as
// docs/publish.md describes it: a row's records on PREFIX.DB.TABLE, the
// value as payload (a tombstone's empty), the key in Binlog-Key (none for
// a table without a primary key), the token in Binlog-Resume, a DDL's
// schema change on PREFIX.DB._; a primary-key change's three records
// have distinct Nats-Msg-Ids; the records equal binlog-tail's; and the
// stream is refused to a run in the other --format.
func TestPublishDebeziumLayout(t *testing.T) {
	s, c, js, start := setup(t)
	s.Exec(t, "USE d", "CREATE TABLE nk (v INT)", "INSERT INTO w VALUES (1, 1, 1, 'a'), (1, 2, 1, 'b')",
		"UPDATE w SET k = 3 WHERE txn = 1 AND k = 2", "DELETE FROM w WHERE k = 1", "INSERT INTO nk VALUES (5)")
	args := []string{"--dsn", s.DSN(mariadb.ReplUser), "--nats", c.URLs(), "--stream", "L", "--subject-prefix", "cdc",
		"--start", start, "--quiet", "--format", "debezium"}
	finish(t, args)

	msgs := natstest.Messages(t, js, "L")
	want := tailOutput(t, "--dsn", s.DSN(mariadb.ReplUser), "--start", start, "--format", "debezium", "--topic-prefix", "cdc")
	require.Empty(t, dbzStreamDiff(t, want, msgs))

	var subjects []string
	ids := map[string]bool{}
	for _, m := range msgs {
		subjects = append(subjects, m.Subject)
		id := m.Header.Get(jetstream.MsgIDHeader)
		assert.False(t, ids[id], "Nats-Msg-Id %s twice", id)
		ids[id] = true
		assert.NotEmpty(t, m.Header.Get(publish.ResumeHeader))
	}
	// CREATE TABLE nk; two inserts; the key move (d, tombstone, c); the
	// delete and its tombstone; the insert into nk.
	assert.Equal(t, []string{"cdc.d._", "cdc.d.w", "cdc.d.w", "cdc.d.w", "cdc.d.w", "cdc.d.w", "cdc.d.w", "cdc.d.w", "cdc.d.nk"}, subjects)
	assert.Equal(t, `{"databaseName":"d"}`, msgs[0].Header.Get(publish.KeyHeader))
	assert.Contains(t, string(msgs[0].Data), `"ddl":"CREATE TABLE nk (v INT)"`)
	assert.Equal(t, `{"txn":1,"k":2}`, msgs[4].Header.Get(publish.KeyHeader))
	assert.Empty(t, msgs[4].Data, "a tombstone's payload")
	assert.Contains(t, string(msgs[5].Data), `"op":"c"`)
	assert.Equal(t, msgs[3].Header.Get(publish.ResumeHeader), msgs[5].Header.Get(publish.ResumeHeader), "a key move's records share a token")
	assert.NotContains(t, msgs[8].Header, publish.KeyHeader, "a table without a primary key")

	p := startPublisher(t, "--dsn", s.DSN(mariadb.ReplUser), "--nats", c.URLs(), "--stream", "L", "--subject-prefix", "cdc", "--quiet", "--stop-at-current")
	<-p.done
	assert.Equal(t, 1, p.cmd.ProcessState.ExitCode())
	assert.Contains(t, p.stderr.String(), "stream L holds --format debezium messages under cdc.>: run with --format debezium to continue it, or use another --stream or --subject-prefix")
}
