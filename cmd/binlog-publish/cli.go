package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/sirupsen/logrus"

	"github.com/binlogstream/binlogstream"
	"github.com/binlogstream/binlogstream/cmd/internal/clikit"
	"github.com/binlogstream/binlogstream/cmd/internal/metrics"
	"github.com/binlogstream/binlogstream/internal/sqlconn"
	"github.com/binlogstream/binlogstream/publish"
)

// defaultServerID is the replica id binlog-publish registers with unless
// --server-id says otherwise: "BLP" in ASCII.
const defaultServerID = 0x424C50

const usageText = `usage: binlog-publish --dsn DSN --nats URL[,URL...] --stream NAME
                      [--subject-prefix P] [--gtid [--failover-to DSN]...] [--start ...] [--stop-at-current]
                      [--tables ...] [--snapshot] [--password-file FILE]
                      [--lease [--lease-key KEY] [--lease-ttl D]] [--metrics ADDR]
                      [--spool-dir DIR] [--spool-mib N]

Publishes the binlog of a MySQL or MariaDB server (binlog_format=ROW) into the
JetStream stream NAME, one message per line binlog-tail writes (the payload is
that line, newline included), on the subject P.<schema>.<table> (statements:
P.<schema>._; progress lines and statements without a database: P._._).
The stream is the checkpoint: binlog-publish continues after the stream's last
message under P.> and ignores --start once there is one. A second publisher on
the stream is refused (exit 1), and the stream holds every line once.

Flags:
`

type options struct {
	DSN binlogstream.DSN
	// FailoverTo are the servers the stream may fail over to (--gtid).
	FailoverTo    []binlogstream.DSN
	NATS          string
	Stream        string
	Prefix        string
	GTID          bool
	Start         string
	StopAtCurrent bool
	Tables        binlogstream.TablePatterns
	// TablesLater lets a --tables pattern name tables created later.
	TablesLater bool
	// Snapshot reads the rows the tables already hold while streaming;
	// SnapshotReaders and SnapshotChunkRows are SnapshotConfig's.
	Snapshot                           bool
	SnapshotReaders, SnapshotChunkRows uint
	SnapshotKeyless                    binlogstream.KeylessPolicy
	ServerID                           uint
	Quiet                              bool
	// ProgressEvery is how often a progress line is logged (0: never).
	ProgressEvery time.Duration
	Lease         leaseFlags
	Metrics       string
	// SpoolDir and SpoolMiB are publish.Config's SpoolDir and SpoolBytes.
	SpoolDir string
	SpoolMiB int
	// Kafka are --kafka, its flags and --format's.
	Kafka kafkaFlags
}

// maxSpoolMiB is the largest --spool-mib: 1 TiB.
const maxSpoolMiB = 1 << 20

func parseFlags(args []string, stderr io.Writer) (options, error) {
	var o options
	var dsn, passwordFile string
	var failoverTo []string
	fs := flag.NewFlagSet("binlog-publish", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&dsn, "dsn", "", "source server, a go-sql-driver `DSN`: USER:PASS@tcp(HOST:PORT)/ (a DSN without a password takes --password-file's, else MYSQL_PWD)")
	fs.StringVar(&passwordFile, "password-file", "", "the password of every DSN written without one, from the first line of `FILE` (chmod 600)")
	fs.Func("failover-to", "`DSN` of a server the stream may fail over to when --dsn stays unreachable (repeatable, tried in order; needs --gtid; "+
		"refused unless it holds every transaction already published)", func(s string) error {
		failoverTo = append(failoverTo, s) // parsed below: flag's own errors would print the password
		return nil
	})
	fs.StringVar(&o.NATS, "nats", "", "NATS server `URL`s, comma-separated")
	fs.StringVar(&o.Stream, "stream", "", "JetStream stream `NAME`; created when missing (subjects P.>, min(3, servers) replicas, atomic batches)")
	fs.StringVar(&o.Prefix, "subject-prefix", publish.DefaultPrefix, "the subjects' first token `P`")
	fs.BoolVar(&o.GTID, "gtid", false, "stream in GTID mode (as binlog-tail --gtid)")
	fs.StringVar(&o.Start, "start", "current", "`WHERE` to start when the stream holds no line: current, oldest or FILE:POS; with --gtid: current, oldest or a GTID set")
	fs.BoolVar(&o.StopAtCurrent, "stop-at-current", false, "exit 0 once everything up to the server's position at startup is published")
	fs.Func("tables", "`PATTERNS`: publish the rows of these tables only: comma-separated schema.table patterns (as binlog-tail --tables)", func(s string) error {
		p, err := binlogstream.ParseTablePatterns(s)
		o.Tables = p
		return err
	})
	fs.BoolVar(&o.TablesLater, "tables-created-later", false, "a --tables pattern that matches no table yet names tables created later: a warning, not a refusal")
	fs.BoolVar(&o.Snapshot, "snapshot", false, "also publish the rows the tables --tables selects (all tables without it) already hold, "+
		"read in key chunks while streaming (as binlog-tail --snapshot)")
	fs.UintVar(&o.SnapshotReaders, "snapshot-readers", 0, "--snapshot: `N` chunk reads at once, one connection each (0: the library's default)")
	fs.UintVar(&o.SnapshotChunkRows, "snapshot-chunk-rows", 0, "--snapshot: `N` rows per chunk read (0: the library's default)")
	fs.Func("snapshot-keyless", "`refuse|skip`: "+clikit.KeylessUsage, func(s string) error {
		var err error
		o.SnapshotKeyless, err = clikit.ParseKeyless(s)
		return err
	})
	fs.UintVar(&o.ServerID, "server-id", defaultServerID, "replica server `ID` to register with")
	fs.BoolVar(&o.Quiet, "quiet", false, "log nothing (no progress, info or warning lines); an error still ends the run with its message")
	fs.DurationVar(&o.ProgressEvery, "progress-every", 10*time.Second, "log a progress line (position, rows/s, lag, the snapshot's tables done, reads and rows left) every `D`; 0: never; --quiet hides it")
	o.Lease.register(fs)
	fs.StringVar(&o.Metrics, "metrics", "", "serve Prometheus metrics at http://`ADDR`/metrics (HOST:PORT; see docs/metrics.md)")
	fs.StringVar(&o.SpoolDir, "spool-dir", "", "write the lines of a transaction larger than --spool-mib to an unlinked temporary file in `DIR` (default: the system's temporary directory)")
	fs.IntVar(&o.SpoolMiB, "spool-mib", 64, "how many MiB (`N`) of an open transaction's lines stay in memory before they go to a file in --spool-dir")
	o.Kafka.register(fs)
	if err := clikit.Parse(fs, args, clikit.Help{Text: usageText}); err != nil {
		return o, err
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if err := o.Kafka.check(o.NATS, set); err != nil {
		return o, err
	}
	required := []string{"dsn", "nats", "stream"}
	if o.Kafka.Brokers != "" {
		required = []string{"dsn"}
	}
	if err := clikit.Missing(fs, required...); err != nil {
		if o.Kafka.Brokers == "" && o.NATS == "" {
			return o, fmt.Errorf("%w (or --kafka in place of --nats and --stream)", err)
		}
		return o, err
	}
	password, err := clikit.DefaultPassword(passwordFile)
	if err != nil {
		return o, err
	}
	d, err := binlogstream.ParseDSN(dsn)
	if err != nil {
		return o, err
	}
	if d.Password == "" {
		d.Password = password
	}
	o.DSN = d
	for _, s := range failoverTo {
		d, err := binlogstream.ParseDSN(s)
		if err != nil {
			return o, fmt.Errorf("--failover-to: %w", err)
		}
		if d.Password == "" {
			d.Password = password
		}
		o.FailoverTo = append(o.FailoverTo, d)
	}
	if o.TablesLater && o.Tables == nil {
		return o, errors.New("--tables-created-later needs --tables")
	}
	if len(o.FailoverTo) > 0 && !o.GTID {
		return o, errors.New("--failover-to needs --gtid: file positions differ from server to server, GTID sets do not")
	}
	if !o.Snapshot && (o.SnapshotReaders != 0 || o.SnapshotChunkRows != 0) {
		return o, errors.New("--snapshot-readers and --snapshot-chunk-rows need --snapshot")
	}
	if o.ServerID == 0 || o.ServerID > 1<<32-1 {
		return o, fmt.Errorf("--server-id %d: want 1..4294967295", o.ServerID)
	}
	if o.SpoolMiB < 1 || o.SpoolMiB > maxSpoolMiB {
		return o, fmt.Errorf("--spool-mib %d: want 1..%d", o.SpoolMiB, maxSpoolMiB)
	}
	if o.SpoolDir != "" {
		if err := writableDir(o.SpoolDir); err != nil {
			return o, fmt.Errorf("--spool-dir %s: %w", o.SpoolDir, err)
		}
	}
	return o, nil
}

// writableDir checks that a file can be created in dir, and removes it.
func writableDir(dir string) error {
	st, err := os.Stat(dir)
	if err != nil {
		return errors.Unwrap(err) // the path is in the caller's message
	}
	if !st.IsDir() {
		return errors.New("not a directory")
	}
	f, err := os.CreateTemp(dir, ".binlog-publish-check-*")
	if err != nil {
		return fmt.Errorf("not writable: %w", errors.Unwrap(err))
	}
	f.Close()
	return os.Remove(f.Name())
}

// cli runs binlog-publish: 0 on success (a signal, or caught up with
// --stop-at-current), 2 for bad flags, 1 for any other error.
func cli(ctx context.Context, args []string, stderr io.Writer) int {
	switch o, err := parseFlags(args, stderr); {
	case errors.Is(err, flag.ErrHelp):
		return 0
	case err != nil:
		return clikit.UsageError(stderr, "binlog-publish", err)
	default:
		if err := run(ctx, o, stderr); err != nil {
			return clikit.Fail(stderr, "binlog-publish", clikit.ExplainSnapshotKey(err), 1)
		}
		return 0
	}
}

// newLogger is the command's log on stderr: info lines (the progress
// line, the lease taken and released, the metrics URL) and above, none
// with --quiet.
func newLogger(o options, stderr io.Writer) *logrus.Logger {
	logger := clikit.NewLogger(stderr, o.Quiet)
	if !o.Quiet {
		logger.SetLevel(logrus.InfoLevel)
	}
	return logger
}

// run publishes until a signal, --stop-at-current's target or an error.
func run(ctx context.Context, o options, stderr io.Writer) error {
	if o.Kafka.Brokers != "" {
		return runKafka(ctx, o, stderr)
	}
	logger := newLogger(o, stderr)
	m, pm, err := serveMetrics(ctx, o.Metrics, o.Lease.on, logger)
	if err != nil {
		return err
	}
	nc, err := nats.Connect(o.NATS, nats.MaxReconnects(-1), nats.ReconnectWait(250*time.Millisecond))
	if err != nil {
		return fmt.Errorf("--nats: %w", err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	lease, release, err := o.holdLease(ctx, js, logger)
	if err != nil || ctx.Err() != nil {
		return err // a signal while waiting for the lease is a stop
	}
	defer release()
	if m != nil && lease != nil {
		m.SetLeaseChanges(lease.Changes)
		pm.SetLease(func() bool { return lease.Err() == nil })
	}
	tables, err := o.serverTables(ctx)
	if err != nil {
		return err
	}
	pub, err := publish.Open(ctx, publish.Config{JetStream: js, Stream: o.Stream, Prefix: o.Prefix, Tables: o.Tables, Logger: logger, Lease: lease,
		SpoolDir: o.SpoolDir, SpoolBytes: int64(o.SpoolMiB) << 20, Format: publish.Format(o.Kafka.Format), Debezium: o.Kafka.debeziumOptions(), OnStored: onStored(pm)})
	if err != nil {
		return err
	}
	defer pub.Close()
	flavor, src, st, err := openSource(ctx, o, tables, logger, pub.Resumed(), pub.StartAt)
	if err != nil {
		return err
	}
	// The schema history lives in JetStream too: a restart anywhere reads
	// it back rather than taking a new information_schema snapshot.
	history, err := publish.OpenSchemaStore(ctx, js, o.Stream, o.Prefix, 0, 0)
	if err != nil {
		return err
	}
	return whileHeld(ctx, lease, func(ctx context.Context) error { return stream(ctx, o, flavor, pub, src, st, history, logger, m) })
}

// sink is a publisher as stream uses it: JetStream's or Kafka's.
type sink interface {
	From() binlogstream.ResumePosition
	OnEvent(ctx context.Context, ev binlogstream.Event) error
	// Wait waits until every ended transaction is stored.
	Wait(ctx context.Context) error
}

// stream runs the streamer from the publisher's position into it.
func stream(ctx context.Context, o options, flavor string, pub sink, src binlogstream.Source, st binlogstream.ServerState,
	history binlogstream.SchemaStore, logger logrus.FieldLogger, m *metrics.Metrics) error {
	schema := &binlogstream.SchemaConfig{Snapshot: true, Store: history}
	var progress time.Duration
	if o.Tables != nil {
		progress = time.Second
		if dbs, ok := o.Tables.Schemas(); ok {
			schema.Databases = dbs
		}
	}
	cfg := binlogstream.Config{Source: src, Start: pub.From(), Logger: logger, Schema: schema, ProgressInterval: progress}
	if len(o.FailoverTo) > 0 {
		var err error
		if cfg.Failover, err = clikit.Failover(o.FailoverTo, func(d binlogstream.DSN) binlogstream.SyncerConfig { return o.syncerConfig(d, flavor) }); err != nil {
			return err
		}
		cfg.MaxReconnectAttempts = clikit.FailoverReconnects
	}
	if o.Snapshot {
		cfg.Snapshot = clikit.Snapshot(o.Tables, o.SnapshotReaders, o.SnapshotChunkRows, o.SnapshotKeyless)
	}
	s, err := binlogstream.NewBinlogStreamer(cfg)
	if err != nil {
		return err
	}
	// With --stop-at-current, Run returns nil once the server's position
	// at startup is delivered and, with --snapshot, the snapshot is read.
	if o.StopAtCurrent {
		if o.GTID {
			if err := s.StopAtGTID(st.Executed); err != nil {
				return err
			}
		} else {
			// Published up to the target already: Run checks the server
			// and returns.
			s.StopAt(st.Binlog)
		}
	}
	s.AddListener(pub.OnEvent)
	if m != nil {
		m.SetStreamer(s)
		s.AddListener(m.CountRows)
	}
	var rows atomic.Uint64 // row changes handed to the publisher
	s.AddListener(func(_ context.Context, ev binlogstream.Event) error {
		rows.Add(uint64(binlogstream.RowChanges(ev.BinlogEvent)))
		return nil
	})
	pctx, stopProgress := context.WithCancel(ctx)
	reported := make(chan struct{})
	var estimate clikit.RowEstimator
	if o.Snapshot {
		estimate = clikit.EstimateRows(o.DSN)
	}
	go func() {
		defer close(reported)
		clikit.ReportProgress(pctx, s, rows.Load, estimate, logger, o.ProgressEvery)
	}()
	err = s.Run(ctx)
	stopProgress()
	<-reported
	if err == nil || ctx.Err() != nil && errors.Is(err, ctx.Err()) {
		// The ended transactions are published before the exit; a stop
		// inside one leaves its lines to the next run.
		wctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		return pub.Wait(wctx)
	}
	if !errors.As(err, new(*binlogstream.ListenerError)) {
		// The stream stopped on the source's side: the transactions it
		// delivered before are whole, and published before the exit.
		wctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if werr := pub.Wait(wctx); werr != nil {
			err = errors.Join(err, werr)
		}
	}
	return explainUnserved(o, err)
}

// explainUnserved adds to a server's refusal to send the binlog after
// the stream's last message (ER_MASTER_FATAL_ERROR_READING_BINLOG: purged
// binlogs, mostly) what can be done; other errors pass as they are.
func explainUnserved(o options, err error) error {
	se := clikit.Unserved(err)
	if se == nil {
		return err
	}
	if o.GTID {
		return fmt.Errorf("the server cannot send every transaction after the stream's GTID position (were its binlogs purged?): "+
			"point --dsn at a server of the topology that still has them, or begin a new stream with --start current "+
			"(delete stream %s, or use another --stream and --subject-prefix): %w", o.Stream, err)
	}
	return fmt.Errorf("the server cannot send the binlog from %s, where the stream ends (were its binlogs purged?): "+
		"begin a new stream with --start current (delete stream %s, or use another --stream and --subject-prefix): %w", se.Start, o.Stream, err)
}

// syncerConfig is the dump configuration of server d, --dsn or a
// --failover-to.
func (o options) syncerConfig(d binlogstream.DSN, flavor string) binlogstream.SyncerConfig {
	cfg := binlogstream.SyncerConfig{
		DSN:             d,
		ServerID:        uint32(o.ServerID),
		Flavor:          flavor,
		HeartbeatPeriod: time.Second,
		ReadTimeout:     10 * time.Second,
		Tune: func(c *replication.BinlogSyncerConfig) {
			// TIMESTAMP values render as binlog-tail renders them.
			c.TimestampStringLocation = time.UTC
		},
	}
	if o.Tables != nil {
		cfg.DecodeTable = o.Tables.Match
	}
	return cfg
}

// openSource connects the source. A sink that holds nothing yet
// (resumed false) has --tables checked against the server's tables (a
// resumed one's may have been dropped since) and is told where to start.
func openSource(ctx context.Context, o options, tables clikit.ServerTables, logger logrus.FieldLogger, resumed bool,
	startAt func(binlogstream.ResumePosition)) (flavor string, src *binlogstream.SyncerSource, st binlogstream.ServerState, err error) {
	flavor, oldest, err := inspect(ctx, o)
	if err != nil {
		return "", nil, st, err
	}
	if src, err = binlogstream.NewSyncerSource(o.syncerConfig(o.DSN, flavor)); err != nil {
		return "", nil, st, err
	}
	if st, err = probe(ctx, src); err != nil {
		return "", nil, st, err
	}
	if resumed {
		return flavor, src, st, nil
	}
	if o.Tables != nil {
		warnings, err := tables.CheckTables(o.Tables, o.TablesLater)
		for _, w := range warnings {
			logger.Warn(w)
		}
		if err != nil {
			return "", nil, st, err
		}
	}
	from, err := o.startPosition(flavor, st, oldest)
	if err != nil {
		return "", nil, st, err
	}
	startAt(from)
	return flavor, src, st, nil
}

// serverTables reads the server's tables when --tables is given, and
// makes the patterns compare names as the server compares them, before a
// publisher filters with them.
func (o *options) serverTables(ctx context.Context) (clikit.ServerTables, error) {
	if o.Tables == nil {
		return clikit.ServerTables{}, nil
	}
	tables, err := clikit.ReadServerTables(ctx, o.DSN)
	if err != nil {
		return tables, err
	}
	o.Tables = tables.Patterns(o.Tables)
	return tables, nil
}

// inspect connects once to the server to detect its flavor and, for
// --start oldest in file mode, read its oldest binlog.
func inspect(ctx context.Context, o options) (flavor string, oldest binlogstream.Position, err error) {
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	c, err := o.DSN.Connect(cctx)
	if err != nil {
		return "", oldest, err
	}
	defer func() { _ = sqlconn.Close(c) }()
	flavor = mysql.MySQLFlavor
	if strings.Contains(c.GetServerVersion(), "MariaDB") {
		flavor = mysql.MariaDBFlavor
	}
	if o.Start == "oldest" && !o.GTID {
		oldest, err = clikit.OldestBinlog(c)
	}
	return flavor, oldest, err
}

func probe(ctx context.Context, src binlogstream.Prober) (binlogstream.ServerState, error) {
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	st, err := src.Probe(pctx)
	if err == nil && !st.LogBin {
		err = errors.New("the server has no binlog (log_bin=OFF)")
	}
	return st, err
}

// startPosition is --start on a stream that holds no line.
func (o options) startPosition(flavor string, st binlogstream.ServerState, oldest binlogstream.Position) (binlogstream.ResumePosition, error) {
	if o.GTID {
		set := o.Start
		switch o.Start {
		case "current":
			set = st.Executed
		case "oldest":
			set = ""
		}
		return binlogstream.StartAtGTID(flavor, set)
	}
	switch o.Start {
	case "current":
		return binlogstream.StartAt(st.Binlog), nil
	case "oldest":
		return binlogstream.StartAt(oldest), nil
	}
	p, err := binlogstream.ParsePosition(o.Start)
	if err != nil {
		return binlogstream.ResumePosition{}, fmt.Errorf("--start %q: want oldest, current or FILE:POS", o.Start)
	}
	return binlogstream.StartAt(p), nil
}
