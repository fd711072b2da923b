package binlogstream_test

import (
	"testing"

	"github.com/go-mysql-org/go-mysql/replication"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/binlogstream/binlogstream"
)

func hdr(typ replication.EventType, size, logPos uint32, flags uint16) *replication.EventHeader {
	return &replication.EventHeader{EventType: typ, EventSize: size, LogPos: logPos, Flags: flags, Timestamp: 1}
}

// A file passes 4 GiB inside one huge transaction: LogPos (32 bits) wraps,
// the tracker keeps counting in 64 bits, and a dump from there is refused
// rather than requested at a wrapped offset.
func TestTrackerFollowsPast4GiB(t *testing.T) {
	const file = "mysql-bin.000007"
	start := uint64(1<<32 - 0x100)
	tr := binlogstream.NewTracker(binlogstream.StartAt(binlogstream.Position{File: file, Offset: start}))
	ev := func(typ replication.EventType, size uint32, logPos uint32, e replication.Event) *replication.BinlogEvent {
		return &replication.BinlogEvent{Header: hdr(typ, size, logPos, 0), Event: e}
	}
	act, _, _, _, err := tr.Observe(&replication.BinlogEvent{
		Header: hdr(replication.ROTATE_EVENT, 40, 0, replication.LOG_EVENT_ARTIFICIAL_F),
		Event:  &replication.RotateEvent{Position: start, NextLogName: []byte(file)}})
	require.NoError(t, err)
	assert.Equal(t, "ignore", act)
	act, _, _, _, err = tr.Observe(ev(replication.FORMAT_DESCRIPTION_EVENT, 120, 0, &replication.FormatDescriptionEvent{}))
	require.NoError(t, err)
	assert.Equal(t, "ignore", act)

	table := &replication.TableMapEvent{TableID: 1}
	act, s, e, _, err := tr.Observe(ev(replication.TABLE_MAP_EVENT, 0x80, uint32(start+0x80), table))
	require.NoError(t, err)
	assert.Equal(t, "deliver", act)
	assert.Equal(t, start, s.Offset)
	// 0x100 bytes: this rows event ends past 4 GiB; its LogPos wraps to 0x80.
	rows := &replication.RowsEvent{Flags: replication.RowsEventStmtEndFlag, Rows: [][]any{{1}}}
	act, s, e, after, err := tr.Observe(ev(replication.WRITE_ROWS_EVENTv2, 0x100, 0x80, rows))
	require.NoError(t, err)
	assert.Equal(t, "deliver", act)
	assert.Equal(t, start+0x80, s.Offset)
	assert.Equal(t, uint64(1<<32+0x80), e.Offset)
	assert.Equal(t, e, after.Streamed)
	assert.Equal(t, e, after.Safe, "the statement ended: a safe point past 4 GiB")
	act, _, e, _, err = tr.Observe(ev(replication.XID_EVENT, 31, 0x80+31, &replication.XIDEvent{}))
	require.NoError(t, err)
	assert.Equal(t, "deliver", act)
	assert.Equal(t, uint64(1<<32+0x80+31), e.Offset)

	// LogPos 0 (MariaDB 11.4+) is counted from the size, still in 64 bits.
	act, _, e, _, err = tr.Observe(ev(replication.QUERY_EVENT, 50, 0, &replication.QueryEvent{Query: []byte("CREATE TABLE t (a int)")}))
	require.NoError(t, err)
	assert.Equal(t, "deliver", act)
	assert.Equal(t, uint64(1<<32+0x80+31+50), e.Offset)
}

func TestTrackerRefusesEventsBeforeTheRotate(t *testing.T) {
	tr := binlogstream.NewTracker(binlogstream.StartAt(binlogstream.Position{File: "f.000001", Offset: 4}))
	_, _, _, _, err := tr.Observe(&replication.BinlogEvent{Header: hdr(replication.QUERY_EVENT, 50, 0, 0), Event: &replication.QueryEvent{}})
	require.ErrorIs(t, err, binlogstream.ErrPosition)
}

func TestTrackerRefusesADumpThatStartsElsewhere(t *testing.T) {
	tr := binlogstream.NewTracker(binlogstream.StartAt(binlogstream.Position{File: "f.000001", Offset: 400}))
	_, _, _, _, err := tr.Observe(&replication.BinlogEvent{
		Header: hdr(replication.ROTATE_EVENT, 40, 0, replication.LOG_EVENT_ARTIFICIAL_F),
		Event:  &replication.RotateEvent{Position: 4, NextLogName: []byte("f.000001")}})
	require.ErrorIs(t, err, binlogstream.ErrPosition)
}
