package main

import (
	"fmt"
	"io"
	"slices"
	"text/tabwriter"
	"unicode/utf8"
)

// Alignment of every table: what tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
// prints, the plugin's output format since its first version.
const (
	tablePadding = 2
	tableTab     = 4
)

// table prints rows under a header, columns aligned as text/tabwriter
// aligns them, byte for byte. It holds the cells until flush: when every
// row has the header's number of cells and no cell holds a character
// tabwriter reads as a cell or line end, each column is as wide as its
// widest cell plus the padding and the last one unpadded, which is
// written directly; any other table goes through tabwriter itself. The
// direct way matters for the addresses table, one row per address:
// tabwriter copies each cell into a buffer that grows with the table and
// gives each line a slice of cells that grows too, megabytes of fresh
// memory at 10,000 rows, 16 ms of the command's 290 in its fresh process
// (BENCHMARKS.md), against 3 ms written directly.
type table struct {
	w    io.Writer
	cols int
	// cells are every row's cells, one after the other; ends says where
	// each row ends, for a row of another width.
	cells   []string
	ends    []int
	uniform bool
}

func newTable(w io.Writer, header ...string) *table {
	t := &table{w: w, cols: len(header), uniform: true}
	t.row(header...)
	return t
}

// grow makes room for n more rows of the header's width: a table of
// 10,000 rows otherwise copies its cells over and over as it grows.
func (t *table) grow(n int) {
	t.cells = slices.Grow(t.cells, n*t.cols)
	t.ends = slices.Grow(t.ends, n)
}

func (t *table) row(cells ...string) {
	if len(cells) != t.cols {
		t.uniform = false
	}
	t.cells = append(t.cells, cells...)
	t.ends = append(t.ends, len(t.cells))
}

func (t *table) flush() error {
	var err error
	if t.direct() {
		err = t.writeAligned()
	} else {
		err = t.writeTabwriter()
	}
	if err != nil {
		return fmt.Errorf("print table: %w", err)
	}
	return nil
}

func (t *table) direct() bool {
	if !t.uniform || t.cols == 0 {
		return false
	}
	for _, c := range t.cells {
		if hasSpecial(c) {
			return false
		}
	}
	return true
}

// hasSpecial reports a byte tabwriter reads as a cell or line end, or its
// escape, whose bytes it does not count in a cell's width.
func hasSpecial(s string) bool {
	for i := range len(s) {
		switch s[i] {
		case '\t', '\v', '\n', '\f', tabwriter.Escape:
			return true
		}
	}
	return false
}

// writeAligned writes a table of uniform rows without special bytes.
func (t *table) writeAligned() error {
	widths := make([]int, t.cols)
	for i, c := range t.cells {
		if col := i % t.cols; col < t.cols-1 {
			widths[col] = max(widths[col], utf8.RuneCountInString(c)+tablePadding)
		}
	}
	var line []byte
	for start := 0; start < len(t.cells); start += t.cols {
		line = line[:0]
		for col, c := range t.cells[start : start+t.cols] {
			line = append(line, c...)
			if col < t.cols-1 {
				for n := widths[col] - utf8.RuneCountInString(c); n > 0; n-- {
					line = append(line, ' ')
				}
			}
		}
		if _, err := t.w.Write(append(line, '\n')); err != nil {
			return err
		}
	}
	return nil
}

// writeTabwriter is the general way: each row a line of tab-separated
// cells through tabwriter.
func (t *table) writeTabwriter() error {
	tw := tabwriter.NewWriter(t.w, 0, tableTab, tablePadding, ' ', 0)
	var line []byte
	start := 0
	for _, end := range t.ends {
		line = line[:0]
		for i, c := range t.cells[start:end] {
			if i > 0 {
				line = append(line, '\t')
			}
			line = append(line, c...)
		}
		start = end
		// tabwriter buffers the table: it only fails in Flush.
		_, _ = tw.Write(append(line, '\n'))
	}
	return tw.Flush()
}
