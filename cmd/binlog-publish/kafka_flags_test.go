package main

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestKafkaFlags: --kafka takes the place of --nats and --stream, with
// the defaults docs/publish.md gives; what is JetStream's is refused with
// it, what is Kafka's or Debezium's without it.
func TestKafkaFlags(t *testing.T) {
	var stderr bytes.Buffer
	o, err := parseFlags([]string{"--dsn", "u:p@tcp(10.0.0.5:3307)/", "--kafka", "k1:9092,k2:9092"}, &stderr)
	require.NoError(t, err)
	assert.Equal(t, "k1:9092,k2:9092", o.Kafka.Brokers)
	assert.Equal(t, "binlog", o.Kafka.TopicPrefix)
	assert.Equal(t, "binlogstream.offsets", o.Kafka.OffsetsTopic)
	assert.Equal(t, "binlogstream.schemas", o.Kafka.SchemaTopic)
	assert.Equal(t, "lines", o.Kafka.Format)
	assert.Equal(t, "10.0.0.5:3307", o.sourceName(), "--name's default")
	o, err = parseFlags([]string{"--dsn", "u:p@tcp(10.0.0.5:3307)/", "--kafka", "k:9092", "--name", "orders", "--format", "debezium",
		"--schemas", "--decimal-handling", "string", "--transaction-topic"}, &stderr)
	require.NoError(t, err)
	assert.Equal(t, "orders", o.sourceName())
	assert.True(t, o.Kafka.debeziumOptions().Schemas && o.Kafka.debeziumOptions().TransactionMetadata, "--schemas with --transaction-topic")

	// --format debezium on JetStream too; its topic prefix is --subject-prefix.
	o, err = parseFlags([]string{"--dsn", "u:p@tcp(h:3306)/", "--nats", "nats://n:4222", "--stream", "S", "--format", "debezium", "--no-tombstones"}, &stderr)
	require.NoError(t, err)
	assert.Equal(t, "debezium", o.Kafka.Format)

	kafka := []string{"--dsn", "u:p@tcp(h:3306)/", "--kafka", "k:9092"}
	nats := []string{"--dsn", "u:p@tcp(h:3306)/", "--nats", "nats://n:4222", "--stream", "S"}
	for _, c := range []struct {
		base, args []string
		want       string
	}{
		{kafka, []string{"--nats", "nats://n:4222"}, "--kafka and --nats: give one of them"},
		{kafka, []string{"--stream", "S"}, "--stream is for --nats, not --kafka"},
		{kafka, []string{"--lease"}, "--lease is for --nats, not --kafka"},
		{kafka, []string{"--spool-mib", "8"}, "--spool-mib is for --nats, not --kafka"},
		{kafka, []string{"--format", "xml"}, `--format "xml": want lines or debezium`},
		{kafka, []string{"--schemas"}, "--schemas needs --format debezium"},
		{kafka, []string{"--format", "debezium", "--decimal-handling", "exact"}, `--decimal-handling "exact": want precise, string or double`},
		{kafka, []string{"--topic-prefix", ""}, "must not be empty"},
		{nats, []string{"--name", "x"}, "--name needs --kafka"},
		{nats, []string{"--topic-prefix", "x"}, "--topic-prefix needs --kafka"},
		{nats, []string{"--format", "debezium", "--transaction-topic"}, "--transaction-topic needs --kafka"},
		{kafka, []string{"--transaction-topic"}, "--transaction-topic needs --format debezium"},
		{[]string{"--dsn", "u:p@tcp(h:3306)/"}, nil, "missing required flags --nats and --stream (or --kafka in place of --nats and --stream)"},
	} {
		_, err := parseFlags(append(append([]string{}, c.base...), c.args...), &stderr)
		require.Error(t, err, "%v", c.args)
		assert.Contains(t, err.Error(), c.want)
	}
}
