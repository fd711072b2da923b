// Package sqlconn ends go-mysql client connections the way a server
// expects a client to leave.
package sqlconn

import (
	"time"

	"github.com/go-mysql-org/go-mysql/client"
)

// quitTimeout bounds the COM_QUIT write of a connection that no longer
// takes it.
const quitTimeout = time.Second

// Close ends c with COM_QUIT, so the server counts an orderly disconnect,
// not an aborted client (Aborted_clients, and an "Aborted connection"
// warning in its error log for each). A connection that cannot take it
// within a second is closed as it is.
func Close(c *client.Conn) error {
	_ = c.SetDeadline(time.Now().Add(quitTimeout))
	if err := c.Quit(); err != nil {
		return c.Close()
	}
	return nil
}
