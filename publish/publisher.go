package publish

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-mysql-org/go-mysql/replication"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"
	"github.com/sirupsen/logrus"
	"github.com/synadia-io/orbit.go/jetstreamext"

	"github.com/binlogstream/binlogstream"
	"github.com/binlogstream/binlogstream/debezium"
	"github.com/binlogstream/binlogstream/tailline"
)

// Config configures a Publisher.
type Config struct {
	// JetStream is the connection to publish over.
	JetStream jetstream.JetStream
	// Stream is the stream's name. A missing stream is created with the
	// subjects Prefix.>, Replicas replicas and atomic batches allowed; an
	// existing one is used as it is.
	Stream string
	// Prefix is the subjects' first token; DefaultPrefix when empty.
	Prefix string
	// Replicas of a created stream; 0 is min(3, the servers the
	// connection knows of).
	Replicas int
	// Tables, when set, are the tables whose rows and table lines are
	// published (the Source leaves the others' rows undecoded).
	Tables binlogstream.TablePatterns
	// MaxBatch is the most messages an atomic batch holds; MaxBatch when 0.
	MaxBatch int
	// RetryFor is how long a publish that failed without an answer from
	// the stream (a server or leader change) is retried; 30 s when 0.
	RetryFor time.Duration
	// Logger gets the warnings; none when nil.
	Logger logrus.FieldLogger
	// Lease, when set, is checked before every publish: once it is lost
	// the publisher stops with its error (wrapping ErrLeaseLost). Acquire
	// it before Open, so that Open reads the stream as its holder.
	Lease *Lease
	// SpoolBytes is how many bytes of subjects and lines the open
	// transaction keeps in memory (DefaultSpoolBytes when 0); past that
	// its messages go to an unlinked file in SpoolDir (os.TempDir() when
	// empty), and a transaction of more than MaxBatch messages is read
	// back from it one unit at a time as it is published.
	SpoolBytes int64
	SpoolDir   string
	// Format is what the messages hold; FormatLines when empty. Debezium
	// are the encoder's options for FormatDebezium (its TopicPrefix is
	// Prefix). A stream is continued only in the format it was written in.
	Format   Format
	Debezium debezium.Options
	// OnStored, when set, is called by the sender after each publish the
	// stream acknowledged (an atomic batch or a single message): its
	// messages and the time from its first try to the ack, retries
	// included.
	OnStored func(messages int, latency time.Duration)
}

// ErrFenced is the error of a publish refused because the stream does
// not end where this publisher last left it: another publisher wrote to
// it. The publisher stops; the stream holds every line once.
var ErrFenced = errors.New("another publisher wrote to the stream")

// Publisher publishes the lines of a binlog stream's events into a
// JetStream stream. OnEvent is its binlogstream listener; Flush sends
// what a stopped stream leaves pending and waits until it is stored. One
// goroutine uses it at a time; its own sender goroutine publishes.
type Publisher struct {
	cfg    Config
	js     jetstream.JetStream
	stream jetstream.Stream
	filter string // Prefix.>
	atomic bool

	resumed bool
	point   resumePoint
	lastSeq uint64 // the stream's last sequence as this publisher knows it
	lastTok []byte // the token right before the pending transaction

	enc     tailline.Formatter
	recs    *Records // FormatDebezium's, else nil
	rbuf    []Record
	pending *spool // the open transaction's lines
	buf     []byte

	// The sender (send.go) publishes the ended transactions of queue,
	// several at once in one atomic batch, while OnEvent formats the
	// next ones.
	mu      sync.Mutex
	cond    *sync.Cond // signalled when the sender takes or finishes work
	queue   []txn
	queued  int // messages in queue
	sending bool
	err     error // the sender's, returned by every later call

	// instance marks this publisher's messages (PublisherHeader), so that
	// landed tells its own lost publish from another publisher's.
	instance string

	messages atomic.Uint64
	batches  atomic.Uint64
}

// Open finds or creates the stream and reads where it ends: Resumed and
// From say where the binlog stream continues.
func Open(ctx context.Context, cfg Config) (*Publisher, error) {
	if cfg.Prefix == "" {
		cfg.Prefix = DefaultPrefix
	}
	if cfg.MaxBatch <= 0 || cfg.MaxBatch > MaxBatch {
		cfg.MaxBatch = MaxBatch
	}
	if cfg.RetryFor <= 0 {
		cfg.RetryFor = 30 * time.Second
	}
	if cfg.Logger == nil {
		l := logrus.New()
		l.SetOutput(discard{})
		cfg.Logger = l
	}
	if cfg.Format == "" {
		cfg.Format = FormatLines
	}
	p := &Publisher{cfg: cfg, js: cfg.JetStream, filter: cfg.Prefix + ".>", instance: nuid.Next(), pending: newSpool(cfg.SpoolDir, cfg.SpoolBytes)}
	if cfg.Format != FormatLines {
		cfg.Debezium.TopicPrefix = cfg.Prefix
		recs, err := NewRecords(cfg.Format, cfg.Debezium, cfg.Tables)
		if err != nil {
			return nil, err
		}
		p.recs = recs
	}
	p.cond = sync.NewCond(&p.mu)
	if err := p.retry(ctx, p.openStream); err != nil {
		return nil, err
	}
	if unfenced {
		return p, nil
	}
	if err := p.retry(ctx, p.readLast); err != nil {
		return nil, err
	}
	return p, nil
}

// retry runs step until it succeeds or fails for another reason than a
// timeout or no server answering (a cluster electing a leader), for up
// to Config.RetryFor.
func (p *Publisher) retry(ctx context.Context, step func(context.Context) error) error {
	deadline := time.Now().Add(p.cfg.RetryFor)
	for {
		sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		err := step(sctx)
		cancel()
		if err == nil || ctx.Err() != nil || time.Now().After(deadline) || !transient(err) {
			return err
		}
		p.cfg.Logger.WithError(err).Warnf("stream %s: retrying", p.cfg.Stream)
		time.Sleep(250 * time.Millisecond)
	}
}

// transient reports whether err may pass once the cluster has a leader.
func transient(err error) bool {
	var api *jetstream.APIError
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout) || errors.Is(err, nats.ErrNoResponders) ||
		errors.Is(err, jetstream.ErrNoStreamResponse) || errors.Is(err, jetstream.ErrJetStreamNotEnabled) ||
		errors.As(err, &api) && api.ErrorCode == errCodeNoPeers
}

// errCodeNoPeers is JetStream's "no suitable peers for placement": a
// cluster that does not yet know enough of its nodes (forming, or one
// restarting) to place the replicas.
const errCodeNoPeers jetstream.ErrorCode = 10005

type discard struct{}

func (discard) Write(b []byte) (int, error) { return len(b), nil }

// openStream uses the stream or creates it, and checks that it holds the
// prefix's subjects.
func (p *Publisher) openStream(ctx context.Context) error {
	s, err := p.js.Stream(ctx, p.cfg.Stream)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		s, err = p.js.CreateStream(ctx, jetstream.StreamConfig{
			Name:               p.cfg.Stream,
			Subjects:           []string{p.filter},
			Replicas:           p.replicas(),
			AllowAtomicPublish: true,
		})
		if errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
			s, err = p.js.Stream(ctx, p.cfg.Stream) // created by another publisher meanwhile
		}
	}
	var api *jetstream.APIError
	if errors.As(err, &api) && api.ErrorCode == errCodeSubjectsOverlap {
		return fmt.Errorf("stream %s: another stream holds subjects under %s: use that stream, or another --subject-prefix: %w", p.cfg.Stream, p.filter, err)
	}
	if err != nil {
		return fmt.Errorf("stream %s: %w", p.cfg.Stream, err)
	}
	p.stream = s
	conf := s.CachedInfo().Config
	if !holds(conf.Subjects, p.filter) {
		return fmt.Errorf("stream %s has the subjects %q, which do not hold %s: use another --stream or --subject-prefix", p.cfg.Stream, conf.Subjects, p.filter)
	}
	p.atomic = conf.AllowAtomicPublish
	if !p.atomic {
		p.cfg.Logger.Warnf("stream %s does not allow atomic batches: each message is published on its own (with its Nats-Msg-Id and the expected last sequence), "+
			"and a consumer can see part of a transaction (the %s headers say how much of it there is)", p.cfg.Stream, TxnCountHeader)
	}
	return nil
}

// replicas is Config.Replicas or min(3, the servers the connection knows).
func (p *Publisher) replicas() int {
	if p.cfg.Replicas > 0 {
		return p.cfg.Replicas
	}
	return min(3, max(1, len(p.js.Conn().Servers())))
}

// holds reports whether one of a stream's subjects takes every subject
// of filter (prefix.>): the same, ">", or a wildcard over the prefix.
func holds(subjects []string, filter string) bool {
	for _, s := range subjects {
		if s == filter || s == ">" || subsetOf(filter, s) {
			return true
		}
	}
	return false
}

// subsetOf reports whether every subject that filter (ending in ">")
// matches is matched by pattern.
func subsetOf(filter, pattern string) bool {
	f, pt := bytes.Split([]byte(filter), []byte(".")), bytes.Split([]byte(pattern), []byte("."))
	for i, tok := range pt {
		if string(tok) == ">" {
			return true
		}
		if i >= len(f) || string(f[i]) == ">" {
			return false
		}
		if string(tok) != "*" && !bytes.Equal(tok, f[i]) {
			return false
		}
	}
	return false
}

// readLast reads the stream's last message under the prefix: where this
// publisher continues, and the sequence its first publish expects.
func (p *Publisher) readLast(ctx context.Context) error {
	m, err := p.stream.GetLastMsgForSubject(ctx, p.filter)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		info, err := p.stream.Info(ctx)
		if err != nil {
			return fmt.Errorf("stream %s: %w", p.cfg.Stream, err)
		}
		p.lastSeq = info.State.LastSeq
		return nil
	}
	if err != nil {
		return fmt.Errorf("stream %s: reading its last message: %w", p.cfg.Stream, err)
	}
	pt, err := resumeAfter(m.Data, m.Header)
	if err != nil {
		return fmt.Errorf("stream %s: its last message under %s (sequence %d): %w", p.cfg.Stream, p.filter, m.Sequence, err)
	}
	if pt.Format != p.cfg.Format {
		return fmt.Errorf("stream %s holds --format %s messages under %s: run with --format %s to continue it, or use another --stream or --subject-prefix",
			p.cfg.Stream, pt.Format, p.filter, pt.Format)
	}
	if pt.SnapshotBegun {
		p.recs.RestoreSnapshotBegun()
	}
	p.resumed, p.point, p.lastSeq, p.lastTok = true, pt, m.Sequence, pt.Token
	return nil
}

// Resumed reports whether the stream held lines: the binlog stream then
// continues from From, not from a start of the caller's.
func (p *Publisher) Resumed() bool { return p.resumed }

// From is where the binlog stream continues when Resumed.
func (p *Publisher) From() binlogstream.ResumePosition { return p.point.From }

// StartAt sets where a stream that holds no lines starts.
func (p *Publisher) StartAt(from binlogstream.ResumePosition) {
	if !p.resumed {
		p.point.From, p.lastTok = from, []byte(from.String())
	}
}

// Atomic reports whether transactions go out as atomic batches.
func (p *Publisher) Atomic() bool { return p.atomic }

// Messages is how many messages this publisher stored; Batches in how
// many publishes.
func (p *Publisher) Messages() uint64 { return p.messages.Load() }

// Batches is how many publishes (atomic batches or single messages)
// stored Messages.
func (p *Publisher) Batches() uint64 { return p.batches.Load() }

// OnEvent is the binlogstream listener: it queues the lines of ev and,
// once their transaction ends, hands it to the sender, which publishes
// it while the stream goes on. An error of the sender's comes back from
// the next call.
func (p *Publisher) OnEvent(ctx context.Context, ev binlogstream.Event) error {
	if p.recs != nil {
		return p.onRecords(ctx, &ev)
	}
	switch e := ev.Event.(type) {
	case *binlogstream.Progress:
		if e.Idle {
			return nil
		}
		if err := p.endTxn(ctx); err != nil {
			return err
		}
		if err := p.add(tailline.AppendProgressLine(p.buf[:0], &ev), StatementSubject(p.cfg.Prefix, "")); err != nil {
			return err
		}
		return p.endTxn(ctx)
	case *replication.XIDEvent, *replication.GTIDEvent, *replication.MariadbGTIDEvent:
		return p.endTxn(ctx)
	case *replication.QueryEvent:
		if err := p.endTxn(ctx); err != nil || tailline.IsTxnMarker(e.Query) {
			return err
		}
		if err := p.addEvent(&ev, nil, StatementSubject(p.cfg.Prefix, string(e.Schema))); err != nil {
			return err
		}
		return p.endTxn(ctx)
	case *binlogstream.SnapshotRead:
		// A read row is delivered between source transactions and its
		// token resumes right after it: it goes out as a unit of its own
		// (the sender still puts many in one batch). A chunk is not a
		// transaction: cut into 1,000-message units it could not be read
		// again the same way after a crash, since the chunk is read anew.
		if err := p.endTxn(ctx); err != nil {
			return err
		}
		if err := p.addEvent(&ev, nil, Subject(p.cfg.Prefix, ev.Table.Schema, ev.Table.Name)); err != nil {
			return err
		}
		return p.endTxn(ctx)
	case *replication.TableMapEvent:
		if p.wants(e) {
			return p.addEvent(&ev, nil, Subject(p.cfg.Prefix, string(e.Schema), string(e.Table)))
		}
	case *replication.RowsEvent:
		if !p.wants(e.Table) {
			return nil
		}
		partial, err := tailline.PartialAfterImages(&ev)
		if err != nil {
			return err
		}
		return p.addEvent(&ev, partial, Subject(p.cfg.Prefix, string(e.Table.Schema), string(e.Table.Table)))
	}
	return nil
}

// onRecords is OnEvent for FormatDebezium: every event goes through the
// encoder (GTID, BEGIN and XID events move its transaction state), and
// its records are queued on the subjects of lines: PREFIX.DB.TABLE for a
// row's, PREFIX.DB._ for a schema change's. Transactions end where the
// lines' do.
func (p *Publisher) onRecords(ctx context.Context, ev *binlogstream.Event) error {
	ends := false // ev's records are a unit of their own
	switch e := ev.Event.(type) {
	case *binlogstream.Progress:
		if e.Idle {
			return nil
		}
		if err := p.endTxn(ctx); err != nil {
			return err
		}
		tok, _ := ev.Resume.AppendText(nil)
		m := message{subject: StatementSubject(p.cfg.Prefix, ""), token: tok, dbz: true, progress: true}
		if err := p.pending.add(m); err != nil {
			return err
		}
		return p.endTxn(ctx)
	case *replication.XIDEvent, *replication.GTIDEvent, *replication.MariadbGTIDEvent:
		if err := p.endTxn(ctx); err != nil {
			return err
		}
	case *replication.QueryEvent:
		if err := p.endTxn(ctx); err != nil {
			return err
		}
		ends = !tailline.IsTxnMarker(e.Query)
	case *binlogstream.SnapshotRead:
		// A unit of its own, as a line is (OnEvent).
		if err := p.endTxn(ctx); err != nil {
			return err
		}
		ends = true
	}
	recs, err := p.recs.Append(p.rbuf[:0], ev)
	p.rbuf = recs
	if err != nil {
		return err
	}
	for i := range recs {
		r := &recs[i]
		subject := StatementSubject(p.cfg.Prefix, r.Schema)
		if r.Table != "" {
			subject = Subject(p.cfg.Prefix, r.Schema, r.Table)
		}
		m := message{subject: subject, data: r.Value, token: r.Token, dbz: true, snap: r.SnapshotBegun, key: r.Key, index: r.Index}
		recs[i] = Record{}
		if err := p.pending.add(m); err != nil {
			return err
		}
	}
	if ends {
		return p.endTxn(ctx)
	}
	return nil
}

// wants reports whether tm's table is published (Config.Tables).
func (p *Publisher) wants(tm *replication.TableMapEvent) bool {
	return p.cfg.Tables == nil || tm == nil || p.cfg.Tables.Match(string(tm.Schema), string(tm.Table))
}

// addEvent queues the lines of ev, all on subject.
func (p *Publisher) addEvent(ev *binlogstream.Event, partial map[int][]any, subject string) error {
	b, _, _ := p.enc.AppendEvent(p.buf[:0], ev, partial, -1)
	return p.add(b, subject)
}

// add queues the lines in b (copied), all on subject.
func (p *Publisher) add(b []byte, subject string) error {
	p.buf = b
	if len(b) == 0 {
		return nil
	}
	data := bytes.Clone(b)
	for len(data) > 0 {
		n := bytes.IndexByte(data, '\n') + 1
		line := data[:n:n]
		tok, _ := tailline.Token(line)
		if err := p.pending.add(message{subject: subject, data: line, token: tok}); err != nil {
			return err
		}
		data = data[n:]
	}
	return nil
}

// Flush publishes the pending transaction (the lines queued since the
// last one ended) and waits until every ended transaction is stored.
func (p *Publisher) Flush(ctx context.Context) error {
	if err := p.endTxn(ctx); err != nil {
		return err
	}
	return p.Wait(ctx)
}

// Close drops the lines of the transaction that has not ended, closing
// its spool file; call it once the publisher is done (after Flush or
// Wait). The next run reads that transaction again.
func (p *Publisher) Close() { p.pending.discard() }

// Wait waits until every ended transaction is stored; the lines of a
// transaction that has not ended stay pending.
func (p *Publisher) Wait(ctx context.Context) error {
	return p.wait(ctx, func() bool { return !p.sending && len(p.queue) == 0 })
}

// send publishes one unit, asserting the stream's last sequence. A
// publish without an answer (a server or leader change) is retried for
// Config.RetryFor, after checking whether it was stored after all.
func (p *Publisher) send(ctx context.Context, u []*nats.Msg) error {
	if err := p.fits(u, nil); err != nil {
		return err
	}
	began := time.Now()
	deadline := began.Add(p.cfg.RetryFor)
	for attempt := 0; ; attempt++ {
		if p.cfg.Lease != nil {
			if err := p.cfg.Lease.Check(); err != nil {
				return err
			}
		}
		seq, err := p.publish(ctx, u)
		if err == nil {
			p.stored(seq, len(u))
			p.observe(len(u), began)
			return nil
		}
		if errors.Is(err, nats.ErrMaxPayload) {
			return p.fits(u, err) // a server that lowered its limit
		}
		if stored, cerr := p.landed(ctx, u); cerr == nil && stored {
			p.observe(len(u), began)
			return nil
		}
		if isFenced(err) {
			return fmt.Errorf("stream %s: publishing after sequence %d: %w (%v)", p.cfg.Stream, p.lastSeq, ErrFenced, err)
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("stream %s: publishing after sequence %d: %w", p.cfg.Stream, p.lastSeq, err)
		}
		p.cfg.Logger.WithError(err).Warnf("stream %s: publish failed, retrying", p.cfg.Stream)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(min(time.Duration(attempt+1)*100*time.Millisecond, time.Second)):
		}
	}
}

// ErrTooLarge is matched by the error of a message over the NATS
// servers' max_payload: a line of a row with large values. Nothing from
// it on is published, and the stream holds every line before it.
var ErrTooLarge = errors.New("a message is over the NATS server's max_payload")

// fits checks u's largest message (its line, subject and headers)
// against the connection's max_payload; err is a publish's own refusal
// for the size, reported with that message even when the count here
// finds it under the limit.
func (p *Publisher) fits(u []*nats.Msg, err error) error {
	var big *nats.Msg
	most := 0
	for _, m := range u {
		size := len(m.Subject) + len(m.Data)
		for k, vs := range m.Header {
			for _, v := range vs {
				size += len(k) + len(v) + 4 // "K: V\r\n"
			}
		}
		if size > most {
			big, most = m, size
		}
	}
	var limit int64
	if p.js != nil { // nil in the sender's tests, which fake the publish
		limit = p.js.Conn().MaxPayload()
	}
	if big == nil || err == nil && (limit <= 0 || int64(most) <= limit) {
		return nil
	}
	tok := []byte(big.Header.Get(ResumeHeader))
	if len(tok) == 0 {
		tok, _ = tailline.Token(big.Data)
	}
	return fmt.Errorf("stream %s: the line on %s of %d bytes (resume token %.40s...) is too large: %w (%d bytes): "+
		"raise max_payload in the nats-server configuration (at most 64 MiB) and restart; the stream holds every line before it",
		p.cfg.Stream, big.Subject, most, tok, ErrTooLarge, limit)
}

func (p *Publisher) stored(seq uint64, n int) {
	p.lastSeq = seq
	p.messages.Add(uint64(n))
	p.batches.Add(1)
}

// observe reports a publish of n messages first tried at began.
func (p *Publisher) observe(n int, began time.Time) {
	if p.cfg.OnStored != nil {
		p.cfg.OnStored(n, time.Since(began))
	}
}

// publish sends u: as one atomic batch, or as one message.
func (p *Publisher) publish(ctx context.Context, u []*nats.Msg) (uint64, error) {
	pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if unfenced || unguarded {
		for _, m := range u {
			m.Header.Del(jetstream.MsgIDHeader)
		}
		ack, err := jetstreamext.PublishMsgBatch(pctx, p.js, u)
		if err != nil {
			return 0, err
		}
		return ack.Sequence, nil
	}
	if !p.atomic {
		ack, err := p.js.PublishMsg(pctx, u[0], jetstream.WithExpectLastSequence(p.lastSeq))
		if err != nil {
			return 0, err
		}
		if ack.Duplicate && ack.Sequence != p.lastSeq+1 {
			return 0, errDuplicate // stored by another publisher
		}
		return ack.Sequence, nil
	}
	u[0].Header.Set(jetstream.ExpectedLastSeqHeader, strconv.FormatUint(p.lastSeq, 10))
	ack, err := jetstreamext.PublishMsgBatch(pctx, p.js, u)
	if err != nil {
		return 0, err
	}
	return ack.Sequence, nil
}

// landed reports whether u is stored right after lastSeq (a publish
// whose answer was lost), and if so records it.
func (p *Publisher) landed(ctx context.Context, u []*nats.Msg) (bool, error) {
	gctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	m, err := p.stream.GetLastMsgForSubject(gctx, p.filter)
	if err != nil {
		return false, err
	}
	if m.Sequence != p.lastSeq+uint64(len(u)) || m.Header.Get(jetstream.MsgIDHeader) != u[len(u)-1].Header.Get(jetstream.MsgIDHeader) ||
		m.Header.Get(PublisherHeader) != p.instance {
		return false, nil
	}
	p.stored(m.Sequence, len(u))
	return true, nil
}

// errDuplicate: the stream holds the message already, stored by another
// publisher.
var errDuplicate = errors.New("the stream holds the message already, from another publisher")

// errCodeSubjectsOverlap is the server refusing to create a stream whose
// subjects overlap another stream's.
const errCodeSubjectsOverlap = 10065

// errCodeBatchDuplicate is the stream refusing an atomic batch holding
// a Nats-Msg-Id it has stored already.
const errCodeBatchDuplicate = 10201

// isFenced reports whether err is the stream refusing a publish because
// another publisher wrote to it: the expected last sequence is not its
// last, or the messages are there already.
func isFenced(err error) bool {
	if errors.Is(err, errDuplicate) {
		return true
	}
	var api *jetstream.APIError
	if !errors.As(err, &api) {
		return false
	}
	switch api.ErrorCode {
	case jetstream.JSErrCodeStreamWrongLastSequence, jetstream.JSErrCodeStreamWrongLastSequenceConstant, errCodeBatchDuplicate:
		return true
	}
	return false
}
