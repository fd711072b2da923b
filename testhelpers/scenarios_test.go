package testhelpers_test

import (
	"fmt"

	th "github.com/binlogstream/binlogstream/testhelpers"
)

var (
	users = th.Table{ID: 101, Schema: "app", Name: "users", Columns: []th.Column{
		{Name: "id", Type: th.Int}, {Name: "name", Type: th.Varchar(64)}, {Name: "score", Type: th.BigInt},
	}}
	// orders.note has a 2-byte length prefix (max length >= 256).
	orders = th.Table{ID: 102, Schema: "app", Name: "orders", Columns: []th.Column{
		{Name: "id", Type: th.BigInt}, {Name: "note", Type: th.Varchar(300)},
	}}
)

// scenario is a binlog and every row image written into it, in order.
type scenario struct {
	name string
	bl   *th.Binlog
	rows []th.Row
}

// recorder keeps the rows a script writes so tests can compare them with
// what go-mysql decodes.
type recorder struct{ rows []th.Row }

func (r *recorder) add(rows ...th.Row) []th.Row { r.rows = append(r.rows, rows...); return rows }

func u(id int32, name any, score int64) th.Row { return th.Row{id, name, score} }

// richScript uses every builder feature: DDL, multi-statement and
// multi-table transactions, split statements, NULLs, empty and rolled-back
// transactions, rotations.
func richScript(b *th.Builder) []th.Row {
	r := &recorder{}
	b.DDL("app", "CREATE TABLE users (id INT, name VARCHAR(64), score BIGINT)")
	b.Txn(func(t *th.Txn) {
		t.Insert(users, r.add(u(1, "ann", 10), u(2, nil, -5), u(3, "cid", 1<<40))...)
		t.Update(users, r.add(u(2, nil, -5), u(2, "bob", -5))...)
		t.Delete(users, r.add(u(3, "cid", 1<<40))...)
	})
	b.Txn(func(t *th.Txn) {
		t.MultiTable(
			th.Updated(users, r.add(u(1, "ann", 10), u(1, "ann", 11))...),
			th.Inserted(orders, r.add(th.Row{int64(1), "first"}, th.Row{int64(2), nil})...),
		)
	})
	b.EmptyTxn()
	b.RolledBack(func(t *th.Txn) { t.Insert(orders, r.add(th.Row{int64(3), "gone"})...) })
	b.Rotate()
	b.Txn(func(t *th.Txn) {
		var rows []th.Row
		for i := int64(10); i < 15; i++ {
			rows = append(rows, th.Row{i, fmt.Sprintf("order %d", i)})
		}
		t.Insert(orders, r.add(rows...)...)
	})
	b.DDL("app", "ALTER TABLE orders ADD COLUMN x INT")
	b.Rotate()
	b.Txn(func(t *th.Txn) { t.Delete(users, r.add(u(1, "ann", 11), u(2, "bob", -5))...) })
	return r.rows
}

type variant struct {
	name string
	opts []th.Option
}

// scenarios runs richScript under every builder option of the flavor, and
// adds the Seed001 layout.
func scenarios(f th.Flavor) []scenario {
	variants := []variant{
		{"default", nil},
		{"split", []th.Option{th.MaxRowsPerEvent(2)}},
		{"nochecksum", []th.Option{th.Checksum(false), th.MaxRowsPerEvent(1)}},
		{"zerologpos", []th.Option{th.ZeroLogPos()}},
		{"firstgtid", []th.Option{th.FirstGTID(100), th.ServerID(77), th.FileBase("binlog")}},
	}
	if f == th.MySQL {
		variants = append(variants,
			variant{"anonymous", []th.Option{th.AnonymousGTID()}},
			variant{"rowsquery", []th.Option{th.RowsQuery(), th.ServerUUID("8a94f357-aab4-11df-86ab-c80aa9429444")}})
	} else {
		variants = append(variants, variant{"compressed", []th.Option{th.CompressedRows(), th.Domain(3), th.MaxRowsPerEvent(2)}})
	}
	var out []scenario
	for _, v := range variants {
		b := th.NewBuilder(f, v.opts...)
		rows := richScript(b)
		out = append(out, scenario{name: string(f) + "/" + v.name, bl: b.Build(), rows: rows})
	}
	seed := th.Seed001(f)
	out = append(out, scenario{name: string(f) + "/seed001", bl: seed, rows: nil})
	return out
}

var flavors = []th.Flavor{th.MySQL, th.MariaDB}
