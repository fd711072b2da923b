// Package binlogstream streams a MySQL or MariaDB binary log and can be
// stopped, crashed or reconnected at any moment and resumed with every event
// delivered exactly once.
package binlogstream
