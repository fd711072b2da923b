package binlogstream

import (
	"context"
	"slices"
	"time"

	"github.com/binlogstream/binlogstream/internal/snapshot"
)

// The snapshot's reads: the readers' goroutines, and the reads of each
// table asked, in flight and come back, until their chunks attach.

// tableReads is one table's reads that are not attached yet. Each read
// asked gets the next sequence number, and chunks attach in that order:
// the key order. With one reader a read is asked after the last one came
// back, from its last key. With several, each read first finds where
// its range ends (keyAfter: the key ChunkRows rows on) and says so, and
// the next read starts there while this one reads its rows: the reads
// of one table overlap, each placed by its own position.
type tableReads struct {
	seq  uint64         // the sequence number of the next read asked
	want uint64         // the sequence number of the chunk to attach next
	back []*chunkResult // reads come back, by sequence number
	// asked is where the stream was when each read not attached was
	// asked, from want on: the read's position is at or after it.
	asked    []snapshot.Pos
	inflight int
	// front is the low key of the next read (nil: the table's first key),
	// once known (frontOK); end: the last read asked reads to the
	// table's end.
	front   *snapshot.Key
	frontOK bool
	end     bool
}

// first is the chunk to attach next, if it came back.
func (tr *tableReads) first() *chunkResult {
	if len(tr.back) > 0 && tr.back[0].job.seq == tr.want {
		return tr.back[0]
	}
	return nil
}

// outstanding is the number of reads asked and not attached.
func (tr *tableReads) outstanding() int { return int(tr.seq - tr.want) }

type chunkJob struct {
	gen, epoch, seq uint64
	t               *snapTable
	lo              *snapshot.Key
	// split: find the range's end first and report it (several readers).
	split bool
}

type chunkResult struct {
	job  chunkJob
	read *chunkRead
	err  error
	// bound, with read nil: a split job's range ends at *hi (nil hi: at
	// the table's end); the read follows.
	bound bool
	hi    *snapshot.Key
	// limit is the read's row limit: a chunk that reached it ends at its
	// last key.
	limit int
	chunk *snapshot.Chunk // the state's view of read
}

// reader reads the chunks asked for, on a connection of its own.
func (d *snapDriver) reader(ctx context.Context) {
	defer d.wg.Done()
	var r chunkReader
	defer func() {
		if r != nil {
			r.close()
		}
	}()
	for {
		var job chunkJob
		select {
		case <-ctx.Done():
			return
		case job = <-d.work:
		}
		res := chunkResult{job: job, limit: d.cfg.ChunkRows}
		if r == nil {
			r, res.err = d.src.chunkReader(context.WithoutCancel(ctx))
		}
		if res.err == nil {
			var after, through []any
			if job.lo != nil {
				after = job.lo.Raw
			}
			if job.split {
				// The range ends at the key ChunkRows rows on; rows
				// inserted into it before the read may make it longer.
				var hi *snapshot.Key
				hi, res.err = r.keyAfter(job.t, after, d.cfg.ChunkRows-1)
				if res.err == nil {
					if !d.send(ctx, chunkResult{job: job, bound: true, hi: hi}) {
						return
					}
					if res.hi = hi; hi != nil {
						through, res.limit = hi.Raw, 2*d.cfg.ChunkRows
					}
				}
			}
			if res.err == nil {
				res.read, res.err = r.readChunk(job.t, after, through, res.limit)
			}
			if res.err != nil {
				r.close()
				r = nil
			}
		}
		if !d.send(ctx, res) {
			return
		}
	}
}

// send hands a reader's result to the Run goroutine; false: the readers
// are stopping.
func (d *snapDriver) send(ctx context.Context, res chunkResult) bool {
	select {
	case <-ctx.Done():
		return false
	case d.results <- res:
		d.signalWake()
		return true
	}
}

// tableReads is table id's reads, made from its boundary when it has
// none.
func (d *snapDriver) tableReads(id string) *tableReads {
	tr := d.reads[id]
	if tr == nil {
		bound, _ := d.state.Active(id)
		tr = &tableReads{front: bound, frontOK: true}
		d.reads[id] = tr
	}
	return tr
}

// ask queues the read of table t's next range, from its front.
func (d *snapDriver) ask(ctx context.Context, t *snapTable) error {
	if t == nil || d.paused[t.id] {
		return nil // gone from the server: its DROP or RENAME is still to come
	}
	tr := d.tableReads(t.id)
	job := chunkJob{gen: d.gen, epoch: d.epoch[t.id], seq: tr.seq, t: t, lo: tr.front, split: d.cfg.Readers > 1}
	tr.seq++
	tr.inflight++
	if snapInflight != nil {
		snapInflight(t.id, tr.inflight)
	}
	tr.asked = append(tr.asked, toPos(d.at))
	tr.frontOK = false
	select {
	case d.work <- job:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// collect takes the reads that came back, without waiting.
func (d *snapDriver) collect(ctx context.Context, wait time.Duration) error {
	for first := true; ; first = false {
		var r chunkResult
		if first && wait > 0 {
			t := time.NewTimer(wait)
			select {
			case r = <-d.results:
				t.Stop()
			case <-t.C:
				return nil
			case <-ctx.Done():
				t.Stop()
				return ctx.Err()
			}
		} else {
			select {
			case r = <-d.results:
			default:
				return nil
			}
		}
		id := r.job.t.id
		tr := d.reads[id]
		if r.job.gen != d.gen || r.job.epoch != d.epoch[id] || tr == nil {
			continue
		}
		if r.bound {
			if r.job.seq == tr.seq-1 { // the last read asked: the next starts after it
				tr.front, tr.frontOK, tr.end = r.hi, r.hi != nil, r.hi == nil
			}
			if err := d.readAhead(ctx, id); err != nil {
				return err
			}
			continue
		}
		tr.inflight--
		if r.err != nil {
			if isNoSuchTable(r.err) {
				d.log.WithField("table", id).Warn("snapshot: the table is gone from the server; its reads wait for its DROP or RENAME in the stream")
				d.paused[id] = true
				continue
			}
			if schemaChanged(r.err) {
				return &readSchemaError{err: r.err}
			}
			return r.err
		}
		d.reloads = 0
		d.box.mu.Lock()
		d.box.stats.Chunks++
		d.box.stats.MaxReadAge = max(d.box.stats.MaxReadAge, r.read.age)
		d.box.mu.Unlock()
		if snapReadAge != nil {
			snapReadAge(r.read.age)
		}
		rr := r
		rr.chunk = d.chunkOf(&rr)
		i, _ := slices.BinarySearchFunc(tr.back, rr.job.seq, func(c *chunkResult, seq uint64) int { return cmpUint(c.job.seq, seq) })
		tr.back = slices.Insert(tr.back, i, &rr)
		if !rr.job.split && rr.job.seq == tr.seq-1 {
			// One reader: the next read starts after this one's last key.
			tr.end = rr.chunk.Hi == nil
			tr.front, tr.frontOK = rr.chunk.Hi, rr.chunk.Hi != nil
		}
		if err := d.readAhead(ctx, id); err != nil {
			return err
		}
	}
}

func cmpUint(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// readAheadChunks bounds the chunks read ahead of the one a table
// attaches next: reads go on while earlier chunks wait for the stream or
// are delivered, and the memory they hold stays a few chunks.
const readAheadChunks = 2

// readAhead asks for table id's next range while its start is known,
// fewer than Readers reads of it are in flight and at most
// readAheadChunks+Readers chunks are asked and not attached. Each chunk
// read ahead is read at its own position and attaches as any other: the
// state takes it only once the boundary is its low key and the stream
// has reached its position.
func (d *snapDriver) readAhead(ctx context.Context, id string) error {
	tr := d.reads[id]
	if d.meta[id] == nil || d.paused[id] {
		return nil
	}
	for tr != nil && tr.frontOK && !tr.end && tr.inflight < d.cfg.Readers && tr.outstanding() <= readAheadChunks+d.cfg.Readers-1 {
		if _, active := d.state.Active(id); !active {
			return nil
		}
		if err := d.ask(ctx, d.meta[id]); err != nil {
			return err
		}
	}
	return nil
}

// chunkOf is the state's view of a read.
func (d *snapDriver) chunkOf(r *chunkResult) *snapshot.Chunk {
	c := &snapshot.Chunk{Table: r.job.t.id, Lo: r.job.lo, At: toPos(r.read.at)}
	if r.read.low != nil {
		low := toPos(*r.read.low)
		c.Low = &low
	}
	c.Rows = make([]snapshot.Row, len(r.read.rows))
	for i := range r.read.rows {
		c.Rows[i] = snapshot.Row{Key: r.read.keys[i], Data: r.read.rows[i]}
	}
	if n := len(c.Rows); n == r.limit {
		hi := c.Rows[n-1].Key
		c.Hi = &hi
	} else {
		c.Hi = r.hi
	}
	return c
}
