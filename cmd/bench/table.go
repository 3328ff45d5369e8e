package main

import (
	"fmt"
	"io"
	"text/tabwriter"
)

// table writes rows of values as aligned columns.
type table struct{ tw *tabwriter.Writer }

// newTable starts a table on w with the given column names.
func newTable(w io.Writer, cols ...any) *table {
	t := &table{tw: tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)}
	t.row(cols...)
	return t
}

// row writes one row.
func (t *table) row(vals ...any) {
	for i, v := range vals {
		if i > 0 {
			fmt.Fprint(t.tw, "\t")
		}
		fmt.Fprint(t.tw, v)
	}
	fmt.Fprintln(t.tw)
}

// flush writes the table out.
func (t *table) flush() { _ = t.tw.Flush() }
