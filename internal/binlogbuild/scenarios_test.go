package binlogbuild_test

import (
	"fmt"

	"github.com/binlogstream/binlogstream/internal/binlogbuild"
)

var (
	users = binlogbuild.Table{ID: 101, Schema: "app", Name: "users", Columns: []binlogbuild.Column{
		{Name: "id", Type: binlogbuild.Int}, {Name: "name", Type: binlogbuild.Varchar(64)}, {Name: "score", Type: binlogbuild.BigInt},
	}}
	// orders.note has a 2-byte length prefix (max length >= 256).
	orders = binlogbuild.Table{ID: 102, Schema: "app", Name: "orders", Columns: []binlogbuild.Column{
		{Name: "id", Type: binlogbuild.BigInt}, {Name: "note", Type: binlogbuild.Varchar(300)},
	}}
)

// scenario is a binlog and every row image written into it, in order.
type scenario struct {
	name string
	bl   *binlogbuild.Binlog
	rows []binlogbuild.Row
}

// recorder keeps the rows a script writes so tests can compare them with
// what go-mysql decodes.
type recorder struct{ rows []binlogbuild.Row }

func (r *recorder) add(rows ...binlogbuild.Row) []binlogbuild.Row {
	r.rows = append(r.rows, rows...)
	return rows
}

func u(id int32, name any, score int64) binlogbuild.Row { return binlogbuild.Row{id, name, score} }

// richScript uses every builder feature: DDL, multi-statement and
// multi-table transactions, split statements, NULLs, empty and rolled-back
// transactions, rotations.
func richScript(b *binlogbuild.Builder) []binlogbuild.Row {
	r := &recorder{}
	b.DDL("app", "CREATE TABLE users (id INT, name VARCHAR(64), score BIGINT)")
	b.Txn(func(t *binlogbuild.Txn) {
		t.Insert(users, r.add(u(1, "ann", 10), u(2, nil, -5), u(3, "cid", 1<<40))...)
		t.Update(users, r.add(u(2, nil, -5), u(2, "bob", -5))...)
		t.Delete(users, r.add(u(3, "cid", 1<<40))...)
	})
	b.Txn(func(t *binlogbuild.Txn) {
		t.MultiTable(
			binlogbuild.Updated(users, r.add(u(1, "ann", 10), u(1, "ann", 11))...),
			binlogbuild.Inserted(orders, r.add(binlogbuild.Row{int64(1), "first"}, binlogbuild.Row{int64(2), nil})...),
		)
	})
	b.EmptyTxn()
	b.RolledBack(func(t *binlogbuild.Txn) { t.Insert(orders, r.add(binlogbuild.Row{int64(3), "gone"})...) })
	b.Rotate()
	b.Txn(func(t *binlogbuild.Txn) {
		var rows []binlogbuild.Row
		for i := int64(10); i < 15; i++ {
			rows = append(rows, binlogbuild.Row{i, fmt.Sprintf("order %d", i)})
		}
		t.Insert(orders, r.add(rows...)...)
	})
	b.DDL("app", "ALTER TABLE orders ADD COLUMN x INT")
	b.Rotate()
	b.Txn(func(t *binlogbuild.Txn) { t.Delete(users, r.add(u(1, "ann", 11), u(2, "bob", -5))...) })
	return r.rows
}

type variant struct {
	name string
	opts []binlogbuild.Option
}

// scenarios runs richScript under every builder option of the flavor, and
// adds the Seed001 layout.
func scenarios(f binlogbuild.Flavor) []scenario {
	variants := []variant{
		{"default", nil},
		{"split", []binlogbuild.Option{binlogbuild.MaxRowsPerEvent(2)}},
		{"nochecksum", []binlogbuild.Option{binlogbuild.Checksum(false), binlogbuild.MaxRowsPerEvent(1)}},
		{"zerologpos", []binlogbuild.Option{binlogbuild.ZeroLogPos()}},
		{"firstgtid", []binlogbuild.Option{binlogbuild.FirstGTID(100), binlogbuild.ServerID(77), binlogbuild.FileBase("binlog")}},
	}
	if f == binlogbuild.MySQL {
		variants = append(variants,
			variant{"anonymous", []binlogbuild.Option{binlogbuild.AnonymousGTID()}},
			variant{"rowsquery", []binlogbuild.Option{binlogbuild.RowsQuery(), binlogbuild.ServerUUID("8a94f357-aab4-11df-86ab-c80aa9429444")}})
	} else {
		variants = append(variants, variant{"compressed", []binlogbuild.Option{binlogbuild.CompressedRows(), binlogbuild.Domain(3), binlogbuild.MaxRowsPerEvent(2)}})
	}
	var out []scenario
	for _, v := range variants {
		b := binlogbuild.NewBuilder(f, v.opts...)
		rows := richScript(b)
		out = append(out, scenario{name: string(f) + "/" + v.name, bl: b.Build(), rows: rows})
	}
	seed := binlogbuild.Seed001(f)
	out = append(out, scenario{name: string(f) + "/seed001", bl: seed, rows: nil})
	return out
}

var flavors = []binlogbuild.Flavor{binlogbuild.MySQL, binlogbuild.MariaDB}
