package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"sigs.k8s.io/yaml"
)

// checkOutput validates -o.
func checkOutput(format string) error {
	switch format {
	case "table", "wide", "json", "yaml":
		return nil
	}
	return fmt.Errorf("--output %q: use table, wide, json or yaml", format)
}

// structured prints v as JSON or YAML; it reports false for the table
// formats, which the caller prints itself.
func structured(w io.Writer, format string, v any) (bool, error) {
	switch format {
	case "json":
		b, err := json.MarshalIndent(v, "", "  ")
		if err != nil {
			return true, fmt.Errorf("render JSON: %w", err)
		}
		_, err = fmt.Fprintf(w, "%s\n", b)
		return true, err
	case "yaml":
		b, err := yaml.Marshal(v)
		if err != nil {
			return true, fmt.Errorf("render YAML: %w", err)
		}
		_, err = w.Write(b)
		return true, err
	}
	return false, nil
}

// table prints rows under a header, columns aligned.
type table struct {
	tw *tabwriter.Writer
	// line is reused for every row: a table may have 10,000 of them.
	line []byte
}

func newTable(w io.Writer, header ...string) *table {
	t := &table{tw: tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)}
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
	// A write error sticks in the buffered output and comes back when
	// main flushes it.
	_, _ = t.tw.Write(append(t.line, '\n'))
}

func (t *table) flush() error {
	if err := t.tw.Flush(); err != nil {
		return fmt.Errorf("print table: %w", err)
	}
	return nil
}

func orDash(items []string) string {
	if len(items) == 0 {
		return "-"
	}
	return strings.Join(items, ",")
}

func stamp(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}
