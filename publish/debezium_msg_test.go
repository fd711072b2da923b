package publish

import (
	"context"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/binlogstream/binlogstream"
)

// dbzKeyMove is a transaction of Debezium records: an insert, then a
// primary-key change's delete, tombstone and create, which share the
// token after their row change.
func dbzKeyMove() []message {
	tok := func(o uint64) []byte {
		return []byte(binlogstream.StartAt(binlogstream.Position{File: "bin.000001", Offset: o}).String())
	}
	return []message{
		{subject: "binlog.d.w", data: []byte(`{"op":"c"}`), token: tok(100), dbz: true, key: []byte(`{"k":1}`)},
		{subject: "binlog.d.w", data: []byte(`{"op":"d"}`), token: tok(200), dbz: true, key: []byte(`{"k":2}`)},
		{subject: "binlog.d.w", token: tok(200), dbz: true, key: []byte(`{"k":2}`), index: 1},
		{subject: "binlog.d.w", data: []byte(`{"op":"c"}`), token: tok(200), dbz: true, key: []byte(`{"k":3}`), index: 2, snap: true},
	}
}

// TestDebeziumMessages: the records of a primary-key change, which share
// a token, get distinct Nats-Msg-Ids (the token's alone, the negative
// control, would make the stream drop two of them as duplicates); each
// carries its key and token in headers, a tombstone an empty payload;
// spilled to a spool file and read back they make the same messages.
func TestDebeziumMessages(t *testing.T) {
	msgs := dbzKeyMove()
	assert.Equal(t, MsgID(msgs[1].token), MsgID(msgs[2].token), "negative control: the token's id")
	u := units(msgs, []byte("from"), MaxBatch, 0)
	require.Len(t, u, 1)
	ids := map[string]bool{}
	for i, m := range u[0] {
		ids[m.Header.Get(jetstream.MsgIDHeader)] = true
		assert.Equal(t, string(msgs[i].token), m.Header.Get(ResumeHeader))
		assert.Equal(t, string(msgs[i].key), m.Header.Get(KeyHeader))
		assert.Equal(t, msgs[i].data, m.Data)
	}
	assert.Len(t, ids, 4, "distinct Nats-Msg-Ids")
	assert.Equal(t, MsgID(msgs[0].token), u[0][0].Header.Get(jetstream.MsgIDHeader))
	assert.Empty(t, u[0][2].Data, "a tombstone's payload")
	assert.Equal(t, "begun", u[0][3].Header.Get(SnapshotHeader))
	assert.Empty(t, u[0][2].Header.Get(SnapshotHeader))

	s := newSpool(t.TempDir(), 1)
	for _, m := range msgs {
		require.NoError(t, s.add(m))
	}
	tx, err := s.txn(context.Background(), []byte("from"), 0, 2)
	require.NoError(t, err)
	require.NotNil(t, tx.file)
	var spilled [][]*nats.Msg
	require.NoError(t, eachUnit([]txn{tx}, 2, func(u []*nats.Msg) error {
		spilled = append(spilled, u)
		return nil
	}))
	tx.file.close()
	mem := units(msgs, []byte("from"), 2, 0)
	for _, us := range [][][]*nats.Msg{mem, spilled} {
		for _, u := range us {
			for _, m := range u {
				if len(m.Data) == 0 {
					m.Data = nil // the same empty payload
				}
			}
		}
	}
	assert.Equal(t, mem, spilled)
}

// TestResumeAfterDebezium: a Debezium message resumes after its
// Binlog-Resume token (its payload has none), says its format and
// whether a snapshot read is stored; a line says FormatLines.
func TestResumeAfterDebezium(t *testing.T) {
	after := binlogstream.StartAt(binlogstream.Position{File: "bin.000001", Offset: 400})
	hdr := nats.Header{}
	hdr.Set(ResumeHeader, after.String())
	pt, err := resumeAfter([]byte(`{"op":"c","after":{"resume":"x"}}`), hdr)
	require.NoError(t, err)
	assert.Equal(t, after, pt.From)
	assert.Equal(t, FormatDebezium, pt.Format)
	assert.False(t, pt.SnapshotBegun)
	hdr.Set(SnapshotHeader, "begun")
	pt, err = resumeAfter(nil, hdr) // a tombstone
	require.NoError(t, err)
	assert.True(t, pt.SnapshotBegun)

	pt, err = resumeAfter([]byte(`{"type":"query","resume":"`+after.String()+`"}`+"\n"), nats.Header{})
	require.NoError(t, err)
	assert.Equal(t, FormatLines, pt.Format)
	_, err = resumeAfter([]byte(`{"op":"c"}`), nats.Header{})
	assert.ErrorContains(t, err, "no Binlog-Resume header")
}
