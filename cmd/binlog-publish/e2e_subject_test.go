package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/binlogstream/binlogstream/publish"
	"github.com/binlogstream/binlogstream/testhelpers/mariadb"
	natstest "github.com/binlogstream/binlogstream/testhelpers/nats"
)

// docSubjects reads the subject table of README.md's "Messages": the
// subject template of each line type, "query" without a default
// database under "query-nodb".
func docSubjects(t *testing.T) map[string]string {
	b, err := os.ReadFile("README.md")
	require.NoError(t, err)
	_, msgs, ok := strings.Cut(string(b), "\n## Messages\n")
	require.True(t, ok, "README.md has no Messages section")
	msgs, _, _ = strings.Cut(msgs, "\n## ")
	row := regexp.MustCompile("(?m)^\\| (.+) \\| `(P\\.[^`]+)` \\|$")
	word := regexp.MustCompile("`([a-z]+)`")
	out := map[string]string{}
	for _, m := range row.FindAllStringSubmatch(msgs, -1) {
		for _, w := range word.FindAllStringSubmatch(m[1], -1) {
			typ := w[1]
			if strings.Contains(m[1], "without a default database") {
				typ += "-nodb"
			}
			out[typ] = m[2]
		}
	}
	require.NotEmpty(t, out, "README.md's Messages section has no subject table")
	return out
}

// expand is a documented subject template for prefix and the names.
func expand(template, prefix, schema, table string) string {
	r := strings.NewReplacer("P.", prefix+".", "<schema>", publish.Token(schema), "<table>", publish.Token(table))
	return r.Replace(template)
}

// TestSubjectsAsDocumented: every line type binlog-publish writes (rows,
// snapshot reads, table lines, statements with and without a default
// database) is on the subject README.md's table states (a progress line
// needs a second of other tables' rows in one transaction: the publish
// package's TestProgressSubjectAsDocumented feeds one to a Publisher),
// and a table named "_" or "%5F" never shares the statements' subject.
// Negative control: the publisher before StatementSubject sent the
// statements to P.<schema>.%5F, where a table named "_" also goes.
func TestSubjectsAsDocumented(t *testing.T) {
	doc := docSubjects(t)
	for _, typ := range []string{"insert", "update", "delete", "read", "table", "query", "query-nodb", "progress"} {
		require.Contains(t, doc, typ, "README.md's subject table names no subject for %s lines", typ)
	}
	for _, tmpl := range doc {
		assert.Contains(t, usageText, tmpl, "--help states another subject than README.md")
	}

	s, c, js, _ := setup(t)
	s.Exec(t, "CREATE DATABASE `_`", "CREATE DATABASE o", "USE d",
		"CREATE TABLE `_` (id INT PRIMARY KEY)", "CREATE TABLE `%5F` (id INT PRIMARY KEY)",
		"CREATE TABLE `_`.`_` (id INT PRIMARY KEY)", "CREATE TABLE o.x (id INT PRIMARY KEY)",
		"INSERT INTO w VALUES (1, 1, 1, 'read by the snapshot')", "INSERT INTO `_` VALUES (1)")
	args := []string{"--dsn", s.DSN(mariadb.ReplUser), "--nats", c.URLs(), "--stream", "S", "--start", "current",
		"--tables", "d.*,_.*", "--snapshot", "--quiet"}
	finish(t, args) // the snapshot's read lines
	s.Exec(t, "USE d", "INSERT INTO w VALUES (2, 1, 1, 'b')", "UPDATE w SET pad = 'c' WHERE txn = 2", "DELETE FROM w WHERE txn = 2",
		"INSERT INTO `_` VALUES (2)", "INSERT INTO `%5F` VALUES (1)", "INSERT INTO `_`.`_` VALUES (1)", "ALTER TABLE `_` ADD COLUMN v INT")
	s.Exec(t, "CREATE TABLE o.y (id INT PRIMARY KEY)") // no default database
	finish(t, args)

	seen := map[string]int{}
	bySubject := map[string][]string{}
	for _, m := range natstest.Messages(t, js, "S") {
		var l struct{ Type, Schema, Table string }
		require.NoError(t, json.Unmarshal(m.Data, &l), "%s", m.Data)
		typ := l.Type
		if typ == "query" && l.Schema == "" {
			typ = "query-nodb"
		}
		tmpl, ok := doc[typ]
		require.True(t, ok, "README.md gives no subject for a %s line: %s", typ, m.Data)
		assert.Equal(t, expand(tmpl, "binlog", l.Schema, l.Table), m.Subject, "%s", m.Data)
		seen[typ]++
		name := l.Schema + "." + l.Table
		if l.Type == "query" {
			name = "query " + l.Schema
		}
		bySubject[m.Subject] = append(bySubject[m.Subject], name)
	}
	for typ := range doc {
		if typ != "progress" { // see publish's TestProgressSubjectAsDocumented
			assert.Positive(t, seen[typ], "no %s line in the stream", typ)
		}
	}
	// The statements of d, its table "_" and its table "%5F" each have a
	// subject of their own, and a consumer of d's statements gets only those.
	for subject, want := range map[string]string{"binlog.d._": "query d", "binlog.d.%5F": "d._", "binlog.d.%255F": "d.%5F", "binlog.%5F.%5F": "_._"} {
		require.NotEmpty(t, bySubject[subject], "nothing on %s", subject)
		for _, got := range bySubject[subject] {
			assert.Equal(t, want, got, "a line on %s", subject)
		}
	}
	t.Logf("lines by type: %v", seen)

	// A stream written before the statements had their documented
	// subjects ends on P._.%5F: a restart continues after it, once.
	ctx := context.Background()
	st, err := js.Stream(ctx, "S")
	require.NoError(t, err)
	last, err := st.GetLastMsgForSubject(ctx, "binlog.>")
	require.NoError(t, err)
	require.Equal(t, "binlog._._", last.Subject, "%s", last.Data)
	require.NoError(t, st.DeleteMsg(ctx, last.Sequence))
	old := nats.NewMsg("binlog._.%5F")
	old.Data = last.Data
	for k, v := range last.Header {
		if !strings.HasPrefix(k, "Nats-") { // not the deleted one's id, still in the duplicate window
			old.Header[k] = v
		}
	}
	_, err = js.PublishMsg(ctx, old)
	require.NoError(t, err)
	s.Exec(t, "USE d", "INSERT INTO `_` VALUES (3, 3)")
	finish(t, args)
	var after []string
	for _, m := range natstest.Messages(t, js, "S") {
		if bytes.Contains(m.Data, []byte("o.y")) || bytes.Contains(m.Data, []byte(`"row":{"id":3`)) {
			after = append(after, m.Subject)
		}
	}
	assert.Equal(t, []string{"binlog._.%5F", "binlog.d.%5F"}, after, "the old-subject statement once, then the next row once")
}
