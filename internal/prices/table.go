package prices

import (
	"bytes"
	_ "embed"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"

	"berth.io/berth/api/v1alpha1"
	"berth.io/berth/internal/problem"
)

// Cloud is a provider whose instance types the price table prices.
type Cloud string

const (
	AWS   Cloud = "aws"
	Azure Cloud = "azure"
	GCP   Cloud = "gcp"
)

// Clouds lists the clouds in the order people read them.
func Clouds() []Cloud { return []Cloud{AWS, Azure, GCP} }

// ParseCloud reads a cloud's name as typed on the command line.
func ParseCloud(s string) (Cloud, error) {
	for _, c := range Clouds() {
		if strings.EqualFold(s, string(c)) {
			return c, nil
		}
	}
	return "", problem.Errorf("use aws, azure or gcp", "%q is not a cloud berth prices", s)
}

// Header is the price table's CSV header, exactly.
const Header = "cloud,type,region,onDemand,spot,source,date"

const (
	colCloud = iota
	colType
	colRegion
	colOnDemand
	colSpot
	colSource
	colDate
	numColumns
)

// Row is one instance type's price.
type Row struct {
	Cloud Cloud `json:"cloud"`
	// Type is the cloud's name for the instance type ("g6.8xlarge").
	Type string `json:"type"`
	// Region is where the price holds ("us-east-1").
	Region string `json:"region"`
	// OnDemand is an on-demand node-hour.
	OnDemand v1alpha1.Dollars `json:"onDemand"`
	// SpotDiscount is the typical share taken off OnDemand on spot, in
	// whole percent (60 for 60%); zero when the row gives a spot price
	// or none.
	SpotDiscount int `json:"spotDiscount,omitempty"`
	// SpotPrice is a spot node-hour, when the row gives one as a price.
	SpotPrice v1alpha1.Dollars `json:"spotPrice,omitempty"`
	// Source is the cloud's public pricing page.
	Source string `json:"source"`
	// Date says when the price was known ("2024 list price").
	Date string `json:"date"`
	// File and Line are where the row was read from.
	File string `json:"file,omitempty"`
	Line int    `json:"line,omitempty"`
}

// Spot is a spot node-hour: SpotPrice, else OnDemand less SpotDiscount
// (to the millionth of a dollar). It is false when the row knows no spot
// price.
func (r Row) Spot() (v1alpha1.Dollars, bool) {
	switch {
	case r.SpotPrice > 0:
		return r.SpotPrice, true
	case r.SpotDiscount > 0:
		return v1alpha1.Dollars((int64(r.OnDemand)*int64(100-r.SpotDiscount) + 50) / 100), true
	}
	return 0, false
}

// String names the row and where its price comes from, for the report:
// "aws g6.8xlarge in us-east-1, 2024 list price (https://...)".
func (r Row) String() string {
	return fmt.Sprintf("%s %s in %s, %s (%s)", r.Cloud, r.Type, r.Region, r.Date, r.Source)
}

// Table is a price table: one row per instance type.
type Table struct {
	rows   []Row
	byType map[string]int
}

//go:embed prices.csv
var shippedCSV []byte

// shippedFile names the shipped table in a row's File.
const shippedFile = "berth's price table"

var shipped = sync.OnceValue(func() *Table {
	t, ps := ReadTable(shippedFile, shippedCSV)
	if len(ps) > 0 {
		panic(ps.Error()) // a test reads it
	}
	return t
})

// Shipped is the price table berth ships (prices.csv): list prices as of
// each row's date, not fetched, for the clouds' common CPU and GPU types.
func Shipped() *Table { return shipped() }

// Load is the shipped table with the rows of the file at path (the
// table's format) in place of the shipped rows of the same type. An
// empty path is the shipped table alone.
func Load(path string) (*Table, error) {
	if path == "" {
		return Shipped(), nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, problem.Errorf("give the path of a price table (see docs/reference/prices.md)", "reading prices: %w", err)
	}
	own, ps := ReadTable(path, data)
	if len(ps) > 0 {
		return nil, ps
	}
	return Shipped().With(own), nil
}

// ReadTable reads a price table in CSV: comment lines starting with #,
// the header exactly, then a row per instance type. Every bad row is a
// problem at FILE:LINE with its fix.
func ReadTable(file string, data []byte) (*Table, problem.List) {
	r := csv.NewReader(bytes.NewReader(data))
	r.Comment = '#'
	r.FieldsPerRecord = -1
	header, err := r.Read()
	if err != nil {
		return nil, problem.List{problem.FromCSV(file, err, Header)}
	}
	if got := strings.Join(header, ","); got != Header {
		line, _ := r.FieldPos(0)
		return nil, problem.List{{File: file, Line: line, Message: fmt.Sprintf("the header is %q", got), Fix: "write the header exactly: " + Header}}
	}
	t := &Table{byType: map[string]int{}}
	var ps problem.List
	for {
		record, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			// The reader cannot say where the next row starts.
			return nil, append(ps, problem.FromCSV(file, err, Header))
		}
		line, _ := r.FieldPos(0)
		bad := func(col int, message, fix string) {
			l, _ := r.FieldPos(col)
			ps = append(ps, problem.Problem{File: file, Line: l, Field: strings.Split(Header, ",")[col], Message: message, Fix: fix})
		}
		if len(record) != numColumns {
			ps = append(ps, problem.Problem{File: file, Line: line, Message: fmt.Sprintf("the row has %d columns, the header %d", len(record), numColumns), Fix: "write every column, an empty spot too: " + Header})
			continue
		}
		row, ok := readRow(record, bad)
		row.File, row.Line = file, line
		if !ok {
			continue
		}
		if i, dup := t.byType[row.Type]; dup {
			bad(colType, fmt.Sprintf("%s appears twice (first at line %d)", row.Type, t.rows[i].Line), "keep one row per instance type")
			continue
		}
		t.byType[row.Type] = len(t.rows)
		t.rows = append(t.rows, row)
	}
	if len(ps) > 0 {
		return nil, ps
	}
	if len(t.rows) == 0 {
		return nil, problem.List{{File: file, Message: "the price table has no rows", Fix: "write a row per instance type under the header, like aws,g6.8xlarge,us-east-1,2.0144,60%,https://aws.amazon.com/ec2/pricing/on-demand/,2024 list price"}}
	}
	return t, nil
}

// readRow reads one record's columns, calling bad for each one that is
// wrong.
func readRow(record []string, bad func(col int, message, fix string)) (Row, bool) {
	ok := true
	fail := func(col int, message, fix string) {
		bad(col, message, fix)
		ok = false
	}
	for i := range record {
		record[i] = strings.TrimSpace(record[i])
	}
	row := Row{Type: record[colType], Region: record[colRegion], Source: record[colSource], Date: record[colDate]}
	if c, err := ParseCloud(record[colCloud]); err != nil {
		fail(colCloud, fmt.Sprintf("%q is not aws, azure or gcp", record[colCloud]), "write the cloud as aws, azure or gcp")
	} else {
		row.Cloud = c
	}
	for _, col := range []struct {
		i    int
		what string
		fix  string
	}{{colType, "the instance type", "write the cloud's name for it, like g6.8xlarge"}, {colRegion, "the region", "write the region the price holds in, like us-east-1"}, {colSource, "the source", "write the pricing page the price was read from"}, {colDate, "the date", `write when the price was read, like 2025-06-01 or "2024 list price"`}} {
		if record[col.i] == "" {
			fail(col.i, col.what+" is empty", col.fix)
		}
	}
	if d, err := v1alpha1.ParseDollars(record[colOnDemand]); err != nil || d == 0 {
		fail(colOnDemand, fmt.Sprintf("%q is not a price greater than zero", record[colOnDemand]), `write US dollars per node-hour as a decimal, like 2.0144`)
	} else {
		row.OnDemand = d
	}
	switch spot := record[colSpot]; {
	case spot == "":
	case strings.HasSuffix(spot, "%"):
		n, err := strconv.Atoi(strings.TrimSuffix(spot, "%"))
		if err != nil || n <= 0 || n >= 100 {
			fail(colSpot, fmt.Sprintf("%q is not a discount from 1%% to 99%%", spot), "write the spot discount in whole percent, like 60%, or a spot price, like 0.81")
			break
		}
		row.SpotDiscount = n
	default:
		d, err := v1alpha1.ParseDollars(spot)
		if err != nil || d == 0 {
			fail(colSpot, fmt.Sprintf("%q is neither a discount nor a spot price", spot), "write a discount in whole percent, like 60%, or a spot price in US dollars, like 0.81, or leave it empty")
			break
		}
		row.SpotPrice = d
	}
	return row, ok
}

// Rows are the table's rows in the order they were read.
func (t *Table) Rows() []Row { return append([]Row(nil), t.rows...) }

// Find is the row for an instance type.
func (t *Table) Find(typ string) (Row, bool) {
	i, ok := t.byType[typ]
	if !ok {
		return Row{}, false
	}
	return t.rows[i], true
}

// With is t with over's rows in place of t's rows of the same type, and
// over's other rows after t's.
func (t *Table) With(over *Table) *Table {
	out := &Table{rows: append([]Row(nil), t.rows...), byType: map[string]int{}}
	for typ, i := range t.byType {
		out.byType[typ] = i
	}
	for _, r := range over.rows {
		if i, ok := out.byType[r.Type]; ok {
			out.rows[i] = r
			continue
		}
		out.byType[r.Type] = len(out.rows)
		out.rows = append(out.rows, r)
	}
	return out
}
