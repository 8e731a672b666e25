package config

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/steadylb/steadylb/api/v1beta1"
)

func TestCommunityRules(t *testing.T) {
	runRules(t, []ruleCase{
		{name: "valid", snap: snap(community("c", "gold", "65000:100", "big", "large:65000:1:2"))},
		{
			name: "bad aliases",
			snap: snap(community("c",
				"", "65000:100",
				"asn-too-big", "65536:1",
				"three", "1:2:3",
				"not-large", "huge:1:2:3",
				"large-too-big", "large:4294967296:1:2",
				"word", "no-export",
			)),
			want: []string{
				`Community "c": spec.communities[0].name: must not be empty`,
				`Community "c": spec.communities[1].value: invalid community "65536:1": "65536" is not a 16-bit number`,
				`Community "c": spec.communities[2].value: invalid community "1:2:3": want "65000:100" (two 16-bit numbers) or "large:65000:1:2" (three 32-bit numbers)`,
				`Community "c": spec.communities[3].value: invalid community "huge:1:2:3": want "65000:100" (two 16-bit numbers) or "large:65000:1:2" (three 32-bit numbers)`,
				`Community "c": spec.communities[4].value: invalid community "large:4294967296:1:2": "4294967296" is not a 32-bit number`,
				`Community "c": spec.communities[5].value: invalid community "no-export": want "65000:100" (two 16-bit numbers) or "large:65000:1:2" (three 32-bit numbers)`,
			},
		},
		{
			name: "alias defined twice in one object",
			snap: snap(community("c", "gold", "65000:100", "gold", "65000:100")),
			want: []string{`Community "c": spec.communities[1].name: alias "gold" is already defined in Community "c"`},
		},
		{
			name: "alias defined in two objects: the newer is at fault",
			snap: snap(
				withCommunityOpts(community("a", "gold", "65000:100"), created[v1beta1.Community](2)),
				withCommunityOpts(community("b", "gold", "65000:200"), created[v1beta1.Community](1)),
			),
			want: []string{`Community "a": spec.communities[0].name: alias "gold" is already defined in Community "b"`},
		},
	})
}

func TestCommunityResolution(t *testing.T) {
	runRules(t, []ruleCase{
		{
			name: "unknown alias names the advertisement and the alias",
			snap: snap(pool("p"), bgpAdv("a", communities("gold"))),
			want: []string{`BGPAdvertisement "a": spec.communities[0]: no Community object defines the alias "gold"`},
		},
		{
			name: "alias from an invalid Community",
			snap: snap(pool("p"), bgpAdv("a", communities("gold")), community("c", "gold", "65000:1", "bad", "x:y")),
			want: []string{
				`BGPAdvertisement "a": spec.communities[0]: alias "gold" is defined in Community "c", which is invalid`,
				`Community "c": spec.communities[1].value: invalid community "x:y": "x" is not a 16-bit number`,
			},
		},
		{
			name: "bad literal",
			snap: snap(pool("p"), bgpAdv("a", communities("65000:70000"))),
			want: []string{`BGPAdvertisement "a": spec.communities[0]: invalid community "65000:70000": "70000" is not a 16-bit number`},
		},
		{
			name: "the same string twice",
			snap: snap(pool("p"), bgpAdv("a", communities("65000:1", "65000:1"))),
			want: []string{`BGPAdvertisement "a": spec.communities[1]: duplicate of spec.communities[0]`},
		},
	})

	cfg := mustBuild(t, snap(
		pool("p"),
		community("c", "gold", "65000:100", "big", "large:65000:1:2", "65000:7", "1:1"),
		bgpAdv("a", communities("large:1:2:3", "gold", "65000:100", "big", "65535:65282", "65000:7")),
	))
	a := cfg.BGPAdvertisements()[0]
	var std []string
	for _, c := range a.Communities() {
		std = append(std, FormatCommunity(c))
	}
	// "65000:7" is an alias first, as in MetalLB: it means 1:1 here.
	if diff := cmp.Diff([]string{"1:1", "65000:100", "65535:65282"}, std); diff != "" {
		t.Errorf("Communities (-want +got):\n%s", diff)
	}
	want := []LargeCommunity{{1, 2, 3}, {65000, 1, 2}}
	if diff := cmp.Diff(want, a.LargeCommunities()); diff != "" {
		t.Errorf("LargeCommunities (-want +got):\n%s", diff)
	}
	if got := want[1].String(); got != "large:65000:1:2" {
		t.Errorf("String = %q", got)
	}
}

// FuzzParseCommunity: any string is accepted or refused without a panic;
// an accepted one prints back to a form that parses to the same value.
func FuzzParseCommunity(f *testing.F) {
	for _, s := range []string{"65000:100", "0:0", "65535:65535", "65536:1", "large:65000:1:2",
		"large:4294967295:0:1", "large:1:2", "no-export", "1:2:3", ":", "large:::", "065000:0100"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := parseCommunity(s)
		if err != nil {
			return
		}
		printed := FormatCommunity(v.standard)
		if v.large {
			printed = v.largeVal.String()
		}
		again, err := parseCommunity(printed)
		if err != nil {
			t.Fatalf("%q parsed, but its printed form %q does not: %v", s, printed, err)
		}
		if again != v {
			t.Fatalf("%q parsed to %+v, its printed form %q to %+v", s, v, printed, again)
		}
	})
}
