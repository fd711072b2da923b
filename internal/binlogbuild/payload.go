package binlogbuild

import (
	"encoding/binary"
	"fmt"
	"strings"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"
	"github.com/klauspost/compress/zstd"
)

// Transaction_payload header fields (binary_log::codecs::binary::
// Transaction_payload in MySQL; go-mysql's OTW_PAYLOAD_* constants).
const (
	payloadEndMark          = replication.OTW_PAYLOAD_HEADER_END_MARK
	payloadSizeField        = replication.OTW_PAYLOAD_SIZE_FIELD
	payloadCompressionField = replication.OTW_PAYLOAD_COMPRESSION_TYPE_FIELD
	payloadUncompressedSize = replication.OTW_PAYLOAD_UNCOMPRESSED_SIZE_FIELD
	payloadZstd             = replication.ZSTD
)

// TransactionPayloadBody is the body of a Transaction_payload event whose
// payload is compressed (zstd) from inner, the concatenated events of one
// transaction. MySQL writes each header field as type, length and value,
// all three as packed (length-encoded) integers, then an end mark; the
// payload follows. Note go-mysql reads type and length as one byte and
// the value as a fixed-length integer of that length, which agrees with
// MySQL only for values below 251: its Size and UncompressedSize are off
// for larger payloads (it does not use them to decode).
func TransactionPayloadBody(inner []byte) []byte {
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1))
	if err != nil {
		panic(err) // only bad options fail
	}
	defer enc.Close()
	payload := enc.EncodeAll(inner, nil)
	field := func(b []byte, typ, v uint64) []byte {
		val := mysql.AppendLengthEncodedInteger(nil, v)
		b = mysql.AppendLengthEncodedInteger(b, typ)
		b = mysql.AppendLengthEncodedInteger(b, uint64(len(val)))
		return append(b, val...)
	}
	b := field(nil, payloadSizeField, uint64(len(payload)))
	b = field(b, payloadCompressionField, payloadZstd)
	b = field(b, payloadUncompressedSize, uint64(len(inner)))
	b = mysql.AppendLengthEncodedInteger(b, payloadEndMark)
	return append(b, payload...)
}

// CompressTransactions rewrites a MySQL binlog the way MySQL 8.0.20+
// writes it with binlog_transaction_compression=ON: every transaction
// that has row events and commits with Xid becomes its GTID event (with
// the transaction length recomputed) followed by one Transaction_payload
// event holding the zstd-compressed other events (BEGIN, Rows_query,
// Table_maps, Rows, Xid), each re-encoded with log_pos 0 and no checksum,
// as they come out of the transaction cache. DDL, empty and rolled-back
// groups stay uncompressed, as MySQL leaves statement-based and
// non-transactional groups.
//
// The index lists the payload as one event (Type TRANSACTION_PAYLOAD_EVENT)
// and drops the inner ones: go-mysql delivers it as one event whose
// TransactionPayloadEvent.Events holds them. Applied to successive Builds
// of one Builder the results still extend each other, so they can be
// appended to a FakeSource or fake primary.
func CompressTransactions(bl *Binlog) (*Binlog, error) {
	if bl.Flavor != MySQL {
		return nil, fmt.Errorf("binlogbuild: Transaction_payload is MySQL only, not %s", bl.Flavor)
	}
	out := &Binlog{Flavor: bl.Flavor, ServerID: bl.ServerID, Checksum: bl.Checksum, Anonymous: bl.Anonymous}
	byFile := map[string][]EventInfo{}
	for _, e := range bl.Events {
		byFile[e.File] = append(byFile[e.File], e)
	}
	crcLen := 0
	if bl.Checksum {
		crcLen = checksumSize
	}
	for _, f := range bl.Files {
		nf := File{Name: f.Name, StartGTIDs: f.StartGTIDs, Data: append([]byte(nil), f.Data[:4]...)}
		add := func(e EventInfo, raw []byte) {
			start := uint32(len(nf.Data))
			e.Index, e.Start, e.End = len(out.Events), start, start+uint32(len(raw))
			nf.Data = append(nf.Data, raw...)
			out.Events = append(out.Events, e)
		}
		// copyEvent moves an event unchanged but for its log_pos (kept 0
		// when the original said 0) and CRC.
		copyEvent := func(e EventInfo) {
			raw := f.Data[e.Start:e.End]
			logPos := uint32(len(nf.Data)) + uint32(len(raw))
			if binary.LittleEndian.Uint32(raw[13:]) == 0 {
				logPos = 0
			}
			crc := bl.Checksum || e.Type == replication.FORMAT_DESCRIPTION_EVENT
			add(e, PatchLogPos(raw, logPos, crc))
		}
		evs := byFile[f.Name]
		for i := 0; i < len(evs); {
			e := evs[i]
			j := i + 1
			for e.Group != 0 && j < len(evs) && evs[j].Group == e.Group {
				j++
			}
			grp := evs[i:j]
			i = j
			if !compressible(grp) {
				for _, g := range grp {
					copyEvent(g)
				}
				continue
			}
			var inner []byte
			var descs []string
			for _, g := range grp[1:] {
				raw := f.Data[g.Start:g.End]
				h := readHeader(raw)
				h.LogPos = 0
				inner = append(inner, EncodeEvent(h, raw[headerSize:len(raw)-crcLen], false)...)
				descs = append(descs, g.Desc)
			}
			gtidRaw := f.Data[grp[0].Start:grp[0].End]
			last := f.Data[grp[len(grp)-1].Start:grp[len(grp)-1].End]
			ph := readHeader(last)
			ph.Type, ph.Flags = replication.TRANSACTION_PAYLOAD_EVENT, 0
			pbody := TransactionPayloadBody(inner)
			psize := uint64(EventSize(pbody, bl.Checksum))

			gh := readHeader(gtidRaw)
			gbody := gtidRaw[headerSize : len(gtidRaw)-crcLen]
			fixed, version := gbody[:49], gbody[len(gbody)-4:] // up to the commit timestamp; server version
			encode := func(trxLen uint64) []byte {
				b := append(append([]byte(nil), fixed...), mysql.AppendLengthEncodedInteger(nil, trxLen)...)
				return append(b, version...)
			}
			trxLen := psize + uint64(EventSize(encode(psize), bl.Checksum))
			for trxLen != psize+uint64(EventSize(encode(trxLen), bl.Checksum)) {
				trxLen = psize + uint64(EventSize(encode(trxLen), bl.Checksum))
			}
			start := uint32(len(nf.Data))
			gbody = encode(trxLen)
			gend := start + EventSize(gbody, bl.Checksum)
			if gh.LogPos != 0 {
				gh.LogPos = gend
			}
			add(grp[0], EncodeEvent(gh, gbody, bl.Checksum))
			if ph.LogPos != 0 {
				ph.LogPos = gend + uint32(psize)
			}
			pe := grp[len(grp)-1]
			pe.Type, pe.MidStatement = replication.TRANSACTION_PAYLOAD_EVENT, false
			pe.Desc = fmt.Sprintf("Transaction_payload zstd [%s]", strings.Join(descs, "; "))
			add(pe, EncodeEvent(ph, pbody, bl.Checksum))
		}
		out.Files = append(out.Files, nf)
	}
	return out, nil
}

// compressible says whether MySQL would compress this event group: a
// GTID event, row events, and an Xid at the end.
func compressible(grp []EventInfo) bool {
	if len(grp) < 3 || grp[0].Group == 0 || grp[len(grp)-1].Type != replication.XID_EVENT {
		return false
	}
	switch grp[0].Type {
	case replication.GTID_EVENT, replication.ANONYMOUS_GTID_EVENT:
	default:
		return false
	}
	for _, e := range grp {
		if e.Type == replication.TABLE_MAP_EVENT {
			return true
		}
	}
	return false
}

// readHeader decodes the fields of a v4 event header EncodeEvent writes.
func readHeader(raw []byte) EventHeader {
	return EventHeader{
		Timestamp: binary.LittleEndian.Uint32(raw[0:]),
		Type:      replication.EventType(raw[4]),
		ServerID:  binary.LittleEndian.Uint32(raw[5:]),
		LogPos:    binary.LittleEndian.Uint32(raw[13:]),
		Flags:     binary.LittleEndian.Uint16(raw[17:]),
	}
}
