package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/sirupsen/logrus"

	"github.com/binlogstream/binlogstream"
	"github.com/binlogstream/binlogstream/cmd/internal/clikit"
	"github.com/binlogstream/binlogstream/internal/sqlconn"
)

type options struct {
	source, target  binlogstream.DSN
	failover        []binlogstream.DSN
	tables          binlogstream.TablePatterns
	serverID        uint
	gtid            bool
	stateDB, name   string
	metrics         string
	batch, chunk    int
	readers         int
	interval        time.Duration
	heartbeat       time.Duration
	stopAtCurrent   bool
	quiet, snapOnly bool
	// --verify, --verify-only, --repair, --verify-report.
	verify, verifyOnly, repair bool
	verifyReport               string
}

// rawFlags are the flags options takes only once they are checked.
type rawFlags struct {
	source, target, tables, failover string
	sourcePasswordFile               string
	targetPasswordFile               string
}

// help is binlog-replicate's --help around its flags.
var help = clikit.Help{
	Synopsis: `usage: binlog-replicate --source DSN --target DSN --tables PATTERNS [flags]
       binlog-replicate --source DSN --target DSN --tables PATTERNS --gtid [--failover DSNS] [flags]
`,
	Text: `Copies tables from a MySQL or MariaDB server to another one, then keeps them
up to date from the source's binlog, exactly once across kills and restarts:
the checkpoint is in the target (--state-db), so the same command continues
where the last run stopped. README.md and doc.go have the full contract.

Flags:
`,
}

// parseFlags parses and checks the command line; flag.ErrHelp for --help
// and --version.
func parseFlags(args []string, stderr io.Writer) (*options, error) {
	var o options
	var raw rawFlags
	fs := newFlagSet(&o, &raw, stderr)
	if err := clikit.Parse(fs, args, help); err != nil {
		return nil, err
	}
	if err := clikit.Missing(fs, "source", "target", "tables"); err != nil {
		return nil, err
	}
	if err := o.parseServers(raw); err != nil {
		return nil, err
	}
	srcPassword, err := o.readPasswordFiles(raw)
	if err != nil {
		return nil, err
	}
	if o.tables, err = binlogstream.ParseTablePatterns(raw.tables); err != nil {
		return nil, fmt.Errorf("--tables: %w", err)
	}
	if err := o.parseFailover(raw.failover, srcPassword); err != nil {
		return nil, err
	}
	if err := o.checkLimits(); err != nil {
		return nil, err
	}
	if err := o.checkVerify(); err != nil {
		return nil, err
	}
	return &o, nil
}

// newFlagSet defines binlog-replicate's flags, parsed into o and raw.
func newFlagSet(o *options, raw *rawFlags, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("binlog-replicate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&raw.source, "source", "", "source server `DSN`, USER[:PASS]@tcp(HOST:PORT)/ (needs REPLICATION SLAVE, BINLOG MONITOR and SELECT); required")
	fs.StringVar(&raw.target, "target", "", "target server `DSN` (needs CREATE, INSERT, UPDATE, DELETE, SELECT); required")
	fs.StringVar(&raw.tables, "tables", "", "tables to replicate, `PATTERNS`: comma-separated schema.table patterns, e.g. app.orders,app.order_*; required")
	fs.StringVar(&raw.failover, "failover", "", "with --gtid: comma-separated `DSNS` of the servers that may be promoted when the source is lost")
	fs.StringVar(&raw.sourcePasswordFile, "source-password-file", "", "the password of --source and --failover DSNs written without one, from the first line of `FILE` (chmod 600)")
	fs.StringVar(&raw.targetPasswordFile, "target-password-file", "", "the password of --target when written without one, from the first line of `FILE` (chmod 600)")
	fs.UintVar(&o.serverID, "server-id", 1013, "replica server `ID` of the binlog dump (unique among the source's replicas)")
	fs.BoolVar(&o.gtid, "gtid", false, "stream by GTID (survives a failover); a run resumes in the mode it started in")
	fs.StringVar(&o.stateDB, "state-db", "binlogstream", "target `DATABASE` holding the checkpoint, the table list and the schema history")
	fs.StringVar(&o.name, "name", "default", "`NAME` of this replication in the state tables (one target may hold several)")
	fs.IntVar(&o.batch, "batch", 200, "`N` row changes per target transaction (committed at the next source commit)")
	fs.IntVar(&o.chunk, "chunk", 1000, "`N` rows per snapshot chunk read (one short read on the source, one target transaction)")
	fs.IntVar(&o.readers, "snapshot-readers", 1, "`N` snapshot chunk reads at once, one source connection each")
	fs.DurationVar(&o.interval, "checkpoint-interval", time.Second, "commit the checkpoint at least this often while the position moves, even through filtered-out traffic")
	fs.DurationVar(&o.heartbeat, "heartbeat", time.Second, "heartbeat period asked of the source: how soon an idle stream flushes")
	fs.BoolVar(&o.stopAtCurrent, "stop-at-current", false, "exit once everything the source had written at start-up is applied")
	fs.BoolVar(&o.quiet, "quiet", false, "log warnings and errors only")
	fs.BoolVar(&o.snapOnly, "snapshot-only", false, "exit after the snapshot")
	fs.BoolVar(&o.verify, "verify", false, "verify every table once while replicating (after its snapshot): each chunk compared, byte for byte, with the target at the same binlog position; see docs/verify.md")
	fs.BoolVar(&o.verifyOnly, "verify-only", false, "verify every table, applying nothing: the target must have applied everything the source has, and neither may be written meanwhile")
	fs.BoolVar(&o.repair, "repair", false, "with --verify or --verify-only: rewrite each differing row from the source, then verify its chunk again")
	fs.StringVar(&o.verifyReport, "verify-report", "", "write the verification's differences to `FILE`, one JSON line each, then a summary line (default: stderr)")
	fs.StringVar(&o.metrics, "metrics", "", "serve Prometheus metrics at http://`ADDR`/metrics (HOST:PORT; see docs/metrics.md)")
	return fs
}

// parseServers parses the required --source and --target DSNs.
func (o *options) parseServers(raw rawFlags) error {
	for _, f := range []struct {
		name, val string
		dst       *binlogstream.DSN
	}{{"--source", raw.source, &o.source}, {"--target", raw.target, &o.target}} {
		var err error
		if *f.dst, err = binlogstream.ParseDSN(f.val); err != nil {
			return fmt.Errorf("%s: %w", f.name, err)
		}
	}
	return nil
}

// readPasswordFiles gives --source and --target the password of their
// file when they have none, and returns the source's ("" without a file)
// for the --failover DSNs.
func (o *options) readPasswordFiles(raw rawFlags) (string, error) {
	var srcPassword string
	for _, f := range []struct {
		name, path string
		pw         *string
		dsn        *binlogstream.DSN
	}{{"--source-password-file", raw.sourcePasswordFile, &srcPassword, &o.source}, {"--target-password-file", raw.targetPasswordFile, new(string), &o.target}} {
		if f.path == "" {
			continue
		}
		var err error
		if *f.pw, err = clikit.ReadPasswordFile(f.name, f.path); err != nil {
			return "", err
		}
		if f.dsn.Password == "" {
			f.dsn.Password = *f.pw
		}
	}
	return srcPassword, nil
}

// parseFailover parses --failover (GTID mode only), password given to
// the DSNs that have none.
func (o *options) parseFailover(list, password string) error {
	if list == "" {
		return nil
	}
	if !o.gtid {
		return errors.New("--failover needs --gtid: file positions mean nothing on another server")
	}
	for _, s := range strings.Split(list, ",") {
		d, err := binlogstream.ParseDSN(strings.TrimSpace(s))
		if err != nil {
			return fmt.Errorf("--failover: %w", err)
		}
		if d.Password == "" {
			d.Password = password
		}
		o.failover = append(o.failover, d)
	}
	return nil
}

// checkLimits checks the numeric flags and --name.
func (o *options) checkVerify() error {
	switch {
	case o.verify && o.verifyOnly:
		return errors.New("--verify and --verify-only: give one (--verify-only verifies without replicating)")
	case o.repair && !o.verify && !o.verifyOnly:
		return errors.New("--repair needs --verify or --verify-only")
	case o.verifyReport != "" && !o.verify && !o.verifyOnly:
		return errors.New("--verify-report needs --verify or --verify-only")
	case (o.verify || o.verifyOnly) && o.snapOnly:
		return errors.New("--snapshot-only stops before a verification: drop one of them")
	case o.verifyOnly && o.stopAtCurrent:
		return errors.New("--verify-only applies nothing and stops after the verification: drop --stop-at-current")
	}
	return nil
}

func (o *options) checkLimits() error {
	switch {
	case o.serverID == 0 || o.serverID > 1<<32-1:
		return errors.New("--server-id must be between 1 and 4294967295")
	case o.batch < 1:
		return errors.New("--batch must be at least 1")
	case o.chunk < 1:
		return errors.New("--chunk must be at least 1")
	case o.readers < 1 || o.readers > 64:
		return errors.New("--snapshot-readers must be between 1 and 64")
	case o.interval <= 0 || o.heartbeat <= 0:
		return errors.New("--checkpoint-interval and --heartbeat must be positive")
	case o.name == "" || len(o.name) > 64:
		return errors.New("--name must be 1 to 64 characters")
	}
	return nil
}

func cli(ctx context.Context, args []string, stderr io.Writer) int {
	o, err := parseFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		return clikit.UsageError(stderr, "binlog-replicate", err)
	}
	log := logrus.New()
	log.SetOutput(stderr)
	if o.quiet {
		log.SetLevel(logrus.WarnLevel)
	}
	if err := replicate(ctx, log, o, stderr); err != nil {
		if ctx.Err() != nil && errors.Is(err, context.Canceled) {
			return 0
		}
		fmt.Fprintf(stderr, "binlog-replicate: %v\n", err)
		if errors.Is(err, errDifferences) {
			return 3
		}
		return 1
	}
	return 0
}

// replicate streams from the checkpoint (the first run: from the source's
// current position, with a snapshot of the tables) until ctx ends.
func replicate(ctx context.Context, log *logrus.Logger, o *options, stderr io.Writer) error {
	m, err := serveMetrics(ctx, o.metrics, log)
	if err != nil {
		return err
	}
	tgt, err := openTarget(ctx, o.target, o.stateDB, o.name)
	if err != nil {
		return err
	}
	defer tgt.close()
	token, saved, err := tgt.loadState()
	if err != nil {
		return err
	}
	if o.verifyOnly && token == "" {
		return fmt.Errorf("--verify-only: the target holds no checkpoint of %q (--name): nothing was copied to verify", o.name)
	}
	var start binlogstream.ResumePosition
	if token != "" {
		if start, err = binlogstream.ParseResumePosition(token); err != nil {
			return fmt.Errorf("target: the checkpoint of %q: %w", o.name, err)
		}
		if o.snapOnly && !start.SnapshotPending() {
			log.Info("the snapshot is complete")
			return nil
		}
		if o.verifyOnly && start.SnapshotPending() {
			return fmt.Errorf("--verify-only: the snapshot of %q is not complete: run binlog-replicate until it is (--snapshot-only)", o.name)
		}
	}
	src, err := connect(ctx, o.source, false)
	if err != nil {
		return fmt.Errorf("source: %w", err)
	}
	defer func() {
		if src != nil {
			_ = sqlconn.Close(src)
		}
	}()
	flavor := mysql.MySQLFlavor
	if strings.Contains(strings.ToLower(src.GetServerVersion()), "mariadb") {
		flavor = mysql.MariaDBFlavor
	}
	// Refused before the target is touched: a source that logs changes
	// as statements or leaves columns out cannot be copied.
	if err := checkSource(ctx, o, flavor); err != nil {
		return err
	}
	if token == "" {
		// The position first, then the tables: a table created after the
		// position is a DDL the stream stops at, never one missed.
		if start, err = currentPosition(ctx, o, flavor); err != nil {
			return err
		}
	}
	// Names compare as the source compares them; every run checks the
	// patterns, as binlog-tail's and binlog-publish's first runs do.
	srcTables, err := clikit.QueryServerTables(src)
	if err != nil {
		return fmt.Errorf("source: %w", err)
	}
	o.tables = srcTables.Patterns(o.tables)
	warnings, err := srcTables.CheckTables(o.tables, false)
	for _, w := range warnings {
		log.Warn(w)
	}
	if err != nil {
		return fmt.Errorf("source: %w", err)
	}
	tables, err := resolveTables(src, o.tables)
	if err != nil {
		return err
	}
	if token == "" {
		if err := prepareTargets(src, tgt, tables); err != nil {
			return err
		}
		if err := tgt.saveTables(tables); err != nil {
			return err
		}
	} else {
		for _, t := range tables {
			if !saved[t.String()] {
				return fmt.Errorf("table %s matches --tables but was not in the snapshot this replication started from; "+
					"replicate it under another --name", t)
			}
		}
	}
	_ = sqlconn.Close(src)
	src = nil
	if o.verifyOnly {
		return verifyOnly(ctx, log, o, m, tgt, tables, start, flavor, stderr)
	}
	byName := map[string]*table{}
	for _, t := range tables {
		byName[t.String()] = t
	}
	a := &applier{tgt: tgt, tables: byName, pats: o.tables, batch: o.batch, interval: o.interval, resume: start,
		now: time.Now, lastCommit: time.Now(), checked: map[*binlogstream.Table]bool{}, log: log}
	store, err := openSchemaStore(ctx, o.target, tgt)
	if err != nil {
		return err
	}
	defer store.close()
	// The snapshot lives in the checkpoint: a first run starts it, a
	// resume continues the one its token records. A token without one
	// comes from an earlier version whose snapshot is behind it.
	var snap *binlogstream.SnapshotConfig
	if token == "" || start.HasSnapshot() {
		snap = &binlogstream.SnapshotConfig{Tables: o.tables, ChunkRows: o.chunk, Readers: o.readers}
	}
	s, err := newStreamer(o, log, start, flavor, store, snap)
	if err != nil {
		return err
	}
	defer s.Close()
	a.snapshotDone = func() bool { return s.SnapshotStats().Tables == 0 }
	var v *verifier
	if o.verify {
		// A first run's snapshot is not in its start token yet.
		if v, err = newStreamVerifier(ctx, o, log, m, tgt, tables, a, start, token == "" || start.SnapshotPending(), flavor, stderr); err != nil {
			return err
		}
		defer v.close()
	}
	s.AddListener(a.listen)
	if m != nil {
		m.SetStreamer(s)
		s.AddListener(m.CountRows)
	}
	switch {
	case o.snapOnly && start.IsGTID():
		// Reached once the snapshot is read (the library's stop waits for
		// it) and the stream is past where it began.
		if err := s.StopAtGTID(start.Executed); err != nil {
			return err
		}
	case o.snapOnly:
		s.StopAt(start.Streamed)
	case o.stopAtCurrent && !o.verify: // with --verify: once verified
		if _, err := s.StopAtCurrent(ctx); err != nil {
			return err
		}
	}
	log.WithFields(logrus.Fields{"from": clikit.Describe(start), "token": start.String(), "snapshot": start.SnapshotPending() || token == ""}).Info("streaming")
	watchCtx, stopWatch := context.WithCancel(ctx)
	watched := make(chan struct{})
	go func() { defer close(watched); watchCatchUp(watchCtx, s, log, time.Second) }()
	runCtx, stopRun := context.WithCancelCause(ctx)
	defer stopRun(nil)
	verified := make(chan error, 1)
	if v != nil {
		go func() { verified <- v.beside(runCtx, s, stopRun) }()
	}
	runErr := s.Run(runCtx)
	stopWatch()
	<-watched
	if v != nil {
		v.gate.close(runErr)
		verr := <-verified
		if cause := context.Cause(runCtx); runErr != nil && errors.Is(runErr, context.Canceled) && ctx.Err() == nil && cause != nil {
			runErr = cause // the verification failed and stopped the run
		}
		if runErr == nil {
			runErr = verr
		}
	}
	// The last acknowledged event's effects and token go in together.
	var le *binlogstream.ListenerError
	if runErr == nil {
		// The streamer's position after the last event the applier
		// handled can be ahead of the last event's Resume: the snapshot's
		// last table is marked done once its reads are over, with no
		// event to carry that when the source is quiet.
		if rp := s.ResumePosition(); rp.String() != a.resume.String() {
			a.resume, a.dirty = rp, true
		}
	}
	if runErr == nil || !errors.As(runErr, &le) {
		if a.dirty {
			if err := a.commit(); err != nil && runErr == nil {
				runErr = err
			}
		}
	}
	st := s.Stats()
	log.WithFields(logrus.Fields{
		"delivered": st.Delivered, "dropped_at_start": st.DroppedAtStart, "progress": st.Progress,
		"snapshot_rows": a.snapRows, "applied": a.applied, "commits": a.commits, "reconnects": st.Reconnects, "failovers": st.Failovers,
	}).Info("binlog-replicate stopped")
	return runErr
}

// statser is what watchCatchUp reads; *binlogstream.BinlogStreamer is one.
type statser interface {
	Stats() binlogstream.Stats
	SnapshotStats() binlogstream.SnapshotStats
}

// watchCatchUp logs "caught up" each time the stream reaches the
// source's end (the lag is 0 after a heartbeat, with nothing left to
// snapshot) after having been behind, every period until ctx ends.
func watchCatchUp(ctx context.Context, s statser, log logrus.FieldLogger, period time.Duration) {
	tick := time.NewTicker(period)
	defer tick.Stop()
	caughtUp := false
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		st := s.Stats()
		now := st.Lag == 0 && st.At.File != "" && s.SnapshotStats().Tables == 0
		if now && !caughtUp {
			log.WithFields(logrus.Fields{"at": clikit.Describe(st.Position), "applied_events": st.Delivered}).Info("caught up")
		}
		caughtUp = now
	}
}

// checkSource refuses a source whose binlog settings the run cannot
// copy (see binlogstream.CheckBinlogSettings); the stream checks again
// before every dump.
func checkSource(ctx context.Context, o *options, flavor string) error {
	probe, err := binlogstream.NewSyncerSource(binlogstream.SyncerConfig{DSN: o.source, ServerID: uint32(o.serverID), Flavor: flavor})
	if err != nil {
		return err
	}
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	return binlogstream.CheckBinlogSettings(pctx, binlogstream.Config{Source: probe, RequireFullRowImage: true})
}

// currentPosition is where a first run starts: the source's position now
// (GTID mode: its executed GTID set).
func currentPosition(ctx context.Context, o *options, flavor string) (binlogstream.ResumePosition, error) {
	probe, err := binlogstream.NewSyncerSource(binlogstream.SyncerConfig{DSN: o.source, ServerID: uint32(o.serverID), Flavor: flavor})
	if err != nil {
		return binlogstream.ResumePosition{}, err
	}
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	st, err := probe.Probe(pctx)
	if err != nil {
		return binlogstream.ResumePosition{}, fmt.Errorf("source: read its position: %w", err)
	}
	if !st.LogBin {
		return binlogstream.ResumePosition{}, errors.New("source: the server has no binlog (log_bin=OFF)")
	}
	if o.gtid {
		return binlogstream.StartAtGTID(flavor, st.Executed)
	}
	return binlogstream.StartAt(st.Binlog), nil
}

func newStreamer(o *options, log *logrus.Logger, start binlogstream.ResumePosition, flavor string,
	store binlogstream.SchemaStore, snap *binlogstream.SnapshotConfig) (*binlogstream.BinlogStreamer, error) {
	schemas, _ := o.tables.Schemas()
	syncer := func(d binlogstream.DSN) binlogstream.SyncerConfig {
		return binlogstream.SyncerConfig{DSN: d, ServerID: uint32(o.serverID), Flavor: flavor, Logger: log,
			HeartbeatPeriod: o.heartbeat, DecodeTable: o.tables.Match}
	}
	src, err := binlogstream.NewSyncerSource(syncer(o.source))
	if err != nil {
		return nil, err
	}
	cfg := binlogstream.Config{Source: src, Start: start, Logger: log, ProgressInterval: o.interval, Snapshot: snap,
		RequireFullRowImage: true, // a copy needs every column of every row
		Schema:              &binlogstream.SchemaConfig{Store: store, Snapshot: true, Databases: schemas}}
	if cfg.Failover, err = clikit.Failover(o.failover, syncer); err != nil {
		return nil, err
	}
	return binlogstream.NewBinlogStreamer(cfg)
}
