package binlogbuild

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"hash/crc32"
	"strings"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"
)

// go-mysql can decode binlog events but not write them. The functions in this
// file write real v4 events, byte for byte as MySQL 8.0 and MariaDB 10.11
// lay them out, so tests can hand them to go-mysql's own parser.

// Flavor is the server dialect of a binlog. Its values are go-mysql's flavor
// names, so string(f) can be passed to BinlogParser.SetFlavor.
type Flavor string

// The two dialects the encoder writes.
const (
	MySQL   Flavor = mysql.MySQLFlavor
	MariaDB Flavor = mysql.MariaDBFlavor
)

// Header flags and event constants the encoder and fake source use.
const (
	// FlagArtificial marks events the server made up for the dump (fake
	// Rotate, fake Gtid_list, heartbeats).
	FlagArtificial = replication.LOG_EVENT_ARTIFICIAL_F
	// StmtEndFlag is the Rows event flag that ends a statement; go-mysql
	// drops its table maps when it sees it.
	StmtEndFlag uint16 = replication.RowsEventStmtEndFlag

	headerSize   = replication.EventHeaderSize
	checksumSize = replication.BinlogChecksumLength

	// MariaDB GTID event flags (FL_* in MariaDB's log_event.h).
	mariaFlStandalone    = replication.BINLOG_MARIADB_FL_STANDALONE
	mariaFlTransactional = replication.BINLOG_MARIADB_FL_TRANSACTIONAL
	mariaFlAllowParallel = replication.BINLOG_MARIADB_FL_ALLOW_PARALLEL
	mariaFlDDL           = replication.BINLOG_MARIADB_FL_DDL
)

// BinlogMagic is the 4-byte header of every binlog file.
var BinlogMagic = []byte{0xfe, 'b', 'i', 'n'}

// EventHeader is the 19-byte v4 header. EventSize is computed by EncodeEvent.
type EventHeader struct {
	Timestamp uint32
	Type      replication.EventType
	ServerID  uint32
	// LogPos is the END offset of the event in its file (0 for artificial
	// events and, on MariaDB 11.4+, possibly for every event).
	LogPos uint32
	Flags  uint16
}

// EncodeEvent returns header, body and, when crc is set, the CRC32 trailer
// computed over header and body as the server writes it.
func EncodeEvent(h EventHeader, body []byte, crc bool) []byte {
	size := headerSize + len(body)
	if crc {
		size += checksumSize
	}
	b := make([]byte, headerSize, size)
	binary.LittleEndian.PutUint32(b[0:], h.Timestamp)
	b[4] = byte(h.Type)
	binary.LittleEndian.PutUint32(b[5:], h.ServerID)
	binary.LittleEndian.PutUint32(b[9:], uint32(size))
	binary.LittleEndian.PutUint32(b[13:], h.LogPos)
	binary.LittleEndian.PutUint16(b[17:], h.Flags)
	b = append(b, body...)
	if crc {
		b = binary.LittleEndian.AppendUint32(b, crc32.ChecksumIEEE(b))
	}
	return b
}

// EventSize is the size EncodeEvent gives an event with this body.
func EventSize(body []byte, crc bool) uint32 {
	n := headerSize + len(body)
	if crc {
		n += checksumSize
	}
	return uint32(n)
}

// PatchLogPos returns a copy of raw with a new log_pos, the CRC trailer
// recomputed when crc is set. A server does this to the Format_description
// it sends for a dump that starts past offset 4.
func PatchLogPos(raw []byte, logPos uint32, crc bool) []byte {
	b := bytes.Clone(raw)
	binary.LittleEndian.PutUint32(b[13:], logPos)
	if crc {
		n := len(b) - checksumSize
		binary.LittleEndian.PutUint32(b[n:], crc32.ChecksumIEEE(b[:n]))
	}
	return b
}

// FakeRotate is the artificial Rotate a server sends first on every dump
// and before each next file: timestamp 0, log_pos 0, LOG_EVENT_ARTIFICIAL_F.
// The very first one of a dump goes before any Format_description and so
// without CRC (crc false); later ones carry the CRC the binlog uses.
func FakeRotate(serverID uint32, file string, pos uint64, crc bool) []byte {
	return EncodeEvent(EventHeader{Type: replication.ROTATE_EVENT, ServerID: serverID, Flags: FlagArtificial},
		RotateBody(pos, file), crc)
}

// postHeaderLengths is the FDE's table of post-header lengths, indexed by
// event type - 1. go-mysql reads two entries: TABLE_MAP and the Rows types;
// 6 there would mean 4-byte table ids, so they must be 8 (v1) and 10 (v2).
func postHeaderLengths(f Flavor) []byte {
	n := 41 // MySQL 8.0: types 1..41 (HEARTBEAT_LOG_EVENT_V2).
	if f == MariaDB {
		n = 171 // MariaDB 10.x: types 1..171 (compressed rows events).
	}
	l := make([]byte, n)
	set := func(t replication.EventType, v byte) {
		if int(t) <= n {
			l[t-1] = v
		}
	}
	set(replication.START_EVENT_V3, 56)
	set(replication.QUERY_EVENT, 13)
	set(replication.ROTATE_EVENT, 8)
	set(replication.LOAD_EVENT, 18)
	set(replication.CREATE_FILE_EVENT, 4)
	set(replication.APPEND_BLOCK_EVENT, 4)
	set(replication.EXEC_LOAD_EVENT, 4)
	set(replication.DELETE_FILE_EVENT, 4)
	set(replication.NEW_LOAD_EVENT, 18)
	set(replication.FORMAT_DESCRIPTION_EVENT, byte(56+1+n))
	set(replication.BEGIN_LOAD_QUERY_EVENT, 4)
	set(replication.EXECUTE_LOAD_QUERY_EVENT, 26)
	set(replication.TABLE_MAP_EVENT, 8)
	for t := replication.WRITE_ROWS_EVENTv1; t <= replication.DELETE_ROWS_EVENTv1; t++ {
		set(t, 8)
	}
	set(replication.INCIDENT_EVENT, 2)
	for t := replication.WRITE_ROWS_EVENTv2; t <= replication.DELETE_ROWS_EVENTv2; t++ {
		set(t, 10)
	}
	set(replication.GTID_EVENT, 42)
	set(replication.ANONYMOUS_GTID_EVENT, 42)
	set(replication.TRANSACTION_CONTEXT_EVENT, 18)
	set(replication.VIEW_CHANGE_EVENT, 52)
	set(replication.PARTIAL_UPDATE_ROWS_EVENT, 10)
	set(replication.MARIADB_BINLOG_CHECKPOINT_EVENT, 4)
	set(replication.MARIADB_GTID_EVENT, 19)
	set(replication.MARIADB_GTID_LIST_EVENT, 4)
	set(replication.MARIADB_START_ENCRYPTION_EVENT, 0)
	set(replication.MARIADB_QUERY_COMPRESSED_EVENT, 13)
	for t := replication.MARIADB_WRITE_ROWS_COMPRESSED_EVENT_V1; t <= replication.MARIADB_DELETE_ROWS_COMPRESSED_EVENT_V1; t++ {
		set(t, 8)
	}
	return l
}

// ServerVersion is the version string the encoder writes into the FDE;
// go-mysql looks for "MariaDB" in it to pick MariaDB's checksum rules.
func ServerVersion(f Flavor) string {
	if f == MariaDB {
		return "10.11.6-MariaDB-log"
	}
	return "8.0.36"
}

// FormatDescriptionBody is the FDE body up to and including the checksum
// algorithm byte. Encode it with crc true whatever the algorithm: a
// checksum-aware server always ends its FDE with a CRC field.
func FormatDescriptionBody(f Flavor, created uint32, checksum bool) []byte {
	b := binary.LittleEndian.AppendUint16(nil, 4)
	ver := make([]byte, 50)
	copy(ver, ServerVersion(f))
	b = append(b, ver...)
	b = binary.LittleEndian.AppendUint32(b, created)
	b = append(b, headerSize)
	b = append(b, postHeaderLengths(f)...)
	alg := replication.BINLOG_CHECKSUM_ALG_OFF
	if checksum {
		alg = replication.BINLOG_CHECKSUM_ALG_CRC32
	}
	return append(b, byte(alg))
}

// RotateBody names the next file and the position to read it from.
func RotateBody(pos uint64, next string) []byte {
	return append(binary.LittleEndian.AppendUint64(nil, pos), next...)
}

// QueryBody is a Query event (BEGIN, COMMIT, ROLLBACK, DDL) with no status
// variables.
func QueryBody(threadID uint32, schema, query string) []byte {
	b := binary.LittleEndian.AppendUint32(nil, threadID)
	b = binary.LittleEndian.AppendUint32(b, 0) // execution time
	b = append(b, byte(len(schema)))
	b = binary.LittleEndian.AppendUint16(b, 0) // error code
	b = binary.LittleEndian.AppendUint16(b, 0) // status vars length
	b = append(b, schema...)
	b = append(b, 0)
	return append(b, query...)
}

// XIDBody is the commit of a transactional event group.
func XIDBody(xid uint64) []byte { return binary.LittleEndian.AppendUint64(nil, xid) }

// MySQLGTID describes a MySQL Gtid_log_event (or Anonymous_gtid when SID
// is all zero and the event type is ANONYMOUS_GTID_EVENT).
type MySQLGTID struct {
	SID            [16]byte
	GNO            int64
	LastCommitted  int64
	SequenceNumber int64
	// CommitMicros is the immediate (= original) commit timestamp.
	CommitMicros uint64
	// TransactionLength is the byte length of the event group, this event
	// included.
	TransactionLength uint64
	ServerVersion     uint32
}

// MySQLGTIDBody encodes g in the 8.0 layout go-mysql decodes fully.
func MySQLGTIDBody(g MySQLGTID) []byte {
	b := []byte{1} // commit flag
	b = append(b, g.SID[:]...)
	b = binary.LittleEndian.AppendUint64(b, uint64(g.GNO))
	b = append(b, replication.LogicalTimestampTypeCode)
	b = binary.LittleEndian.AppendUint64(b, uint64(g.LastCommitted))
	b = binary.LittleEndian.AppendUint64(b, uint64(g.SequenceNumber))
	var ts [8]byte
	binary.LittleEndian.PutUint64(ts[:], g.CommitMicros&^(1<<55)) // bit 55 clear: original == immediate
	b = append(b, ts[:7]...)
	b = mysql.AppendLengthEncodedInteger(b, g.TransactionLength)
	return binary.LittleEndian.AppendUint32(b, g.ServerVersion) // bit 31 clear: original == immediate
}

// mysqlGTIDBodyLen is len(MySQLGTIDBody(g)) for a given transaction length.
func mysqlGTIDBodyLen(trxLen uint64) int {
	return 42 + 7 + len(mysql.AppendLengthEncodedInteger(nil, trxLen)) + 4
}

// ParseSID turns "3e11fa47-71ca-11e1-9e33-c80aa9429562" into its 16 bytes.
func ParseSID(s string) ([16]byte, error) {
	var sid [16]byte
	raw, err := hex.DecodeString(strings.ReplaceAll(s, "-", ""))
	if err != nil || len(raw) != 16 {
		return sid, fmt.Errorf("binlogbuild: bad server uuid %q", s)
	}
	copy(sid[:], raw)
	return sid, nil
}

// PreviousGTIDsBody encodes a MySQL GTID set string ("" for none) the way
// Previous_gtids_log_event stores it.
func PreviousGTIDsBody(set string) ([]byte, error) {
	s, err := mysql.ParseMysqlGTIDSet(set)
	if err != nil {
		return nil, err
	}
	return s.Encode(), nil
}

// MariaDBGTIDBody is a MariaDB GTID event: seq_no, domain, flags and six
// bytes of padding (no group commit id).
func MariaDBGTIDBody(seq uint64, domain uint32, flags byte) []byte {
	b := binary.LittleEndian.AppendUint64(nil, seq)
	b = binary.LittleEndian.AppendUint32(b, domain)
	b = append(b, flags)
	return append(b, make([]byte, 6)...)
}

// GTIDListBody is a MariaDB Gtid_list event: the last GTID of each domain
// logged before this point.
func GTIDListBody(gtids []mysql.MariadbGTID) []byte {
	b := binary.LittleEndian.AppendUint32(nil, uint32(len(gtids)))
	for _, g := range gtids {
		b = binary.LittleEndian.AppendUint32(b, g.DomainID)
		b = binary.LittleEndian.AppendUint32(b, g.ServerID)
		b = binary.LittleEndian.AppendUint64(b, g.SequenceNumber)
	}
	return b
}

// BinlogCheckpointBody names the oldest binlog file MariaDB still needs for
// crash recovery.
func BinlogCheckpointBody(file string) []byte {
	return append(binary.LittleEndian.AppendUint32(nil, uint32(len(file))), file...)
}

// RowsQueryBody is MySQL's Rows_query event (binlog_rows_query_log_events):
// a length byte (truncated, ignored by readers) and the statement text.
func RowsQueryBody(query string) []byte {
	return append([]byte{byte(min(len(query), 255))}, query...)
}

// HeartbeatBody is a HEARTBEAT_EVENT (v1): the current file name. Its
// header log_pos carries the offset.
func HeartbeatBody(file string) []byte { return []byte(file) }

// HeartbeatV2Body is a HEARTBEAT_LOG_EVENT_V2: file name and offset fields.
func HeartbeatV2Body(file string, pos uint64) []byte {
	b := []byte{replication.OTW_HB_LOG_FILENAME_FIELD, byte(len(file))}
	b = append(b, file...)
	p := mysql.AppendLengthEncodedInteger(nil, pos)
	b = append(b, replication.OTW_HB_LOG_POSITION_FIELD, byte(len(p)))
	b = append(b, p...)
	return append(b, replication.OTW_HB_HEADER_END_MARK)
}

// CompressMariaDB compresses rows as MariaDB's compressed rows events hold
// them, in the format mysql.DecompressMariadbData reads: a
// byte 0x80|n, the uncompressed length in n big-endian bytes, zlib data.
func CompressMariaDB(data []byte) []byte {
	b := []byte{0x80 | 4}
	b = binary.BigEndian.AppendUint32(b, uint32(len(data)))
	var buf bytes.Buffer
	w := zlib.NewWriter(&buf)
	_, _ = w.Write(data) // writes to a bytes.Buffer do not fail
	_ = w.Close()
	return append(b, buf.Bytes()...)
}
