package debezium_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/go-mysql-org/go-mysql/replication"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/binlogstream/binlogstream"
	"github.com/binlogstream/binlogstream/debezium"
)

// connectSchema is the part of a JsonConverter schema the check reads.
type connectSchema struct {
	Type    string          `json:"type"`
	Name    string          `json:"name"`
	Version int             `json:"version"`
	Field   string          `json:"field"`
	Fields  []connectSchema `json:"fields"`
	Items   *connectSchema  `json:"items"`
}

// orderedKeys returns an object's keys in the order the JSON has them,
// with each value.
func orderedKeys(t *testing.T, raw json.RawMessage) ([]string, map[string]json.RawMessage) {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(raw))
	tok, err := dec.Token()
	require.NoError(t, err)
	require.Equal(t, json.Delim('{'), tok, "%s", raw)
	var keys []string
	vals := map[string]json.RawMessage{}
	for dec.More() {
		k, err := dec.Token()
		require.NoError(t, err)
		var v json.RawMessage
		require.NoError(t, dec.Decode(&v))
		keys = append(keys, k.(string))
		vals[k.(string)] = v
	}
	return keys, vals
}

// followsSchema checks that payload holds every field of schema s, in
// the schema's order and nothing else, as JsonConverter writes a Struct,
// down through structs and arrays of structs.
func followsSchema(t *testing.T, s connectSchema, payload json.RawMessage, path string) {
	t.Helper()
	if string(payload) == "null" {
		return
	}
	switch s.Type {
	case "struct":
		keys, vals := orderedKeys(t, payload)
		var want []string
		for _, f := range s.Fields {
			want = append(want, f.Field)
		}
		require.Equal(t, want, keys, "the fields of %s (%s)", path, s.Name)
		for _, f := range s.Fields {
			followsSchema(t, f, vals[f.Field], path+"."+f.Field)
		}
	case "array":
		var items []json.RawMessage
		require.NoError(t, json.Unmarshal(payload, &items))
		for i, it := range items {
			followsSchema(t, *s.Items, it, fmt.Sprintf("%s[%d]", path, i))
		}
	}
}

// TestPayloadFollowsSchema: with Schemas every key and value (change
// events, a snapshot read, schema changes, transaction metadata) has its
// payload's fields in its schema's order, as Kafka Connect's
// JsonConverter writes a Struct; the change event's schema is Debezium's
// Envelope version 2 (before, after, source, transaction, op, ts_ms,
// ts_us, ts_ns) with the MySQL Source version 1, and without schemas the
// value is the same payload.
func TestPayloadFollowsSchema(t *testing.T) {
	tbl := typesTable()
	small := &binlogstream.Table{Schema: "app", Name: "kv", PrimaryKey: []int{0}, Source: binlogstream.SchemaFromHistory,
		Columns: []binlogstream.Column{col("k", "int", "int", notNull), col("v", "varchar(10)", "varchar", nil)}}
	evs := func() []binlogstream.Event {
		return []binlogstream.Event{
			readEvent(small, []any{int32(0), "read"}),
			ddlEvent("CREATE TABLE kv (k INT PRIMARY KEY, v VARCHAR(10))", 50, binlogstream.TableChange{Schema: "app", Name: "kv", Table: small, Charset: "utf8mb4"}),
			gtidEvent("0-1-5", 100),
			rowsEvent(replication.WRITE_ROWS_EVENTv2, tbl, "0-1-5", 200, typesRow()),
			rowsEvent(replication.UPDATE_ROWS_EVENTv2, small, "0-1-5", 400, []any{int32(1), "a"}, []any{int32(1), "b"}),
			rowsEvent(replication.DELETE_ROWS_EVENTv2, small, "0-1-5", 500, []any{int32(1), "b"}),
			xidEvent(600),
		}
	}
	with := encode(t, debezium.Options{Schemas: true, TransactionMetadata: true}, evs()...)
	without := encode(t, debezium.Options{TransactionMetadata: true}, evs()...)
	require.Equal(t, len(without), len(with))
	envelopes := 0
	for i, r := range with {
		for _, part := range []struct {
			name       string
			b, without []byte
		}{{"key", r.Key, without[i].Key}, {"value", r.Value, without[i].Value}} {
			if part.b == nil {
				continue
			}
			var m struct {
				Schema  connectSchema   `json:"schema"`
				Payload json.RawMessage `json:"payload"`
			}
			require.NoError(t, json.Unmarshal(part.b, &m))
			followsSchema(t, m.Schema, m.Payload, fmt.Sprintf("record %d %s %s", i, r.Topic, part.name))
			assert.Equal(t, string(part.without), string(m.Payload), "record %d %s: the payload is the record without schemas", i, part.name)
			if part.name == "value" && m.Schema.Name == r.Topic+".Envelope" {
				envelopes++
				assert.Equal(t, 2, m.Schema.Version, "Envelope version")
				var names []string
				for _, f := range m.Schema.Fields {
					names = append(names, f.Field)
					if f.Field == "source" {
						assert.Equal(t, "io.debezium.connector.mysql.Source", f.Name)
						assert.Equal(t, 1, f.Version, "Source version")
					}
				}
				assert.Equal(t, []string{"before", "after", "source", "transaction", "op", "ts_ms", "ts_us", "ts_ns"}, names)
			}
		}
	}
	assert.Equal(t, 4, envelopes, "the read, the insert, the update, the delete")
}
