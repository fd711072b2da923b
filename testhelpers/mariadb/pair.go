package mariadb

import (
	"fmt"
	"testing"
	"time"
)

const replicationTimeout = 30 * time.Second

// Pair is a GTID primary and a read-only replica that replicates from it.
type Pair struct {
	Primary *Server
	Replica *Server
}

// StartPair starts a primary with opts and a replica with the same options
// but read_only=ON and server_id primary+1, and has the replica replicate
// from the primary (MASTER_USE_GTID=slave_pos). Both start from the same
// template in parallel; both are cleaned up by t.Cleanup.
func StartPair(t testing.TB, opts Options) *Pair {
	t.Helper()
	began := time.Now()
	Require(t)
	popts, err := opts.validate()
	if err != nil {
		t.Fatal(err)
	}
	ropts := popts
	ropts.ServerID = popts.ServerID + 1
	ropts.ReadOnly = true

	primary, replica := create(t, popts), create(t, ropts)
	errs := make(chan error, 1)
	go func() { errs <- replica.launchOnFreePort() }()
	perr := primary.launchOnFreePort()
	if rerr := <-errs; rerr != nil {
		t.Fatal(rerr)
	}
	if perr != nil {
		t.Fatal(perr)
	}
	primary.createAccounts(t)
	replica.createAccounts(t)
	replica.ReplicateFrom(t, primary)
	t.Logf("mariadb: pair %s -> %s ready in %v", primary.Addr(), replica.Addr(), time.Since(began).Round(time.Millisecond))
	return &Pair{Primary: primary, Replica: replica}
}

// ReplicateFrom points s at primary with GTID auto-positioning from s's
// @@gtid_slave_pos, as ReplUser, and starts the replication threads.
func (s *Server) ReplicateFrom(t testing.TB, primary *Server) {
	t.Helper()
	s.Exec(t,
		fmt.Sprintf("CHANGE MASTER TO MASTER_HOST='%s', MASTER_PORT=%d, MASTER_USER='%s', "+
			"MASTER_PASSWORD='%s', MASTER_USE_GTID=slave_pos, MASTER_CONNECT_RETRY=1",
			primary.Host(), primary.Port(), ReplUser, ReplPassword),
		"START SLAVE",
	)
}

// WaitReplicaCaughtUp waits until the replica has applied the primary's
// @@gtid_binlog_pos, and fails the test after 30 s.
func (p *Pair) WaitReplicaCaughtUp(t testing.TB) {
	t.Helper()
	p.Replica.WaitGTID(t, p.Primary.GTIDBinlogPos(t))
}

// WaitGTID waits until s, a replica, has applied pos (MASTER_GTID_WAIT),
// and fails the test after 30 s with the replica's errors.
func (s *Server) WaitGTID(t testing.TB, pos string) {
	t.Helper()
	if pos == "" {
		return
	}
	q := fmt.Sprintf("SELECT MASTER_GTID_WAIT('%s', %d)", pos, int(replicationTimeout/time.Second))
	if got := s.QueryValue(t, q); got != "0" {
		st := s.SlaveStatus(t)
		t.Fatalf("mariadb: replica %s did not reach %s (result %s): gtid_slave_pos %s, IO %s %q, SQL %s %q",
			s.Addr(), pos, got, s.QueryValue(t, "SELECT @@GLOBAL.gtid_slave_pos"),
			st["Slave_IO_Running"], st["Last_IO_Error"], st["Slave_SQL_Running"], st["Last_SQL_Error"])
	}
}

// Promote makes the replica a writable primary, as after a failover: it
// stops fetching, applies everything it had fetched (Gtid_IO_Pos), forgets
// its primary (RESET SLAVE ALL) and turns read_only off. It does not stop the
// old primary: Kill or Term it first for a failover. It returns the replica.
func (p *Pair) Promote(t testing.TB) *Server {
	t.Helper()
	r := p.Replica
	began := time.Now()
	r.Exec(t, "STOP SLAVE IO_THREAD")
	if st := r.SlaveStatus(t); st != nil {
		r.WaitGTID(t, st["Gtid_IO_Pos"])
	}
	r.Exec(t, "STOP SLAVE", "RESET SLAVE ALL", "SET GLOBAL read_only = 0")
	t.Logf("mariadb: promoted %s in %v", r.Addr(), time.Since(began).Round(time.Millisecond))
	return r
}
