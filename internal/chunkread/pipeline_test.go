package chunkread_test

import (
	"context"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/client"
	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/stretchr/testify/require"

	"github.com/binlogstream/binlogstream/internal/chunkread"
	"github.com/binlogstream/binlogstream/internal/schema"
	"github.com/binlogstream/binlogstream/testhelpers/mariadb"
)

// turnProxy forwards connections to a server and counts the client's
// turns: the times the client sends after the server has sent something
// since the client last did, one per round trip the client waits for.
type turnProxy struct {
	ln       net.Listener
	target   string
	mu       sync.Mutex
	answered bool
	turns    int
	served   int // bytes from the server
	// refusePrepare turns each COM_STMT_PREPARE the client sends into
	// COM_SLEEP, which the server refuses as an unknown command.
	refusePrepare bool
}

func startTurnProxy(t *testing.T, target string) *turnProxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p := &turnProxy{ln: ln, target: target}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			go p.copy(s, c, false)
			go p.copy(c, s, true)
		}
	}()
	return p
}

// copy forwards from src to dst; fromServer: what src sends answers the
// client.
func (p *turnProxy) copy(dst, src net.Conn, fromServer bool) {
	defer dst.Close()
	defer src.Close()
	buf := make([]byte, 64<<10)
	var pending []byte // the client's bytes of a packet not yet whole
	for {
		n, err := src.Read(buf)
		out := buf[:n]
		if n > 0 && !fromServer && p.refusePrepare {
			pending = append(pending, buf[:n]...)
			out = nil
			for len(pending) >= 4 {
				size := 4 + (int(pending[0]) | int(pending[1])<<8 | int(pending[2])<<16)
				if len(pending) < size {
					break
				}
				if pending[3] == 0 && size > 4 && pending[4] == mysql.COM_STMT_PREPARE {
					pending[4] = mysql.COM_SLEEP
				}
				out = append(out, pending[:size]...)
				pending = pending[size:]
			}
		}
		if n = len(out); n > 0 {
			p.mu.Lock()
			if fromServer {
				p.served += n
				p.answered = true // before the client can read it
			} else if p.answered {
				p.turns++
				p.answered = false
			}
			p.mu.Unlock()
			if _, werr := dst.Write(out); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// settled returns the bytes the server has sent once no more came for
// 100 ms.
func (p *turnProxy) settled() int {
	last := -1
	for {
		time.Sleep(100 * time.Millisecond)
		p.mu.Lock()
		n := p.served
		p.mu.Unlock()
		if n == last {
			return n
		}
		last = n
	}
}

// connect opens a connection to s as root through the proxy.
func (p *turnProxy) connect(t *testing.T, s *mariadb.Server) *client.Conn {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := client.ConnectWithContext(ctx, p.ln.Addr().String(), mariadb.RootUser, s.Password(mariadb.RootUser), "", 10*time.Second)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Quit() })
	return c
}

// take returns the turns counted since the last take, which is called
// when the client has every answer it waits for: its next send is a
// turn.
func (p *turnProxy) take() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := p.turns
	p.turns, p.answered = 0, true
	return n
}

// TestReadsInOneRoundTrip: on MariaDB a chunk's whole transaction (the
// snapshot, its binlog position, the SELECT prepared and executed,
// COMMIT) is one round trip, where command by command it is five (four
// unplaced), with the same rows at the same position. A read whose
// statement the server refuses returns the server's error, and the
// connection stays in step for the reads after it.
func TestReadsInOneRoundTrip(t *testing.T) {
	mariadb.Require(t)
	s := mariadb.Start(t, mariadb.Options{})
	s.Exec(t, "CREATE DATABASE d", "USE d",
		"CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(20) NOT NULL, d DATETIME(3), x DOUBLE)",
		"INSERT INTO t SELECT seq, CONCAT('v', seq), '2024-01-01' + INTERVAL seq SECOND, seq / 7 FROM seq_1_to_3000")
	cols := []schema.Column{{Name: "id", DataType: "int"}, {Name: "v", DataType: "varchar"},
		{Name: "d", DataType: "datetime"}, {Name: "x", DataType: "double"}}
	tbl, err := chunkread.NewTable("d", "t", cols, []string{"id"}, "PRIMARY")
	require.NoError(t, err)
	p := startTurnProxy(t, s.Addr())
	connect := func(t *testing.T) *client.Conn { return p.connect(t, s) }
	ranges := []chunkread.Range{{Limit: 1000}, {After: []any{int64(1000)}, Limit: 1000},
		{After: []any{int64(2000)}, Through: []any{int64(2500)}}, {After: []any{int64(2500)}}}
	for _, mode := range []chunkread.Mode{chunkread.Snapshot, chunkread.Plain} {
		t.Run(map[chunkread.Mode]string{chunkread.Snapshot: "snapshot", chunkread.Plain: "plain"}[mode], func(t *testing.T) {
			one, err := chunkread.New(connect(t), mode)
			require.NoError(t, err)
			steps, err := chunkread.New(connect(t), mode)
			require.NoError(t, err)
			steps.UseSteps()
			p.take()
			var got []*chunkread.Chunk
			for _, rg := range ranges {
				c, err := one.Read(tbl, rg)
				require.NoError(t, err)
				got = append(got, c)
			}
			require.Equal(t, len(ranges), p.take(), "one round trip a read")
			perRead := map[chunkread.Mode]int{chunkread.Snapshot: 5, chunkread.Plain: 4}[mode]
			rows := 0
			for i, rg := range ranges {
				want, err := steps.Read(tbl, rg)
				require.NoError(t, err)
				require.Equal(t, want.Rows, got[i].Rows)
				require.Equal(t, want.At, got[i].At)
				rows += len(got[i].Rows)
			}
			require.Equal(t, 3000, rows)
			require.Equal(t, perRead*len(ranges), p.take(), "the negative control: command by command")
			if mode == chunkread.Snapshot {
				require.NotEmpty(t, got[0].At.File)
			}

			// A statement the server refuses, then a read on the same
			// connection.
			gone, err := chunkread.NewTable("d", "gone", cols, []string{"id"}, "PRIMARY")
			require.NoError(t, err)
			_, err = one.Read(gone, chunkread.Range{})
			var me *mysql.MyError
			require.ErrorAs(t, err, &me)
			require.Equal(t, uint16(mysql.ER_NO_SUCH_TABLE), me.Code)
			bad, err := chunkread.NewTable("d", "t", append(cols[:1:1], schema.Column{Name: "nope", DataType: "int"}), []string{"id"}, "PRIMARY")
			require.NoError(t, err)
			_, err = one.Read(bad, chunkread.Range{})
			require.ErrorAs(t, err, &me)
			require.Equal(t, uint16(mysql.ER_BAD_FIELD_ERROR), me.Code)
			c, err := one.Read(tbl, ranges[1])
			require.NoError(t, err)
			require.Equal(t, got[1].Rows, c.Rows)
			// Each read closes the statement the one before prepared: the
			// four good reads' first three by the next good read and
			// the fourth by the refused one after it; the last stays
			// open until the next read or the connection's end.
			rs, err := one.Conn().Execute("SHOW SESSION STATUS LIKE 'Com_stmt_close'")
			require.NoError(t, err)
			closed, err := rs.GetString(0, 1)
			require.NoError(t, err)
			require.Equal(t, "4", closed)
		})
	}
}

// TestMariaDBSince: reads go in one round trip on MariaDB 10.2 and later
// only, whatever the greeting's form.
func TestMariaDBSince(t *testing.T) {
	for v, want := range map[string]bool{
		"10.11.19-MariaDB-0+deb12u1-log":       true,
		"5.5.5-10.11.19-MariaDB-0+deb12u1-log": true,
		"10.2.0-MariaDB":                       true,
		"11.4.2-MariaDB":                       true,
		"10.1.48-MariaDB":                      false,
		"5.5.5-10.1.48-MariaDB":                false,
		"8.0.36":                               false,
		"8.4.0-commercial":                     false,
		"5.7.44-log":                           false,
	} {
		require.Equal(t, want, chunkread.MariaDBSince(v, "10.2.0"), v)
	}
}
