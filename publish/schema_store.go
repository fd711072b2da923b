package publish

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/binlogstream/binlogstream"
)

// SchemaStore keeps a publisher's schema history (binlogstream.SchemaStore:
// the table definitions as of each binlog position, which give the row
// values their column names under binlog_row_metadata=NO_LOG) in
// JetStream, so a publisher keeps no local state: a restart, on this
// machine or another, reads the history back instead of taking a new
// information_schema snapshot, and the lines of a binlog stretch with DDL
// in it read the same whoever publishes them.
//
// The history of stream S and prefix P is the subject
// binlogstream_schema.S.P of the stream S_schema. A record is one message,
// or several when its JSON is larger than a part (partBytes), each with
// the record's id (a hash of its JSON) and its part number in headers.
// Load keeps a record only once all its parts are there, so a record cut
// by a crash in the middle of its Append is not read; the streamer then
// appends it again. A record is also read once only: a second Append of
// the same record (a retry after a lost ack beyond the server's duplicate
// window, or a fenced publisher's) adds nothing to the history.
type SchemaStore struct {
	js       jetstream.JetStream
	stream   jetstream.Stream
	name     string
	subject  string
	retryFor time.Duration
}

// Header names of a schema history message.
const (
	SchemaRecordHeader = "Binlog-Schema-Record" // the record's id
	SchemaPartHeader   = "Binlog-Schema-Part"   // "i/n", from 1
)

// partBytes is the largest part of a record: under NATS's default
// max_payload of 1 MiB with room for the headers.
const partBytes = 512 << 10

// SchemaStreamName is the stream that holds stream's schema histories.
func SchemaStreamName(stream string) string { return stream + "_schema" }

// SchemaSubject is the subject of the schema history of stream and prefix.
func SchemaSubject(stream, prefix string) string {
	return "binlogstream_schema." + stream + "." + prefix
}

// OpenSchemaStore uses or creates the schema history stream of stream
// (SchemaStreamName) with replicas replicas (0: min(3, the servers the
// connection knows)), retrying for up to retryFor (0: 30s) while the
// cluster has no leader.
func OpenSchemaStore(ctx context.Context, js jetstream.JetStream, stream, prefix string, replicas int, retryFor time.Duration) (*SchemaStore, error) {
	if prefix == "" {
		prefix = DefaultPrefix
	}
	if retryFor <= 0 {
		retryFor = 30 * time.Second
	}
	if replicas <= 0 {
		replicas = min(3, max(1, len(js.Conn().Servers())))
	}
	s := &SchemaStore{js: js, name: SchemaStreamName(stream), subject: SchemaSubject(stream, prefix), retryFor: retryFor}
	err := s.retry(ctx, func(ctx context.Context) error {
		st, err := js.Stream(ctx, s.name)
		if errors.Is(err, jetstream.ErrStreamNotFound) {
			st, err = js.CreateStream(ctx, jetstream.StreamConfig{
				Name:        s.name,
				Description: "binlogstream: schema histories of stream " + stream,
				Subjects:    []string{"binlogstream_schema." + stream + ".>"},
				Replicas:    replicas,
			})
			if errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
				st, err = js.Stream(ctx, s.name)
			}
		}
		if err != nil {
			return fmt.Errorf("schema history stream %s: %w", s.name, err)
		}
		if !holds(st.CachedInfo().Config.Subjects, s.subject) {
			return fmt.Errorf("schema history stream %s has the subjects %q, which do not hold %s", s.name, st.CachedInfo().Config.Subjects, s.subject)
		}
		s.stream = st
		return nil
	})
	if err != nil {
		return nil, err
	}
	return s, nil
}

func (s *SchemaStore) retry(ctx context.Context, step func(context.Context) error) error {
	deadline := time.Now().Add(s.retryFor)
	for {
		sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		err := step(sctx)
		cancel()
		if err == nil || ctx.Err() != nil || time.Now().After(deadline) || !transient(err) {
			return err
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// Load returns the history's complete records, in the order they were
// appended, each once.
func (s *SchemaStore) Load() ([]binlogstream.SchemaRecord, error) {
	var parts []schemaPart
	ctx := context.Background()
	for seq := uint64(1); ; {
		var m *jetstream.RawStreamMsg
		err := s.retry(ctx, func(ctx context.Context) (err error) {
			m, err = s.stream.GetMsg(ctx, seq, jetstream.WithGetMsgSubject(s.subject))
			return err
		})
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("schema history %s: read after sequence %d: %w", s.subject, seq, err)
		}
		p, err := parsePart(m.Header, m.Data)
		if err != nil {
			return nil, fmt.Errorf("schema history %s: message %d: %w", s.subject, m.Sequence, err)
		}
		parts = append(parts, p)
		seq = m.Sequence + 1
	}
	return assemble(parts)
}

// Append stores rec, every part acknowledged by the stream before it
// returns.
func (s *SchemaStore) Append(rec binlogstream.SchemaRecord) error {
	data, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	for _, p := range splitRecord(data, partBytes) {
		msg := nats.NewMsg(s.subject)
		msg.Data = p.data
		msg.Header.Set(SchemaRecordHeader, p.id)
		msg.Header.Set(SchemaPartHeader, strconv.Itoa(p.i)+"/"+strconv.Itoa(p.n))
		msg.Header.Set(nats.MsgIdHdr, p.id+"-"+strconv.Itoa(p.i))
		err := s.retry(context.Background(), func(ctx context.Context) error {
			_, err := s.js.PublishMsg(ctx, msg)
			return err
		})
		if err != nil {
			return fmt.Errorf("schema history %s: %w", s.subject, err)
		}
	}
	return nil
}

// schemaPart is one message of a record.
type schemaPart struct {
	id   string
	i, n int
	data []byte
}

// splitRecord cuts a record's JSON into parts of size bytes.
func splitRecord(data []byte, size int) []schemaPart {
	sum := sha256.Sum256(data)
	id := hex.EncodeToString(sum[:16])
	n := max(1, (len(data)+size-1)/size)
	out := make([]schemaPart, n)
	for i := range n {
		out[i] = schemaPart{id: id, i: i + 1, n: n, data: data[i*size : min(len(data), (i+1)*size)]}
	}
	return out
}

func parsePart(h nats.Header, data []byte) (schemaPart, error) {
	p := schemaPart{id: h.Get(SchemaRecordHeader), data: data}
	i, n, ok := strings.Cut(h.Get(SchemaPartHeader), "/")
	var err1, err2 error
	p.i, err1 = strconv.Atoi(i)
	p.n, err2 = strconv.Atoi(n)
	if p.id == "" || !ok || err1 != nil || err2 != nil || p.i < 1 || p.i > p.n {
		return p, fmt.Errorf("not a schema history part (headers %s=%q, %s=%q)", SchemaRecordHeader, p.id, SchemaPartHeader, h.Get(SchemaPartHeader))
	}
	return p, nil
}

// assemble joins the parts into records, in the order they were
// completed: a record is complete once parts 1 to n of its id have come in
// order (a part repeated by a retried Append counts once). Records not
// complete, and records already taken, are left out.
func assemble(parts []schemaPart) ([]binlogstream.SchemaRecord, error) {
	type pending struct {
		next int // the part it waits for
		data bytes.Buffer
	}
	open := map[string]*pending{}
	done := map[string]bool{}
	var recs []binlogstream.SchemaRecord
	for _, p := range parts {
		if done[p.id] {
			continue
		}
		r := open[p.id]
		if r == nil {
			if p.i != 1 {
				continue // the rest of a record whose start is lost: never complete
			}
			r = &pending{next: 1}
			open[p.id] = r
		}
		if p.i != r.next {
			continue // a repeated part
		}
		r.data.Write(p.data)
		r.next++
		if p.i < p.n {
			continue
		}
		var rec binlogstream.SchemaRecord
		if err := json.Unmarshal(r.data.Bytes(), &rec); err != nil {
			return nil, fmt.Errorf("schema history record %d: %w", len(recs)+1, err)
		}
		recs = append(recs, rec)
		delete(open, p.id)
		done[p.id] = true
	}
	return recs, nil
}
