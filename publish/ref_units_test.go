package publish

import "github.com/nats-io/nats.go"

// refUnits is the tests' reference for units and cutUnits: the whole
// transaction cut into batches of max at once, then the stored units and
// the stored head of the next dropped (the units stay where they were
// cut, so a rerun cuts the same ones).
func refUnits(txn []message, from []byte, max, skip int) [][]*nats.Msg {
	if max < 1 {
		max = 1
	}
	mk := marker{n: len(txn), from: string(from)}
	if len(txn) > max {
		mk.id = MsgID(txn[0].token)
	}
	var out [][]*nats.Msg
	var cur []*nats.Msg
	for i, m := range txn {
		cur = append(cur, mk.msg(m, i))
		if len(cur) == max || i == len(txn)-1 {
			out = append(out, cur)
			cur = nil
		}
	}
	for skip > 0 && len(out) > 0 {
		if skip >= len(out[0]) {
			skip -= len(out[0])
			out = out[1:]
			continue
		}
		out[0] = out[0][skip:]
		skip = 0
	}
	return out
}
