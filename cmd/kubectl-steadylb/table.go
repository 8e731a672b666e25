package main

import (
	"fmt"
	"io"
	"text/tabwriter"
)

// Alignment of every table: the plugin's output format since its first
// version.
const (
	tablePadding = 2
	tableTab     = 4
)

// table prints rows under a header, columns aligned by text/tabwriter.
type table struct {
	tw   *tabwriter.Writer
	line []byte
	err  error // the first write's error, for flush
}

func newTable(w io.Writer, header ...string) *table {
	t := &table{tw: tabwriter.NewWriter(w, 0, tableTab, tablePadding, ' ', 0)}
	t.row(header...)
	return t
}

func (t *table) row(cells ...string) {
	t.line = t.line[:0]
	for i, c := range cells {
		if i > 0 {
			t.line = append(t.line, '\t')
		}
		t.line = append(t.line, c...)
	}
	if _, err := t.tw.Write(append(t.line, '\n')); err != nil && t.err == nil {
		t.err = err
	}
}

func (t *table) flush() error {
	err := t.tw.Flush()
	if t.err != nil {
		err = t.err
	}
	if err != nil {
		return fmt.Errorf("print table: %w", err)
	}
	return nil
}
