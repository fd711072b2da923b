package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/pprof"
	"strings"
	"time"

	"github.com/go-mysql-org/go-mysql/client"
	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"
	"github.com/sirupsen/logrus"

	"github.com/binlogstream/binlogstream"
	"github.com/binlogstream/binlogstream/cmd/internal/clikit"
	"github.com/binlogstream/binlogstream/internal/sqlconn"
)

// defaultServerID is the replica id binlog-tail registers with unless
// --server-id says otherwise: 4344916 is "BLT" in ASCII. A server keeps one
// dump per replica id, so two binlog-tails on one server need different ids.
const defaultServerID = 0x424C54

const synopsis = `usage: binlog-tail --dsn DSN --out FILE [--password-file FILE] [flags]
       binlog-tail --dsn DSN --out FILE --gtid [--failover-to DSN]... [flags]
       binlog-tail --binlog-dir DIR --out FILE [flags]
       binlog-tail --demo
`

const usageText = `Streams the binlog of a MySQL or MariaDB server (binlog_format=ROW), or the
binlog files in DIR, to FILE as JSON Lines, one line per row change and one
per DDL or other statement.
FILE is the checkpoint: when it is not empty, binlog-tail resumes right after
its last complete line (an incomplete last line is cut first) and ignores
--start, so a kill at any moment followed by the same command leaves FILE as
an uninterrupted run would have. FILE.schema, beside it, is FILE's schema
history: the column names of its rows as of each binlog position. A FILE
with lines whose FILE.schema is missing is refused, FILE left untouched,
since a history rebuilt then would change the rows' form (names, or
positional arrays) halfway through the file: restore FILE.schema as it was
written with FILE, or move FILE aside and start again. A FILE with no
complete line starts afresh, with a new FILE.schema.

With --gtid the position is a GTID set, the same on every server of a
replication topology, and --failover-to names servers (tried in order) that
the stream may move to when --dsn stays unreachable: a candidate is used only
once it is writable (read_only=OFF), has a binlog, and holds every
transaction already written to FILE; otherwise it is refused and the refusal
logged. With no valid candidate binlog-tail exits 1 naming each refusal.

Flags:
`

const formatText = `
Lines (keys always in this order; gtid only when the transaction has one):
  {"type":"table","schema":S,"table":T,"source":"binlog|history|unknown",
   "columns":[{"name":N,"type":TY,"charset":C,"nullable":B},...],
   "primary_key":[...],"unknown":WHY,"gtid":G,"file":F,"pos":P,"resume":R}
  {"type":"insert|update|delete","schema":S,"table":T,"row":{"col":V,...},
   "before":{...} (update only),"gtid":G,"file":F,"pos":P,"resume":R}
  {"type":"query","schema":S,"query":Q,"gtid":G,"file":F,"pos":P,"resume":R}
  {"type":"read","schema":S,"table":T,"row":{"col":V,...},"file":F,"pos":P,
   "resume":R} (--snapshot: a row the table held, read before its changes)
  {"type":"progress","gtid":G,"file":F,"pos":P,"resume":R} (--tables only:
   the stream went past other tables' rows up to there)
A table line precedes the rows of each statement (one per Table_map). Rows
are keyed by column name as of their binlog position (the schema history
lives in FILE.schema); a column the row image left out is absent. Where no
schema can be proven the row is an array and the line says "positional":true.
BEGIN, COMMIT, ROLLBACK, XID and other events write no line.
file:pos is the end of the binlog event the line comes from; resume is the
token to continue after this line. Values are what the server means:
integers (UNSIGNED and BIT(64) up to 18446744073709551615, every digit) and
floats as JSON numbers, DECIMAL as a string, text decoded from its charset,
binary strings as JSON strings when valid UTF-8, otherwise
{"base64":"..."}, BINARY(n) with its trailing zero bytes, ENUM/SET by name,
DATE/TIME/DATETIME/TIMESTAMP (UTC) as strings with the column's fractional
digits, UUID/INET6/INET4 as text, GEOMETRY as {"srid":N,"wkb":"<hex>"},
NULL as null. See the package documentation for the full contract.
`

// options are the parsed command line.
type options struct {
	DSN binlogstream.DSN
	// BinlogDir holds binlog files: the source without DSN.
	BinlogDir string
	// Offline: no --dsn, the files of BinlogDir are the source.
	Offline bool
	// BinlogBase names the binlog in BinlogDir when it holds several.
	BinlogBase    string
	Out           string
	Start         string
	StopAtCurrent bool
	ServerID      uint
	Flavor        string
	Quiet         bool
	ProgressEvery time.Duration
	NoSnapshot    bool
	// Snapshot: read the rows of the selected tables while streaming.
	Snapshot bool
	// SnapshotReaders and SnapshotChunkRows are SnapshotConfig's Readers
	// and ChunkRows (0: the library's defaults).
	SnapshotReaders, SnapshotChunkRows uint
	// SnapshotKeyless is SnapshotConfig.Keyless (--snapshot-keyless).
	SnapshotKeyless binlogstream.KeylessPolicy
	// CPUProfile, when set, is where a CPU profile of the run goes.
	CPUProfile string
	Demo       bool
	// Tables, when set, are the tables whose rows are written (--tables);
	// TablesLater lets its patterns name tables created later.
	Tables      binlogstream.TablePatterns
	TablesLater bool
	// GTID streams in GTID mode; FailoverTo are the failover candidates
	// (GTID mode only), in order of preference.
	GTID       bool
	FailoverTo []binlogstream.DSN
	formatFlags
}

// rawFlags are the flags options takes only once they are checked: the
// DSNs and the password file.
type rawFlags struct {
	dsn, passwordFile string
	failoverTo        []string
}

// startDefaultText is --start's default, as -h prints it.
const startDefaultText = "Default: current with --dsn; oldest with --binlog-dir alone (the files' first event)"

// defaultStart is --start when it is not given: a server's files are
// followed from now on, a directory's files are read from the first.
func defaultStart(offline bool) string {
	if offline {
		return "oldest"
	}
	return "current"
}

// parseFlags parses and checks the command line; flag.ErrHelp for --help.
func parseFlags(args []string, stderr io.Writer) (options, error) {
	var o options
	var raw rawFlags
	fs := newFlagSet(&o, &raw, stderr)
	if err := clikit.Parse(fs, args, clikit.Help{Synopsis: synopsis, Text: usageText, After: formatText}); err != nil {
		return o, err
	}
	if o.Demo {
		return o, nil
	}
	if err := missingSource(o.Out, raw.dsn, o.BinlogDir); err != nil {
		return o, err
	}
	password, err := o.resolveDSN(raw)
	if err != nil {
		return o, err
	}
	if o.Start == "" {
		o.Start = defaultStart(o.Offline)
	}
	if err := o.checkServerIDAndFlavor(); err != nil {
		return o, err
	}
	if err := o.resolveFailoverTo(raw.failoverTo, password); err != nil {
		return o, err
	}
	if err := o.checkCombinations(); err != nil {
		return o, err
	}
	if err := o.checkFormat(); err != nil {
		return o, err
	}
	return o, o.checkStart()
}

// missingSource names every required flag missing: --out, and --dsn or
// --binlog-dir.
func missingSource(out, dsn, dir string) error {
	var missing []string
	if out == "" {
		missing = append(missing, "--out FILE")
	}
	if dsn == "" && dir == "" {
		missing = append(missing, "--dsn DSN or --binlog-dir DIR")
	}
	if len(missing) == 0 {
		return nil
	}
	return fmt.Errorf("missing %s", strings.Join(missing, ", and "))
}

// newFlagSet defines binlog-tail's flags, parsed into o and raw.
func newFlagSet(o *options, raw *rawFlags, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("binlog-tail", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&raw.dsn, "dsn", "", "source server, a go-sql-driver `DSN`: USER:PASS@tcp(HOST:PORT)/ or USER:PASS@unix(PATH)/ (needs REPLICATION SLAVE and BINLOG MONITOR / REPLICATION CLIENT)")
	fs.StringVar(&o.Out, "out", "", "JSON Lines output `FILE`; also the checkpoint, resumed with its schema history FILE.schema (refused when that is missing)")
	fs.StringVar(&o.BinlogBase, "binlog-base", "", "with --binlog-dir: the binlog files' `NAME` before the number (mysql-bin for mysql-bin.000001), "+
		"needed when DIR holds several binlogs (a replica's datadir also holds its relay log)")
	fs.StringVar(&o.BinlogDir, "binlog-dir", "", "read the binlog files in `DIR` (a server's binlog directory, a copy, or an archive written by mariadb-binlog/mysqlbinlog --raw) instead of a server; "+
		"the order is DIR's *.index file when there is one, else the file names. With --dsn: an archive of the server's files, read for what the server has purged "+
		"(then the stream continues on the server)")
	fs.StringVar(&o.Start, "start", "", "`WHERE` to start when FILE is empty: current (SHOW MASTER STATUS), oldest (first of SHOW BINARY LOGS, offset 4) or FILE:POS;\n"+
		"with --gtid: current (the server's executed GTID set), oldest (every transaction the server still has) or a GTID set (stream what is not in it).\n"+
		startDefaultText)
	fs.BoolVar(&o.StopAtCurrent, "stop-at-current", false, "exit 0 once everything up to the server's position at startup (SHOW MASTER STATUS; with --gtid its executed GTID set) is written")
	fs.BoolVar(&o.GTID, "gtid", false, "stream in GTID mode: positions and resume tokens are GTID sets, valid on every server of the topology (MariaDB, or MySQL with gtid_mode=ON)")
	fs.Func("failover-to", "`DSN` of a server the stream may fail over to when --dsn stays unreachable (repeatable, tried in order; needs --gtid). "+
		"It must be writable, have a binlog and hold every transaction already written, or it is refused", func(s string) error {
		raw.failoverTo = append(raw.failoverTo, s) // parsed below: flag's own errors would print the password
		return nil
	})
	fs.StringVar(&raw.passwordFile, "password-file", "", "read the password of every DSN that has none from `FILE` (one line; no access for group or others, as chmod 600); "+
		"otherwise the MYSQL_PWD environment variable gives it")
	fs.UintVar(&o.ServerID, "server-id", defaultServerID, "replica server `ID` to register with; must differ from every other replica's (and every other binlog-tail's) on the server")
	fs.StringVar(&o.Flavor, "flavor", "", "`mysql|mariadb`: mysql or mariadb (default: detected from the server version)")
	fs.Func("tables", "`PATTERNS`: write the rows of these tables only: comma-separated schema.table patterns (* and ? match within a name: app.orders,app.audit_*); "+
		"other tables' rows are not decoded, and a progress line carries the position past them about once a second. Resume a file with the same --tables", func(s string) error {
		p, err := binlogstream.ParseTablePatterns(s)
		o.Tables = p
		return err
	})
	fs.BoolVar(&o.TablesLater, "tables-created-later", false, "a --tables pattern that matches no table yet names tables created later: a warning, not a refusal")
	fs.BoolVar(&o.Snapshot, "snapshot", false, "also read the rows the tables --tables selects (all tables without it) already hold, while streaming: "+
		"one read line per row, in key chunks each read in its own short transaction (MariaDB); every change of a row comes after its read line")
	fs.UintVar(&o.SnapshotReaders, "snapshot-readers", 0, "--snapshot: `N` chunk reads at once, one connection each (0: the library's default)")
	fs.UintVar(&o.SnapshotChunkRows, "snapshot-chunk-rows", 0, "--snapshot: `N` rows per chunk read (0: the library's default)")
	fs.Func("snapshot-keyless", "`refuse|skip`: "+clikit.KeylessUsage, func(s string) error {
		var err error
		o.SnapshotKeyless, err = clikit.ParseKeyless(s)
		return err
	})
	fs.BoolVar(&o.Quiet, "quiet", false, "log nothing (no progress, info or warning lines); an error still ends the run with its message")
	fs.DurationVar(&o.ProgressEvery, "progress-every", time.Second, "log a progress line (position, rows/s, lag, the snapshot's tables done, reads and rows left) every `D`; 0: never; --quiet hides it")
	fs.BoolVar(&o.NoSnapshot, "no-schema-snapshot", false, "do not read information_schema for tables created before the stream (their rows are\n"+
		"positional unless binlog_row_metadata=FULL); the snapshot needs SELECT on them")
	fs.StringVar(&o.CPUProfile, "cpuprofile", "", "write a CPU profile of the run to `FILE` (for go tool pprof)")
	defineFormatFlags(fs, &o.formatFlags)
	fs.BoolVar(&o.Demo, "demo", false, "run a self-contained crash-and-resume demo on an in-process fake server and exit")
	return fs
}

// resolveDSN sets the source (--dsn, else offline) and its password, and
// returns the password of the DSNs that have none.
func (o *options) resolveDSN(raw rawFlags) (string, error) {
	o.Offline = raw.dsn == ""
	if raw.dsn != "" {
		d, err := binlogstream.ParseDSN(raw.dsn)
		if err != nil {
			return "", err
		}
		o.DSN = d
	}
	password, err := clikit.DefaultPassword(raw.passwordFile)
	if err != nil {
		return "", err
	}
	if raw.dsn != "" && o.DSN.Password == "" {
		o.DSN.Password = password
	}
	return password, nil
}

// checkServerIDAndFlavor checks --server-id and --flavor.
func (o *options) checkServerIDAndFlavor() error {
	if o.ServerID == 0 || o.ServerID > 1<<32-1 {
		return fmt.Errorf("--server-id %d: want 1..4294967295", o.ServerID)
	}
	switch o.Flavor {
	case "", mysql.MySQLFlavor, mysql.MariaDBFlavor:
		return nil
	default:
		return fmt.Errorf("--flavor %q: want mysql or mariadb", o.Flavor)
	}
}

// resolveFailoverTo parses the --failover-to DSNs, password given to
// those that have none.
func (o *options) resolveFailoverTo(dsns []string, password string) error {
	for _, s := range dsns {
		d, err := binlogstream.ParseDSN(s)
		if err != nil {
			return fmt.Errorf("--failover-to: %w", err)
		}
		if d.Password == "" {
			d.Password = password
		}
		o.FailoverTo = append(o.FailoverTo, d)
	}
	return nil
}

// checkCombinations refuses flags that need another one.
func (o *options) checkCombinations() error {
	if o.BinlogBase != "" && o.BinlogDir == "" {
		return errors.New("--binlog-base needs --binlog-dir")
	}
	if o.TablesLater && o.Tables == nil {
		return errors.New("--tables-created-later needs --tables")
	}
	if len(o.FailoverTo) > 0 && o.Offline {
		return errors.New("--failover-to needs --dsn: the binlog files of --binlog-dir cannot fail over")
	}
	if len(o.FailoverTo) > 0 && !o.GTID {
		return errors.New("--failover-to needs --gtid: file positions differ from server to server, GTID sets do not")
	}
	return nil
}

// checkStart checks --start against the mode: oldest, current, or a GTID
// set with --gtid, a FILE:POS without.
func (o *options) checkStart() error {
	switch o.Start {
	case "current", "oldest":
		return nil
	}
	if o.GTID {
		if !parsesAsGTIDSet(o.Flavor, o.Start) {
			return fmt.Errorf("--start %q: with --gtid want oldest, current or a GTID set (MySQL uuid:1-5, MariaDB domain-server-seq)", o.Start)
		}
		return nil
	}
	if _, err := binlogstream.ParsePosition(o.Start); err != nil {
		hint := ""
		if parsesAsGTIDSet(o.Flavor, o.Start) {
			hint = " (a GTID set needs --gtid)"
		}
		return fmt.Errorf("--start %q: want oldest, current or FILE:POS%s", o.Start, hint)
	}
	return nil
}

// parsesAsGTIDSet reports whether s is a GTID set of flavor (of either
// flavor when it is not known yet).
func parsesAsGTIDSet(flavor, s string) bool {
	for _, f := range []string{mysql.MySQLFlavor, mysql.MariaDBFlavor} {
		if flavor != "" && f != flavor {
			continue
		}
		if _, err := mysql.ParseGTIDSet(f, s); err == nil {
			return true
		}
	}
	return false
}

// cli runs binlog-tail and returns its exit code: 0 on success, after a
// signal and with --stop-at-current once caught up; 2 for bad flags; 1 for
// any other error, reported as one line on stderr.
func cli(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	o, err := parseFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		return clikit.UsageError(stderr, "binlog-tail", err)
	}
	stopProfile, err := startCPUProfile(o.CPUProfile)
	if err == nil {
		if o.Demo {
			err = runDemo(ctx, stdout, newFakeDemoServer)
		} else {
			err = runTail(ctx, o, stderr)
		}
		if perr := stopProfile(); err == nil {
			err = perr
		}
	}
	if err != nil && ctx.Err() != nil && !o.Demo && !errors.As(err, new(*binlogstream.ListenerError)) {
		// A signal during the set-up (before the stream, which stops by
		// itself) cuts its queries short: nothing was written, so it is
		// the prompt stop the signal asked for, not a failure.
		err = nil
	}
	if err != nil {
		fmt.Fprintf(stderr, "binlog-tail: %s\n", oneLine(err.Error()))
		return 1
	}
	return 0
}

// startCPUProfile starts a CPU profile to path ("" for none) and returns
// the function that ends it.
func startCPUProfile(path string) (stop func() error, err error) {
	if path == "" {
		return func() error { return nil }, nil
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() error {
		pprof.StopCPUProfile()
		return f.Close()
	}, nil
}

// oneLine keeps an error message on one line. Messages never hold a
// password: DSNs render as USER:xxxxx@..., and nothing else is built from
// one.
func oneLine(msg string) string {
	return strings.Join(strings.Fields(msg), " ")
}

// runTail streams the source the options name to o.Out until a signal,
// --stop-at-current's target or an error.
func runTail(ctx context.Context, o options, stderr io.Writer) error {
	// One writer per file, before anything touches it.
	release, err := lockOutput(o.Out)
	if err != nil {
		return err
	}
	defer release()
	rec, err := recoverOutput(o)
	if err != nil {
		return err
	}
	if o.Tables, err = serverTables(ctx, o, !rec.Lines, stderr); err != nil {
		return err
	}
	dir, err := openBinlogDir(o)
	if err != nil {
		return err
	}
	info, err := inspectSource(ctx, o, dir, !rec.Lines)
	if err != nil {
		return err
	}
	if err := checkResumeFlavor(o, rec, info); err != nil {
		return err
	}
	cfg, err := newTailConfig(ctx, o, rec, dir, info, stderr)
	if err != nil {
		return err
	}
	_, err = tail(ctx, o.Out, cfg)
	return clikit.ExplainSnapshotKey(explainUnservedStart(o, dir != nil, err))
}

// recoverOutput checks the output file before any connection and then
// cuts its partial last line: a corrupt checkpoint, one of the other mode
// or one whose schema history is missing is refused with the file left
// as it was; a resumed run ignores --start.
func recoverOutput(o options) (recovered, error) {
	rec, err := peekOutput(o.Out)
	if err != nil {
		return rec, err
	}
	if rec.Lines && rec.Resume.IsGTID() != o.GTID {
		return rec, modeMismatch(o.Out, rec.Resume)
	}
	if err := formatMismatch(o.Out, o.Format, rec); err != nil {
		return rec, err
	}
	if rec.Lines {
		if err := requireSchemaHistory(o.Out); err != nil {
			return rec, err
		}
		if err := checkSchemaTail(o.Out); err != nil {
			return rec, err
		}
	}
	f, rec, err := openOutput(o.Out)
	if err != nil {
		return rec, err
	}
	f.Close()
	return rec, nil
}

// openBinlogDir opens --binlog-dir and lists its files once, so that a
// directory that is not a binlog's fails here; nil without --binlog-dir.
func openBinlogDir(o options) (*binlogstream.DirSource, error) {
	if o.BinlogDir == "" {
		return nil, nil
	}
	dir, err := binlogstream.NewDirSource(binlogstream.DirConfig{
		Dir:    o.BinlogDir,
		Base:   o.BinlogBase,
		Flavor: o.Flavor,
		// TIMESTAMP values render the same wherever binlog-tail runs.
		Tune:        func(p *replication.BinlogParser) { p.SetTimestampStringLocation(time.UTC) },
		DecodeTable: o.tableFilter(),
		RecycleRows: true, // the writer releases each event once written
	})
	if err != nil {
		return nil, fmt.Errorf("--binlog-dir: %w", err)
	}
	if _, err := dir.Files(); err != nil {
		if strings.Contains(err.Error(), "DirConfig.Base") {
			err = fmt.Errorf("%w (with --binlog-base)", err)
		}
		return nil, fmt.Errorf("--binlog-dir: %w", err)
	}
	return dir, nil
}

// inspectSource reads the flavor and the positions the flags name from
// the files of dir when offline, else from the server.
func inspectSource(ctx context.Context, o options, dir *binlogstream.DirSource, needStart bool) (serverInfo, error) {
	if o.Offline {
		return inspectDir(ctx, o, dir, needStart)
	}
	return inspectServer(ctx, o, needStart)
}

// checkResumeFlavor refuses to resume a GTID-mode file from a source of
// another flavor: the GTID sets of MySQL and MariaDB do not translate.
func checkResumeFlavor(o options, rec recovered, info serverInfo) error {
	if !rec.Lines || !o.GTID || rec.Resume.Flavor == info.Flavor {
		return nil
	}
	from := o.DSN.String()
	if o.Offline {
		from = o.BinlogDir
	}
	return fmt.Errorf("%s was written from a %s server in GTID mode; %s is %s", o.Out, rec.Resume.Flavor, from, info.Flavor)
}

// newLogger is the command's log on stderr: info lines (the progress
// line) and above, none with --quiet.
func newLogger(o options, stderr io.Writer) *logrus.Logger {
	logger := clikit.NewLogger(stderr, o.Quiet)
	if !o.Quiet {
		logger.SetLevel(logrus.InfoLevel)
	}
	return logger
}

// syncerConfig is the dump configuration of server d, a --dsn or a
// --failover-to.
func (o options) syncerConfig(d binlogstream.DSN, flavor string) binlogstream.SyncerConfig {
	return binlogstream.SyncerConfig{
		DSN:             d,
		ServerID:        uint32(o.ServerID),
		Flavor:          flavor,
		HeartbeatPeriod: time.Second,
		ReadTimeout:     10 * time.Second,
		// Decoded events are several times their binlog size; 32 of them keep
		// the decoders ahead of the listener while what they wrote is
		// still in the CPU caches (see queuedEvents).
		EventCacheCount: 32,
		DecodeTable:     o.tableFilter(),
		RecycleRows:     true, // the writer releases each event once written
		Tune: func(c *replication.BinlogSyncerConfig) {
			// TIMESTAMP values render the same wherever binlog-tail runs.
			c.TimestampStringLocation = time.UTC
		},
	}
}

// openSource is the stream's source and what probes it: the files of dir
// offline; else the server, behind an archive source reading dir for
// what the server purged when there is one (--start oldest then starts
// at the archive's oldest file, set in info).
func openSource(ctx context.Context, o options, rec recovered, dir *binlogstream.DirSource, info *serverInfo) (
	binlogstream.Source, binlogstream.Prober, error) {
	if o.Offline {
		return dir, dir, nil
	}
	syncer, err := binlogstream.NewSyncerSource(o.syncerConfig(o.DSN, info.Flavor))
	if err != nil {
		return nil, nil, err
	}
	if dir == nil {
		return syncer, syncer, nil
	}
	// What the server purged comes from the archive.
	as, err := binlogstream.NewArchiveSource(binlogstream.ArchiveConfig{Archive: dir, Live: syncer})
	if err != nil {
		return nil, nil, err
	}
	if !rec.Lines && o.Start == "oldest" {
		oldest, err := as.Oldest(ctx)
		if err != nil {
			return nil, nil, err
		}
		info.Start = binlogstream.Position{File: oldest, Offset: 4}
	}
	return as, syncer, nil
}

// newTailConfig is the streaming core's configuration for the options:
// its source, logger, schema and table settings, start and target.
func newTailConfig(ctx context.Context, o options, rec recovered, dir *binlogstream.DirSource, info serverInfo, stderr io.Writer) (
	tailConfig, error) {
	src, prober, err := openSource(ctx, o, rec, dir, &info)
	if err != nil {
		return tailConfig{}, err
	}
	cfg := tailConfig{
		Source: src, // the library's reconnect default: about a minute
		Logger: newLogger(o, stderr),
		// Offline there is no server to read information_schema from:
		// the tables the files create or alter are known, others are
		// positional unless the files carry FULL row metadata.
		SchemaSnapshot: !o.NoSnapshot && !o.Offline,
		Tables:         o.Tables,
	}
	if o.Snapshot {
		cfg.Snapshot = clikit.Snapshot(o.Tables, o.SnapshotReaders, o.SnapshotChunkRows, o.SnapshotKeyless)
		cfg.EstimateRows = clikit.EstimateRows(o.DSN)
	}
	if o.Format == formatDebezium {
		dbz := o.debeziumOptions()
		cfg.Debezium = &dbz
	}
	if o.GTID {
		if err := setGTIDRange(ctx, o, rec, prober, info, &cfg); err != nil {
			return tailConfig{}, err
		}
	} else {
		cfg.Start, cfg.Target, cfg.TargetNext = binlogstream.StartAt(info.Start), info.Target, info.TargetNext
	}
	if !o.Quiet {
		cfg.ProgressEvery = o.ProgressEvery
	}
	return cfg, nil
}

// setGTIDRange sets cfg's GTID start and target and, with --failover-to,
// the candidates the stream may fail over to.
func setGTIDRange(ctx context.Context, o options, rec recovered, prober binlogstream.Prober, info serverInfo, cfg *tailConfig) error {
	var err error
	if cfg.Start, cfg.TargetGTID, err = gtidPositions(ctx, o, prober, info.Flavor, !rec.Lines, o.Offline); err != nil {
		return err
	}
	if len(o.FailoverTo) == 0 {
		return nil
	}
	cfg.Failover, err = clikit.Failover(o.FailoverTo, func(d binlogstream.DSN) binlogstream.SyncerConfig { return o.syncerConfig(d, info.Flavor) })
	cfg.MaxReconnectAttempts = clikit.FailoverReconnects
	return err
}

// explainUnservedStart adds to a server's refusal to send the binlog from
// the stream's position (ER_MASTER_FATAL_ERROR_READING_BINLOG) what to do
// about it; other errors pass as they are.
func explainUnservedStart(o options, archived bool, err error) error {
	se := clikit.Unserved(err)
	if se == nil {
		return err
	}
	if o.GTID {
		return fmt.Errorf("the server cannot send every transaction after the GTID position "+
			"(were its binlogs purged? an archive of its binlog files continues the stream: add --binlog-dir DIR; "+
			"--start current begins with what it has now): %w", err)
	}
	if !archived {
		return fmt.Errorf("the server cannot send the binlog from %s (purged? an archive of its binlog files "+
			"continues the stream: add --binlog-dir DIR): %w", se.Start, err)
	}
	return err
}

// serverTables is --tables comparing names as the server does
// (lower_case_table_names), checked against its tables when FILE starts
// empty (fresh): a resumed file's tables may have been dropped since.
// Offline there is no server: the patterns compare names as written.
func serverTables(ctx context.Context, o options, fresh bool, stderr io.Writer) (binlogstream.TablePatterns, error) {
	if o.Tables == nil || o.Offline {
		return o.Tables, nil
	}
	st, err := clikit.ReadServerTables(ctx, o.DSN)
	if err != nil {
		return nil, err
	}
	pats := st.Patterns(o.Tables)
	if !fresh {
		return pats, nil
	}
	warnings, err := st.CheckTables(pats, o.TablesLater)
	logger := newLogger(o, stderr)
	for _, w := range warnings {
		logger.Warn(w)
	}
	return pats, err
}

// tableFilter is the sources' DecodeTable for --tables; nil without it.
func (o options) tableFilter() func(schema, table string) bool {
	if o.Tables == nil {
		return nil
	}
	return o.Tables.Match
}

// inspectDir resolves, from the files of --binlog-dir, the flavor and in
// file mode --start (when needStart) and --stop-at-current, as
// inspectServer does from a server: "current" is the end of the last
// complete event of the last file.
func inspectDir(ctx context.Context, o options, dir *binlogstream.DirSource, needStart bool) (serverInfo, error) {
	var info serverInfo
	names, err := dir.Files()
	if err != nil {
		return info, err
	}
	if len(names) == 0 {
		return info, fmt.Errorf("--binlog-dir %s holds no binlog files", o.BinlogDir)
	}
	if info.Flavor, err = dir.Flavor(); err != nil {
		return info, err
	}
	if o.GTID {
		return info, nil // see gtidPositions
	}
	current := func() (binlogstream.Position, error) {
		st, err := dir.Probe(ctx)
		info.TargetNext = st.NextBinlog
		return st.Binlog, err
	}
	oldest := func() (binlogstream.Position, error) { return binlogstream.Position{File: names[0], Offset: 4}, nil }
	err = resolvePositions(o, needStart, &info, current, oldest)
	if !o.StopAtCurrent {
		info.TargetNext = binlogstream.Position{}
	}
	return info, err
}

// resolvePositions sets, in file mode, info.Target for --stop-at-current
// and info.Start for --start (when needStart) from the source's current
// position and its oldest one, asking each only when needed.
func resolvePositions(o options, needStart bool, info *serverInfo, current, oldest func() (binlogstream.Position, error)) error {
	var cur binlogstream.Position
	if o.StopAtCurrent || (needStart && o.Start == "current") {
		var err error
		if cur, err = current(); err != nil {
			return err
		}
		if o.StopAtCurrent {
			info.Target = cur
		}
	}
	if !needStart {
		return nil
	}
	var err error
	switch o.Start {
	case "current":
		info.Start = cur
	case "oldest":
		info.Start, err = oldest()
	default:
		info.Start, err = binlogstream.ParsePosition(o.Start)
	}
	return err
}

// modeMismatch refuses to resume a file written in the other mode: a file
// position means nothing as a GTID set and back.
func modeMismatch(path string, last binlogstream.ResumePosition) error {
	if last.IsGTID() {
		return fmt.Errorf("%s was written in GTID mode (its last resume token is a GTID position): run with --gtid, or use another --out", path)
	}
	return fmt.Errorf("%s was written in file-position mode (its last resume token is a FILE:POS position): run without --gtid, or use another --out", path)
}

// gtidPositions resolves, in GTID mode, --start (when needStart) and
// --stop-at-current from the server's executed GTID set as the library's
// Probe reads it (@@gtid_binlog_pos on MariaDB, @@gtid_executed on MySQL;
// offline, the GTID state at the end of the files).
func gtidPositions(ctx context.Context, o options, src binlogstream.Prober, flavor string, needStart, offline bool) (
	start binlogstream.ResumePosition, target string, err error) {
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	st, err := src.Probe(pctx)
	if err != nil {
		return start, "", err
	}
	if !st.LogBin {
		return start, "", errors.New("the server has no binlog (log_bin=OFF)")
	}
	if !offline && flavor == mysql.MySQLFlavor && !strings.EqualFold(st.GTIDMode, "ON") {
		return start, "", fmt.Errorf("the server has gtid_mode=%s; --gtid needs gtid_mode=ON", st.GTIDMode)
	}
	if o.StopAtCurrent {
		target = st.Executed
	}
	if !needStart {
		return start, target, nil
	}
	set := o.Start
	switch o.Start {
	case "current":
		set = st.Executed
	case "oldest":
		set = "" // every transaction the server still has
	}
	if start, err = binlogstream.StartAtGTID(flavor, set); err != nil {
		return start, "", fmt.Errorf("--start %q: %w", o.Start, err)
	}
	return start, target, nil
}

// serverInfo is what binlog-tail asks the server before streaming.
type serverInfo struct {
	Flavor string
	Start  binlogstream.Position // zero unless needed
	Target binlogstream.Position // zero unless --stop-at-current
	// TargetNext: what a Rotate event ending at Target names (offline).
	TargetNext binlogstream.Position
}

// inspectServer connects once over go-mysql's client to detect the flavor
// and, in file mode, resolve --start (when needStart) and --stop-at-current.
func inspectServer(ctx context.Context, o options, needStart bool) (serverInfo, error) {
	info := serverInfo{Flavor: o.Flavor}
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	c, err := o.DSN.Connect(cctx)
	if err != nil {
		return info, err
	}
	defer func() { _ = sqlconn.Close(c) }()
	if info.Flavor == "" {
		info.Flavor = mysql.MySQLFlavor
		if strings.Contains(c.GetServerVersion(), "MariaDB") {
			info.Flavor = mysql.MariaDBFlavor
		}
	}
	if o.GTID {
		return info, nil // see gtidPositions
	}
	current := func() (binlogstream.Position, error) { return masterStatus(c) }
	oldest := func() (binlogstream.Position, error) { return clikit.OldestBinlog(c) }
	return info, resolvePositions(o, needStart, &info, current, oldest)
}

func masterStatus(c *client.Conn) (binlogstream.Position, error) {
	r, err := c.Execute("SHOW MASTER STATUS")
	if err != nil {
		// MySQL 8.4 renamed it.
		var err2 error
		if r, err2 = c.Execute("SHOW BINARY LOG STATUS"); err2 != nil {
			return binlogstream.Position{}, fmt.Errorf("SHOW MASTER STATUS: %w", err)
		}
	}
	if r.RowNumber() == 0 {
		return binlogstream.Position{}, errors.New("SHOW MASTER STATUS is empty: is binary logging on (log_bin)?")
	}
	file, err := r.GetString(0, 0)
	if err != nil {
		return binlogstream.Position{}, fmt.Errorf("SHOW MASTER STATUS: %w", err)
	}
	file = strings.Clone(file) // GetString aliases a pooled buffer
	pos, err := r.GetUint(0, 1)
	if err != nil {
		return binlogstream.Position{}, fmt.Errorf("SHOW MASTER STATUS: %w", err)
	}
	return binlogstream.Position{File: file, Offset: pos}, nil
}
