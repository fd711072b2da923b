package debezium_test

import (
	"encoding/json"
	"testing"

	"github.com/go-mysql-org/go-mysql/replication"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/binlogstream/binlogstream"
	"github.com/binlogstream/binlogstream/debezium"
)

// TestSpatial: GEOMETRY and POINT as Debezium's MySQL connector writes
// them (its Geometry and Point builders, MySqlGeometry.fromBytes): the
// schemas io.debezium.data.geometry.Geometry {wkb, srid} with doc
// "Geometry" and io.debezium.data.geometry.Point {x, y, wkb, srid} with
// doc "Geometry (POINT)", and an unset SRID (0) null.
func TestSpatial(t *testing.T) {
	tbl := &binlogstream.Table{Schema: "app", Name: "g", PrimaryKey: []int{0}, Source: binlogstream.SchemaFromHistory,
		Columns: []binlogstream.Column{col("id", "int", "int", notNull), col("geo", "geometry", "geometry", nil), col("pt", "point", "point", nil)}}
	recs := encode(t, debezium.Options{Schemas: true}, gtidEvent("0-1-5", 100),
		rowsEvent(replication.WRITE_ROWS_EVENTv2, tbl, "0-1-5", 200, []any{int32(1), wkbPoint(0, 1, 2), wkbPoint(4326, 1, 2)}))
	require.Len(t, recs, 1)
	var v struct {
		Schema  connectSchema
		Payload struct{ After map[string]json.RawMessage }
	}
	require.NoError(t, json.Unmarshal(recs[0].Value, &v))
	assert.JSONEq(t, `{"wkb":"AQEAAAAAAAAAAADwPwAAAAAAAABA","srid":null}`, string(v.Payload.After["geo"]))
	assert.JSONEq(t, `{"x":1,"y":2,"wkb":"AQEAAAAAAAAAAADwPwAAAAAAAABA","srid":4326}`, string(v.Payload.After["pt"]))

	var raw struct {
		Schema struct {
			Fields []struct {
				Field  string
				Fields []json.RawMessage
			}
		}
	}
	require.NoError(t, json.Unmarshal(recs[0].Value, &raw))
	require.Equal(t, "after", raw.Schema.Fields[1].Field)
	after := raw.Schema.Fields[1].Fields
	assert.JSONEq(t, `{"type":"struct","fields":[{"type":"bytes","optional":false,"field":"wkb"},{"type":"int32","optional":true,"field":"srid"}],`+
		`"optional":true,"name":"io.debezium.data.geometry.Geometry","version":1,"doc":"Geometry","field":"geo"}`, string(after[1]))
	assert.JSONEq(t, `{"type":"struct","fields":[{"type":"double","optional":false,"field":"x"},{"type":"double","optional":false,"field":"y"},`+
		`{"type":"bytes","optional":true,"field":"wkb"},{"type":"int32","optional":true,"field":"srid"}],`+
		`"optional":true,"name":"io.debezium.data.geometry.Point","version":1,"doc":"Geometry (POINT)","field":"pt"}`, string(after[2]))
}
