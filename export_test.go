package binlogstream

import "github.com/go-mysql-org/go-mysql/replication"

// Test seams: the pure tracker, for tests that feed it events directly.

type Tracker = tracker

func NewTracker(from ResumePosition) *Tracker { return newTracker(from) }

// Observe returns the tracker's decision as plain values: action is
// "ignore", "drop" or "deliver".
func (t *tracker) Observe(ev *replication.BinlogEvent) (action string, start, end Position, after ResumePosition, err error) {
	var d decision
	err = t.observe(ev, &d)
	if err != nil {
		return "", Position{}, Position{}, ResumePosition{}, err
	}
	return [...]string{"ignore", "drop", "deliver"}[d.action], d.start, d.end, d.after, nil
}

// NewGTIDTracker returns a GTID-mode tracker starting after executed.
func NewGTIDTracker(flavor, executed string) (*gtidTracker, error) {
	return newGTIDTracker(ResumePosition{Flavor: flavor, Executed: executed})
}

// Observe is tracker.Observe for the GTID-mode tracker.
func (t *gtidTracker) Observe(ev *replication.BinlogEvent) (action string, start, end Position, after ResumePosition, err error) {
	var d decision
	err = t.observe(ev, &d)
	if err != nil {
		return "", Position{}, Position{}, ResumePosition{}, err
	}
	return [...]string{"ignore", "drop", "deliver"}[d.action], d.start, d.end, d.after, nil
}

// DisableSchema turns schema tracking off, for benchmarks that measure
// what it costs.
func DisableSchema(s *BinlogStreamer) { s.schemaOff = true }

// RowsDecoderForTest decodes rows events with this package's decoder
// (rows_decode.go) where it applies and go-mysql's elsewhere, as the
// sources do; Fast counts the events this package's decoder decoded.
type RowsDecoderForTest struct {
	plans planCache
	Fast  int
}

// Decode is a go-mysql RowsEventDecodeFunc.
func (d *RowsDecoderForTest) Decode(re *replication.RowsEvent, data []byte) error {
	pos, err := re.DecodeHeader(data)
	if err != nil {
		return err
	}
	if s, ok := fastSettings(re); ok {
		handled, err := decodeRowsFast(re, d.plans.plan(re), s, pos, data)
		if handled && err == nil {
			d.Fast++
		}
		if handled || err != nil {
			return err
		}
	}
	return re.DecodeData(pos, data)
}

// FastRowsSettings reports whether the fast decoder applies to re's
// parser settings.
func FastRowsSettings(re *replication.RowsEvent) bool {
	_, ok := fastSettings(re)
	return ok
}

// DDLBetween is ddlBetween, for the schema snapshot's tests.
var DDLBetween = ddlBetween
