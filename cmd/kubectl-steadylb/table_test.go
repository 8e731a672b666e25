package main

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"text/tabwriter"
)

// viaTabwriter is the plugin's table format written out: every row a line
// of tab-separated cells through tabwriter with the plugin's settings.
func viaTabwriter(rows [][]string) string {
	var out bytes.Buffer
	tw := tabwriter.NewWriter(&out, 0, 4, 2, ' ', 0)
	for _, r := range rows {
		tw.Write([]byte(strings.Join(r, "\t") + "\n"))
	}
	tw.Flush()
	return out.String()
}

func viaTable(t testing.TB, rows [][]string) string {
	t.Helper()
	var out bytes.Buffer
	tb := newTable(&out, rows[0]...)
	for _, r := range rows[1:] {
		tb.row(r...)
	}
	if err := tb.flush(); err != nil {
		t.Fatal(err)
	}
	return out.String()
}

func TestTableAsTabwriter(t *testing.T) {
	for _, tc := range []struct {
		name string
		rows [][]string
	}{
		{"header only", [][]string{{"ADDRESS", "POOL", "SERVICES"}}},
		{"one column", [][]string{{"POOL"}, {"a"}, {"longer"}}},
		{"uniform", [][]string{{"ADDRESS", "POOL", "SINCE"}, {"2001:db8:1::", "bench", "2026-12-05T20:00:00Z"}, {"192.0.2.1", "a-much-longer-pool", "-"}}},
		{"empty cells", [][]string{{"A", "", "C"}, {"", "", ""}, {"x", "y", ""}}},
		{"wide runes", [][]string{{"NAME", "WHY"}, {"pööl", "ünïcode"}, {"日本", "x"}}},
		{"a row of another width", [][]string{{"A", "B", "C"}, {"1", "2"}, {"1", "2", "3", "4"}}},
		{"a tab in a cell", [][]string{{"A", "B", "C"}, {"x\ty", "2", "3"}}},
		{"a newline in a cell", [][]string{{"A", "B"}, {"x\ny", "2"}}},
		{"tabwriter's escape in a cell", [][]string{{"A", "B"}, {"\xffesc\xff", "2"}}},
		{"invalid UTF-8", [][]string{{"A", "B"}, {"\xc3", "2"}, {"\xe2\x82", "3"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got, want := viaTable(t, tc.rows), viaTabwriter(tc.rows); got != want {
				t.Errorf("got\n%q\nwant (tabwriter)\n%q", got, want)
			}
		})
	}
}

// FuzzTable: any table prints as tabwriter prints it.
func FuzzTable(f *testing.F) {
	f.Add("ADDRESS|POOL|SINCE\n2001:db8::1|bench|-\n192.0.2.1||x", uint8(3))
	f.Add("a\tb|c\nd|e\xff|f", uint8(2))
	f.Fuzz(func(t *testing.T, text string, cols uint8) {
		var rows [][]string
		for line := range strings.SplitSeq(text, "\n") {
			cells := strings.Split(line, "|")
			if cols%4 != 0 { // mostly uniform rows, as the plugin prints
				cells = append(cells, make([]string, max(0, int(cols%4)-len(cells)))...)[:cols%4]
			}
			rows = append(rows, cells)
		}
		if len(rows[0]) == 0 {
			return
		}
		if got, want := viaTable(t, rows), viaTabwriter(rows); got != want {
			t.Fatalf("got\n%q\nwant (tabwriter)\n%q", got, want)
		}
	})
}

type failing struct{}

func (failing) Write([]byte) (int, error) { return 0, errors.New("disk full") }

func TestTableWriteError(t *testing.T) {
	for _, rows := range [][]string{{"A", "B"}, {"A\tB", "C"}} {
		tb := newTable(failing{}, "H1", "H2")
		tb.row(rows...)
		if err := tb.flush(); err == nil || !strings.Contains(err.Error(), "disk full") {
			t.Errorf("rows %q: flush returned %v, want the write's error", rows, err)
		}
	}
}
