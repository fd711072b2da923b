package binlogstream

import (
	"time"

	"github.com/binlogstream/binlogstream/internal/snapshot"
)

// WithSnapshotSample returns r carrying a snapshot state: two tables, one
// with a composite boundary key, one still to read.
func WithSnapshotSample(r ResumePosition) ResumePosition {
	st := snapshot.New(snapStateCfg)
	st.Add("app.a")
	st.Add("app.b")
	st.Start("app.a", snapshot.Pos{}, true)
	st.Delivered("app.a", snapshot.Key{Raw: []any{[]byte("k\x00é"), int64(-3), uint64(1 << 63)}})
	r.snap = string(st.Append(nil))
	return r
}

// SnapshotNoFold makes chunks be taken as read at the stream's point,
// with no held-back change folded in: the negative control of the
// snapshot tests.
func SnapshotNoFold(on bool) { snapNoFold = on }

// SnapshotReadAges calls f with the transaction lifetime of every chunk
// read taken in (on the Run goroutine) until the returned func is called.
func SnapshotReadAges(f func(time.Duration)) (undo func()) {
	snapReadAge = f
	return func() { snapReadAge = nil }
}

// SnapshotAttachAnywhere lets chunks attach after any event, inside source
// transactions too, until the returned func is called: the negative
// control of TestSnapshotReadsBetweenTransactions.
func SnapshotAttachAnywhere() (undo func()) {
	snapAnywhere = true
	return func() { snapAnywhere = false }
}
