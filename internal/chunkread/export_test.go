package chunkread

// UseText makes r read chunks in the text protocol, to compare the two.
func (r *Reader) UseText() { r.text = true }

// UseSteps makes r read chunks command by command, never in one round
// trip, to compare the two.
func (r *Reader) UseSteps() { r.steps = true }

// MariaDBSince is mariaDBSince, for its test.
var MariaDBSince = mariaDBSince
