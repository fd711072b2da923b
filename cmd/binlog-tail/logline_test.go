package main

import (
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// parseLogLine parses a line of logrus's text format (key=value pairs, a
// value bare or Go-quoted); ok is false for anything else, or for a line
// without level and msg.
func parseLogLine(line string) (fields map[string]string, ok bool) {
	fields = map[string]string{}
	for rest := line; rest != ""; {
		key, after, found := strings.Cut(rest, "=")
		if !found || key == "" || strings.ContainsAny(key, " \"") {
			return nil, false
		}
		var value string
		if strings.HasPrefix(after, `"`) {
			q, err := strconv.QuotedPrefix(after)
			if err != nil {
				return nil, false
			}
			value, _ = strconv.Unquote(q)
			after = after[len(q):]
		} else {
			value, after, _ = strings.Cut(after, " ")
			after = " " + after
		}
		if _, dup := fields[key]; dup {
			return nil, false
		}
		fields[key] = value
		if after = strings.TrimPrefix(after, " "); after == "" {
			break
		}
		rest = after
	}
	_, level := fields["level"]
	_, msg := fields["msg"]
	return fields, level && msg
}

// TestParseLogLine: logrus lines parse, with quoted values; the command's
// plain lines do not.
func TestParseLogLine(t *testing.T) {
	f, ok := parseLogLine(`level=info msg=progress at="gtid 0-1-5 + inside 0-1-6" lag=0s rows=3`)
	assert.True(t, ok)
	assert.Equal(t, map[string]string{"level": "info", "msg": "progress", "at": "gtid 0-1-5 + inside 0-1-6", "lag": "0s", "rows": "3"}, f)
	f, ok = parseLogLine(`level=warning msg="a \"quoted\" x=1"`)
	assert.True(t, ok)
	assert.Equal(t, `a "quoted" x=1`, f["msg"])
	for _, l := range []string{
		"binlog-tail: at mysql-bin.000001:4, 0 rows (0 rows/s), lag 0s",
		"binlog-tail: connect: refused",
		"rows=3",
		`level=info msg="unterminated`,
		"",
	} {
		_, ok := parseLogLine(l)
		assert.False(t, ok, l)
	}
}
