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

// TestTransactionMetadata: with TransactionMetadata a transaction's
// change events come after a BEGIN and before an END on
// PREFIX.transaction, keyed by its id, the END counting them per table;
// a transaction without change events and a DDL give none; without the
// option, none at all; with Schemas the options are refused.
func TestTransactionMetadata(t *testing.T) {
	tbl := &binlogstream.Table{Schema: "app", Name: "kv", PrimaryKey: []int{0}, Source: binlogstream.SchemaFromHistory,
		Columns: []binlogstream.Column{col("k", "int", "int", nil), col("v", "varchar(10)", "varchar", nil)}}
	evs := []binlogstream.Event{
		gtidEvent("0-1-5", 100),
		rowsEvent(replication.WRITE_ROWS_EVENTv1, tbl, "0-1-5", 150, []any{int32(1), "a"}, []any{int32(2), "b"}),
		rowsEvent(replication.DELETE_ROWS_EVENTv1, tbl, "0-1-5", 250, []any{int32(1), "a"}),
		xidEvent(350),
		gtidEvent("0-1-6", 400),
		xidEvent(450),
		queryEvent("app", "CREATE TABLE t2 (k INT PRIMARY KEY)", 500),
	}
	recs := encode(t, debezium.Options{TransactionMetadata: true}, evs...)
	var topics []string
	for _, r := range recs {
		topics = append(topics, r.Topic)
	}
	assert.Equal(t, []string{"binlog.transaction", "binlog.app.kv", "binlog.app.kv", "binlog.app.kv", "binlog.app.kv", "binlog.transaction", "binlog"}, topics)
	assert.Equal(t, `{"id":"0-1-5"}`, string(recs[0].Key))
	assert.Equal(t, `{"status":"BEGIN","id":"0-1-5","event_count":null,"data_collections":null,"ts_ms":1700000000000}`, string(recs[0].Value))
	assert.Equal(t, `{"status":"END","id":"0-1-5","event_count":3,"data_collections":[{"data_collection":"app.kv","event_count":3}],"ts_ms":1700000000000}`,
		string(recs[5].Value))
	assert.Equal(t, `{"id":"0-1-5"}`, string(recs[5].Key))

	plain := encode(t, debezium.Options{}, evs...)
	assert.Len(t, plain, len(recs)-2, "no transaction events without the option")
}

// TestTransactionMetadataGolden: the transaction metadata events without
// and with Schemas, as Kafka Connect's JsonConverter writes Debezium's
// TransactionMetadataKey and TransactionMetadataValue (the fields in the
// schema's order: status, id, event_count, data_collections of
// event.collection structs, ts_ms), in testdata/txn*.golden (go test
// -update rewrites them). With Schemas every key and value is
// {"schema","payload"} and the payload is the event without schemas.
func TestTransactionMetadataGolden(t *testing.T) {
	tbl := &binlogstream.Table{Schema: "app", Name: "kv", PrimaryKey: []int{0}, Source: binlogstream.SchemaFromHistory,
		Columns: []binlogstream.Column{col("k", "int", "int", notNull), col("v", "varchar(10)", "varchar", nil)}}
	other := &binlogstream.Table{Schema: "app", Name: "log", Source: binlogstream.SchemaFromHistory,
		Columns: []binlogstream.Column{col("m", "text", "text", nil)}}
	evs := []binlogstream.Event{
		gtidEvent("0-1-5", 100),
		rowsEvent(replication.WRITE_ROWS_EVENTv1, tbl, "0-1-5", 150, []any{int32(1), "a"}),
		rowsEvent(replication.WRITE_ROWS_EVENTv1, other, "0-1-5", 200, []any{"hello"}),
		xidEvent(350),
	}
	golden := map[bool][]debezium.Record{}
	for _, schemas := range []bool{false, true} {
		name := "txn"
		if schemas {
			name = "txn-schemas"
		}
		t.Run(name, func(t *testing.T) {
			var txn []debezium.Record
			for _, r := range encode(t, debezium.Options{TransactionMetadata: true, Schemas: schemas}, evs...) {
				if r.Topic == "binlog.transaction" {
					txn = append(txn, r)
				}
			}
			require.Len(t, txn, 2, "a BEGIN and an END")
			golden[schemas] = txn
			var b bytes.Buffer
			for _, r := range txn {
				require.True(t, json.Valid(r.Key) && json.Valid(r.Value), "%s %s", r.Key, r.Value)
				fmt.Fprintf(&b, "%s\t%s\t%s\n", r.Topic, r.Key, r.Value)
			}
			assertGolden(t, name, b.Bytes())
		})
	}
	for i, r := range golden[true] {
		var k, v struct {
			Schema struct {
				Name    string
				Version int
			}
			Payload json.RawMessage
		}
		require.NoError(t, json.Unmarshal(r.Key, &k))
		require.NoError(t, json.Unmarshal(r.Value, &v))
		assert.Equal(t, "io.debezium.connector.common.TransactionMetadataKey", k.Schema.Name)
		assert.Equal(t, "io.debezium.connector.common.TransactionMetadataValue", v.Schema.Name)
		assert.Equal(t, 1, v.Schema.Version)
		assert.Equal(t, string(golden[false][i].Key), string(k.Payload), "the key's payload")
		assert.Equal(t, string(golden[false][i].Value), string(v.Payload), "the value's payload")
	}
}

// TestTransactionIDWithoutGTID: a transaction without a GTID is named
// "file=FILE,pos=POS" of its BEGIN, as Debezium's MySQL connector names
// one (MySqlOffsetContext's NON_GTID_TRANSACTION_ID_FORMAT), in its change
// events' transaction.id and in its BEGIN and END.
func TestTransactionIDWithoutGTID(t *testing.T) {
	tbl := &binlogstream.Table{Schema: "app", Name: "kv", PrimaryKey: []int{0}, Source: binlogstream.SchemaFromHistory,
		Columns: []binlogstream.Column{col("k", "int", "int", notNull), col("v", "varchar(10)", "varchar", nil)}}
	recs := encode(t, debezium.Options{TransactionMetadata: true},
		queryEvent("", "BEGIN", 1200),
		rowsEvent(replication.WRITE_ROWS_EVENTv1, tbl, "", 1300, []any{int32(1), "a"}),
		xidEvent(1400))
	require.Len(t, recs, 3)
	const id = "file=mysql-bin.000001,pos=1200"
	assert.Equal(t, `{"id":"`+id+`"}`, string(recs[0].Key))
	var v struct{ Transaction struct{ ID string } }
	require.NoError(t, json.Unmarshal(recs[1].Value, &v))
	assert.Equal(t, id, v.Transaction.ID)
	assert.Contains(t, string(recs[2].Value), `"status":"END","id":"`+id+`"`)
}
