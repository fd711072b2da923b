package binlogstream

import (
	"context"
	"encoding/binary"
	"sync/atomic"
	"unsafe"

	"github.com/binlogstream/binlogstream/internal/readahead"
	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"
)

// A file-mode resume replays the in-flight statement from its safe point
// and drops it up to the streamed position; decoding those rows is wasted
// work, all of it when one statement is millions of rows. The rows events
// of that window can skip their row decoding: only their header (table id,
// STMT_END_F) matters to the parser and the tracker.
//
// The window holds part of one statement only (a safe point is the last
// statement boundary before the streamed position), and that statement
// ends after the streamed position, in the same file. So a rows event is
// in the window exactly while its LogPos is at most the streamed offset and
// no rows event past it was seen yet; after that nothing is skipped again.

// ReplaySkipper is implemented by sources that can skip the row decoding
// of events a file-mode resume will drop. The streamer calls OpenFileReplay
// instead of OpenFile when the dump starts before the streamed position.
type ReplaySkipper interface {
	// OpenFileReplay is OpenFile, decoding rows events with
	// SkipReplayedRows(streamed).
	OpenFileReplay(ctx context.Context, pos mysql.Position, streamed Position) (Stream, error)
}

// SkipReplayedRows returns a go-mysql RowsEventDecodeFunc (for
// BinlogSyncerConfig or BinlogParser.SetRowsEventDecodeFunc) that decodes
// only the header of the rows events ending at or before streamed, which a
// resume from a token with that streamed position drops. Use one per dump.
func SkipReplayedRows(streamed Position) func(*replication.RowsEvent, []byte) error {
	return readahead.NewDecoder(0, newReplayWindow(streamed).replayed, nil).Decode
}

// DecodeRows returns a go-mysql RowsEventDecodeFunc (for
// BinlogSyncerConfig or BinlogParser.SetRowsEventDecodeFunc) that decodes
// rows with this package's decoder: the values go-mysql's own decoder
// gives, of the same types, in a fraction of its time (no fmt, a few
// allocations per event); JSON columns, MySQL partial JSON updates and the
// parser settings ParseTime and UseDecimal are left to go-mysql's. Every
// source of this package decodes with it. Use one per dump: it keeps the
// last tables' column plans and is not safe for concurrent use.
func DecodeRows() func(*replication.RowsEvent, []byte) error {
	return readahead.NewDecoder(0, nil, nil).Decode
}

// replayWindow says which rows events of a dump end at or before a
// streamed position: those whose rows a resume drops undecoded.
type replayWindow struct {
	done  atomic.Bool // past the window: decode everything
	until uint32
}

func newReplayWindow(streamed Position) *replayWindow {
	w := &replayWindow{until: uint32(streamed.Offset)}
	if streamed.Offset > 0xffffffff {
		w.done.Store(true) // LogPos cannot say where it is
	}
	return w
}

// skipFunc is w.replayed for the rows decoder (readahead.NewDecoder);
// nil when w is nil (nothing is skipped).
func (w *replayWindow) skipFunc() func(body []byte) bool {
	if w == nil {
		return nil
	}
	return w.replayed
}

// replayed reports whether the rows event whose body go-mysql passes ends
// within the window; the first one past it closes the window.
func (w *replayWindow) replayed(body []byte) bool {
	if w.done.Load() {
		return false
	}
	logPos, ok := headerLogPos(body)
	if !ok || logPos > w.until || logPos == 0 {
		w.done.Store(true)
		return false
	}
	return true
}

// headerLogPos reads the LogPos of the event whose body go-mysql passes to
// a RowsEventDecodeFunc. go-mysql v1.16.0 passes a slice of the event's
// raw bytes that starts right after the 19-byte header; the header is
// checked (a rows event type and a size that matches the body) before it
// is trusted, and anything else means "decode it".
func headerLogPos(body []byte) (uint32, bool) {
	if len(body) == 0 {
		return 0, false
	}
	start := unsafe.Pointer(unsafe.SliceData(body))
	h := unsafe.Slice((*byte)(unsafe.Add(start, -replication.EventHeaderSize)), replication.EventHeaderSize)
	size := binary.LittleEndian.Uint32(h[9:])
	if !isRowsEvent(replication.EventType(h[4])) ||
		(int(size) != len(body)+replication.EventHeaderSize && int(size) != len(body)+replication.EventHeaderSize+replication.BinlogChecksumLength) {
		return 0, false
	}
	return binary.LittleEndian.Uint32(h[13:]), true
}
