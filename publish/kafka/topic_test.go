package kafka

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestTopicName: bytes a Kafka topic cannot hold become '_', as Debezium
// writes them; names are cut at 249 bytes.
func TestTopicName(t *testing.T) {
	assert.Equal(t, "binlog.app.kv", TopicName("binlog.app.kv"))
	assert.Equal(t, "binlog.my_db.t_b-1", TopicName("binlog.my db.t$b-1"))
	assert.Equal(t, "binlog.d.caf__", TopicName("binlog.d.café"))
	assert.Len(t, TopicName(strings.Repeat("x", 300)), 249)
}
