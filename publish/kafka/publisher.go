package kafka

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/binlogstream/binlogstream"
	"github.com/binlogstream/binlogstream/debezium"
	"github.com/binlogstream/binlogstream/publish"
)

// ResumeHeader is the header every record carries: the resume token right
// after the record.
const ResumeHeader = "binlogstream.resume"

// DefaultOffsetsTopic is Config.OffsetsTopic when empty.
const DefaultOffsetsTopic = "binlogstream.offsets"

// TransactionalIDPrefix starts every publisher's transactional.id; the
// source's name follows it.
const TransactionalIDPrefix = "binlogstream-"

// Defaults of Config.TxnRecords and Config.TxnInterval.
const (
	DefaultTxnRecords  = 20000
	DefaultTxnInterval = 100 * time.Millisecond
)

// Config configures a Publisher.
type Config struct {
	// Brokers are the seed brokers, HOST:PORT each.
	Brokers []string
	// Name is the source's name: the key of its checkpoint in
	// OffsetsTopic and, after TransactionalIDPrefix, the transactional.id.
	// Two publishers with one Name fence each other. Required.
	Name string
	// TopicPrefix starts every topic: PREFIX.DB.TABLE for a table's
	// records, PREFIX for statements; publish.DefaultPrefix when empty.
	TopicPrefix string
	// OffsetsTopic holds the checkpoints (compacted, created with one
	// partition when missing); DefaultOffsetsTopic when empty.
	OffsetsTopic string
	// SchemaTopic holds the schema histories (SchemaStore);
	// DefaultSchemaTopic when empty.
	SchemaTopic string
	// Format is what the records hold; publish.FormatLines when empty.
	// Debezium are the encoder's options for publish.FormatDebezium (its
	// TopicPrefix is TopicPrefix).
	Format   publish.Format
	Debezium debezium.Options
	// Tables, when set, are the tables whose rows are published.
	Tables binlogstream.TablePatterns
	// A Kafka transaction holds whole source transactions: it commits at
	// the first source transaction's end once it holds TxnRecords records
	// or has been open TxnInterval (DefaultTxnRecords and
	// DefaultTxnInterval when 0), and, when no further transaction comes,
	// TxnInterval after it began.
	TxnRecords  int
	TxnInterval time.Duration
	// Logger gets the warnings; none when nil.
	Logger logrus.FieldLogger
	// ClientOpts are added to the Kafka client's options.
	ClientOpts []kgo.Opt
	// OnCommit, when set, is called after each Kafka transaction
	// committed: its records (the checkpoint left out) and the time from
	// its first record sent to the commit's end, which includes the time
	// it stayed open gathering source transactions (TxnInterval at most,
	// unless a source transaction takes longer).
	OnCommit func(records int, latency time.Duration)
}

// ErrFenced is matched by the error of a publisher whose transactional.id
// another publisher for the same source took over: it stops, and the
// topics hold every change once.
var ErrFenced = errors.New("another publisher for the same source took over its transactional.id")

// Publisher publishes the records of a binlog stream's events into Kafka
// topics, exactly once. OnEvent is its binlogstream listener; Flush
// commits what a stopped stream leaves whole. OnEvent and Flush serve one
// goroutine; a timer of its own commits a transaction that no further
// event ends.
type Publisher struct {
	cfg  Config
	cl   *kgo.Client
	recs *publish.Records
	buf  []publish.Record

	resumed bool
	from    binlogstream.ResumePosition

	mu      sync.Mutex
	topics  map[string]bool     // created or found
	names   map[topicKey]string // the topics of the records seen
	inTxn   bool                // a Kafka transaction is open
	began   time.Time
	n       int    // records in the open Kafka transaction
	dirty   bool   // tok moved since the last commit
	tok     []byte // the resume token after the last whole source transaction
	timer   *time.Timer
	stopped bool
	err     error // a commit's, returned by every later call

	perrMu sync.Mutex
	perr   error // the first failed produce's

	records, txns atomic.Uint64
}

// checkpoint is the value of a source's record in the offsets topic.
type checkpoint struct {
	Resume string `json:"resume"`
	Format string `json:"format"`
	// SnapshotBegun: a Debezium snapshot read was published, so the next
	// is not marked "first".
	SnapshotBegun bool `json:"snapshot_begun,omitempty"`
}

// Open connects, takes the source's transactional.id (fencing any other
// publisher of it and aborting its open transaction) and reads the
// source's checkpoint: Resumed and From say where the stream continues.
func Open(ctx context.Context, cfg Config) (*Publisher, error) {
	if cfg.Name == "" {
		return nil, errors.New("kafka: Config.Name is required")
	}
	if len(cfg.Brokers) == 0 {
		return nil, errors.New("kafka: Config.Brokers is required")
	}
	if cfg.TopicPrefix == "" {
		cfg.TopicPrefix = publish.DefaultPrefix
	}
	if cfg.OffsetsTopic == "" {
		cfg.OffsetsTopic = DefaultOffsetsTopic
	}
	if cfg.SchemaTopic == "" {
		cfg.SchemaTopic = DefaultSchemaTopic
	}
	if cfg.Format == "" {
		cfg.Format = publish.FormatLines
	}
	if cfg.TxnRecords <= 0 {
		cfg.TxnRecords = DefaultTxnRecords
	}
	if cfg.TxnInterval <= 0 {
		cfg.TxnInterval = DefaultTxnInterval
	}
	if cfg.Logger == nil {
		l := logrus.New()
		l.SetOutput(discard{})
		cfg.Logger = l
	}
	cfg.Debezium.TopicPrefix = cfg.TopicPrefix
	recs, err := publish.NewRecords(cfg.Format, cfg.Debezium, cfg.Tables)
	if err != nil {
		return nil, err
	}
	opts := []kgo.Opt{kgo.SeedBrokers(cfg.Brokers...), kgo.TransactionTimeout(time.Minute), kgo.ProducerLinger(0)}
	if !untransacted {
		opts = append(opts, kgo.TransactionalID(TransactionalIDPrefix+cfg.Name))
	}
	cl, err := kgo.NewClient(append(opts, cfg.ClientOpts...)...)
	if err != nil {
		return nil, fmt.Errorf("--kafka: %w", err)
	}
	p := &Publisher{cfg: cfg, cl: cl, recs: recs, topics: map[string]bool{}, names: map[topicKey]string{}}
	if err := p.open(ctx); err != nil {
		cl.Close()
		return nil, err
	}
	return p, nil
}

func (p *Publisher) open(ctx context.Context) error {
	if !untransacted {
		// Initializing the producer id bumps the epoch of the
		// transactional.id: a publisher still running with it is fenced,
		// and its open transaction aborted, before the checkpoint is read.
		if _, _, err := p.cl.ProducerID(ctx); err != nil {
			return p.explain(fmt.Errorf("initializing transactional.id %s%s: %w", TransactionalIDPrefix, p.cfg.Name, err))
		}
	}
	if err := createTopic(ctx, p.cl, p.cfg.OffsetsTopic, 1, map[string]string{"cleanup.policy": "compact"}); err != nil {
		return err
	}
	p.topics[p.cfg.OffsetsTopic] = true
	if err := createTopic(ctx, p.cl, p.cfg.SchemaTopic, 1, map[string]string{"retention.ms": "-1"}); err != nil {
		return err
	}
	p.topics[p.cfg.SchemaTopic] = true
	value, found, err := readCheckpoint(ctx, p.cfg.Brokers, p.cfg.OffsetsTopic, p.cfg.Name, p.cfg.ClientOpts)
	if err != nil || !found {
		return err
	}
	var c checkpoint
	if err := json.Unmarshal(value, &c); err != nil {
		return fmt.Errorf("topic %s: the checkpoint of %q: %w", p.cfg.OffsetsTopic, p.cfg.Name, err)
	}
	if c.Format != string(p.cfg.Format) {
		return fmt.Errorf("topic %s: source %q was published with --format %s: run with --format %s to continue it, or use another --name",
			p.cfg.OffsetsTopic, p.cfg.Name, c.Format, c.Format)
	}
	from, err := binlogstream.ParseResumePosition(c.Resume)
	if err != nil {
		return fmt.Errorf("topic %s: the checkpoint of %q: %w", p.cfg.OffsetsTopic, p.cfg.Name, err)
	}
	if enc := p.recs.Encoder(); enc != nil {
		enc.SetState(debezium.State{SnapshotBegun: c.SnapshotBegun})
	}
	p.resumed, p.from, p.tok = true, from, []byte(c.Resume)
	return nil
}

type discard struct{}

func (discard) Write(b []byte) (int, error) { return len(b), nil }

// Resumed reports whether the offsets topic held the source's checkpoint:
// the stream then continues from From.
func (p *Publisher) Resumed() bool { return p.resumed }

// From is where the stream continues when Resumed.
func (p *Publisher) From() binlogstream.ResumePosition { return p.from }

// StartAt sets where a source without a checkpoint starts.
func (p *Publisher) StartAt(from binlogstream.ResumePosition) {
	if !p.resumed {
		p.from, p.tok = from, []byte(from.String())
	}
}

// Records is how many records this publisher committed, checkpoints
// left out; Transactions in how many Kafka transactions.
func (p *Publisher) Records() uint64 { return p.records.Load() }

// Transactions is how many Kafka transactions this publisher committed.
func (p *Publisher) Transactions() uint64 { return p.txns.Load() }

// OnEvent is the binlogstream listener: it sends ev's records into the
// open Kafka transaction as they come, and commits it with the
// checkpoint at the end of a source transaction once it is due.
func (p *Publisher) OnEvent(ctx context.Context, ev binlogstream.Event) error {
	if pr, ok := ev.Event.(*binlogstream.Progress); ok && pr.Idle {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.err != nil {
		return p.err
	}
	recs, err := p.recs.Append(p.buf[:0], &ev)
	p.buf = recs
	if err != nil {
		return err
	}
	for i := range recs {
		if err := p.produce(ctx, &recs[i]); err != nil {
			return p.fail(err)
		}
		recs[i] = publish.Record{}
	}
	if p.recs.InTxn() {
		return nil
	}
	p.tok, _ = ev.Resume.AppendText(p.tok[:0])
	p.dirty = true
	if p.n >= p.cfg.TxnRecords || p.inTxn && time.Since(p.began) >= p.cfg.TxnInterval {
		return p.fail(p.commit(ctx))
	}
	if p.timer == nil {
		p.timer = time.AfterFunc(p.cfg.TxnInterval, p.idleCommit)
	}
	return nil
}

// idleCommit commits, TxnInterval after it was set, what the stream left
// whole and no event has committed since.
func (p *Publisher) idleCommit() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.timer = nil
	if p.err != nil || p.stopped || !p.dirty {
		return
	}
	if p.recs.InTxn() {
		return // the transaction's end commits
	}
	if wait := p.cfg.TxnInterval - time.Since(p.began); p.inTxn && wait > 0 {
		p.timer = time.AfterFunc(wait, p.idleCommit)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_ = p.fail(p.commit(ctx))
}

// fail keeps err as the publisher's error.
func (p *Publisher) fail(err error) error {
	if err != nil && p.err == nil {
		p.err = err
	}
	return err
}

// produce sends r into the open Kafka transaction, beginning one.
func (p *Publisher) produce(ctx context.Context, r *publish.Record) error {
	topic := p.topicOf(r)
	if !p.topics[topic] {
		if err := createTopic(ctx, p.cl, topic, -1, nil); err != nil {
			return err
		}
		p.topics[topic] = true
	}
	if err := p.begin(); err != nil {
		return err
	}
	rec := &kgo.Record{Topic: topic, Key: r.Key, Value: r.Value, Headers: []kgo.RecordHeader{{Key: ResumeHeader, Value: r.Token}}}
	p.cl.Produce(context.WithoutCancel(ctx), rec, p.promise)
	p.n++
	return p.produceErr()
}

// begin opens a Kafka transaction unless one is open.
func (p *Publisher) begin() error {
	if p.inTxn {
		return nil
	}
	if !untransacted {
		if err := p.cl.BeginTransaction(); err != nil {
			return p.explain(err)
		}
	}
	p.inTxn, p.began, p.n = true, time.Now(), 0
	return nil
}

func (p *Publisher) promise(r *kgo.Record, err error) {
	if err == nil {
		return
	}
	p.perrMu.Lock()
	if p.perr == nil {
		p.perr = fmt.Errorf("producing to %s: %w", r.Topic, err)
	}
	p.perrMu.Unlock()
}

func (p *Publisher) produceErr() error {
	p.perrMu.Lock()
	defer p.perrMu.Unlock()
	return p.explain(p.perr)
}

// commit writes the checkpoint into the open Kafka transaction (opening
// one when only the checkpoint moved) and commits it.
func (p *Publisher) commit(ctx context.Context) error {
	if p.timer != nil {
		p.timer.Stop()
		p.timer = nil
	}
	if err := p.begin(); err != nil {
		return err
	}
	c := checkpoint{Resume: string(p.tok), Format: string(p.cfg.Format)}
	if enc := p.recs.Encoder(); enc != nil {
		c.SnapshotBegun = enc.State().SnapshotBegun
	}
	value, _ := json.Marshal(c)
	p.cl.Produce(ctx, &kgo.Record{Topic: p.cfg.OffsetsTopic, Key: []byte(p.cfg.Name), Value: value,
		Headers: []kgo.RecordHeader{{Key: ResumeHeader, Value: []byte(c.Resume)}}}, p.promise)
	if err := p.cl.Flush(ctx); err != nil {
		return err
	}
	if err := p.produceErr(); err != nil {
		return err
	}
	if !untransacted {
		if err := p.cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
			return p.explain(fmt.Errorf("committing the transaction up to %.60s...: %w", p.tok, err))
		}
	}
	p.records.Add(uint64(p.n))
	p.txns.Add(1)
	if p.cfg.OnCommit != nil {
		p.cfg.OnCommit(p.n, time.Since(p.began))
	}
	p.inTxn, p.n, p.dirty = false, 0, false
	return nil
}

// explain wraps the errors of a producer another one fenced in ErrFenced.
func (p *Publisher) explain(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, kerr.ProducerFenced) || errors.Is(err, kerr.InvalidProducerEpoch) {
		return fmt.Errorf("transactional.id %s%s: %w: this publisher stops, and the topics hold every change once (%v)",
			TransactionalIDPrefix, p.cfg.Name, ErrFenced, err)
	}
	return err
}

// Flush commits what the stream left whole (every source transaction
// that ended) and stops the timer; the records of a transaction that has
// not ended are aborted, and the next run publishes it again.
func (p *Publisher) Flush(ctx context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stopped = true
	if p.timer != nil {
		p.timer.Stop()
		p.timer = nil
	}
	if p.err != nil {
		return p.err
	}
	if p.recs.InTxn() {
		return p.fail(p.abort(ctx))
	}
	if !p.dirty {
		return nil
	}
	return p.fail(p.commit(ctx))
}

// abort drops the open Kafka transaction.
func (p *Publisher) abort(ctx context.Context) error {
	if !p.inTxn {
		return nil
	}
	p.inTxn, p.n = false, 0
	if untransacted {
		return p.cl.Flush(ctx)
	}
	if err := p.cl.AbortBufferedRecords(ctx); err != nil {
		return err
	}
	return p.explain(p.cl.EndTransaction(ctx, kgo.TryAbort))
}

// Close aborts an open transaction and closes the client.
func (p *Publisher) Close() {
	p.mu.Lock()
	p.stopped = true
	if p.timer != nil {
		p.timer.Stop()
		p.timer = nil
	}
	if p.inTxn && p.err == nil {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_ = p.abort(ctx)
		cancel()
	}
	p.mu.Unlock()
	p.cl.Close()
}

// topicOf is r's topic: the Debezium record's, else PREFIX.DB.TABLE for
// a table's line and PREFIX for a statement.
func (p *Publisher) topicOf(r *publish.Record) string {
	k := topicKey{r.Topic, r.Schema, r.Table}
	if t, ok := p.names[k]; ok {
		return t
	}
	name := r.Topic
	if name == "" {
		name = p.cfg.TopicPrefix
		if r.Table != "" {
			name = p.cfg.TopicPrefix + "." + r.Schema + "." + r.Table
		}
	}
	t := TopicName(name)
	if len(p.names) >= maxNames {
		clear(p.names)
	}
	p.names[k] = t
	return t
}

// topicKey is what names a record's topic.
type topicKey struct{ topic, schema, table string }

// maxNames bounds the topic names topicOf keeps.
const maxNames = 4096

// TopicName is name as a Kafka topic name: each byte a topic cannot hold
// (any but ASCII letters, digits, '.', '_' and '-') replaced by '_', as
// Debezium does, and cut at Kafka's 249 bytes.
func TopicName(name string) string {
	var b strings.Builder
	for i := 0; i < len(name); i++ {
		c := name[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-' {
			b.WriteByte(c)
		} else {
			b.WriteByte('_')
		}
	}
	s := b.String()
	if len(s) > 249 {
		s = s[:249]
	}
	return s
}
