// Package publish sends a binlog stream into a NATS JetStream stream,
// exactly once: one message per binlog-tail line (package tailline
// writes them), the payload being that line's bytes with its newline, so
// the messages' payloads in stream order are binlog-tail's output file.
//
// The stream is the checkpoint. Open reads the stream's last message
// under the prefix and resumes from the token in its payload; nothing is
// kept anywhere else. Every message has a Nats-Msg-Id derived from its
// token (MsgID), and every publish asserts the stream's last sequence
// (Nats-Expected-Last-Sequence) as this publisher last saw it, so a
// second publisher on the same stream cannot interleave: one of the two
// gets ErrFenced and stops, and the stream holds each line once.
//
// A source transaction of up to MaxBatch messages goes out in one atomic
// batch (a stream with AllowAtomicPublish, nats-server 2.12 or later): a
// consumer sees all of it or none; small transactions that end while a
// publish is in flight share the next batch, whole. A larger transaction
// goes as several batches, and a transaction that is not one batch (or,
// on a stream without atomic batches, not one message) carries the
// headers TxnHeader, TxnIndexHeader and TxnCountHeader on every message,
// so that a consumer can tell when it holds the whole transaction.
//
// A Lease (AcquireLease) lets standby publishers share a source: a key
// in a KV bucket with a TTL, held and renewed by one publisher, taken
// by a waiting one once it expires or is released. A Publisher with
// Config.Lease publishes only while it holds it; the expected last
// sequence keeps the stream exact when a lease ends under a publisher
// that is paused.
//
// Subjects are PREFIX.<schema>.<table> (Subject). Statements name their
// default database and "_" for the table; lines with neither (progress
// lines, statements without a default database) go to PREFIX._._.
package publish
