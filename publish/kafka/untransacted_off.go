//go:build !binlogstream_kafka_untransacted

package kafka

// untransacted is false in every build but the tests' negative control
// (see untransacted_on.go).
const untransacted = false
