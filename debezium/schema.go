package debezium

import (
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/go-mysql-org/go-mysql/replication"

	"github.com/binlogstream/binlogstream"
	"github.com/binlogstream/binlogstream/internal/ddl"
)

// The schemas below are Kafka Connect schemas as its JsonConverter writes
// them with schemas.enable=true; their names and fields are those of
// Debezium's MySQL connector (docs/debezium.md).

// snapshotAllowed is the members of source.snapshot's Enum.
const snapshotAllowed = "true,first,first_in_data_collection,last_in_data_collection,last,false,incremental"

// sourceSchema is the source field's schema.
const sourceSchema = `{"type":"struct","fields":[` +
	`{"type":"string","optional":false,"field":"version"},` +
	`{"type":"string","optional":false,"field":"connector"},` +
	`{"type":"string","optional":false,"field":"name"},` +
	`{"type":"int64","optional":false,"field":"ts_ms"},` +
	`{"type":"string","optional":true,"name":"io.debezium.data.Enum","version":1,"parameters":{"allowed":"` + snapshotAllowed + `"},"default":"false","field":"snapshot"},` +
	`{"type":"string","optional":false,"field":"db"},` +
	`{"type":"string","optional":true,"field":"sequence"},` +
	`{"type":"int64","optional":true,"field":"ts_us"},` +
	`{"type":"int64","optional":true,"field":"ts_ns"},` +
	`{"type":"string","optional":true,"field":"table"},` +
	`{"type":"int64","optional":false,"field":"server_id"},` +
	`{"type":"string","optional":true,"field":"gtid"},` +
	`{"type":"string","optional":false,"field":"file"},` +
	`{"type":"int64","optional":false,"field":"pos"},` +
	`{"type":"int32","optional":false,"field":"row"},` +
	`{"type":"int64","optional":true,"field":"thread"},` +
	`{"type":"string","optional":true,"field":"query"}` +
	`],"optional":false,"name":"io.debezium.connector.mysql.Source","version":1,"field":"source"}`

// transactionSchema is the envelope's transaction field's schema.
const transactionSchema = `{"type":"struct","fields":[` +
	`{"type":"string","optional":false,"field":"id"},` +
	`{"type":"int64","optional":false,"field":"total_order"},` +
	`{"type":"int64","optional":false,"field":"data_collection_order"}` +
	`],"optional":true,"name":"event.block","version":1,"field":"transaction"}`

// The transaction metadata events' key and value schemas.
const (
	txnKeySchema = `{"type":"struct","fields":[{"type":"string","optional":false,"field":"id"}],` +
		`"optional":false,"name":"io.debezium.connector.common.TransactionMetadataKey","version":1}`
	txnValueSchema = `{"type":"struct","fields":[` +
		`{"type":"string","optional":false,"field":"status"},` +
		`{"type":"string","optional":false,"field":"id"},` +
		`{"type":"int64","optional":true,"field":"event_count"},` +
		`{"type":"array","items":{"type":"struct","fields":[` +
		`{"type":"string","optional":false,"field":"data_collection"},` +
		`{"type":"int64","optional":false,"field":"event_count"}` +
		`],"optional":true,"name":"event.collection","version":1},"optional":true,"field":"data_collections"},` +
		`{"type":"int64","optional":false,"field":"ts_ms"}` +
		`],"optional":false,"name":"io.debezium.connector.common.TransactionMetadataValue","version":1}`
)

// keySchema: the primary key's columns, none optional.
func keySchema(te *tableEnc, t *binlogstream.Table) []byte {
	if te.pk == nil {
		return nil
	}
	b := []byte(`{"type":"struct","fields":[`)
	for n, k := range te.pk {
		if n > 0 {
			b = append(b, ',')
		}
		b = te.cols[k].appendSchema(b, t.Columns[k].Name, false)
	}
	b = append(b, `],"optional":false,"name":`...)
	b = appendString(b, te.topic+".Key")
	return append(b, '}')
}

// rowSchema: a row image's struct, as the field named field.
func rowSchema(b []byte, te *tableEnc, t *binlogstream.Table, field string) []byte {
	b = append(b, `{"type":"struct","fields":[`...)
	for c := range te.cols {
		if c > 0 {
			b = append(b, ',')
		}
		b = te.cols[c].appendSchema(b, t.Columns[c].Name, t.Columns[c].Nullable)
	}
	b = append(b, `],"optional":true,"name":`...)
	b = appendString(b, te.topic+".Value")
	b = append(b, `,"field":`...)
	b = appendString(b, field)
	return append(b, '}')
}

// envelopeSchema: the value's schema, Debezium's Envelope (version 2:
// before, after, source, transaction, op, ts_ms, ts_us, ts_ns).
func envelopeSchema(te *tableEnc, t *binlogstream.Table) []byte {
	b := []byte(`{"type":"struct","fields":[`)
	b = rowSchema(b, te, t, "before")
	b = append(b, ',')
	b = rowSchema(b, te, t, "after")
	b = append(b, ',')
	b = append(b, sourceSchema...)
	b = append(b, ',')
	b = append(b, transactionSchema...)
	b = append(b, `,{"type":"string","optional":false,"field":"op"},{"type":"int64","optional":true,"field":"ts_ms"},`+
		`{"type":"int64","optional":true,"field":"ts_us"},{"type":"int64","optional":true,"field":"ts_ns"}`...)
	b = append(b, `],"optional":false,"name":`...)
	b = appendString(b, te.topic+".Envelope")
	return append(b, `,"version":2}`...)
}

// The schema-change topic's key and value schemas.
const (
	schemaChangeKeySchema = `{"type":"struct","fields":[{"type":"string","optional":false,"field":"databaseName"}],` +
		`"optional":false,"name":"io.debezium.connector.mysql.SchemaChangeKey","version":1}`
	schemaChangeValueSchema = `{"type":"struct","fields":[` + sourceSchema + `,` +
		`{"type":"int64","optional":false,"field":"ts_ms"},` +
		`{"type":"string","optional":true,"field":"databaseName"},` +
		`{"type":"string","optional":true,"field":"schemaName"},` +
		`{"type":"string","optional":true,"field":"ddl"},` +
		`{"type":"array","items":{"type":"struct","fields":[` +
		`{"type":"string","optional":false,"field":"type"},` +
		`{"type":"string","optional":false,"field":"id"},` +
		`{"type":"struct","fields":[` +
		`{"type":"string","optional":true,"field":"defaultCharsetName"},` +
		`{"type":"array","items":{"type":"string","optional":false},"optional":true,"field":"primaryKeyColumnNames"},` +
		`{"type":"array","items":` + tableColumnSchema + `,"optional":false,"field":"columns"},` +
		`{"type":"string","optional":true,"field":"comment"}` +
		`],"optional":true,"name":"io.debezium.connector.schema.Table","version":1,"field":"table"}` +
		`],"optional":false,"name":"io.debezium.connector.schema.Change","version":1},"optional":false,"field":"tableChanges"}` +
		`],"optional":false,"name":"io.debezium.connector.mysql.SchemaChangeValue","version":1}`
)

// tableColumnSchema is a column's struct in a schema change's table.
const tableColumnSchema = `{"type":"struct","fields":[` +
	`{"type":"string","optional":false,"field":"name"},` +
	`{"type":"int32","optional":false,"field":"jdbcType"},` +
	`{"type":"int32","optional":true,"field":"nativeType"},` +
	`{"type":"string","optional":false,"field":"typeName"},` +
	`{"type":"string","optional":true,"field":"typeExpression"},` +
	`{"type":"string","optional":true,"field":"charsetName"},` +
	`{"type":"int32","optional":true,"field":"length"},` +
	`{"type":"int32","optional":true,"field":"scale"},` +
	`{"type":"int32","optional":false,"field":"position"},` +
	`{"type":"boolean","optional":true,"field":"optional"},` +
	`{"type":"boolean","optional":true,"field":"autoIncremented"},` +
	`{"type":"boolean","optional":true,"field":"generated"},` +
	`{"type":"string","optional":true,"field":"comment"},` +
	`{"type":"string","optional":true,"field":"defaultValueExpression"},` +
	`{"type":"array","items":{"type":"string","optional":false},"optional":true,"field":"enumValues"}` +
	`],"optional":false,"name":"io.debezium.connector.schema.Column","version":1}`

// appendSchemaChange appends the schema-change event of a statement, with
// its secrets masked, to the topic named by the topic prefix.
func (e *Encoder) appendSchemaChange(recs []Record, ev *binlogstream.Event, q *replication.QueryEvent) []Record {
	text := ev.MaskedQuery()
	kind := changeType(text)
	targets := renamedTo(text, kind, ddl.Targets(string(q.Schema), text))
	db := string(q.Schema)
	if len(targets) > 0 && targets[0].Schema != "" {
		db = targets[0].Schema
	}
	if d := ddl.DroppedDatabase(text); d != "" {
		db = d
	}
	te := &tableEnc{db: db}
	if len(targets) > 0 {
		names := make([]string, len(targets))
		for i, k := range targets {
			names[i] = k.Name
		}
		te.table = strings.Join(names, ",")
	}
	v := []byte(`{"source":`)
	v = e.appendSource(v, sourceInfo{ev: ev, te: te, snapshot: SnapshotFalse, thread: int64(q.SlaveProxyID)})
	v = append(v, `,"ts_ms":`...)
	v = strconv.AppendInt(v, tsMillis(ev), 10)
	v = append(v, `,"databaseName":`...)
	v = appendString(v, db)
	v = append(v, `,"schemaName":null,"ddl":`...)
	v = appendString(v, text)
	v = append(v, `,"tableChanges":[`...)
	if kind != "" {
		for i, k := range targets {
			if i > 0 {
				v = append(v, ',')
			}
			v = append(v, `{"type":"`...)
			v = append(v, kind...)
			v = append(v, `","id":`...)
			v = appendString(v, `"`+k.Schema+`"."`+k.Name+`"`)
			v = append(v, `,"table":`...)
			switch tc := changed(ev.DDL, k.Schema, k.Name); {
			case kind == "DROP":
				// Debezium's MySQL connector gives a dropped table as its
				// id alone: no charset, key or columns.
				v = append(v, droppedTable...)
			case tc != nil && tc.Table != nil:
				v = appendTable(v, tc)
			default:
				v = append(v, "null"...)
			}
			v = append(v, '}')
		}
	}
	v = append(v, "]}"...)
	k := append(appendString([]byte(`{"databaseName":`), db), '}')
	if e.opts.Schemas {
		k = withSchema([]byte(schemaChangeKeySchema), k)
		v = withSchema([]byte(schemaChangeValueSchema), v)
	}
	return append(recs, Record{Topic: e.opts.TopicPrefix, Key: k, Value: v, Row: -1, Last: true})
}

// renamedTo is the tables a statement of kind changes, from the targets
// it names: as Debezium's MySQL connector has it, a rename is an ALTER of
// the table under its new name only, so a RENAME TABLE keeps the new name
// of each pair and an ALTER TABLE ... RENAME the name it renames to.
func renamedTo(sql, kind string, targets []ddl.Key) []ddl.Key {
	if kind != "ALTER" || len(targets) == 0 || !ddl.DropsOrRenames(sql) {
		return targets
	}
	if f := strings.Fields(sql); len(f) > 0 && strings.EqualFold(f[0], "RENAME") {
		to := make([]ddl.Key, 0, len(targets)/2)
		for i := 1; i < len(targets); i += 2 {
			to = append(to, targets[i])
		}
		return to
	}
	return targets[len(targets)-1:]
}

// changeType is a table change's type in tableChanges: CREATE, ALTER
// (RENAME too) or DROP; "" for statements that change no table's layout
// (TRUNCATE, and statements on databases, users, ...).
func changeType(sql string) string {
	f := strings.Fields(sql)
	if len(f) < 2 {
		return ""
	}
	table := false
	for _, w := range f[1:min(len(f), 6)] {
		if strings.EqualFold(w, "TABLE") || strings.EqualFold(w, "TABLES") {
			table = true
		}
	}
	if !table {
		return ""
	}
	switch strings.ToUpper(f[0]) {
	case "CREATE":
		return "CREATE"
	case "ALTER", "RENAME":
		return "ALTER"
	case "DROP":
		return "DROP"
	}
	return ""
}

// appendString writes s as a JSON string: '"', '\' and control characters
// escaped, the rest as UTF-8 (as Kafka Connect's JsonConverter writes);
// bytes that are not UTF-8 become U+FFFD.
func appendString(b []byte, s string) []byte {
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		b = append(b, s[start:i]...)
		switch c {
		case '"', '\\':
			b = append(b, '\\', c)
		case '\n':
			b = append(b, '\\', 'n')
		case '\r':
			b = append(b, '\\', 'r')
		case '\t':
			b = append(b, '\\', 't')
		default:
			const hex = "0123456789abcdef"
			b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		}
		start = i + 1
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// appendFloat writes a FLOAT32 or FLOAT64; NaN and the infinities, which
// JSON lacks (and MySQL does not store), as strings.
func appendFloat(b []byte, f float64, bits int) []byte {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return appendString(b, strconv.FormatFloat(f, 'g', -1, bits))
	}
	return strconv.AppendFloat(b, f, 'g', -1, bits)
}
