package debezium_test

import (
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
	assert.Equal(t, `{"status":"BEGIN","id":"0-1-5","ts_ms":1700000000000,"event_count":null,"data_collections":null}`, string(recs[0].Value))
	assert.Equal(t, `{"status":"END","id":"0-1-5","ts_ms":1700000000000,"event_count":3,"data_collections":[{"data_collection":"app.kv","event_count":3}]}`,
		string(recs[5].Value))
	assert.Equal(t, `{"id":"0-1-5"}`, string(recs[5].Key))

	plain := encode(t, debezium.Options{}, evs...)
	assert.Len(t, plain, len(recs)-2, "no transaction events without the option")
	_, err := debezium.NewEncoder(debezium.Options{TransactionMetadata: true, Schemas: true})
	require.Error(t, err)
}
