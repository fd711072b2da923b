package binlogstream

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/binlogstream/binlogstream/internal/snapshot"
	"github.com/binlogstream/binlogstream/internal/tokenbytes"
)

// Position is a place in a server's binary log: a file name and a byte
// offset in that file. Offsets are 64-bit because a file passes 4 GiB when
// one transaction is huge, while the event header's LogPos is only 32 bits.
type Position struct {
	File   string
	Offset uint64
}

// String renders the position as FILE:OFFSET.
func (p Position) String() string {
	return p.File + ":" + strconv.FormatUint(p.Offset, 10)
}

// IsZero reports whether p is the zero Position (no file).
func (p Position) IsZero() bool { return p.File == "" && p.Offset == 0 }

// ParsePosition parses FILE:OFFSET as written by Position.String.
func ParsePosition(s string) (Position, error) {
	i := strings.LastIndexByte(s, ':')
	if i <= 0 || i == len(s)-1 {
		return Position{}, fmt.Errorf("binlogstream: position %q is not FILE:OFFSET", s)
	}
	off, err := strconv.ParseUint(s[i+1:], 10, 64)
	if err != nil {
		return Position{}, fmt.Errorf("binlogstream: position %q: offset is not a number", s)
	}
	return Position{File: s[:i], Offset: off}, nil
}

// Compare orders positions as the server writes them: by binlog file
// sequence, then offset. It returns -1, 0 or +1.
func (p Position) Compare(q Position) int {
	if c := compareFileNames(p.File, q.File); c != 0 {
		return c
	}
	switch {
	case p.Offset < q.Offset:
		return -1
	case p.Offset > q.Offset:
		return 1
	}
	return 0
}

// compareFileNames orders binlog names like mysql-bin.000009 <
// mysql-bin.000010 < mysql-bin.1000000: by base name, then numeric suffix.
// The suffix gains digits past 999999, so plain string order is wrong.
func compareFileNames(a, b string) int {
	if a == b {
		return 0
	}
	ab, an, aok := splitFileName(a)
	bb, bn, bok := splitFileName(b)
	if aok && bok && ab == bb {
		switch {
		case an < bn:
			return -1
		case an > bn:
			return 1
		}
	}
	return strings.Compare(a, b)
}

func splitFileName(name string) (base string, seq uint64, ok bool) {
	i := strings.LastIndexByte(name, '.')
	if i < 0 || i == len(name)-1 {
		return name, 0, false
	}
	n, err := strconv.ParseUint(name[i+1:], 10, 64)
	if err != nil {
		return name, 0, false
	}
	return name[:i], n, true
}

// ResumePosition is what a consumer persists to resume later. It holds two
// positions (see doc.go for the contract):
//
//   - Streamed: the end of the last event that was delivered to the
//     listeners and acknowledged by all of them. Nothing at or before it is
//     ever delivered again. With Rows > 0, the first Rows row changes of the
//     event that starts at Streamed count as delivered too.
//   - Safe: a statement boundary at or before Streamed. A dump started there
//     decodes every following event, because no statement's Table_map lies
//     behind it. Resuming starts the dump at Safe and drops the replayed
//     events up to Streamed.
//
// InTxn and GTID describe the transaction open at Safe, so that events
// replayed from the middle of a transaction still carry its GTID.
//
// The zero value means "no position". Use StartAt to begin at a position
// known to be a boundary (for example SHOW MASTER STATUS), and
// ParseResumePosition to read a token written by String.
//
// In GTID mode (Flavor set; see StartAtGTID) the position is a GTID set
// instead, and does not depend on the server it was taken from:
//
//   - Executed: the transactions delivered completely.
//   - GTID and Progress: the in-flight transaction and what of it was
//     delivered, counted in units every server writes alike (Table_maps,
//     row changes, statements) plus a fingerprint of them. A resume asks
//     the server for everything after Executed, which replays the
//     in-flight transaction from its start, possibly split differently;
//     the delivered part is dropped and, if the replayed transaction does
//     not match the fingerprint, the stream stops with ErrResumeMismatch.
type ResumePosition struct {
	Safe     Position
	Streamed Position
	Rows     uint32
	// Inner counts the inner events of a MySQL Transaction_payload event
	// at Streamed that were delivered (then Rows counts row changes of the
	// next inner event): the inner events share one binlog position.
	Inner uint32
	InTxn bool
	GTID  string

	Flavor   string // "mysql" or "mariadb" in GTID mode; "" in file mode
	Executed string
	Progress TxnProgress

	// snap is the state of a snapshot taken while streaming
	// (internal/snapshot's encoding), "" without one.
	snap string

	// inRowsStmt: Streamed lies inside a rows statement, after its
	// Table_map, so the replay up to Streamed holds only that statement's
	// Table_maps and rows events, and its STMT_END_F event comes after
	// Streamed in the same file (what SkipReplayedRows relies on).
	inRowsStmt bool
}

// StartAtGTID returns a GTID-mode ResumePosition that streams every
// transaction not in executed (MySQL "uuid:1-5,...", MariaDB
// "domain-server-seq,..."), e.g. the server's @@gtid_executed or
// @@gtid_binlog_pos read before the first run.
func StartAtGTID(flavor, executed string) (ResumePosition, error) {
	r := ResumePosition{Flavor: flavor, Executed: executed}
	if err := r.validate(); err != nil {
		return ResumePosition{}, configError("%v", err)
	}
	// Normalise the set's spelling so tokens compare equal.
	set, _ := mysql.ParseGTIDSet(flavor, executed)
	r.Executed = set.String()
	return r, nil
}

// IsGTID reports whether r is a GTID-mode position.
func (r ResumePosition) IsGTID() bool { return r.Flavor != "" }

// StartAt returns a ResumePosition that starts streaming at pos. pos must
// be an event boundary outside any statement, such as a file's offset 4 or
// the position SHOW MASTER STATUS reports.
func StartAt(pos Position) ResumePosition {
	return ResumePosition{Safe: pos, Streamed: pos}
}

// IsZero reports whether r holds no position.
func (r ResumePosition) IsZero() bool { return r == ResumePosition{} }

// String of a GTID-mode position's parts for logs: "executed=... gtid=...".
func (r ResumePosition) describe() string {
	if r.IsGTID() {
		if r.GTID != "" {
			return fmt.Sprintf("executed %q, in %s after %d row changes and %d statements", r.Executed, r.GTID, r.Progress.Rows, r.Progress.Statements)
		}
		return fmt.Sprintf("executed %q", r.Executed)
	}
	if r.Rows > 0 {
		return fmt.Sprintf("safe %s, streamed %s and %d row changes", r.Safe, r.Streamed, r.Rows)
	}
	return fmt.Sprintf("safe %s, streamed %s", r.Safe, r.Streamed)
}

// Token format, version 1 (file mode): "bls1." + base64url(payload), where
// payload is
//
//	kind byte (1 = file mode) | flags byte | safe file | safe offset |
//	[streamed file, when flagOtherFile] | streamed offset | rows |
//	[gtid, when flagGTID] | crc32 (IEEE, little endian) of all before it
//
// strings are uvarint length + bytes, integers are uvarints. The checksum
// makes a truncated or edited token fail loudly instead of resuming from a
// wrong place.
const (
	tokenPrefix   = "bls1."
	tokenKindFile = 1
	tokenKindGTID = 2

	flagInTxn     = 1 << 0
	flagOtherFile = 1 << 1
	flagGTID      = 1 << 2
	flagRowsStmt  = 1 << 3
	flagInner     = 1 << 4
	flagSnapshot  = 1 << 5 // a snapshot's state ends the payload
	knownFlags    = flagInTxn | flagOtherFile | flagGTID | flagRowsStmt | flagInner | flagSnapshot

	maxTokenLen = 1 << 16
)

// TokenError describes why a resume token was refused.
type TokenError struct {
	Token  string // the token, shortened when long
	Reason string
}

func (e *TokenError) Error() string {
	return fmt.Sprintf("binlogstream: invalid resume token %q: %s", e.Token, e.Reason)
}

// Unwrap makes errors.Is(err, ErrInvalidToken) true.
func (e *TokenError) Unwrap() error { return ErrInvalidToken }

func tokenError(tok, reason string) error {
	if len(tok) > 64 {
		tok = tok[:61] + "..."
	}
	return &TokenError{Token: tok, Reason: reason}
}

// String encodes r as a compact, versioned, opaque token. The zero
// ResumePosition encodes as "".
func (r ResumePosition) String() string {
	var buf [160]byte
	return string(r.appendToken(buf[:0]))
}

// AppendText appends r's token to b (encoding.TextAppender). It does not
// allocate when b has room, for consumers that write a token per row.
func (r ResumePosition) AppendText(b []byte) ([]byte, error) { return r.appendToken(b), nil }

func (r ResumePosition) appendToken(dst []byte) []byte {
	if r.IsZero() {
		return dst
	}
	var buf [1024]byte // a GTID payload is as long as its sets: mostly well under this
	b := r.appendPayload(buf[:0])
	b = binary.LittleEndian.AppendUint32(b, crcIEEE(b))
	dst = append(dst, tokenPrefix...)
	return base64.RawURLEncoding.AppendEncode(dst, b)
}

func (r ResumePosition) appendPayload(b []byte) []byte {
	if r.IsGTID() {
		return r.appendGTIDPayload(b)
	}
	return r.appendFilePayload(b)
}

// TokenWriter appends resume tokens, as ResumePosition.AppendText does,
// faster when each token shares most of its bytes with the one before
// (the positions after each row of one rows event, which differ in a row
// count): it keeps the checksum state and the base64 text of the bytes
// they share, so only the rest is encoded again. A GTID-mode token holds
// the whole executed set: with a long one the shared part is most of the
// token. BenchmarkTokenAppend compares AppendText (file, gtid,
// gtid-12-uuids) with a TokenWriter on the rows of one event (the same
// names with -rows-of-an-event). No allocation once its buffers have
// grown. The zero value is ready; a
// TokenWriter is not safe for concurrent use.
type TokenWriter struct {
	prev    []byte // prev[:k] is the part of the payloads encoded in text and crc
	k       int    // a multiple of 3
	crc     uint32 // crcUpdate state after prev[:k]
	text    []byte // base64 of prev[:k]
	payload []byte // where Append builds a payload (a GTID set can be long)
	last    []byte // the payload of the last Append

	// AppendAfterRows: the event the state is for (its position before
	// its rows), and the payload bytes after prev[:k] up to the row count
	// (head) and after it (tail).
	rowsOf     ResumePosition
	head, tail []byte

	// Append: the position of the last payload built whole (file mode),
	// and where its snapshot state starts in last (0: none kept). The
	// positions of a snapshot's rows differ only in that state.
	built  ResumePosition
	snapAt int
}

// AppendAfterRows appends the token of ev.ResumeAfterRows(n), the same
// bytes, faster than Append for the rows of one event: the part of the
// payload before the row count and the part after it are built once per
// event, not once per row (BenchmarkTokenAppend: file-after-rows against
// file-resume-after-rows-append, and the same in GTID mode).
func (w *TokenWriter) AppendAfterRows(dst []byte, ev *Event, n int) []byte {
	if ev.rowsOf != nil { // a piece of a rows event (see splitRows)
		return w.Append(dst, ev.ResumeAfterRows(n))
	}
	r := &ev.before
	if n <= 0 || n >= RowChanges(ev.BinlogEvent) || r.IsGTID() && r.GTID == "" || !r.IsGTID() && r.Streamed.File == "" {
		return w.Append(dst, ev.ResumeAfterRows(n))
	}
	var buf [164]byte // a file-mode tail holds the transaction's GTID
	b := buf[:0]
	if r.IsGTID() {
		// The row count and the fingerprint change from row to row.
		rows, fp := ev.progressAfterRows(n)
		if w.text == nil || !w.rowsOf.sameGTIDHead(r) {
			w.keepHead(r, r.appendGTIDHead(w.payload[:0]), r.appendGTIDMiddle(w.tail[:0]))
		}
		b = append(b, w.head...)
		b = binary.AppendUvarint(b, uint64(rows))
		b = append(b, w.tail...)
		b = binary.LittleEndian.AppendUint64(b, fp)
		b = appendSnapshot(b, r.snap)
	} else {
		if w.text == nil || !w.rowsOf.samePayloadHead(r) {
			w.keepHead(r, r.appendFileHead(w.payload[:0]), r.appendFileTail(w.tail[:0]))
		}
		b = append(b, w.head...)
		b = binary.AppendUvarint(b, uint64(r.Rows)+uint64(n))
		b = append(b, w.tail...)
	}
	return w.appendWithRest(dst, b)
}

// keepHead keeps, for the rows of r's event, the payload before the row
// count (head: its checksum state and base64 text, and the bytes past the
// last whole base64 group) and the bytes after it that do not change.
func (w *TokenWriter) keepHead(r *ResumePosition, head, tail []byte) {
	w.payload, w.tail, w.last, w.snapAt = head[:0], tail, w.last[:0], 0
	w.keep(head[:len(head)/3*3])
	w.rowsOf = *r
	w.head = append(w.head[:0], head[w.k:]...)
}

// keep makes shared (a whole number of base64 groups) the start of the
// payloads to come: its bytes, its checksum state and its base64 text.
// What AppendAfterRows kept for an event no longer holds.
func (w *TokenWriter) keep(shared []byte) {
	w.rowsOf = ResumePosition{}
	w.prev = append(w.prev[:0], shared...)
	w.k = len(w.prev)
	w.crc = crcUpdate(^uint32(0), shared)
	w.text = base64.RawURLEncoding.AppendEncode(w.text[:0], shared)
}

// appendWithRest appends the token whose payload is the kept start, then
// rest: rest's checksum goes after it (in its spare capacity, when it has
// some).
func (w *TokenWriter) appendWithRest(dst, rest []byte) []byte {
	rest = binary.LittleEndian.AppendUint32(rest, ^crcUpdate(w.crc, rest))
	dst = append(dst, tokenPrefix...)
	dst = append(dst, w.text...)
	return base64.RawURLEncoding.AppendEncode(dst, rest)
}

// Append appends r's token to dst. What it keeps is the start r's
// payload shares with the payload of the Append before: consecutive
// positions differ at one place (a row count, or the boundary key of a
// snapshot's rows, with the tables after it), and the next position
// mostly differs at the same place.
func (w *TokenWriter) Append(dst []byte, r ResumePosition) []byte {
	if r.IsZero() {
		return dst
	}
	var b []byte
	if w.snapAt > 0 && w.built.sameBeforeSnapshot(&r) {
		b = append(w.payload[:0], w.last[:w.snapAt]...)
		b = appendSnapshot(b, r.snap)
	} else if r.IsGTID() {
		b, w.snapAt = r.appendGTIDPayload(w.payload[:0]), 0
	} else {
		b = r.appendFileHead(w.payload[:0])
		b = binary.AppendUvarint(b, uint64(r.Rows))
		b = r.appendFileMiddle(b)
		w.built, w.snapAt = r, len(b)
		b = appendSnapshot(b, r.snap)
	}
	b = slices.Grow(b, 4) // the checksum goes after it
	kept := w.text != nil && len(b) >= w.k && bytes.Equal(b[:w.k], w.prev[:w.k])
	shared := 0
	switch {
	case !kept:
		shared = commonPrefix(b, w.last) / 3 * 3
	case len(b) >= w.k+keepGain && len(w.last) >= w.k:
		// w.last[:w.k] is w.prev[:w.k] (keepHead empties w.last).
		shared = (w.k + commonPrefix(b[w.k:], w.last[w.k:])) / 3 * 3
	}
	// The two buffers change roles: b is the payload the next Append
	// compares with.
	w.payload, w.last = w.last[:0], b
	switch {
	case kept && shared < w.k+keepGain:
	case shared >= keepGain:
		w.keep(b[:shared])
	case !kept:
		// Nothing shared with the token before: keep all but the last
		// 16 bytes (where the row counts are, and a GTID token's
		// fingerprint).
		w.keep(b[:max(len(b)-16, 0)/3*3])
	}
	return w.appendWithRest(dst, b[w.k:])
}

// keepGain is the shared bytes beyond those kept that make Append keep
// again: keeping encodes the shared bytes once more, which pays when the
// tokens after share them too.
const keepGain = 12

// commonPrefix is the length of the start a and b share.
func commonPrefix(a, b []byte) int {
	n := min(len(a), len(b))
	i := 0
	for i+8 <= n && binary.LittleEndian.Uint64(a[i:]) == binary.LittleEndian.Uint64(b[i:]) {
		i += 8
	}
	for i < n && a[i] == b[i] {
		i++
	}
	return i
}

// crcIEEE is crc32.ChecksumIEEE, eight bytes a step (slicing-by-8): the
// library's version makes its argument escape, which would cost an
// allocation per token, and a byte a step would make the checksum a large
// part of each token's cost, paid once per row line by binlog-tail
// (BenchmarkTokenAppend).
func crcIEEE(b []byte) uint32 { return ^crcUpdate(^uint32(0), b) }

// crcUpdate runs the CRC state c (not inverted) over b.
func crcUpdate(c uint32, b []byte) uint32 {
	t := &crcTables
	for len(b) >= 8 {
		c ^= binary.LittleEndian.Uint32(b)
		c = t[7][byte(c)] ^ t[6][byte(c>>8)] ^ t[5][byte(c>>16)] ^ t[4][byte(c>>24)] ^
			t[3][b[4]] ^ t[2][b[5]] ^ t[1][b[6]] ^ t[0][b[7]]
		b = b[8:]
	}
	for _, x := range b {
		c = t[0][byte(c)^x] ^ c>>8
	}
	return c
}

// crcTables[k][x] is the CRC of byte x followed by k zero bytes.
var crcTables = func() (t [8][256]uint32) {
	t[0] = *crc32.IEEETable
	for i := range 256 {
		c := t[0][i]
		for k := 1; k < 8; k++ {
			c = t[0][byte(c)] ^ c>>8
			t[k][i] = c
		}
	}
	return t
}()

func (r ResumePosition) appendFilePayload(b []byte) []byte {
	b = r.appendFileHead(b)
	b = binary.AppendUvarint(b, uint64(r.Rows))
	return r.appendFileTail(b)
}

// samePayloadHead reports whether r's file-mode payload is p's but for
// the row count: every field appendFileHead and appendFileTail read.
func (p *ResumePosition) samePayloadHead(r *ResumePosition) bool {
	return p.sameFileFields(r) && p.snap == r.snap
}

// sameFileFields reports whether r and p, both in file mode, agree on
// every field their file-mode payloads hold but the snapshot's state.
func (p *ResumePosition) sameFileFields(r *ResumePosition) bool {
	return p.Streamed.Offset == r.Streamed.Offset && p.Safe.Offset == r.Safe.Offset && p.Inner == r.Inner &&
		p.InTxn == r.InTxn && p.inRowsStmt == r.inRowsStmt && p.Safe.File == r.Safe.File &&
		p.Streamed.File == r.Streamed.File && p.GTID == r.GTID && p.Rows == r.Rows && !p.IsGTID() && !r.IsGTID()
}

// appendFileHead appends the file-mode payload up to the row count.
func (r ResumePosition) appendFileHead(b []byte) []byte {
	var flags byte
	if r.InTxn {
		flags |= flagInTxn
	}
	if r.Streamed.File != r.Safe.File {
		flags |= flagOtherFile
	}
	if r.GTID != "" {
		flags |= flagGTID
	}
	if r.inRowsStmt {
		flags |= flagRowsStmt
	}
	if r.Inner > 0 {
		flags |= flagInner
	}
	if r.snap != "" {
		flags |= flagSnapshot
	}
	b = append(b, tokenKindFile, flags)
	b = appendString(b, r.Safe.File)
	b = binary.AppendUvarint(b, r.Safe.Offset)
	if flags&flagOtherFile != 0 {
		b = appendString(b, r.Streamed.File)
	}
	return binary.AppendUvarint(b, r.Streamed.Offset)
}

// appendFileTail appends the file-mode payload after the row count.
func (r ResumePosition) appendFileTail(b []byte) []byte {
	return appendSnapshot(r.appendFileMiddle(b), r.snap)
}

// appendFileMiddle appends the file-mode payload between the row count
// and the snapshot's state.
func (r ResumePosition) appendFileMiddle(b []byte) []byte {
	if r.GTID != "" {
		b = appendString(b, r.GTID)
	}
	if r.Inner > 0 {
		b = binary.AppendUvarint(b, uint64(r.Inner))
	}
	return b
}

// sameBeforeSnapshot reports whether r's file-mode payload is p's up to
// the snapshot's state: every field but snap that appendFileHead, the
// row count and appendFileMiddle write, and whether there is a state
// (a flag).
func (p *ResumePosition) sameBeforeSnapshot(r *ResumePosition) bool {
	return p.sameFileFields(r) && (p.snap == "") == (r.snap == "")
}

// appendSnapshot ends a payload with a snapshot's state, when there is one.
func appendSnapshot(b []byte, snap string) []byte {
	if snap == "" {
		return b
	}
	return appendString(b, snap)
}

// GTID-mode payload: kind 2 | flags (flagGTID) | flavor (1 mysql, 2
// mariadb) | executed | [gtid | table maps | rows | statements | other |
// fingerprint (8 bytes LE)] | crc32.
func (r ResumePosition) appendGTIDPayload(b []byte) []byte {
	b = r.appendGTIDHead(b)
	if r.GTID != "" {
		b = binary.AppendUvarint(b, uint64(r.Progress.Rows))
		b = r.appendGTIDMiddle(b)
		b = binary.LittleEndian.AppendUint64(b, r.Progress.Fingerprint)
	}
	return appendSnapshot(b, r.snap)
}

// appendGTIDHead appends the GTID-mode payload up to the row count.
func (r ResumePosition) appendGTIDHead(b []byte) []byte {
	var flags byte
	if r.GTID != "" {
		flags |= flagGTID
	}
	if r.snap != "" {
		flags |= flagSnapshot
	}
	b = append(b, tokenKindGTID, flags, flavorByte(r.Flavor))
	b = appendString(b, r.Executed)
	if r.GTID != "" {
		b = appendString(b, r.GTID)
		b = binary.AppendUvarint(b, uint64(r.Progress.TableMaps))
	}
	return b
}

// appendGTIDMiddle appends the counts between the row count and the
// fingerprint.
func (r ResumePosition) appendGTIDMiddle(b []byte) []byte {
	b = binary.AppendUvarint(b, uint64(r.Progress.Statements))
	return binary.AppendUvarint(b, uint64(r.Progress.Other))
}

// sameGTIDHead reports whether r's GTID-mode payload is p's but for the
// row count and the fingerprint.
func (p *ResumePosition) sameGTIDHead(r *ResumePosition) bool {
	return r.Flavor != "" && p.Flavor == r.Flavor && p.Progress.TableMaps == r.Progress.TableMaps &&
		p.Progress.Statements == r.Progress.Statements && p.Progress.Other == r.Progress.Other &&
		p.GTID == r.GTID && p.Executed == r.Executed && p.snap == r.snap
}

func flavorByte(f string) byte {
	if f == mysql.MariaDBFlavor {
		return 2
	}
	return 1
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// ParseResumePosition decodes a token written by ResumePosition.String. The
// empty string gives the zero ResumePosition. Any other malformed input
// gives a *TokenError (errors.Is(err, ErrInvalidToken)).
func ParseResumePosition(tok string) (ResumePosition, error) {
	if tok == "" {
		return ResumePosition{}, nil
	}
	if len(tok) > maxTokenLen {
		return ResumePosition{}, tokenError(tok, "too long")
	}
	if !strings.HasPrefix(tok, tokenPrefix) {
		if strings.HasPrefix(tok, "bls") {
			return ResumePosition{}, tokenError(tok, "unsupported token version (this build reads bls1)")
		}
		return ResumePosition{}, tokenError(tok, "not a binlogstream token (want prefix \"bls1.\")")
	}
	raw, err := base64.RawURLEncoding.DecodeString(tok[len(tokenPrefix):])
	if err != nil {
		return ResumePosition{}, tokenError(tok, "not base64url")
	}
	if len(raw) < 2+4 {
		return ResumePosition{}, tokenError(tok, "truncated")
	}
	body, sum := raw[:len(raw)-4], binary.LittleEndian.Uint32(raw[len(raw)-4:])
	if crcIEEE(body) != sum {
		return ResumePosition{}, tokenError(tok, "checksum mismatch (corrupt or edited)")
	}
	d := tokenDecoder{tokenbytes.Reader{B: body}}
	kind, flags := d.Byte(), d.Byte()
	if kind != tokenKindFile && kind != tokenKindGTID {
		return ResumePosition{}, tokenError(tok, fmt.Sprintf("unknown position kind %d", kind))
	}
	if flags&^knownFlags != 0 || kind == tokenKindGTID && flags&^(flagGTID|flagSnapshot) != 0 {
		return ResumePosition{}, tokenError(tok, fmt.Sprintf("unknown flags %#x", flags))
	}
	var r ResumePosition
	if kind == tokenKindGTID {
		r = d.gtidPosition(flags)
	} else {
		r = d.filePosition(flags)
	}
	if flags&flagSnapshot != 0 {
		if r.snap = d.String(); r.snap == "" {
			d.Fail("empty snapshot state")
		} else if _, err := snapshot.Parse([]byte(r.snap)); err != nil {
			d.Fail(err.Error())
		}
	}
	if d.Err == "" && len(d.B) != 0 {
		d.Fail("trailing bytes")
	}
	if d.Err != "" {
		return ResumePosition{}, tokenError(tok, d.Err)
	}
	if err := r.validate(); err != nil {
		return ResumePosition{}, tokenError(tok, err.Error())
	}
	return r, nil
}

func (d *tokenDecoder) filePosition(flags byte) ResumePosition {
	var r ResumePosition
	r.InTxn = flags&flagInTxn != 0
	r.inRowsStmt = flags&flagRowsStmt != 0
	r.Safe.File = d.String()
	r.Safe.Offset = d.Uvarint()
	r.Streamed.File = r.Safe.File
	if flags&flagOtherFile != 0 {
		r.Streamed.File = d.String()
	}
	r.Streamed.Offset = d.Uvarint()
	rows := d.Uvarint()
	if rows > math.MaxUint32 {
		d.Fail("row count out of range")
	}
	r.Rows = uint32(rows)
	if flags&flagGTID != 0 {
		r.GTID = d.String()
	}
	if flags&flagInner != 0 {
		inner := d.Uvarint()
		if inner == 0 || inner > math.MaxUint32 {
			d.Fail("inner event count out of range")
		}
		r.Inner = uint32(inner)
	}
	return r
}

func (d *tokenDecoder) gtidPosition(flags byte) ResumePosition {
	var r ResumePosition
	switch d.Byte() {
	case 1:
		r.Flavor = mysql.MySQLFlavor
	case 2:
		r.Flavor = mysql.MariaDBFlavor
	default:
		d.Fail("unknown flavor")
	}
	r.Executed = d.String()
	if flags&flagGTID != 0 {
		r.GTID = d.String()
		var v [4]uint32
		for i := range v {
			n := d.Uvarint()
			if n > math.MaxUint32 {
				d.Fail("count out of range")
			}
			v[i] = uint32(n)
		}
		r.Progress = TxnProgress{TableMaps: v[0], Rows: v[1], Statements: v[2], Other: v[3]}
		if len(d.B) < 8 {
			d.Fail("truncated")
		} else {
			r.Progress.Fingerprint = binary.LittleEndian.Uint64(d.B)
			d.B = d.B[8:]
		}
	}
	return r
}

// validate checks the invariants every token written by this package holds.
func (r ResumePosition) validate() error {
	if r.IsGTID() {
		return r.validateGTID()
	}
	if r.Safe.File == "" || r.Streamed.File == "" {
		return errors.New("empty file name")
	}
	if r.Safe.Compare(r.Streamed) > 0 {
		return fmt.Errorf("safe point %s is after streamed position %s", r.Safe, r.Streamed)
	}
	if r.GTID != "" && !r.InTxn {
		return errors.New("GTID without an open transaction")
	}
	return nil
}

func (r ResumePosition) validateGTID() error {
	if r.Flavor != mysql.MySQLFlavor && r.Flavor != mysql.MariaDBFlavor {
		return fmt.Errorf("flavor %q: want %q or %q", r.Flavor, mysql.MySQLFlavor, mysql.MariaDBFlavor)
	}
	if !r.Safe.IsZero() || !r.Streamed.IsZero() || r.Rows != 0 || r.Inner != 0 || r.InTxn {
		return errors.New("file positions in a GTID-mode position")
	}
	if _, err := mysql.ParseGTIDSet(r.Flavor, r.Executed); err != nil {
		return fmt.Errorf("executed GTID set %q: %v", r.Executed, err)
	}
	if r.GTID != "" {
		if _, err := mysql.ParseGTIDSet(r.Flavor, r.GTID); err != nil || strings.ContainsAny(r.GTID, ",") {
			return fmt.Errorf("in-flight GTID %q is not one GTID", r.GTID)
		}
	} else if r.Progress != (TxnProgress{}) {
		return errors.New("progress without an in-flight transaction")
	}
	return nil
}

// tokenDecoder reads a token's payload.
type tokenDecoder struct{ tokenbytes.Reader }

// MarshalText encodes r as its token, so it round-trips through JSON,
// YAML and flag values.
func (r ResumePosition) MarshalText() ([]byte, error) { return r.appendToken(nil), nil }

// UnmarshalText decodes a token written by MarshalText.
func (r *ResumePosition) UnmarshalText(b []byte) error {
	v, err := ParseResumePosition(string(b))
	if err != nil {
		return err
	}
	*r = v
	return nil
}

// TxnProgress is how much of the in-flight transaction was delivered.
type TxnProgress struct {
	TableMaps  uint32 // Table_map events
	Rows       uint32 // row changes (an update's two images are one change)
	Statements uint32 // Query events other than BEGIN/COMMIT/ROLLBACK
	Other      uint32 // BEGIN, Annotate_rows, Rows_query, Intvar, Rand, User_var
	// Fingerprint hashes, in order, the table and kind of every row change
	// and the text of every statement delivered.
	Fingerprint uint64
}

func (p TxnProgress) reached(q TxnProgress) bool {
	return p.TableMaps >= q.TableMaps && p.Rows >= q.Rows && p.Statements >= q.Statements
}

// SnapshotPending reports whether r records a snapshot with tables still
// to read (or one whose state it cannot read).
func (r ResumePosition) SnapshotPending() bool {
	if r.snap == "" {
		return false
	}
	saved, err := snapshot.Parse([]byte(r.snap))
	if err != nil {
		return true
	}
	for _, t := range saved.Tables {
		if !t.Done {
			return true
		}
	}
	return false
}

// HasSnapshot reports whether r records a snapshot, finished or not: a
// Run started from it with Config.Snapshot continues that snapshot, and
// one started from a position without a snapshot begins a new one.
func (r ResumePosition) HasSnapshot() bool { return r.snap != "" }
