package binlogstream

import "github.com/go-mysql-org/go-mysql/replication"

// Where the event groups of a binlog file end, for the directory source
// (the executed set at the end of a file, the group a GTID dump delivers):
// the GTID text and Query classes of the tracker (tracker.go), which
// needs them too.

// eventGTID is the GTID a group's first event names, "" for others.
func eventGTID(ev *replication.BinlogEvent) string {
	switch e := ev.Event.(type) {
	case *replication.GTIDEvent:
		if ev.Header.EventType == replication.GTID_EVENT {
			return mysqlGTIDString(e)
		}
	case *replication.GtidTaggedLogEvent:
		return mysqlTaggedGTIDString(e)
	case *replication.MariadbGTIDEvent:
		return e.GTID.String()
	}
	return ""
}

// groupTracker finds where event groups end, for the executed set at the
// end of a file.
type groupTracker struct {
	gtid  string // the open group's GTID, "" outside one
	inTxn bool   // BEGIN seen, or a MariaDB group that is not standalone
}

// needs reports whether the event's body matters (else only its type).
func (g *groupTracker) needs(typ replication.EventType) bool {
	switch typ {
	case replication.GTID_EVENT, replication.GTID_TAGGED_LOG_EVENT, replication.MARIADB_GTID_EVENT,
		replication.ANONYMOUS_GTID_EVENT, replication.QUERY_EVENT, replication.MARIADB_QUERY_COMPRESSED_EVENT:
		return true
	}
	return false
}

// other follows an event whose body was not read and returns the GTID of
// the group it completes, "" when none.
func (g *groupTracker) other(typ replication.EventType) string {
	if typ == replication.XID_EVENT || typ == replication.TRANSACTION_PAYLOAD_EVENT {
		return g.end()
	}
	return ""
}

// observe returns the GTID of the group ev completes, "" when none.
func (g *groupTracker) observe(ev *replication.BinlogEvent) string {
	switch e := ev.Event.(type) {
	case *replication.GTIDEvent, *replication.GtidTaggedLogEvent:
		g.gtid, g.inTxn = eventGTID(ev), false
	case *replication.MariadbGTIDEvent:
		g.gtid, g.inTxn = eventGTID(ev), e.Flags&replication.BINLOG_MARIADB_FL_STANDALONE == 0
	case *replication.QueryEvent:
		switch queryKind(e.Query) {
		case queryBegin:
			g.inTxn = true
		case queryEnd:
			return g.end()
		default:
			if !g.inTxn {
				return g.end()
			}
		}
	}
	return ""
}

func (g *groupTracker) end() string {
	done := g.gtid
	g.gtid, g.inTxn = "", false
	return done
}
