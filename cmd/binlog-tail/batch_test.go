package main

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/go-mysql-org/go-mysql/replication"
	"github.com/stretchr/testify/require"

	"github.com/binlogstream/binlogstream"
	"github.com/binlogstream/binlogstream/tailline"
)

// pipelineToFile starts a tailer's pipeline writing to a file of its
// own; written stops it and returns the file's lines.
func pipelineToFile(t *testing.T) (tr *tailer, written func() [][]byte) {
	path := filepath.Join(t.TempDir(), "out.jsonl")
	f, err := os.Create(path)
	require.NoError(t, err)
	t.Cleanup(func() { f.Close() })
	tr = &tailer{f: f, w: bufio.NewWriter(f), stop: func() {}}
	tr.startPipeline()
	return tr, func() [][]byte {
		tr.stopPipeline()
		require.NoError(t, tr.w.Flush())
		out, err := os.ReadFile(path)
		require.NoError(t, err)
		return bytes.Split(bytes.TrimSuffix(out, []byte("\n")), []byte("\n"))
	}
}

// TestSnapshotReadsBatched: a chunk's reads cross the pipeline in
// batches of readBatch, and an event that comes while a batch is open
// (here a progress line in the middle of a chunk) is written after the
// reads before it: the lines keep the order of the events.
func TestSnapshotReadsBatched(t *testing.T) {
	tr, written := pipelineToFile(t)
	tbl := &binlogstream.Table{Schema: "d", Name: "t", Columns: []binlogstream.Column{{Name: "id", Type: "bigint", DataType: "bigint"}}}
	hdr := &replication.EventHeader{EventType: replication.UNKNOWN_EVENT}
	at := binlogstream.Position{File: "b.000001", Offset: 4}
	read := func(i int, end bool) binlogstream.Event {
		be := &replication.BinlogEvent{Header: hdr, Event: &binlogstream.SnapshotRead{Row: []any{int64(i)}, ChunkEnd: end}}
		return binlogstream.Event{BinlogEvent: be, Start: at, End: at, Resume: binlogstream.StartAt(at), Table: tbl}
	}
	const chunk = 2*readBatch + 10
	var want []string
	for i := range chunk {
		if i == readBatch+5 {
			pr := &replication.BinlogEvent{Header: hdr, Event: &binlogstream.Progress{}}
			require.NoError(t, tr.onEvent(context.Background(), binlogstream.Event{BinlogEvent: pr, Start: at, End: at, Resume: binlogstream.StartAt(at)}))
			want = append(want, "progress")
		}
		require.NoError(t, tr.onEvent(context.Background(), read(i, i == chunk-1)))
		want = append(want, `"row":[`+strconv.Itoa(i)+`]`)
	}
	require.Nil(t, tr.batch, "the chunk's end hands its last batch on")
	lines := written()
	require.Len(t, lines, len(want))
	for i, w := range want {
		require.Contains(t, string(lines[i]), w, "line %d", i)
	}
	require.Equal(t, uint64(chunk), tr.rows.Load())
}

// TestSnapshotReadsBatchKeepsTheirPlace: a batch holds the reads of one
// table at one position; a read of another table or at another position
// (reads of a snapshot's chunks that come without a chunk's end between
// them) writes its own table, position and token, not those of the
// batch's first read.
func TestSnapshotReadsBatchKeepsTheirPlace(t *testing.T) {
	tr, written := pipelineToFile(t)
	cols := []binlogstream.Column{{Name: "id", Type: "bigint", DataType: "bigint"}}
	t1 := &binlogstream.Table{Schema: "d", Name: "t1", Columns: cols}
	t2 := &binlogstream.Table{Schema: "d", Name: "t2", Columns: cols}
	hdr := &replication.EventHeader{EventType: replication.UNKNOWN_EVENT}
	read := func(tbl *binlogstream.Table, i int, at binlogstream.Position, gtid string) binlogstream.Event {
		be := &replication.BinlogEvent{Header: hdr, Event: &binlogstream.SnapshotRead{Row: []any{int64(i)}}}
		r := binlogstream.StartAt(binlogstream.Position{File: at.File, Offset: at.Offset + uint64(i)})
		return binlogstream.Event{BinlogEvent: be, Start: at, End: at, Resume: r, Table: tbl, GTID: gtid}
	}
	p1, p2 := binlogstream.Position{File: "b.000001", Offset: 4}, binlogstream.Position{File: "b.000002", Offset: 4}
	evs := []binlogstream.Event{
		read(t1, 1, p1, ""), read(t1, 2, p1, ""), read(t2, 3, p1, ""), read(t2, 4, p2, ""),
		read(t2, 5, p2, "0-1-7"), read(t1, 6, p2, "0-1-7"),
	}
	for _, ev := range evs {
		require.NoError(t, tr.onEvent(context.Background(), ev))
	}
	tr.flushReads()
	lines := written()
	require.Len(t, lines, len(evs))
	for i, ev := range evs {
		var want tailline.Formatter
		line := want.AppendRead(nil, &ev, ev.Event.(*binlogstream.SnapshotRead), ev.Resume)
		require.Equal(t, string(bytes.TrimSuffix(line, []byte("\n"))), string(lines[i]), "line %d", i)
	}
}
