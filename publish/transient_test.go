package publish

import (
	"errors"
	"fmt"
	"testing"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
)

// TestTransientNoPeers: a cluster that cannot place replicas yet is
// waited for, like one without a leader; other API errors are not.
func TestTransientNoPeers(t *testing.T) {
	noPeers := &jetstream.APIError{Code: 500, ErrorCode: 10005, Description: "no suitable peers for placement"}
	assert.True(t, transient(fmt.Errorf("lease bucket x: %w", noPeers)))
	assert.False(t, transient(&jetstream.APIError{Code: 400, ErrorCode: jetstream.JSErrCodeBadRequest}))
	assert.False(t, transient(errors.New("boom")))
}
