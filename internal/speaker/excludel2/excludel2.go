package excludel2

import (
	"fmt"
	"regexp"

	"sigs.k8s.io/yaml"
)

// MetalLB's names, kept exactly so its chart and manifests work as they
// are.
const (
	// ConfigMapName is the ConfigMap in the speaker's namespace.
	ConfigMapName = "metallb-excludel2"
	// Key is the ConfigMap's data key holding the YAML document.
	Key = "excludel2.yaml"
)

// document is the YAML document under Key. Other fields are ignored, as
// MetalLB ignores them.
type document struct {
	AnnouncedInterfacesToExclude []string `json:"announcedInterfacesToExclude"`
}

// EntryError is an entry that is not a valid regular expression.
type EntryError struct {
	// Index is the entry's position in announcedInterfacesToExclude.
	Index   int
	Pattern string
	Err     error
}

func (e *EntryError) Error() string {
	return fmt.Sprintf("ConfigMap %s: data[%q]: announcedInterfacesToExclude[%d] %q: %v", ConfigMapName, Key, e.Index, e.Pattern, e.Err)
}

func (e *EntryError) Unwrap() error { return e.Err }

// Parse reads the document under Key. An empty document excludes nothing.
// patterns are the entries that compile, in order; bad names each entry
// that does not. err is set when the document itself cannot be read (not
// YAML, or not the expected shape): then nothing of it can be trusted and
// patterns is nil.
func Parse(data string) (patterns []*regexp.Regexp, bad []*EntryError, err error) {
	var doc document
	if err := yaml.Unmarshal([]byte(data), &doc); err != nil {
		return nil, nil, fmt.Errorf("ConfigMap %s: data[%q]: %w", ConfigMapName, Key, err)
	}
	for i, p := range doc.AnnouncedInterfacesToExclude {
		re, err := regexp.Compile(p)
		if err != nil {
			bad = append(bad, &EntryError{Index: i, Pattern: p, Err: err})
			continue
		}
		patterns = append(patterns, re)
	}
	return patterns, bad, nil
}
