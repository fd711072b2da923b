package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/go-mysql-org/go-mysql/client"
	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/sirupsen/logrus"

	"github.com/binlogstream/binlogstream"
	"github.com/binlogstream/binlogstream/cmd/internal/metrics"
	"github.com/binlogstream/binlogstream/internal/sqlconn"
)

// errDifferences ends a run whose verification found differences and
// left them (no --repair): exit status 3.
var errDifferences = errors.New("the verification found differences (see the report); --repair rewrites them from the source")

// verifier verifies every replicated table once: each chunk read from
// the source at a binlog position and from the target when the applier
// has applied exactly up to it (gate), compared byte for byte, reported,
// and repaired in the applier's connection with --repair.
type verifier struct {
	o       *options
	log     logrus.FieldLogger
	tables  []*table
	src     *binlogstream.SyncerSource
	rep     *report
	metrics verifyMetrics
	gate    *gate  // --verify: the applier's
	at      string // --verify-only: where both sides are
	// snapshotPending: the run has a snapshot to finish first.
	snapshotPending bool
	tconn           *client.Conn // the target reads'

	// read reads a range from the target and says at which position.
	read func(ctx context.Context, r binlogstream.VerifyRange) ([][]any, binlogstream.Position, error)
	// hold, when set, holds the applier (gate.hold).
	hold func(ctx context.Context) (func(), error)
	// repairConn runs repairs between begin and commit (with the
	// checkpoint, in a streaming run).
	repairConn    func() *target
	begin, commit func() error

	sum  summaryLine
	left int // differences found and not repaired
}

// run verifies the tables one after the other and writes the summary.
func (v *verifier) run(ctx context.Context) error {
	fields := logrus.Fields{"tables": len(v.tables), "repair": v.o.repair}
	if v.at != "" {
		fields["at"] = v.at
	}
	v.log.WithFields(fields).Info("verifying")
	for _, t := range v.tables {
		if err := v.table(ctx, t); err != nil {
			return err
		}
	}
	v.sum.Tables = len(v.tables)
	v.sum.Differences = v.rep.carried + v.rep.written
	if err := v.rep.summary(v.sum); err != nil {
		return err
	}
	fields = logrus.Fields{"tables": v.sum.Tables, "chunks": v.sum.Chunks, "rows": v.sum.Rows,
		"differences": v.sum.Differences, "repaired": v.sum.Repaired, "rereads": v.sum.Rereads,
		"longest_read": time.Duration(v.sum.LongestReadMS) * time.Millisecond}
	if v.left > 0 {
		v.log.WithFields(fields).Warn("verification found differences")
	} else {
		v.log.WithFields(fields).Info("verification complete")
	}
	if v.sum.Unsettled > 0 {
		return fmt.Errorf("verify: %d chunks were never read at one position on both sides (the target kept moving past the source's reads): neither proven equal nor different; run again", v.sum.Unsettled)
	}
	return nil
}

func (v *verifier) table(ctx context.Context, t *table) error {
	start := time.Now()
	res, err := binlogstream.VerifyTable(ctx, binlogstream.VerifyConfig{
		Source: v.src, Table: t.String(), ChunkRows: v.o.chunk,
		Hold: v.hold, ReadTarget: v.read,
		OnChunk: func(_ binlogstream.VerifyRange, _ int, diffs []binlogstream.VerifyDifference) error {
			if v.metrics != nil {
				v.metrics.AddVerify(1, len(diffs))
			}
			return v.rep.differences(diffs)
		},
		Repair: v.repairer(t),
	})
	if err != nil {
		return fmt.Errorf("verify %s: %w", t, err)
	}
	left := 0
	for _, d := range res.Differences {
		if !d.Repaired {
			left++
		}
	}
	v.left += left
	v.sum.Chunks += res.Chunks
	v.sum.Rows += res.Rows
	v.sum.Repaired += res.Repaired
	v.sum.Rereads += res.Rereads
	v.sum.Unsettled += len(res.Unsettled)
	v.sum.LongestReadMS = max(v.sum.LongestReadMS, res.LongestRead.Milliseconds())
	v.log.WithFields(logrus.Fields{"table": t.String(), "chunks": res.Chunks, "rows": res.Rows,
		"differences": len(res.Differences), "repaired": res.Repaired, "rereads": res.Rereads,
		"unsettled": len(res.Unsettled), "took": time.Since(start).Round(time.Millisecond)}).Info("table verified")
	return nil
}

// repairer is VerifyConfig.Repair for t with --repair, nil without: it
// rewrites each differing row from the source's (an extra one deleted)
// in one target transaction, committed with the checkpoint.
func (v *verifier) repairer(t *table) func(context.Context, binlogstream.VerifyRange, []binlogstream.VerifyDifference) error {
	if !v.o.repair {
		return nil
	}
	return func(_ context.Context, _ binlogstream.VerifyRange, diffs []binlogstream.VerifyDifference) error {
		tgt := v.repairConn()
		if err := v.begin(); err != nil {
			return err
		}
		for _, d := range diffs {
			if err := repairOne(tgt, t, d); err != nil {
				_, _ = tgt.conn.Execute("ROLLBACK")
				return err
			}
		}
		return v.commit()
	}
}

// repairOne rewrites one row: the source's row replaces the target's
// (REPLACE finds it by any unique key, so a key that differs only in a
// collation's eyes is replaced too), or the extra row is deleted.
func repairOne(tgt *target, t *table, d binlogstream.VerifyDifference) error {
	if d.Kind == binlogstream.DiffExtra {
		where := make([]string, len(d.KeyColumns))
		args := make([]any, len(d.Key))
		for j, c := range d.KeyColumns {
			where[j] = quoteIdent(c) + "=?"
			a, err := sqlArg(d.Key[j])
			if err != nil {
				return fmt.Errorf("%s column %s: %w", t, c, err)
			}
			args[j] = a
		}
		if _, err := tgt.exec("DELETE FROM "+t.quoted()+" WHERE "+strings.Join(where, " AND "), args...); err != nil {
			return fmt.Errorf("repair %s: %w", t, err)
		}
		return nil
	}
	args, err := t.pick(d.Row, t.write, nil)
	if err != nil {
		return err
	}
	if _, err := tgt.exec(t.replaceSQL(), args...); err != nil {
		return fmt.Errorf("repair %s: %w", t, err)
	}
	return nil
}

// targetReader reads ranges from the target on a connection of its own.
func targetReader(ctx context.Context, dsn binlogstream.DSN) (*binlogstream.VerifyTarget, *client.Conn, error) {
	conn, err := connect(ctx, dsn, false)
	if err != nil {
		return nil, nil, fmt.Errorf("target: %w", err)
	}
	vt, err := binlogstream.NewVerifyTarget(conn)
	if err != nil {
		_ = conn.Close()
		return nil, nil, err
	}
	return vt, conn, nil
}

// alignedReader is the streaming run's ReadTarget: the applier goes on
// up to exactly r.At (gate.align), commits what it batched, and the
// range is read while it waits there.
func alignedReader(g *gate, a *applier, vt *binlogstream.VerifyTarget) func(context.Context, binlogstream.VerifyRange) ([][]any, binlogstream.Position, error) {
	return func(ctx context.Context, r binlogstream.VerifyRange) ([][]any, binlogstream.Position, error) {
		at, ok, err := g.align(ctx, r.At)
		if err != nil || !ok {
			return nil, at, err
		}
		if a.dirty {
			if err := a.commit(); err != nil {
				return nil, at, err
			}
		}
		rows, err := vt.Read(r)
		return rows, at, err
	}
}

// quiescedAt is where --verify-only finds the source: its binlog
// position, which must be the target's checkpoint (everything applied)
// and must not move while the tables are verified.
func quiescedAt(ctx context.Context, src *binlogstream.SyncerSource, token binlogstream.ResumePosition, flavor string) (binlogstream.Position, error) {
	st, err := src.Probe(ctx)
	if err != nil {
		return binlogstream.Position{}, fmt.Errorf("source: read its position: %w", err)
	}
	applied := token.Streamed.Compare(st.Binlog) == 0
	have := "position " + token.Streamed.String()
	if token.IsGTID() {
		have = "GTID set " + token.Executed
		a, err1 := mysql.ParseGTIDSet(flavor, token.Executed)
		b, err2 := mysql.ParseGTIDSet(flavor, st.Executed)
		applied = err1 == nil && err2 == nil && a.Equal(b)
	}
	if !applied {
		now := "position " + st.Binlog.String()
		if token.IsGTID() {
			now = "GTID set " + st.Executed
		}
		return st.Binlog, fmt.Errorf("--verify-only: the target's checkpoint is at %s, the source at %s: "+
			"it needs a target that has applied everything the source has, with nothing written on either; "+
			"run with --stop-at-current first, or verify while replicating with --verify", have, now)
	}
	return st.Binlog, nil
}

// verifyMetrics is what the verification feeds --metrics.
type verifyMetrics interface{ AddVerify(chunks, diffs int) }

// newVerifier is the part of a verifier both runs share.
func newVerifier(o *options, log logrus.FieldLogger, m *metrics.Metrics, tables []*table, flavor string, stderr io.Writer) (*verifier, error) {
	src, err := binlogstream.NewSyncerSource(binlogstream.SyncerConfig{DSN: o.source, ServerID: uint32(o.serverID), Flavor: flavor, Logger: log})
	if err != nil {
		return nil, err
	}
	rep, err := openReport(o.verifyReport, stderr)
	if err != nil {
		return nil, err
	}
	v := &verifier{o: o, log: log, tables: tables, src: src, rep: rep}
	if m != nil {
		v.metrics = m
	}
	return v, nil
}

func (v *verifier) close() {
	_ = v.rep.close()
	if v.tconn != nil {
		_ = sqlconn.Close(v.tconn)
	}
}

// newStreamVerifier is --verify's verifier: it reads the target where
// the applier a has applied exactly up to each source chunk's position.
func newStreamVerifier(ctx context.Context, o *options, log logrus.FieldLogger, m *metrics.Metrics, tgt *target, tables []*table,
	a *applier, start binlogstream.ResumePosition, snapshotPending bool, flavor string, stderr io.Writer) (*verifier, error) {
	v, err := newVerifier(o, log, m, tables, flavor, stderr)
	if err != nil {
		return nil, err
	}
	vt, conn, err := targetReader(ctx, o.target)
	if err != nil {
		v.close()
		return nil, err
	}
	v.tconn = conn
	v.gate = newGate(start.Streamed)
	v.snapshotPending = snapshotPending
	a.gate = v.gate
	// Held, the applier commits what it batched: its transaction stays
	// open through no source read.
	v.hold = func(ctx context.Context) (func(), error) {
		release, err := v.gate.hold(ctx)
		if err == nil && a.dirty {
			if err = a.commit(); err != nil {
				release()
			}
		}
		return release, err
	}
	v.read = alignedReader(v.gate, a, vt)
	v.repairConn = func() *target { return tgt }
	v.begin = a.begin
	v.commit = func() error {
		a.dirty = true // the checkpoint is written again with the repair
		return a.commit()
	}
	return v, nil
}

// beside runs the verification beside the stream s, once the snapshot
// is delivered, and stops the run (stop) when it fails. With
// --stop-at-current the stop target is set once it is done, and
// differences left make the run's error.
func (v *verifier) beside(ctx context.Context, s *binlogstream.BinlogStreamer, stop context.CancelCauseFunc) error {
	err := v.afterSnapshot(ctx, s)
	if err == nil {
		err = v.run(ctx)
	}
	if err != nil {
		if ctx.Err() == nil {
			stop(err)
		}
		return err
	}
	if !v.o.stopAtCurrent {
		return nil
	}
	if _, err := s.StopAtCurrent(ctx); err != nil {
		stop(err)
		return err
	}
	if v.left > 0 {
		return errDifferences
	}
	return nil
}

// afterSnapshot waits until every snapshot row is handed to the applier:
// the snapshot is complete as its last row is delivered, so an event
// entering the applier after that is that row or a later one. Before
// Run has opened the snapshot, SnapshotComplete is false too.
func (v *verifier) afterSnapshot(ctx context.Context, s *binlogstream.BinlogStreamer) error {
	if !v.snapshotPending {
		return nil
	}
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for !s.SnapshotComplete() {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
	return v.gate.awaitEnter(ctx)
}

// verifyOnly is --verify-only: the tables verified against a target that
// has applied everything the source has, with neither written meanwhile
// (checked before and after).
func verifyOnly(ctx context.Context, log logrus.FieldLogger, o *options, m *metrics.Metrics, tgt *target, tables []*table,
	start binlogstream.ResumePosition, flavor string, stderr io.Writer) error {
	v, err := newVerifier(o, log, m, tables, flavor, stderr)
	if err != nil {
		return err
	}
	defer v.close()
	at, err := quiescedAt(ctx, v.src, start, flavor)
	if err != nil {
		return err
	}
	vt, conn, err := targetReader(ctx, o.target)
	if err != nil {
		return err
	}
	v.tconn = conn
	// The target has applied up to at, and the source's reads say
	// where they are: a read not at at is a write on the source.
	v.read = func(_ context.Context, r binlogstream.VerifyRange) ([][]any, binlogstream.Position, error) {
		rows, err := vt.Read(r)
		return rows, at, err
	}
	v.repairConn = func() *target { return tgt }
	v.begin = func() error {
		if _, err := tgt.conn.Execute("BEGIN"); err != nil {
			return fmt.Errorf("target: BEGIN: %w", err)
		}
		return nil
	}
	v.commit = func() error {
		if _, err := tgt.conn.Execute("COMMIT"); err != nil {
			return fmt.Errorf("target: COMMIT: %w", err)
		}
		return nil
	}
	v.at = at.String()
	if err := v.run(ctx); err != nil {
		return err
	}
	if after, err := quiescedAt(ctx, v.src, start, flavor); err != nil || after != at {
		if err == nil {
			err = fmt.Errorf("the source moved from %s to %s", at, after)
		}
		return fmt.Errorf("--verify-only: the source was written during the verification, which proves nothing: %w", err)
	}
	if v.left > 0 {
		return errDifferences
	}
	return nil
}
