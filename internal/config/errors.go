package config

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// The kinds an error can be about, as users write them in YAML.
const (
	KindIPAddressPool    = "IPAddressPool"
	KindL2Advertisement  = "L2Advertisement"
	KindBGPAdvertisement = "BGPAdvertisement"
	KindBGPPeer          = "BGPPeer"
	KindBFDProfile       = "BFDProfile"
	KindCommunity        = "Community"
)

// kindRank orders errors by kind: the order of the Snapshot fields, which is
// also the order a user is most likely to fix them in (addresses first).
var kindRank = map[string]int{
	KindIPAddressPool:    0,
	KindL2Advertisement:  1,
	KindBGPAdvertisement: 2,
	KindBGPPeer:          3,
	KindBFDProfile:       4,
	KindCommunity:        5,
}

// FieldError is one problem with one field of one object. Its text reads
//
//	IPAddressPool "gold": spec.addresses[1]: invalid range "192.0.2.20-192.0.2.10": start is after end
type FieldError struct {
	Kind   string // one of the Kind constants
	Name   string // the object's metadata.name
	Field  string // path inside the object, e.g. "spec.addresses[1]"
	Detail string // what is wrong, for a human
}

func (e *FieldError) Error() string {
	return fmt.Sprintf("%s %q: %s: %s", e.Kind, e.Name, e.Field, e.Detail)
}

// ErrorList is every problem Build found, ordered by kind, then object name,
// then the order the checks ran in (which follows the spec's field order).
// An object named in the list is not part of the Config Build returned.
type ErrorList []*FieldError

var _ error = ErrorList(nil)

// Error puts one problem on each line.
func (l ErrorList) Error() string {
	lines := make([]string, len(l))
	for i, e := range l {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}

// Unwrap lets errors.As find a single *FieldError in the list.
func (l ErrorList) Unwrap() []error {
	errs := make([]error, len(l))
	for i, e := range l {
		errs[i] = e
	}
	return errs
}

// Has reports whether the list holds a problem with the named object, that is
// whether the object was left out of the Config.
func (l ErrorList) Has(kind, name string) bool {
	return slices.ContainsFunc(l, func(e *FieldError) bool { return e.Kind == kind && e.Name == name })
}

// objectKey identifies one object of one kind.
type objectKey struct{ kind, name string }

// collector gathers errors for all objects during one Build.
type collector struct {
	list   ErrorList
	failed map[objectKey]bool
}

func newCollector() *collector {
	return &collector{failed: map[objectKey]bool{}}
}

func (c *collector) add(kind, name string, path *field.Path, format string, args ...any) {
	c.list = append(c.list, &FieldError{Kind: kind, Name: name, Field: path.String(), Detail: fmt.Sprintf(format, args...)})
	c.failed[objectKey{kind, name}] = true
}

// object returns a reporter bound to one object.
func (c *collector) object(kind, name string) *reporter {
	return &reporter{c: c, kind: kind, name: name}
}

// err returns the sorted list, or nil when there is nothing to report. The
// sort is stable so that one object's errors keep the order the checks
// produced them in.
func (c *collector) err() error {
	if len(c.list) == 0 {
		return nil
	}
	list := slices.Clone(c.list)
	slices.SortStableFunc(list, func(a, b *FieldError) int {
		return cmp.Or(cmp.Compare(kindRank[a.Kind], kindRank[b.Kind]), cmp.Compare(a.Name, b.Name))
	})
	return list
}

// reporter records errors about one object.
type reporter struct {
	c          *collector
	kind, name string
}

func (r *reporter) add(path *field.Path, format string, args ...any) {
	r.c.add(r.kind, r.name, path, format, args...)
}

// ok reports whether no error has been recorded for the object so far, by any
// check.
func (r *reporter) ok() bool {
	return !r.c.failed[objectKey{r.kind, r.name}]
}
