package kafka

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/binlogstream/binlogstream"
	"github.com/binlogstream/binlogstream/publish"
)

// DefaultSchemaTopic is Config.SchemaTopic when empty.
const DefaultSchemaTopic = "binlogstream.schemas"

// Header names of a schema history record's parts.
const (
	SchemaRecordHeader = "binlogstream.schema.record" // the record's id
	SchemaPartHeader   = "binlogstream.schema.part"   // "i/n", from 1
)

// SchemaStore is the publisher's schema history (binlogstream.SchemaStore)
// in Kafka: the records of the source's name in the schema topic, each
// cut in parts as publish.SplitSchemaRecord cuts them. An Append goes
// into the publisher's open transaction, so a record is committed with
// the changes after its DDL and the checkpoint past it, or not at all;
// Load reads the committed ones with read_committed.
type SchemaStore struct{ p *Publisher }

// SchemaStore is the publisher's schema history store.
func (p *Publisher) SchemaStore() *SchemaStore { return &SchemaStore{p: p} }

// Load returns the committed records, in order, each once.
func (s *SchemaStore) Load() ([]binlogstream.SchemaRecord, error) {
	p := s.p
	var parts []publish.SchemaPart
	var perr error
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	err := readKey(ctx, p.cfg.Brokers, p.cfg.SchemaTopic, p.cfg.Name, p.cfg.ClientOpts, func(r *kgo.Record) {
		part, err := parsePart(r)
		if err != nil {
			perr = fmt.Errorf("schema topic %s offset %d: %w", p.cfg.SchemaTopic, r.Offset, err)
			return
		}
		parts = append(parts, part)
	})
	if err == nil {
		err = perr
	}
	if err != nil {
		return nil, err
	}
	return publish.AssembleSchemaRecords(parts)
}

func parsePart(r *kgo.Record) (publish.SchemaPart, error) {
	p := publish.SchemaPart{Data: r.Value}
	var part string
	for _, h := range r.Headers {
		switch h.Key {
		case SchemaRecordHeader:
			p.ID = string(h.Value)
		case SchemaPartHeader:
			part = string(h.Value)
		}
	}
	i, n, ok := strings.Cut(part, "/")
	var err1, err2 error
	p.I, err1 = strconv.Atoi(i)
	p.N, err2 = strconv.Atoi(n)
	if p.ID == "" || !ok || err1 != nil || err2 != nil || p.I < 1 || p.I > p.N {
		return p, fmt.Errorf("not a schema history part (headers %s=%q, %s=%q)", SchemaRecordHeader, p.ID, SchemaPartHeader, part)
	}
	return p, nil
}

// Append produces rec's parts into the publisher's open transaction.
func (s *SchemaStore) Append(rec binlogstream.SchemaRecord) error {
	p := s.p
	parts, err := publish.SplitSchemaRecord(rec)
	if err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.err != nil {
		return p.err
	}
	if err := p.begin(); err != nil {
		return p.fail(err)
	}
	for _, part := range parts {
		p.cl.Produce(context.Background(), &kgo.Record{Topic: p.cfg.SchemaTopic, Key: []byte(p.cfg.Name), Value: part.Data,
			Headers: []kgo.RecordHeader{{Key: SchemaRecordHeader, Value: []byte(part.ID)},
				{Key: SchemaPartHeader, Value: []byte(strconv.Itoa(part.I) + "/" + strconv.Itoa(part.N))}}}, p.promise)
	}
	p.dirty = true
	return p.fail(p.produceErr())
}
