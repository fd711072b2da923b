//go:build binlogstream_unguarded

package publish

// unguarded, in a build with the tag binlogstream_unguarded (the
// negative control of cmd/binlog-publish's lease tests, never a
// release), turns off what stops a publisher whose lease ended: the
// lease check before each publish, the Nats-Msg-Ids and the expected
// last sequence. It still resumes from the stream's last message.
const unguarded = true
