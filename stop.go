package binlogstream

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-mysql-org/go-mysql/mysql"
)

// The stop targets: Run returns nil once everything up to a position, a
// GTID set or the server's current point is delivered.

// StopAtCurrent reads the current server's position (GTID mode: its
// executed set; file mode: SHOW MASTER STATUS) and makes Run return nil
// once everything up to it is delivered. After a failover the current
// server is the new writer. The Source must implement Prober (SyncerSource
// does). It returns the target it recorded.
func (s *BinlogStreamer) StopAtCurrent(ctx context.Context) (string, error) {
	p, ok := s.source().(Prober)
	if !ok {
		return "", fmt.Errorf("binlogstream: the source (%T) cannot report its position (no Probe method)", s.source())
	}
	st, err := p.Probe(ctx)
	if err != nil {
		return "", fmt.Errorf("binlogstream: read the stop target: %w", err)
	}
	if s.cfg.Start.IsGTID() {
		return st.Executed, s.StopAtGTID(st.Executed)
	}
	if st.Binlog.IsZero() {
		return "", errors.New("binlogstream: the server reports no binlog position (log_bin=OFF?)")
	}
	s.stopAt(st.Binlog, st.NextBinlog)
	return st.Binlog.String(), nil
}

// FlushAndStop records the current server's position as the stop target
// (see StopAtCurrent) and waits until the running Run has delivered
// everything up to it and returned. It returns Run's error if Run ended
// otherwise, ErrNotRunning when no Run is in progress, or ctx.Err().
func (s *BinlogStreamer) FlushAndStop(ctx context.Context) error {
	s.mu.Lock()
	done, running := s.done, s.running
	s.mu.Unlock()
	if !running || done == nil {
		return ErrNotRunning
	}
	if _, err := s.StopAtCurrent(ctx); err != nil {
		return err
	}
	select {
	case <-done:
		s.mu.Lock()
		err := s.lastRunErr
		s.mu.Unlock()
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// StopAt makes a file-mode Run return nil once an event ending at or
// after pos is delivered (at once if that is already so). A Rotate event
// ends in the file it closes, whatever the name of the file it names.
func (s *BinlogStreamer) StopAt(pos Position) { s.stopAt(pos, Position{}) }

// stopAt is StopAt with the position a Rotate ending at pos names (zero
// when none does): a stream there has reached pos too.
func (s *BinlogStreamer) stopAt(pos, next Position) {
	s.mu.Lock()
	s.stopPos, s.stopNext = pos, next
	s.hasStop.Store(true)
	s.mu.Unlock()
	s.stopIfReached()
}

// stopIfReached ends a running Run at once when its stop target is already
// delivered, rather than at the next event or heartbeat.
func (s *BinlogStreamer) stopIfReached() {
	if !s.reachedStop() {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.running && s.cancel != nil {
		s.stoppedAtTarget = true
		s.cancel()
	}
}

// StopAtGTID makes a GTID-mode Run return nil once every transaction in
// set is delivered (at once if that is already so). A failover candidate
// must then also hold set.
func (s *BinlogStreamer) StopAtGTID(set string) error {
	if !s.cfg.Start.IsGTID() {
		return configError("StopAtGTID needs GTID mode")
	}
	g, err := mysql.ParseGTIDSet(s.cfg.Start.Flavor, set)
	if err != nil {
		return configError("stop target %q: %v", set, err)
	}
	s.mu.Lock()
	s.stopSet = g
	s.hasStop.Store(true)
	s.mu.Unlock()
	s.stopIfReached()
	return nil
}

func (s *BinlogStreamer) stopTargetString() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopSet == nil {
		return ""
	}
	return s.stopSet.String()
}

// reachedStop reports whether the stop target is delivered.
func (s *BinlogStreamer) reachedStop() bool {
	if !s.hasStop.Load() { // the common case, on every event: no lock
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.resume
	if !s.snapBox.complete() {
		return false
	}
	switch {
	case s.stopSet != nil:
		if r.GTID != "" {
			return false
		}
		have, err := mysql.ParseGTIDSet(r.Flavor, r.Executed)
		return err == nil && have.Contain(s.stopSet)
	case !s.stopPos.IsZero():
		if r.Rows != 0 || r.Inner != 0 {
			return false
		}
		// Right after a Rotate, the stream is in the file it names, whose
		// name may sort before the stop position's (a Rotate to a file of
		// another base): the Rotate's end in the file it left counts.
		return r.Streamed.Compare(s.stopPos) >= 0 || r.Streamed == s.stopNext && !s.stopNext.IsZero() ||
			r.Streamed == s.rotated.to && s.rotated.from.Compare(s.stopPos) >= 0
	}
	return false
}
