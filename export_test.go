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
