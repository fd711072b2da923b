package main

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestKafkaTransactionTopic: --format debezium --transaction-topic
// writes to PREFIX.transaction, keyed {"id"}, a BEGIN and an END for each
// transaction with change events, in turn; the END's event_count and
// data_collections count the change events whose transaction.id is its
// id (tombstones, DDL and statements have none). Without the flag the
// topic is not written; with --schemas its keys and values carry their
// schemas.
func TestKafkaTransactionTopic(t *testing.T) {
	s, start := setupSource(t)
	s.Exec(t, "USE d", "CREATE TABLE o (k INT PRIMARY KEY, v INT)",
		"INSERT INTO w VALUES (1, 0, 1, 'a')",
		"BEGIN", "INSERT INTO w VALUES (2, 0, 2, 'b'), (2, 1, 2, 'c')", "INSERT INTO o VALUES (1, 1), (2, 2)",
		"UPDATE w SET k = 5 WHERE txn = 2 AND k = 1", "COMMIT",
		"DELETE FROM o WHERE k = 1", "ALTER TABLE o ADD COLUMN x INT")
	k := startKafka(t)
	finish(t, k.args(s, start, "--format", "debezium", "--transaction-topic"))

	type txnEvent struct {
		Status          string
		ID              string
		EventCount      *int64 `json:"event_count"`
		DataCollections []struct {
			DataCollection string `json:"data_collection"`
			EventCount     int64  `json:"event_count"`
		} `json:"data_collections"`
	}
	txTopic := k.prefix + ".transaction"
	var events []txnEvent
	for _, r := range k.c.ReadCommitted(t, txTopic) {
		var e txnEvent
		require.NoError(t, json.Unmarshal(r.Value, &e))
		assert.Equal(t, fmt.Sprintf(`{"id":%q}`, e.ID), string(r.Key))
		events = append(events, e)
	}
	// The change events by transaction and table, from the table topics.
	counts := map[string]map[string]int64{}
	for _, r := range k.records(t) {
		if r.Topic == txTopic || r.Value == nil {
			continue
		}
		var v struct {
			Source      struct{ DB, Table string }
			Transaction *struct{ ID string }
		}
		require.NoError(t, json.Unmarshal(r.Value, &v))
		if v.Transaction == nil {
			continue // a schema change
		}
		if counts[v.Transaction.ID] == nil {
			counts[v.Transaction.ID] = map[string]int64{}
		}
		counts[v.Transaction.ID][v.Source.DB+"."+v.Source.Table]++
	}
	require.Len(t, counts, 3, "transactions with change events: the insert, the multi-table one, the delete")
	require.Len(t, events, 2*len(counts))
	var ids []string
	for i := 0; i < len(events); i += 2 {
		begin, end := events[i], events[i+1]
		assert.Equal(t, "BEGIN", begin.Status)
		assert.Nil(t, begin.EventCount)
		assert.Equal(t, "END", end.Status)
		require.Equal(t, begin.ID, end.ID)
		ids = append(ids, end.ID)
		want := counts[end.ID]
		require.NotNil(t, want, "END of %s: no change events", end.ID)
		var total int64
		got := map[string]int64{}
		for _, dc := range end.DataCollections {
			got[dc.DataCollection] = dc.EventCount
			total += dc.EventCount
		}
		assert.Equal(t, want, got, "data_collections of %s", end.ID)
		require.NotNil(t, end.EventCount)
		assert.Equal(t, total, *end.EventCount)
	}
	assert.Len(t, slices.Compact(slices.Clone(ids)), 3)
	// The multi-table transaction: 2 (w), 2 (o), the key move's delete
	// and create (w). The topic's partitions are read one after the
	// other: its events come in binlog order per transaction only.
	var multi []map[string]int64
	for _, c := range counts {
		multi = append(multi, c)
	}
	assert.Contains(t, multi, map[string]int64{"d.w": 4, "d.o": 2})

	// The negative control: without --transaction-topic, no such topic.
	k2 := startKafka(t)
	finish(t, k2.args(s, start, "--format", "debezium"))
	assert.NotContains(t, k2.c.Topics(t, k2.prefix), k2.prefix+".transaction")

	// With --schemas the same events, each key and value as
	// {"schema","payload"} (JsonConverter with schemas.enable=true).
	k3 := startKafka(t)
	finish(t, k3.args(s, start, "--format", "debezium", "--transaction-topic", "--schemas"))
	var withSchemas []txnEvent
	for _, r := range k3.c.ReadCommitted(t, k3.prefix+".transaction") {
		var key, value struct {
			Schema  struct{ Name string }
			Payload json.RawMessage
		}
		require.NoError(t, json.Unmarshal(r.Key, &key))
		require.NoError(t, json.Unmarshal(r.Value, &value))
		assert.Equal(t, "io.debezium.connector.common.TransactionMetadataKey", key.Schema.Name)
		assert.Equal(t, "io.debezium.connector.common.TransactionMetadataValue", value.Schema.Name)
		var e txnEvent
		require.NoError(t, json.Unmarshal(value.Payload, &e))
		assert.Equal(t, fmt.Sprintf(`{"id":%q}`, e.ID), string(key.Payload))
		withSchemas = append(withSchemas, e)
	}
	assert.Equal(t, events, withSchemas, "the payloads are the events without --schemas")
}
