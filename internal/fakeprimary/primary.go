// Package fakeprimary is a fake MySQL or MariaDB primary on 127.0.0.1 that
// serves a *binlogbuild.Binlog over the real client/server protocol, so a
// real go-mysql BinlogSyncer (and so binlogstream.SyncerSource) can be
// tested without a database: registration queries, file and GTID dumps
// sent exactly as a server sends them, heartbeats, the queries a failover
// check asks, and faults on demand (cut connections, stalls, refused
// connections, a promoted server's binlog).
//
// It is built on go-mysql's server package (handshake, packets, result
// sets) with a Handler of its own. It does not implement the package's
// ReplicationHandler: that interface hands over only the dump's position
// (no flags, no replica id), streams through a BinlogStreamer that the
// server drains with context.Background (a stalled dump can then neither
// notice a dead client nor be stopped) and cannot send a server error in
// the middle of a dump. The dump commands therefore reach
// Handler.HandleOtherCommand, which writes the events itself.
package fakeprimary

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/server"

	"github.com/binlogstream/binlogstream/internal/binlogbuild"
)

// The user and password a Primary accepts unless WithUser says otherwise.
const (
	DefaultUser     = "repl"
	DefaultPassword = "repl-secret"
)

// go-mysql's NewDefaultServer makes a CA, a certificate and RSA keys: do
// it once. It is the default server because go-mysql v1.16.0's server
// made with mysql_native_password panics on its client's caching_sha2
// handshake.
var defaultServer = sync.OnceValue(server.NewDefaultServer)

// Fault is what happens to one dump (see InjectFaults).
type Fault struct {
	// AfterEvents is the number of events the dump sends before the fault
	// (the fake Rotate, Format_description, fake Gtid_list and heartbeats
	// count), when AfterBytes is 0.
	AfterEvents int
	// AfterBytes, when > 0, places the fault after that many bytes of
	// the dump's packets (4-byte packet headers and OK bytes included),
	// possibly in the middle of an event.
	AfterBytes int64
	// Stall keeps the connection open and stops sending (heartbeats too)
	// until Unstall is called, instead of cutting the connection.
	Stall bool
}

// Refusal is how a refused connection fails.
type Refusal int

const (
	// Accept serves connections normally.
	Accept Refusal = iota
	// RefuseClose closes the connection right after accept, before the
	// server greeting: the client sees the connection drop.
	RefuseClose
	// RefuseAuth answers the login with error 1045 (access denied).
	RefuseAuth
)

// Primary is a fake primary listening on 127.0.0.1. All methods are safe
// for concurrent use.
type Primary struct {
	srv            *server.Server
	ln             net.Listener
	user, password string

	mu        sync.Mutex
	src       *binlogbuild.FakeSource
	bl        *binlogbuild.Binlog
	purged    int
	overrides map[string]string
	unset     map[string]bool
	conns     map[*conn]struct{}
	faults    []Fault
	dumps     []string
	queries   []string
	accepted  int
	refuse    Refusal
	refuseN   int // > 0: the next refuseN connections are refused with refuseHow
	refuseHow Refusal
	stalled   bool
	unstall   chan struct{} // closed and replaced by Unstall
	closed    bool

	tables tableStore // tables.go: rows for information_schema and keyset SELECTs

	execFor *binlogbuild.Binlog // the binlog execSet was computed for, with execLen events
	execLen int
	execSet string

	done chan struct{} // closed by Close
	wg   sync.WaitGroup
}

// Option configures a Primary.
type Option func(*Primary)

// WithUser sets the account the primary accepts.
func WithUser(user, password string) Option {
	return func(p *Primary) { p.user, p.password = user, password }
}

// WithVar sets a server variable as SetVar does.
func WithVar(name, value string) Option {
	return func(p *Primary) { p.overrides[normVar(name)] = value }
}

// Start serves bl on a new 127.0.0.1 port until Close.
func Start(bl *binlogbuild.Binlog, opts ...Option) (*Primary, error) {
	p := &Primary{
		srv: defaultServer(), user: DefaultUser, password: DefaultPassword,
		overrides: map[string]string{}, unset: map[string]bool{},
		conns: map[*conn]struct{}{}, unstall: make(chan struct{}), done: make(chan struct{}),
	}
	for _, o := range opts {
		o(p)
	}
	p.setBinlog(bl)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("fakeprimary: listen: %w", err)
	}
	p.ln = ln
	p.wg.Add(1)
	go p.acceptLoop()
	return p, nil
}

func (p *Primary) setBinlog(bl *binlogbuild.Binlog) {
	p.bl = bl
	p.src = binlogbuild.NewFakeSource(bl)
	if p.purged > 0 {
		p.src.Purge(p.purged)
	}
}

// Host is "127.0.0.1".
func (p *Primary) Host() string { return "127.0.0.1" }

// Port is the port the primary listens on.
func (p *Primary) Port() uint16 { return uint16(p.ln.Addr().(*net.TCPAddr).Port) }

// Addr is HOST:PORT.
func (p *Primary) Addr() string { return p.ln.Addr().String() }

// User and Password are the account the primary accepts.
func (p *Primary) User() string     { return p.user }
func (p *Primary) Password() string { return p.password }

// DSN is USER:PASSWORD@tcp(HOST:PORT)/, as binlogstream.ParseDSN reads it.
func (p *Primary) DSN() string {
	return fmt.Sprintf("%s:%s@tcp(%s)/", p.user, p.password, p.Addr())
}

// Binlog returns the binlog being served.
func (p *Primary) Binlog() *binlogbuild.Binlog {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.bl
}

// Append replaces the served binlog with a later Build of the same Builder
// (it must extend the current one). Dumps that are caught up go on with
// the new events, as a live server's do.
func (p *Primary) Append(bl *binlogbuild.Binlog) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.src.Append(bl); err != nil {
		return err
	}
	p.bl = bl
	return nil
}

// Promote switches to another binlog, as when a replica with its own copy
// of the binlog takes over the address: every open connection is cut and
// later connections see bl (its GTID state and files included). Fault,
// refusal and purge settings stay.
func (p *Primary) Promote(bl *binlogbuild.Binlog) {
	p.mu.Lock()
	p.setBinlog(bl)
	conns := p.connList()
	p.mu.Unlock()
	for _, c := range conns {
		c.kill()
	}
}

// CutAll cuts every open connection, as a crash of the server process
// would; the primary keeps accepting new ones.
func (p *Primary) CutAll() {
	p.mu.Lock()
	conns := p.connList()
	p.mu.Unlock()
	for _, c := range conns {
		c.kill()
	}
}

func (p *Primary) connList() []*conn {
	out := make([]*conn, 0, len(p.conns))
	for c := range p.conns {
		out = append(out, c)
	}
	return out
}

// Purge removes the first n files (never the last), as PURGE BINARY LOGS:
// dumps that need them fail with error 1236.
func (p *Primary) Purge(n int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.purged = n
	p.src.Purge(n)
}

// InjectFaults queues faults for the next dumps (COM_BINLOG_DUMP or
// COM_BINLOG_DUMP_GTID commands): the first fault goes to the next dump,
// and so on. Dumps after the queue runs out are served normally.
func (p *Primary) InjectFaults(faults ...Fault) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.faults = append(p.faults, faults...)
}

// ClearFaults drops the faults not yet used.
func (p *Primary) ClearFaults() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.faults = nil
}

// Stall makes every dump stop sending at its next event (heartbeats
// included) while keeping its connection, until Unstall.
func (p *Primary) Stall() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stalled = true
}

// Unstall lets stalled dumps (by Stall or a Fault with Stall) go on.
func (p *Primary) Unstall() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stalled = false
	close(p.unstall)
	p.unstall = make(chan struct{})
}

// Refuse makes every new connection fail the way how says, until
// Refuse(Accept).
func (p *Primary) Refuse(how Refusal) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.refuse = how
}

// RefuseNext refuses only the next n connections (the connections
// go-mysql opens to send KILL count too).
func (p *Primary) RefuseNext(n int, how Refusal) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.refuseN, p.refuseHow = n, how
}

// SetVar sets a server variable (name without @@, any case) for SELECT
// @@name and SHOW VARIABLES, overriding the value derived from the binlog.
func (p *Primary) SetVar(name, value string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := normVar(name)
	p.overrides[n] = value
	delete(p.unset, n)
}

// UnsetVar makes the server answer error 1193 (unknown system variable)
// for name, as MariaDB does for @@gtid_mode.
func (p *Primary) UnsetVar(name string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := normVar(name)
	delete(p.overrides, n)
	p.unset[n] = true
}

// Dumps lists every dump command in order: "file:pos" for a file dump,
// "gtid SET" for a GTID dump (MySQL COM_BINLOG_DUMP_GTID or MariaDB
// @slave_connect_state).
func (p *Primary) Dumps() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.dumps...)
}

// Queries lists every query received, in order.
func (p *Primary) Queries() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.queries...)
}

// Connections is the number of connections accepted so far, refused ones
// included.
func (p *Primary) Connections() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.accepted
}

// OpenConnections is the number of connections being served now.
func (p *Primary) OpenConnections() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.conns)
}

// Close stops listening, cuts every connection and waits for every
// goroutine of the primary to end. Safe to call more than once.
func (p *Primary) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		p.wg.Wait()
		return nil
	}
	p.closed = true
	close(p.done)
	conns := p.connList()
	p.mu.Unlock()
	err := p.ln.Close()
	for _, c := range conns {
		c.kill()
	}
	p.wg.Wait()
	return err
}

func (p *Primary) acceptLoop() {
	defer p.wg.Done()
	for {
		nc, err := p.ln.Accept()
		if err != nil {
			return // closed (temporary accept errors do not happen on loopback)
		}
		c := p.track(nc)
		if c == nil {
			_ = nc.Close()
			return
		}
		go c.serve()
	}
}

// track registers a new connection, or returns nil after Close.
func (p *Primary) track(nc net.Conn) *conn {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil
	}
	p.accepted++
	how := p.refuse
	if p.refuseN > 0 {
		p.refuseN--
		how = p.refuseHow
	}
	ctx, cancel := context.WithCancel(context.Background())
	c := &conn{p: p, nc: nc, refused: how, ctx: ctx, cancel: cancel, userVars: map[string]string{}}
	p.conns[c] = struct{}{}
	p.wg.Add(1)
	return c
}

func (p *Primary) untrack(c *conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.conns, c)
}

// byID finds an open connection by its connection id, for KILL.
func (p *Primary) byID(id uint32) *conn {
	p.mu.Lock()
	defer p.mu.Unlock()
	for c := range p.conns {
		if c.id.Load() == id {
			return c
		}
	}
	return nil
}

// startDump records a dump and hands out its fault and binlog source.
func (p *Primary) startDump(desc string) (*binlogbuild.FakeSource, *binlogbuild.Binlog, *Fault) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.dumps = append(p.dumps, desc)
	var f *Fault
	if len(p.faults) > 0 {
		f = &p.faults[0]
		p.faults = p.faults[1:]
	}
	return p.src, p.bl, f
}

// stallState says whether dumps are stalled and what wakes them.
func (p *Primary) stallState() (bool, <-chan struct{}) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stalled, p.unstall
}

func (p *Primary) logQuery(q string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.queries = append(p.queries, q)
}

func normVar(name string) string {
	return lower(name)
}

var errKilled = errors.New("fakeprimary: connection killed")

// fatal is error 1236 as a dump thread sends it.
func fatal(msg string) error {
	return mysql.NewError(mysql.ER_MASTER_FATAL_ERROR_READING_BINLOG, msg)
}
