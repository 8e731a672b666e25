package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
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
