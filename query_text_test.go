package binlogstream

import (
	"encoding/binary"
	"testing"

	"github.com/go-mysql-org/go-mysql/replication"
	pmysql "github.com/pingcap/tidb/pkg/parser/mysql"
	"github.com/stretchr/testify/assert"

	"github.com/binlogstream/binlogstream/internal/redact"
)

// queryEventWithMode is a Query event of q whose status variables give
// sql_mode (Q_SQL_MODE_CODE).
func queryEventWithMode(q string, mode pmysql.SQLMode) *Event {
	vars := make([]byte, 9)
	vars[0] = 1
	binary.LittleEndian.PutUint64(vars[1:], uint64(mode))
	return &Event{BinlogEvent: &replication.BinlogEvent{
		Header: &replication.EventHeader{EventType: replication.QUERY_EVENT},
		Event:  &replication.QueryEvent{StatusVars: vars, Query: []byte(q)},
	}}
}

func TestMaskedQuery(t *testing.T) {
	assert.Equal(t, redact.Mask, SecretMask)
	q := `CREATE USER a IDENTIFIED BY 'a\', b IDENTIFIED BY 'Zx9-secret'`
	// With backslash escapes 'a\', b IDENTIFIED BY ' is one string.
	assert.Equal(t, `CREATE USER a IDENTIFIED BY `+SecretMask+`Zx9-secret'`, queryEventWithMode(q, 0).MaskedQuery())
	assert.Equal(t, `CREATE USER a IDENTIFIED BY `+SecretMask+`, b IDENTIFIED BY `+SecretMask,
		queryEventWithMode(q, pmysql.ModeNoBackslashEscapes|pmysql.ModeStrictAllTables).MaskedQuery())
	assert.Equal(t, "ALTER TABLE t ADD c INT", queryEventWithMode("ALTER TABLE t ADD c INT", 0).MaskedQuery())

	noMode := &Event{BinlogEvent: &replication.BinlogEvent{Event: &replication.QueryEvent{Query: []byte(q)}}}
	assert.Equal(t, `CREATE USER a IDENTIFIED BY `+SecretMask, noMode.MaskedQuery(), "either reading's secrets")
	assert.Equal(t, `CREATE USER a IDENTIFIED BY `+SecretMask, MaskSecrets(q))

	assert.Equal(t, "", (&Event{BinlogEvent: &replication.BinlogEvent{Event: &replication.XIDEvent{}}}).MaskedQuery())
	assert.Equal(t, "", (&Event{}).MaskedQuery())
	assert.Equal(t, `SET PASSWORD FOR u = PASSWORD(`+SecretMask+`)`, MaskSecrets(`SET PASSWORD FOR u = PASSWORD('pw')`))
	assert.Equal(t, "COMMIT", MaskSecrets("COMMIT"))
}
