package binlogstream

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/sirupsen/logrus"
)

// Failover moves a GTID-mode stream to a promoted writer when the current
// server stays unreachable. A candidate is streamed from only after it is
// proven to hold everything already delivered (fail closed): it must be
// writable, have GTIDs and a binlog, and its executed set must contain the
// committed set, the in-flight transaction, and a recorded stop target.
// File-mode positions mean nothing on another server, so file mode never
// fails over.

// Candidate is a server a failover may move the stream to.
type Candidate struct {
	Name   string // for errors and logs; never a password
	Source Source
	// Prober reads the candidate's state; nil means Source, which must
	// then implement Prober.
	Prober Prober
}

// Resolver names the servers that may be the current writer, in order of
// preference. It is asked again on every failover attempt.
type Resolver interface {
	Candidates(ctx context.Context) ([]Candidate, error)
}

// ResolverFunc adapts a function to Resolver.
type ResolverFunc func(ctx context.Context) ([]Candidate, error)

// Candidates calls f.
func (f ResolverFunc) Candidates(ctx context.Context) ([]Candidate, error) { return f(ctx) }

// StaticResolver offers the same candidates, in the order given, on every
// failover attempt.
func StaticResolver(candidates ...Candidate) Resolver {
	c := append([]Candidate(nil), candidates...)
	return ResolverFunc(func(context.Context) ([]Candidate, error) { return c, nil })
}

// SyncerCandidates makes failover candidates of server configs, for
// StaticResolver.
func SyncerCandidates(cfgs ...SyncerConfig) ([]Candidate, error) {
	var out []Candidate
	for _, cfg := range cfgs {
		src, err := NewSyncerSource(cfg)
		if err != nil {
			return nil, err
		}
		out = append(out, Candidate{Name: src.cfg.DSN.String(), Source: src})
	}
	return out, nil
}

// FailoverConfig turns failover on (GTID mode only).
type FailoverConfig struct {
	Resolver Resolver
	// Attempts bounds the failover rounds (each asks the resolver and
	// tries every candidate); default 5. Wait is the pause between rounds;
	// default 1s.
	Attempts int
	Wait     time.Duration
}

func (c *FailoverConfig) validate(start ResumePosition) error {
	if c.Resolver == nil {
		return configError("Failover.Resolver is nil")
	}
	if !start.IsGTID() {
		return configError("failover needs GTID mode (StartAtGTID): file positions differ from server to server")
	}
	if c.Attempts < 0 || c.Wait < 0 {
		return configError("negative Failover.Attempts or Failover.Wait")
	}
	if c.Attempts == 0 {
		c.Attempts = 5
	}
	if c.Wait == 0 {
		c.Wait = time.Second
	}
	return nil
}

// FailoverError lists why each candidate was refused.
type FailoverError struct {
	Attempts int
	Cause    error   // why the stream left its server
	Refused  []error // the reasons, last round first-to-last
}

func (e *FailoverError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "binlogstream: failover found no valid writer in %d attempts (lost the server: %v)", e.Attempts, e.Cause)
	for _, r := range e.Refused {
		b.WriteString("; ")
		b.WriteString(r.Error())
	}
	return b.String()
}

func (e *FailoverError) Unwrap() []error {
	return append([]error{ErrFailoverExhausted, e.Cause}, e.Refused...)
}

// CandidateError says why one candidate was refused.
type CandidateError struct {
	Candidate string
	Reason    string
	Err       error // a probe error, if that was the reason
}

func (e *CandidateError) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("candidate %s refused: %s: %v", e.Candidate, e.Reason, e.Err)
	}
	return fmt.Sprintf("candidate %s refused: %s", e.Candidate, e.Reason)
}

func (e *CandidateError) Unwrap() []error { return []error{ErrCandidateRefused, e.Err} }

// ValidateCandidate checks a candidate's state against what was already
// delivered (pos) and a stop target (a GTID set, "" for none). It fails
// closed: any doubt refuses the candidate.
func ValidateCandidate(name string, st ServerState, pos ResumePosition, stopTarget string) error {
	refuse := func(format string, args ...any) error {
		return &CandidateError{Candidate: name, Reason: fmt.Sprintf(format, args...)}
	}
	if !pos.IsGTID() {
		return refuse("the stream is in file mode; positions differ per server")
	}
	if st.Flavor != "" && st.Flavor != pos.Flavor {
		return refuse("it is %s, the stream is %s", st.Flavor, pos.Flavor)
	}
	if st.ReadOnly {
		return refuse("read_only=ON (not the writer)")
	}
	if st.SuperReadOnly {
		return refuse("super_read_only=ON (not the writer)")
	}
	if pos.Flavor == mysql.MySQLFlavor && !strings.EqualFold(st.GTIDMode, "ON") {
		return refuse("gtid_mode=%s, want ON", orNone(st.GTIDMode))
	}
	if !st.LogBin {
		return refuse("log_bin=OFF: it has no binlog to stream")
	}
	have, err := mysql.ParseGTIDSet(pos.Flavor, st.Executed)
	if err != nil {
		return refuse("its executed GTID set %q does not parse: %v", st.Executed, err)
	}
	need := []struct{ what, set string }{
		{"the transactions already delivered", pos.Executed},
		{"the in-flight transaction", pos.GTID},
		{"the stop target", stopTarget},
	}
	for _, n := range need {
		if n.set == "" {
			continue
		}
		want, err := mysql.ParseGTIDSet(pos.Flavor, n.set)
		if err != nil {
			return refuse("%s %q does not parse: %v", n.what, n.set, err)
		}
		if !have.Contain(want) {
			hint := ""
			if !st.LogSlaveUpdates {
				hint = " (log_slave_updates=OFF: a promoted replica's binlog lacks what it replicated)"
			}
			return refuse("it misses %s: its executed set %q does not contain %q%s", n.what, st.Executed, n.set, hint)
		}
	}
	return nil
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

// failover tries candidates until one validates; it returns the new source.
func (s *BinlogStreamer) failover(ctx context.Context, cause error) (Source, error) {
	fc := s.cfg.Failover
	log := s.cfg.Logger
	var refused []error
	for attempt := 1; attempt <= fc.Attempts; attempt++ {
		if attempt > 1 {
			t := time.NewTimer(fc.Wait)
			select {
			case <-ctx.Done():
				t.Stop()
				return nil, ctx.Err()
			case <-t.C:
			}
		}
		refused = refused[:0]
		cands, err := fc.Resolver.Candidates(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			refused = append(refused, fmt.Errorf("resolver: %w", err))
			continue
		}
		pos, target := s.ResumePosition(), s.stopTargetString()
		for _, c := range cands {
			err := s.validate(ctx, c, pos, target)
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			if err != nil {
				log.WithFields(logrus.Fields{"candidate": c.Name, "attempt": attempt}).Warn(err.Error())
				refused = append(refused, err)
				continue
			}
			log.WithFields(logrus.Fields{"candidate": c.Name, "from": pos.describe()}).Warn("failing over to a validated writer")
			return c.Source, nil
		}
		if len(cands) == 0 {
			refused = append(refused, errors.New("resolver named no candidate"))
		}
	}
	return nil, &FailoverError{Attempts: fc.Attempts, Cause: cause, Refused: append([]error(nil), refused...)}
}

func (s *BinlogStreamer) validate(ctx context.Context, c Candidate, pos ResumePosition, target string) error {
	p := c.Prober
	if p == nil {
		p, _ = c.Source.(Prober)
	}
	if p == nil || c.Source == nil {
		return &CandidateError{Candidate: c.Name, Reason: "no Source or no Prober to check it with"}
	}
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	st, err := p.Probe(pctx)
	if err != nil {
		return &CandidateError{Candidate: c.Name, Reason: "cannot read its state", Err: err}
	}
	if err := ValidateCandidate(c.Name, st, pos, target); err != nil {
		return err
	}
	if err := s.checkBinlogSettings(pctx, c.Source); err != nil {
		return &CandidateError{Candidate: c.Name, Reason: "its binlog settings", Err: err}
	}
	return nil
}
