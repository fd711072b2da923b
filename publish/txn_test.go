package publish

import (
	"fmt"
	"strconv"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/binlogstream/binlogstream"
)

func TestSubjectTokens(t *testing.T) {
	assert.Equal(t, "binlog.app.orders", Subject("binlog", "app", "orders"))
	assert.Equal(t, "p._._", Subject("p", "", ""))
	assert.Equal(t, "p.a%2Eb.t%20%2A%3E%25", Subject("p", "a.b", "t *>%"))
	assert.Equal(t, "p.%5F.x", Subject("p", "_", "x"), `a name "_" is not the absent name`)
	assert.Equal(t, "p.caf%C3%A9.t", Subject("p", "café", "t"))
}

func TestMsgIDDeterministic(t *testing.T) {
	a, b := MsgID([]byte("bls1.AAAA")), MsgID([]byte("bls1.AAAB"))
	assert.Equal(t, a, MsgID([]byte("bls1.AAAA")))
	assert.NotEqual(t, a, b)
	assert.Len(t, a, 22)
}

// testTxn is a transaction of n lines whose tokens are distinct.
func testTxn(n int) []message {
	var txn []message
	for i := range n {
		tok := []byte(fmt.Sprintf("tok%d", i))
		txn = append(txn, message{subject: "p.d.t", data: []byte(`{"resume":"` + string(tok) + `"}` + "\n"), token: tok})
	}
	return txn
}

func TestUnitsOneBatch(t *testing.T) {
	us := units(testTxn(3), []byte("from"), MaxBatch, 0)
	require.Len(t, us, 1)
	require.Len(t, us[0], 3)
	for i, m := range us[0] {
		assert.Equal(t, MsgID([]byte(fmt.Sprintf("tok%d", i))), m.Header.Get(jetstream.MsgIDHeader))
		assert.Empty(t, m.Header.Get(TxnHeader), "a transaction in one batch needs no marks")
	}
}

func TestUnitsSplitMarked(t *testing.T) {
	us := units(testTxn(2500), []byte("from"), MaxBatch, 0)
	require.Len(t, us, 3)
	assert.Len(t, us[0], 1000)
	assert.Len(t, us[2], 500)
	id := MsgID([]byte("tok0"))
	i := 0
	for _, u := range us {
		for _, m := range u {
			assert.Equal(t, id, m.Header.Get(TxnHeader))
			assert.Equal(t, strconv.Itoa(i), m.Header.Get(TxnIndexHeader))
			assert.Equal(t, "2500", m.Header.Get(TxnCountHeader))
			assert.Equal(t, "from", m.Header.Get(TxnFromHeader))
			i++
		}
	}
	// A rerun that finds 1000 stored sends the other two batches as they were.
	rest := units(testTxn(2500), []byte("from"), MaxBatch, 1000)
	require.Len(t, rest, 2)
	assert.Equal(t, "1000", rest[0][0].Header.Get(TxnIndexHeader))
	// Without atomic batches every message is a unit.
	single := units(testTxn(3), []byte("from"), 1, 1)
	require.Len(t, single, 2)
	assert.Equal(t, "1", single[0][0].Header.Get(TxnIndexHeader))
}

func TestResumeAfter(t *testing.T) {
	start := binlogstream.StartAt(binlogstream.Position{File: "bin.000001", Offset: 4})
	after := binlogstream.StartAt(binlogstream.Position{File: "bin.000001", Offset: 400})
	line := []byte(`{"type":"query","resume":"` + after.String() + `"}` + "\n")

	pt, err := resumeAfter(line, nats.Header{})
	require.NoError(t, err)
	assert.Equal(t, after, pt.From)
	assert.Zero(t, pt.Skip)

	// The end of a unit inside a transaction: from before it, the stored part skipped.
	hdr := nats.Header{}
	hdr.Set(TxnIndexHeader, "999")
	hdr.Set(TxnCountHeader, "2500")
	hdr.Set(TxnFromHeader, start.String())
	pt, err = resumeAfter(line, hdr)
	require.NoError(t, err)
	assert.Equal(t, start, pt.From)
	assert.Equal(t, 1000, pt.Skip)

	// The transaction's last message: after it.
	hdr.Set(TxnIndexHeader, "2499")
	pt, err = resumeAfter(line, hdr)
	require.NoError(t, err)
	assert.Equal(t, after, pt.From)

	_, err = resumeAfter([]byte("not a line"), nats.Header{})
	assert.Error(t, err)
}

func TestHolds(t *testing.T) {
	assert.True(t, holds([]string{"binlog.>"}, "binlog.>"))
	assert.True(t, holds([]string{"x", ">"}, "binlog.>"))
	assert.True(t, holds([]string{"*.>"}, "binlog.>"))
	assert.False(t, holds([]string{"binlog.*"}, "binlog.>"))
	assert.False(t, holds([]string{"binlog.app.>"}, "binlog.>"))
	assert.False(t, holds([]string{"other.>"}, "binlog.>"))
}

// TestUnitsEqualReference: units (cutUnits over the slice) cuts every
// size, batch size and stored prefix as the reference cuts the whole
// transaction at once.
func TestUnitsEqualReference(t *testing.T) {
	for _, n := range []int{1, 2, 7, 999, 1000, 1001, 2500} {
		txn := testTxn(n)
		for _, max := range []int{1, 7, MaxBatch} {
			for _, skip := range []int{0, 1, 6, 7, 999, 1000, 1001, n - 1} {
				if skip >= n || skip < 0 {
					continue
				}
				require.NoError(t, sameUnits(refUnits(txn, []byte("from"), max, skip), units(txn, []byte("from"), max, skip)),
					"n %d max %d skip %d", n, max, skip)
			}
		}
	}
}
