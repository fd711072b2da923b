package mysqljson_test

import (
	"encoding/binary"
	"strings"
	"testing"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/binlogstream/binlogstream/internal/mysqljson"
	th "github.com/binlogstream/binlogstream/testhelpers"
)

// jsonOpaque is a binary JSON opaque value of field type tp.
func jsonOpaque(tp byte, data []byte) []byte {
	return append([]byte{0x0f, tp, byte(len(data))}, data...)
}

func packedDatetime(y, mo, d, h, mi, s, frac int64) []byte {
	ymd := (y*13+mo)<<5 | d
	hms := h<<12 | mi<<6 | s
	return binary.LittleEndian.AppendUint64(nil, uint64((ymd<<17|hms)<<24|frac))
}

func packedTime(neg bool, h, mi, s, frac int64) []byte {
	v := (h<<12|mi<<6|s)<<24 | frac
	if neg {
		v = -v
	}
	return binary.LittleEndian.AppendUint64(nil, uint64(v))
}

// TestJSONTextAgreesWithGoMySQL: documents of every binary JSON type,
// opaque DECIMAL, DATETIME, DATE, TIME and others included, read by this
// package and by go-mysql with RenderJSONAsMySQLText give the same text,
// so a document built from a diff reads like one logged whole; except
// that go-mysql's JSON encoder escapes <, > and & (\u003c...), which
// this package writes as the server does.
func TestJSONTextAgreesWithGoMySQL(t *testing.T) {
	docs := [][]byte{
		th.JSONBinary(`{"a":1,"bb":[true,false,null],"c":{"x":-32768,"y":65535,"z":-2147483648,"w":4294967295}}`),
		th.JSONBinary(`[9223372036854775807,-9223372036854775808,18446744073709551615,0.5,2.0,-0.0,1e300,1.5e-7,123456789012345680000]`),
		th.JSONBinary(`["","quote\" back\\ slash/ tab\t nl\n cr\r bs\b ff\f nul\u0000 \u001f","é漢😀","<&>"]`),
		th.JSONBinary(`"top-level string"`),
		th.JSONBinary(`-7`),
		th.JSONBinary(`true`),
		th.JSONBinary(`3.25`),
		th.JSONBinary(`{}`),
	}
	// An array of opaque values, laid out by hand: 7 entries, each an offset.
	opaques := [][]byte{
		jsonOpaque(mysql.MYSQL_TYPE_NEWDECIMAL, []byte{14, 4, 0x81, 0x0D, 0xFB, 0x38, 0xD2, 0x04, 0xD2}), // 1234567890.1234
		jsonOpaque(mysql.MYSQL_TYPE_NEWDECIMAL, []byte{14, 4, 0x7E, 0xF2, 0x04, 0xC7, 0x2D, 0xFB, 0x2D}), // -1234567890.1234
		jsonOpaque(mysql.MYSQL_TYPE_NEWDECIMAL, []byte{4, 2, 0x80, 0x05}),                                // 0.05
		jsonOpaque(mysql.MYSQL_TYPE_DATETIME, packedDatetime(2024, 2, 29, 23, 59, 58, 123456)),
		jsonOpaque(mysql.MYSQL_TYPE_DATE, packedDatetime(1999, 12, 31, 0, 0, 0, 0)),
		jsonOpaque(mysql.MYSQL_TYPE_TIME, packedTime(true, 838, 59, 59, 0)),
		jsonOpaque(mysql.MYSQL_TYPE_BLOB, []byte("\x00\xffbin")),
	}
	n := len(opaques)
	header := 4 + 3*n
	arr := binary.LittleEndian.AppendUint16(nil, uint16(n))
	size := header
	for _, o := range opaques {
		size += len(o) - 1
	}
	arr = binary.LittleEndian.AppendUint16(arr, uint16(size))
	off := header
	for _, o := range opaques {
		arr = append(arr, o[0])
		arr = binary.LittleEndian.AppendUint16(arr, uint16(off))
		off += len(o) - 1
	}
	for _, o := range opaques {
		arr = append(arr, o[1:]...)
	}
	docs = append(docs, append([]byte{0x02}, arr...))

	tbl := th.Table{ID: 8, Schema: "s", Name: "t", Columns: []th.Column{{Name: "j", Type: th.JSON}}}
	b := th.NewBuilder(th.MySQL)
	b.Txn(func(x *th.Txn) {
		for _, d := range docs {
			x.Insert(tbl, th.Row{th.JSONRaw(d)})
		}
	})
	bl := b.Build()
	p := replication.NewBinlogParser()
	p.SetRenderJSONAsMySQLText(true)
	var got []any
	for _, e := range bl.Events {
		ev, err := p.Parse(bl.Files[0].Data[e.Start:e.End])
		require.NoError(t, err)
		if re, ok := ev.Event.(*replication.RowsEvent); ok {
			got = append(got, re.Rows[0][0])
		}
	}
	require.Len(t, got, len(docs))
	for k, d := range docs {
		ours, err := decodeText(d)
		require.NoError(t, err, "document %d", k)
		assert.Equal(t, htmlUnescaper.Replace(got[k].(string)), ours, "document %d", k)
	}
	last, _ := decodeText(docs[len(docs)-1])
	assert.Equal(t, `[1234567890.1234,-1234567890.1234,0.05,"2024-02-29 23:59:58.123456","1999-12-31","-838:59:59.000000","base64:type252:AP9iaW4="]`, last)
}

var htmlUnescaper = strings.NewReplacer(`\u003c`, "<", `\u003e`, ">", `\u0026`, "&")

// decodeText decodes a MySQL binary JSON document to its text.
func decodeText(doc []byte) (string, error) {
	n, err := mysqljson.DecodeBinary(doc)
	if err != nil {
		return "", err
	}
	return n.String(), nil
}
