//go:build binlogstream_kafka_untransacted

package kafka

// untransacted, in a build with the tag binlogstream_kafka_untransacted
// (the negative control of cmd/binlog-publish's Kafka tests, never a
// release), turns off what makes the topics exact: no transactional.id,
// no transactions; records and checkpoints are produced and flushed as
// an idempotent producer would.
const untransacted = true
