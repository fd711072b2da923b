package tailline

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/go-mysql-org/go-mysql/replication"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestQueryLineSecretMasked: a query line carries the statement with its
// password masked and every other byte as it was.
func TestQueryLineSecretMasked(t *testing.T) {
	const pw = "Kp4-line-secret-77"
	q := &replication.QueryEvent{Schema: []byte("d"),
		Query: []byte("CREATE USER repl@'127.0.0.1' IDENTIFIED BY '" + pw + "'")}
	got := string(AppendQueryLine(nil, q, testEvent(replication.QUERY_EVENT, q, "")))
	assert.NotContains(t, got, pw)
	var line struct{ Query string }
	require.NoError(t, json.Unmarshal([]byte(strings.TrimSpace(got)), &line))
	assert.Equal(t, "CREATE USER repl@'127.0.0.1' IDENTIFIED BY '<secret>'", line.Query)
}
