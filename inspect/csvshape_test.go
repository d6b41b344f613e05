package inspect

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// TestCSVByShape: text that declares no MIME type (or text/plain) and is
// shaped as a table, a header and a field count that holds over its first
// lines, gets the CSV summary: columns and rows, as text/csv does.
func TestCSVByShape(t *testing.T) {
	var export strings.Builder
	export.WriteString("order_id,sku,qty,price,note\n")
	for i := range 30000 {
		fmt.Fprintf(&export, "%d,SKU-%05d,%d,%d.99,\"gift, wrapped\"\n", i, i%977, i%7+1, i%50)
	}
	cases := []struct {
		name, mime, in string
		format         string
		rows           int64
		columns        []string
	}{
		{"export without a MIME type", "", export.String(), "csv", 30000, []string{"order_id", "sku", "qty", "price", "note"}},
		{"export as text/plain", "text/plain; charset=utf-8", export.String(), "csv", 30000, []string{"order_id", "sku", "qty", "price", "note"}},
		{"tsv", "", "name\tcity\tvisits\nAda\tLondon\t3\nGrace\tArlington\t5\nLinus\tHelsinki\t7\n", "tsv", 3, []string{"name", "city", "visits"}},
		{"quoted newlines and commas", "", "id,name,note\n1,Ada,\"first\nprogrammer\"\n2,\"Grace, Admiral\",\"said \"\"hi\"\"\"\n3,Linus,\n", "csv", 3, []string{"id", "name", "note"}},
		{"a pandas index column", "", ",name,qty\n0,apple,3\n1,pear,5\n2,plum,1\n", "csv", 3, []string{"", "name", "qty"}},
		{"a byte order mark and CRLF", "", "\ufeffName,Email\r\nAda,ada@example.com\r\nGrace,grace@example.com\r\n", "csv", 2, []string{"Name", "Email"}},
		{"text columns, no numbers", "", "first name,last name,city\nAda,Lovelace,London\nGrace,Hopper,New York\nAlan,Turing,Wilmslow\n", "csv", 3, []string{"first name", "last name", "city"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, _ := inspectBytes(t, []byte(c.in), c.mime, Limits{})
			if got.Kind != "csv" || got.Format != c.format || got.Rows != c.rows || !reflect.DeepEqual(got.Columns, c.columns) {
				t.Errorf("got kind %q format %q, %d rows, columns %q; want csv %q, %d rows, columns %q",
					got.Kind, got.Format, got.Rows, got.Columns, c.format, c.rows, c.columns)
			}
		})
	}
}

// TestCSVByShapeNotProse: prose, logs, markdown tables, code and a
// declared text type stay text: no columns or rows.
func TestCSVByShapeNotProse(t *testing.T) {
	cases := []struct{ name, mime, in string }{
		{"prose with a comma a line", "", "Roses are red, violets are blue\nSugar is sweet, and so are you\nI wrote this, poorly\nIt rhymes, almost\n"},
		{"prose paragraphs", "", "The quarter closed strong, with revenue up 12%.\nCosts, however, rose faster than planned.\nWe expect, on balance, a flat next quarter.\n"},
		{"python logging", "", "2024-05-01 12:00:00,123 INFO server started\n2024-05-01 12:00:01,456 INFO listening on 8080\n2024-05-01 12:00:02,789 WARN slow request\n"},
		{"key=value logs", "", "level=info,msg=started,port=8080\nlevel=warn,msg=slow,port=8080\nlevel=info,msg=done,port=8080\n"},
		{"access log", "", "127.0.0.1 - - [10/Oct/2000:13:55:36 -0700] \"GET /a,b HTTP/1.0\" 200 2326\n127.0.0.1 - - [10/Oct/2000:13:55:37 -0700] \"GET /c,d HTTP/1.0\" 200 12\n127.0.0.1 - - [10/Oct/2000:13:55:38 -0700] \"GET /e,f HTTP/1.0\" 404 0\n"},
		{"markdown table", "", "| City | Population, 2020 |\n|------|------------------|\n| Paris, FR | 2,100,000 |\n| Rome, IT | 2,800,000 |\n"},
		{"go code with tabs", "", "\tx := 1\n\ty := 2\n\treturn x\n\tz := 3\n"},
		{"tab-aligned struct", "", "\tName\tstring\n\tAge\tint\n\tCity\tstring\n"},
		{"calls with commas", "", "f(a,b)\ng(c,d)\nh(e,f)\nk(l,m)\n"},
		{"calls with spaced commas", "", "foo(a, b)\nbar(c, d)\nbaz(e, f)\n"},
		{"a header and one row", "", "name,qty\napple,3\n"},
		{"one line", "", "a,b,c,d"},
		{"declared markdown", "text/markdown", "name,qty\napple,3\npear,5\nplum,1\n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, _ := inspectBytes(t, []byte(c.in), c.mime, Limits{})
			if got.Kind != "text" || got.Columns != nil || got.Rows != 0 {
				t.Errorf("got kind %q format %q, %d rows, columns %q; want text without columns", got.Kind, got.Format, got.Rows, got.Columns)
			}
		})
	}
}
