// Package debezium turns the events a binlogstream stream delivers into
// the change events of Debezium's MySQL connector, so that the systems that
// read those (Flink SQL's debezium-json, RisingWave and Materialize's
// ENVELOPE DEBEZIUM, the Debezium JDBC sink) read this stream as they are.
//
// An Encoder is fed every delivered event in order and returns Records:
// a topic, a key and a value, as JSON. It does no I/O. Row changes become
// change events ("c", "u", "d"; "r" for a SnapshotRead) on the topic
// PREFIX.DB.TABLE, keyed by the table's primary key; a change of a row's
// primary key is a delete of the old key and a create of the new one; a
// delete is followed by a tombstone (the key with a null value) unless
// Options.NoTombstones. DDL becomes a schema-change event on the topic
// PREFIX, its secrets masked. Column values follow Debezium's defaults
// (docs/debezium.md maps every type); Options choose the decimal and
// binary handling modes and whether the records carry their schemas as
// Kafka Connect's JsonConverter writes them with schemas.enable=true.
//
// The Encoder keeps the transaction in flight (the transaction block's
// counters) and whether a snapshot read was written; a consumer resuming
// a stream in the middle of a transaction restores them with SetState,
// from what it wrote before (StateOf reads them back from records).
package debezium
