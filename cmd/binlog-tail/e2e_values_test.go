package main

import (
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/binlogstream/binlogstream/testhelpers/mariadb"
	"github.com/binlogstream/binlogstream/testhelpers/valuecases"
)

// TestEndToEndValuesEqualServer: binlog-tail's value for every column of
// every row line equals the server's own SELECT of that row (the types and
// edge values of testhelpers/valuecases, inserted, updated and deleted),
// in each binlog_row_metadata mode with full row images, and in NO_LOG
// with MINIMAL and NOBLOB images, where a column the image left out is
// absent from the line.
func TestEndToEndValuesEqualServer(t *testing.T) {
	mariadb.Require(t)
	for _, c := range []struct{ meta, image string }{
		{"NO_LOG", "FULL"}, {"MINIMAL", "FULL"}, {"FULL", "FULL"}, {"NO_LOG", "MINIMAL"}, {"NO_LOG", "NOBLOB"},
	} {
		t.Run(c.meta+"/"+c.image, func(t *testing.T) { tailValuesEqualServer(t, c.meta, c.image) })
	}
}

func tailValuesEqualServer(t *testing.T, meta, image string) {
	s := mariadb.Start(t, mariadb.Options{ExtraArgs: []string{"--binlog-row-metadata=" + meta, "--binlog-row-image=" + image,
		"--max-allowed-packet=64M"}})
	createX, insertX := valuecases.TableSQL("x", valuecases.Exotic)
	s.Exec(t, "CREATE DATABASE d", "USE d", createX)
	file, pos := s.MasterStatus(t)
	createV, insertV := valuecases.TableSQL("v", valuecases.Columns)
	s.Exec(t, append(append([]string{"USE d", "SET SESSION sql_mode = ''", "SET SESSION time_zone = '+05:30'", createV}, insertV...), insertX...)...)
	want := map[string]map[string][]string{
		"v": valuecases.ServerRows(t, s, "v", valuecases.Columns),
		"x": valuecases.ServerRows(t, s, "x", valuecases.Exotic),
	}
	s.Exec(t, "USE d", "UPDATE v SET id = id + 100", "UPDATE x SET id = id + 100", "DELETE FROM v WHERE id > 102", "DELETE FROM x WHERE id > 102")

	out := filepath.Join(t.TempDir(), "values.jsonl")
	r := runBinary(t, context.Background(), "--dsn", s.DSN(mariadb.ReplUser), "--out", out,
		"--start", fmt.Sprintf("%s:%d", file, pos), "--stop-at-current", "--server-id", "83", "--quiet")
	require.Equal(t, 0, r.code, r.stderr)
	data, err := os.ReadFile(out)
	require.NoError(t, err)

	images, absent := 0, 0
	for _, line := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
		var l struct {
			Type, Table string
			Positional  bool
			Row, Before map[string]json.RawMessage
		}
		d := json.NewDecoder(strings.NewReader(line))
		d.UseNumber()
		require.NoError(t, d.Decode(&l), line)
		if l.Type == "table" {
			assert.Contains(t, line, `"source":"`+map[bool]string{true: "binlog", false: "history"}[meta == "FULL"]+`"`)
		}
		if l.Type != "insert" && l.Type != "update" && l.Type != "delete" {
			continue
		}
		require.False(t, l.Positional, line)
		cols := map[string][]valuecases.Col{"v": valuecases.Columns, "x": valuecases.Exotic}[l.Table]
		for _, row := range []map[string]json.RawMessage{l.Row, l.Before} {
			if row == nil {
				continue
			}
			images++
			var id int
			require.NoError(t, json.Unmarshal(row["id"], &id), "the primary key is in every image: %s", line)
			if id > 100 {
				id -= 100
			}
			server := want[l.Table][fmt.Sprint(id)]
			require.NotNil(t, server, "%s id %d", l.Table, id)
			for k, c := range cols {
				v, ok := row[c.Name]
				what := fmt.Sprintf("%s/%s %s.%s id %d %s", meta, image, l.Table, c.Name, id, l.Type)
				if !ok {
					absent++
					assert.NotEqual(t, "FULL", image, "%s: absent from a full image", what)
					continue
				}
				if server[k] == "NULL" {
					assert.Equal(t, "null", string(v), what)
					continue
				}
				assert.Equal(t, server[k], renderJSON(t, c.Render, v), "%s (%.200s)", what, v)
			}
		}
	}
	require.Equal(t, 2*(4+8+2), images, "4 inserts, 4 updates (2 images) and 2 deletes in each table")
	if image != "FULL" {
		assert.Positive(t, absent)
	}
	t.Logf("%s/%s: %d row images compared, %d columns absent", meta, image, images, absent)
}

// renderJSON turns binlog-tail's JSON for a value into the text the
// server's expression gives.
func renderJSON(t *testing.T, kind string, v json.RawMessage) string {
	var str string
	isStr := json.Unmarshal(v, &str) == nil
	var obj map[string]any
	_ = json.Unmarshal(v, &obj)
	switch kind {
	case "num":
		return string(v)
	case "text":
		require.True(t, isStr, "a string: %s", v)
		return str
	case "utf8hex":
		require.True(t, isStr, "text decoded to UTF-8: %s", v)
		return strings.ToUpper(hex.EncodeToString([]byte(str)))
	case "hex":
		if isStr {
			return strings.ToUpper(hex.EncodeToString([]byte(str)))
		}
		b, err := base64.StdEncoding.DecodeString(fmt.Sprint(obj["base64"]))
		require.NoError(t, err, "%s", v)
		return strings.ToUpper(hex.EncodeToString(b))
	case "geom":
		return fmt.Sprintf("%v:%s", obj["srid"], strings.ToUpper(fmt.Sprint(obj["wkb"])))
	}
	return string(v)
}
