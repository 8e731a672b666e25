package config

import (
	"cmp"
	"fmt"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/steadylb/steadylb/api/v1beta1"
)

// LargeCommunity is a BGP large community (RFC 8092).
type LargeCommunity struct {
	GlobalAdministrator uint32
	LocalData1          uint32
	LocalData2          uint32
}

// String gives the community as users write it: "large:65000:1:2".
func (c LargeCommunity) String() string {
	return fmt.Sprintf("large:%d:%d:%d", c.GlobalAdministrator, c.LocalData1, c.LocalData2)
}

func (c LargeCommunity) compare(o LargeCommunity) int {
	return cmp.Or(cmp.Compare(c.GlobalAdministrator, o.GlobalAdministrator),
		cmp.Compare(c.LocalData1, o.LocalData1), cmp.Compare(c.LocalData2, o.LocalData2))
}

// FormatCommunity gives a standard community (RFC 1997) as users write it:
// "65000:100".
func FormatCommunity(c uint32) string {
	return fmt.Sprintf("%d:%d", c>>16, c&0xffff)
}

// communityValue is one parsed community value of either kind.
type communityValue struct {
	large    bool
	standard uint32 // high 16 bits: AS number; low 16 bits: value
	largeVal LargeCommunity
}

const largeMarker = "large"

// parseCommunity reads "65000:100" (two 16-bit numbers) or
// "large:65000:1:2" (three 32-bit numbers), the forms MetalLB accepts.
func parseCommunity(s string) (communityValue, error) {
	fields := strings.Split(s, ":")
	switch {
	case len(fields) == 2:
		asn, err := parseCommunityField(s, fields[0], 16)
		if err != nil {
			return communityValue{}, err
		}
		val, err := parseCommunityField(s, fields[1], 16)
		if err != nil {
			return communityValue{}, err
		}
		return communityValue{standard: asn<<16 | val}, nil
	case len(fields) == 4 && fields[0] == largeMarker:
		var v [3]uint32
		for i := range v {
			n, err := parseCommunityField(s, fields[i+1], 32)
			if err != nil {
				return communityValue{}, err
			}
			v[i] = n
		}
		return communityValue{large: true, largeVal: LargeCommunity{v[0], v[1], v[2]}}, nil
	}
	return communityValue{}, fmt.Errorf("invalid community %q: want \"65000:100\" (two 16-bit numbers) or \"large:65000:1:2\" (three 32-bit numbers)", s)
}

func parseCommunityField(s, f string, bits int) (uint32, error) {
	n, err := strconv.ParseUint(f, 10, bits)
	if err != nil {
		return 0, fmt.Errorf("invalid community %q: %q is not a %d-bit number", s, f, bits)
	}
	return uint32(n), nil
}

// alias is a community name defined by a Community object.
type alias struct {
	value  communityValue
	object string // the Community that defines it
}

// aliasTable resolves the community aliases of all Community objects.
type aliasTable struct {
	defs    map[string]alias
	invalid map[string]bool // objects with errors, whose aliases can't be used
}

var communitiesPath = field.NewPath("spec", "communities")

// buildAliases validates every Community object. objs are in age order:
// when two objects define one alias the newer one is at fault, as MetalLB
// refuses any alias defined twice.
func buildAliases(c *collector, objs []*v1beta1.Community) *aliasTable {
	t := &aliasTable{defs: map[string]alias{}, invalid: map[string]bool{}}
	for _, obj := range objs {
		rep := c.object(KindCommunity, obj.Name)
		for i, a := range obj.Spec.Communities {
			t.define(rep, obj.Name, communitiesPath.Index(i), a)
		}
		if !rep.ok() {
			t.invalid[obj.Name] = true
		}
	}
	return t
}

func (t *aliasTable) define(rep *reporter, object string, path *field.Path, a v1beta1.CommunityAlias) {
	if a.Name == "" {
		rep.add(path.Child("name"), "must not be empty")
		return
	}
	v, err := parseCommunity(a.Value)
	if err != nil {
		rep.add(path.Child("value"), "%v", err)
		return
	}
	if prev, dup := t.defs[a.Name]; dup {
		rep.add(path.Child("name"), "alias %q is already defined in Community %q", a.Name, prev.object)
		return
	}
	t.defs[a.Name] = alias{value: v, object: object}
}

// resolve turns an advertisement's community string into a value: an alias
// name first (as MetalLB looks aliases up first), else a literal value.
func (t *aliasTable) resolve(s string) (communityValue, error) {
	if a, ok := t.defs[s]; ok {
		if t.invalid[a.object] {
			return communityValue{}, fmt.Errorf("alias %q is defined in Community %q, which is invalid", s, a.object)
		}
		return a.value, nil
	}
	if !strings.Contains(s, ":") {
		return communityValue{}, fmt.Errorf("no Community object defines the alias %q", s)
	}
	return parseCommunity(s)
}
