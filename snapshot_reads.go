package binlogstream

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/binlogstream/binlogstream/internal/chunkread"
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

// dropReads forgets table id's reads asked and not attached: those in
// flight come back with an earlier epoch and are ignored.
func (d *snapDriver) dropReads(id string) {
	delete(d.reads, id)
	d.epoch[id]++
}

// reread drops table id's reads to read it again from its boundary, and
// counts it in SnapshotStats.Rereads.
func (d *snapDriver) reread(id string) {
	d.dropReads(id)
	d.box.mu.Lock()
	d.box.stats.Rereads++
	d.box.mu.Unlock()
}

type chunkJob struct {
	gen, epoch, seq uint64
	t               *snapTable
	lo              *snapshot.Key
	// split: find the range's end first and report it (several readers).
	split bool
	// chain: the range starts after the last key of the read asked
	// before it (lo is not known when it is asked; one reader).
	chain bool
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

// aheadReads bounds the reads a reader has sent ahead on its connection
// and not received, and a table's chained reads asked and not attached:
// enough queued that the server does not wait for the next read's
// commands while the client takes a chunk in.
const aheadReads = 6

// reader reads the chunks asked for, on a connection of its own. A read
// its connection can send ahead (chunkReader.canSend) is written as soon
// as it is taken, behind the reads not received yet, so that the server
// reads a table's next chunk while this one's rows are taken in; any
// other waits until the reads sent are received, and is read at once.
func (d *snapDriver) reader(ctx context.Context) {
	defer d.wg.Done()
	rc := &readerConn{d: d}
	defer rc.closeConn()
	var held *chunkJob // taken, and waiting for the reads sent
	for {
		if len(rc.sent) == 0 {
			job := held
			if held = nil; job == nil {
				select {
				case <-ctx.Done():
					return
				case j := <-d.work:
					job = &j
				}
			}
			if !rc.start(ctx, *job) {
				return
			}
			continue
		}
	take:
		for held == nil && len(rc.sent) < aheadReads {
			select {
			case j := <-d.work:
				if rc.canSend(j) {
					if !rc.sendAhead(ctx, j) {
						return
					}
				} else {
					held = &j
				}
			default:
				break take
			}
		}
		if !rc.receive(ctx) {
			return
		}
	}
}

// readerConn is a reader's connection, the reads it sent ahead, and the
// last read it finished, which a chained read starts after.
type readerConn struct {
	d    *snapDriver
	r    chunkReader
	sent []chunkJob // sent ahead, not received, oldest first
	// last is the job read last (t nil before the first), with the key
	// its rows ended at (its own start when it had none) or its error.
	last    chunkJob
	lastKey *snapshot.Key
	lastErr error
	// failed: a read on the connection failed; it is closed once the
	// reads sent are received.
	failed bool
}

func (rc *readerConn) closeConn() {
	if rc.r != nil {
		rc.r.close()
		rc.r = nil
	}
}

// follows reports whether job is the read asked right after prev, of the
// same table and generation (never after a zero prev: a job has a table).
func follows(job, prev chunkJob) bool {
	return job.t == prev.t && job.gen == prev.gen && job.epoch == prev.epoch && job.seq == prev.seq+1
}

// canSend reports whether job can be sent ahead now: a read of a table
// the connection sends ahead, and a chained one right after the read
// sent last (or, none sent, read last without error).
func (rc *readerConn) canSend(job chunkJob) bool {
	if rc.r == nil || rc.failed || job.split || !rc.r.canSend(job.t) {
		return false
	}
	if !job.chain {
		return true
	}
	if n := len(rc.sent); n > 0 {
		return follows(job, rc.sent[n-1])
	}
	return follows(job, rc.last) && rc.lastErr == nil && rc.lastKey != nil
}

// sendAhead writes job's read; false: the readers are stopping.
func (rc *readerConn) sendAhead(ctx context.Context, job chunkJob) bool {
	var after []any
	if job.lo != nil {
		after = job.lo.Raw
	}
	if err := rc.r.send(job.t, after, rc.d.cfg.ChunkRows, job.chain); err != nil {
		rc.failed = true
		return rc.finish(ctx, chunkResult{job: job, limit: rc.d.cfg.ChunkRows, err: err})
	}
	rc.sent = append(rc.sent, job)
	return true
}

// receive takes in the oldest read sent; false: the readers are stopping.
func (rc *readerConn) receive(ctx context.Context) bool {
	job := rc.sent[0]
	rc.sent = rc.sent[1:]
	res := chunkResult{job: job, limit: rc.d.cfg.ChunkRows}
	if job.chain {
		res.job.lo = rc.lastKey
	}
	res.read, res.err = rc.r.receive(job.t)
	if res.err != nil {
		rc.failed = true
	}
	return rc.finish(ctx, res)
}

// start reads job with nothing sent ahead: sent ahead if it can be, or
// else read at once; false: the readers are stopping.
func (rc *readerConn) start(ctx context.Context, job chunkJob) bool {
	d := rc.d
	res := chunkResult{job: job, limit: d.cfg.ChunkRows}
	if rc.r == nil {
		if rc.r, res.err = d.src.chunkReader(context.WithoutCancel(ctx)); res.err != nil {
			return rc.finish(ctx, res)
		}
	}
	if !job.split {
		// Whether the Run goroutine may ask this table's reads chained.
		var t *snapTable
		if rc.r.canSend(job.t) {
			t = job.t
		}
		d.sendsAhead.Store(t)
	}
	if rc.canSend(job) {
		return rc.sendAhead(ctx, job)
	}
	if job.chain {
		switch {
		case !follows(job, rc.last):
			res.err = chunkread.ErrChainBroken
		case rc.lastErr != nil:
			res.err = rc.lastErr
		default:
			res.job.lo = rc.lastKey
		}
		if res.err != nil {
			return rc.finish(ctx, res)
		}
	}
	var after, through []any
	if res.job.lo != nil {
		after = res.job.lo.Raw
	}
	if job.split {
		// The range ends at the key ChunkRows rows on; rows inserted
		// into it before the read may make it longer.
		var hi *snapshot.Key
		hi, res.err = rc.r.keyAfter(job.t, after, d.cfg.ChunkRows-1)
		if res.err == nil {
			if !d.send(ctx, chunkResult{job: job, bound: true, hi: hi}) {
				return false
			}
			if res.hi = hi; hi != nil {
				through, res.limit = hi.Raw, 2*d.cfg.ChunkRows
			}
		}
	}
	if res.err == nil {
		res.read, res.err = rc.r.readChunk(job.t, after, through, res.limit)
	}
	if res.err != nil {
		rc.failed = true
	}
	return rc.finish(ctx, res)
}

// finish records res as the last read, closes a connection a read
// failed on once nothing sent is left on it, and hands res on.
func (rc *readerConn) finish(ctx context.Context, res chunkResult) bool {
	rc.last, rc.lastErr, rc.lastKey = res.job, res.err, res.job.lo
	if res.err == nil {
		if n := len(res.read.keyed); n > 0 {
			rc.lastKey = &res.read.keyed[n-1].Key
		}
	}
	if rc.failed && len(rc.sent) == 0 {
		rc.closeConn()
		rc.failed = false
	}
	return rc.d.send(ctx, res)
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
	job := chunkJob{gen: d.gen, epoch: d.epoch[t.id], seq: tr.seq, t: t, lo: tr.front, split: d.cfg.Readers > 1, chain: !tr.frontOK}
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
			if errors.Is(r.err, chunkread.ErrChainBroken) {
				// The server's reads went elsewhere than asked: read
				// the table again from its boundary.
				d.log.WithField("table", id).WithError(r.err).Debug("snapshot: chained read refused; reading from the boundary")
				d.reread(id)
				d.needWork = true
				continue
			}
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
		if !rr.job.split && rr.chunk.Hi == nil {
			tr.end = true // nothing is asked after a read that found the table's end
		} else if !rr.job.split && rr.job.seq == tr.seq-1 {
			// One reader: the next read starts after this one's last key.
			tr.front, tr.frontOK = rr.chunk.Hi, true
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

// readAhead asks for table id's next range while its start is known (or,
// with one reader and a key of integers, chained after the read in
// flight), fewer than Readers reads of it are in flight and at most
// readAheadChunks+Readers chunks are asked and not attached (chained:
// aheadReads of each). Each chunk read ahead is read at its own position and
// attaches as any other: the state takes it only once the boundary is
// its low key and the stream has reached its position.
func (d *snapDriver) readAhead(ctx context.Context, id string) error {
	tr := d.reads[id]
	t := d.meta[id]
	if t == nil || d.paused[id] {
		return nil
	}
	inflight := d.cfg.Readers
	chains := d.cfg.Readers == 1 && d.sendsAhead.Load() == t
	if chains {
		inflight = aheadReads
	}
	for tr != nil && (tr.frontOK || chains && tr.inflight > 0) && !tr.end && tr.inflight < inflight &&
		tr.outstanding() < max(readAheadChunks+d.cfg.Readers, inflight) {
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
	c.Rows = r.read.keyed // nothing writes a chunk's rows
	if n := len(c.Rows); n == r.limit {
		hi := c.Rows[n-1].Key
		c.Hi = &hi
	} else {
		c.Hi = r.hi
	}
	return c
}
