package publish

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"
	"github.com/sirupsen/logrus"
)

// DefaultLeaseBucket is the KV bucket of the leases when
// LeaseConfig.Bucket is empty.
const DefaultLeaseBucket = "binlog-publish-leases"

// DefaultLeaseTTL is how long a lease outlives its last renewal when
// LeaseConfig.TTL is 0.
const DefaultLeaseTTL = 5 * time.Second

// ErrLeaseLost is the error of a publisher whose lease was taken by
// another one or not renewed within its TTL. It stops publishing.
var ErrLeaseLost = errors.New("lost the lease")

// LeaseConfig configures a Lease.
type LeaseConfig struct {
	// JetStream is the connection the lease is held over.
	JetStream jetstream.JetStream
	// Bucket is the KV bucket holding the leases; DefaultLeaseBucket
	// when empty. A missing bucket is created with TTL as its keys' age
	// limit and Replicas replicas; an existing one is used with its own
	// TTL.
	Bucket string
	// Key names the source the lease is for: LeaseKey(stream, prefix)
	// for one publisher's stream and subjects.
	Key string
	// TTL is how long the key outlives its last renewal; DefaultLeaseTTL
	// when 0. The holder renews it every TTL/3.
	TTL time.Duration
	// Replicas of a created bucket; 0 is min(3, the servers the
	// connection knows of).
	Replicas int
	// Logger gets the lease's changes: acquired, waiting and released
	// at info, lost and the retries at warning; none when nil.
	Logger logrus.FieldLogger
}

// Lease is a key in a JetStream KV bucket held by one publisher at a
// time: AcquireLease waits until the key is absent and creates it, then
// renews it (an update at its last revision) until Release, or until a
// renewal finds another holder or cannot be made before the TTL ends;
// the lease is then lost for good (Lost, Err). A Publisher with
// Config.Lease checks it before every publish. The expected last
// sequence of each publish keeps the stream exact even when a lease
// ends under a publisher that is paused or slow: a takeover publisher
// continues after the stream's last message.
type Lease struct {
	cfg    LeaseConfig
	kv     jetstream.KeyValue
	holder []byte // the key's value: who holds it

	mu    sync.Mutex
	state leaseState

	lost     chan struct{} // closed when the lease is lost or released
	stop     chan struct{} // closed by Release
	done     chan struct{} // closed when the renewing goroutine ends
	once     sync.Once     // closes lost
	stopOnce sync.Once     // closes stop
	changes  atomic.Uint64
}

// LeaseKey is the default lease key of a publisher of stream under
// prefix: both names with every byte a KV key cannot hold written =XX,
// joined by ".".
func LeaseKey(stream, prefix string) string {
	if prefix == "" {
		prefix = DefaultPrefix
	}
	return keyToken(stream) + "." + keyToken(prefix)
}

// keyToken is s with the bytes other than [-_a-zA-Z0-9] written =XX.
func keyToken(s string) string {
	var b strings.Builder
	for i := range len(s) {
		c := s[i]
		if c == '-' || c == '_' || '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' {
			b.WriteByte(c)
			continue
		}
		fmt.Fprintf(&b, "=%02X", c)
	}
	if b.Len() == 0 {
		return "_"
	}
	return b.String()
}

// validKey reports whether key is a KV key: [-/_=.a-zA-Z0-9], not
// starting or ending with ".".
func validKey(key string) bool {
	if key == "" || key[0] == '.' || key[len(key)-1] == '.' {
		return false
	}
	for i := range len(key) {
		c := key[i]
		if !(c == '-' || c == '/' || c == '_' || c == '=' || c == '.' || '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z') {
			return false
		}
	}
	return true
}

// AcquireLease opens (or creates) the bucket and waits until it holds
// the key: it creates the key, which succeeds only when no publisher
// holds it (absent, expired or released), and otherwise tries again
// every TTL/10. It returns ctx's error when ctx ends first. The lease is
// then renewed in the background until Release or its loss.
func AcquireLease(ctx context.Context, cfg LeaseConfig) (*Lease, error) {
	if cfg.Bucket == "" {
		cfg.Bucket = DefaultLeaseBucket
	}
	if cfg.TTL <= 0 {
		cfg.TTL = DefaultLeaseTTL
	}
	if cfg.Logger == nil {
		l := logrus.New()
		l.SetOutput(discard{})
		cfg.Logger = l
	}
	if !validKey(cfg.Key) {
		return nil, fmt.Errorf("lease key %q: want letters, digits and -/_=. (not starting or ending with .)", cfg.Key)
	}
	host, _ := os.Hostname()
	id := nuid.Next()
	l := &Lease{cfg: cfg, holder: []byte("host=" + host + " pid=" + strconv.Itoa(os.Getpid()) + " id=" + id),
		lost: make(chan struct{}), stop: make(chan struct{}), done: make(chan struct{})}
	if err := l.openBucket(ctx); err != nil {
		return nil, err
	}
	l.state.ttl = l.cfg.TTL
	if err := l.acquire(ctx); err != nil {
		return nil, err
	}
	go l.renew()
	return l, nil
}

// name is the lease as logs and errors name it: bucket/key.
func (l *Lease) name() string { return l.cfg.Bucket + "/" + l.cfg.Key }

// openBucket uses the bucket or creates it; an existing bucket's TTL
// is the lease's.
func (l *Lease) openBucket(ctx context.Context) error {
	js := l.cfg.JetStream
	for deadline := time.Now().Add(30 * time.Second); ; {
		octx, cancel := context.WithTimeout(ctx, 5*time.Second)
		kv, err := js.KeyValue(octx, l.cfg.Bucket)
		if errors.Is(err, jetstream.ErrBucketNotFound) {
			replicas := l.cfg.Replicas
			if replicas <= 0 {
				replicas = min(3, max(1, len(js.Conn().Servers())))
			}
			kv, err = js.CreateKeyValue(octx, jetstream.KeyValueConfig{Bucket: l.cfg.Bucket, History: 1, TTL: l.cfg.TTL, Replicas: replicas,
				Description: "binlog-publish leases: one key per source, held by its active publisher"})
			if errors.Is(err, jetstream.ErrBucketExists) {
				kv, err = js.KeyValue(octx, l.cfg.Bucket) // created meanwhile, by another publisher
			}
		}
		var st jetstream.KeyValueStatus
		if err == nil {
			st, err = kv.Status(octx)
		}
		cancel()
		if err == nil {
			l.kv = kv
			if ttl := st.TTL(); ttl != l.cfg.TTL {
				if ttl <= 0 {
					return fmt.Errorf("lease bucket %s has no TTL: its keys never expire, so it cannot hold leases", l.cfg.Bucket)
				}
				l.cfg.Logger.Warnf("lease bucket %s expires keys after %s: the lease's TTL is that, not %s", l.cfg.Bucket, ttl, l.cfg.TTL)
				l.cfg.TTL = ttl
			}
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if time.Now().After(deadline) || !transient(err) {
			return fmt.Errorf("lease bucket %s: %w", l.cfg.Bucket, err)
		}
		l.cfg.Logger.Warnf("lease bucket %s: %v; retrying", l.cfg.Bucket, err)
		time.Sleep(250 * time.Millisecond)
	}
}

// acquire creates the key, waiting while another publisher holds it.
func (l *Lease) acquire(ctx context.Context) error {
	var holder string
	for {
		sent := time.Now()
		cctx, cancel := context.WithTimeout(ctx, l.cfg.TTL)
		rev, err := l.kv.Create(cctx, l.cfg.Key, l.holder)
		cancel()
		if err == nil {
			l.mu.Lock()
			l.state.acquired(rev, sent)
			l.mu.Unlock()
			l.changes.Add(1)
			l.cfg.Logger.Infof("lease %s acquired (revision %d, TTL %s)", l.name(), rev, l.cfg.TTL)
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if errors.Is(err, jetstream.ErrKeyExists) {
			if e, gerr := l.kv.Get(ctx, l.cfg.Key); gerr == nil && string(e.Value()) != holder {
				holder = string(e.Value())
				l.cfg.Logger.Infof("lease %s is held by %s (revision %d): waiting", l.name(), holder, e.Revision())
			}
		} else {
			l.cfg.Logger.Warnf("lease %s: %v; retrying", l.name(), err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(l.state.retryEvery()):
		}
	}
}

// renew renews the lease when due until it is lost or released.
func (l *Lease) renew() {
	defer close(l.done)
	for {
		l.mu.Lock()
		due, err := l.state.next(time.Now())
		rev := l.state.rev
		l.mu.Unlock()
		if err != nil {
			l.lose(err)
			return
		}
		if due > 0 {
			select {
			case <-l.stop:
				return
			case <-time.After(due):
			}
			continue
		}
		sent := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), l.cfg.TTL/5)
		newRev, uerr := l.kv.Update(ctx, l.cfg.Key, l.holder, rev)
		cancel()
		l.mu.Lock()
		err = l.state.renewed(newRev, sent, time.Now(), uerr)
		l.mu.Unlock()
		if err != nil {
			l.lose(err)
			return
		}
		if uerr != nil {
			l.cfg.Logger.Warnf("lease %s: renewing: %v; retrying", l.name(), uerr)
		}
	}
}

// lose marks the lease lost with err, once.
func (l *Lease) lose(err error) {
	if unguarded {
		l.cfg.Logger.Warnf("lease %s lost, ignored (a build without the lease check): %v", l.name(), err)
		return
	}
	l.once.Do(func() {
		l.changes.Add(1)
		l.cfg.Logger.Warnf("lease %s lost: %v", l.name(), l.Err())
		close(l.lost)
	})
}

// Err is nil while the lease is held; once it is lost, an error that
// wraps ErrLeaseLost and says why.
func (l *Lease) Err() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.state.check(time.Now()); err != nil {
		return fmt.Errorf("lease %s: %w", l.name(), err)
	}
	return nil
}

// Check is Err, but nil in a build with the tag binlogstream_unguarded
// (the zombie test's negative control).
func (l *Lease) Check() error {
	if unguarded {
		return nil
	}
	return l.Err()
}

// Lost is closed once the lease is lost (or released).
func (l *Lease) Lost() <-chan struct{} { return l.lost }

// Changes is how many times this lease changed hands here: one for
// each acquisition and one for its loss or release.
func (l *Lease) Changes() uint64 { return l.changes.Load() }

// TTL is how long the key outlives its last renewal: the bucket's.
func (l *Lease) TTL() time.Duration { return l.cfg.TTL }

// Release stops renewing and deletes the key if this lease still holds
// it, so that a standby takes over without waiting for the TTL.
func (l *Lease) Release(ctx context.Context) error {
	first := false
	l.stopOnce.Do(func() { first = true; close(l.stop) })
	if !first {
		return nil
	}
	<-l.done
	l.mu.Lock()
	held := l.state.check(time.Now()) == nil
	rev := l.state.rev
	l.state.release()
	l.mu.Unlock()
	if !held {
		return nil
	}
	l.once.Do(func() {
		l.changes.Add(1)
		close(l.lost)
	})
	if err := l.kv.Delete(ctx, l.cfg.Key, jetstream.LastRevision(rev)); err != nil {
		return fmt.Errorf("lease %s: releasing: %w", l.name(), err)
	}
	l.cfg.Logger.Infof("lease %s released", l.name())
	return nil
}

// leaseState is a held lease as its holder sees it, advanced by the
// renewals' outcomes and the clock; it does no I/O. The key expires TTL
// after the server stored its last write, which is after that write was
// sent: the lease counts as held until the send time of the last
// successful write plus TTL less a fifth of it (leaseMargin), the fifth
// allowing for the clocks' rates. Renewals are due every TTL/3, so two
// can fail before the lease ends.
type leaseState struct {
	ttl   time.Duration
	rev   uint64    // the key's revision, as this holder last wrote it
	since time.Time // when that write was sent
	err   error     // why the lease ended; nil while held
	last  time.Time // when a renewal was last tried
}

// errReleased is a released lease's error.
var errReleased = errors.New("released")

func (s *leaseState) acquired(rev uint64, sent time.Time) {
	s.rev, s.since, s.err, s.last = rev, sent, nil, sent
}

// validUntil is when the lease stops counting as held.
func (s *leaseState) validUntil() time.Time { return s.since.Add(s.ttl - s.ttl/5) }

// retryEvery is the wait between two tries of a failed renewal or of
// acquiring a held key.
func (s *leaseState) retryEvery() time.Duration { return max(s.ttl/10, 10*time.Millisecond) }

// check is nil while the lease is held at now, else why it is not.
func (s *leaseState) check(now time.Time) error {
	if s.err != nil {
		return s.err
	}
	if !now.Before(s.validUntil()) {
		return fmt.Errorf("%w: not renewed within its TTL of %s (last renewed %s ago)", ErrLeaseLost, s.ttl, now.Sub(s.since).Round(time.Millisecond))
	}
	return nil
}

// next is how long to wait before the next renewal (0: now), or the
// error of a lease that ended: one not renewed in time, a holder paused
// past its end among them, is lost without another try.
func (s *leaseState) next(now time.Time) (time.Duration, error) {
	if err := s.check(now); err != nil {
		s.err = err
		return 0, err
	}
	due := s.since.Add(s.ttl / 3)
	if s.last.After(s.since) { // the last try failed
		due = s.last.Add(s.retryEvery())
	}
	return max(0, due.Sub(now)), nil
}

// renewed records a renewal sent at sent that answered at now with rev
// or err. An answer saying the key is at another revision (another
// publisher holds it, or it expired) ends the lease; another failure
// ends it only once the lease is past its end, else the renewal is
// tried again.
func (s *leaseState) renewed(rev uint64, sent, now time.Time, err error) error {
	s.last = sent
	if s.err != nil {
		return s.err
	}
	switch {
	case err == nil:
		s.rev, s.since = rev, sent
		return nil
	case errors.Is(err, jetstream.ErrKeyRevisionMismatch), errors.Is(err, jetstream.ErrKeyNotFound), errors.Is(err, jetstream.ErrKeyDeleted):
		s.err = fmt.Errorf("%w: another publisher holds it, or it expired (renewing revision %d: %v)", ErrLeaseLost, s.rev, err)
		return s.err
	}
	if cerr := s.check(now); cerr != nil {
		s.err = fmt.Errorf("%w (renewing: %v)", cerr, err)
		return s.err
	}
	return nil
}

// release ends the lease on its holder's request.
func (s *leaseState) release() {
	if s.err == nil {
		s.err = fmt.Errorf("%w: %w", ErrLeaseLost, errReleased)
	}
}
