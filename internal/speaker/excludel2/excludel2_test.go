package excludel2

import (
	"strings"
	"testing"
)

// chartDefault is the list MetalLB's chart renders by default.
const chartDefault = `announcedInterfacesToExclude:
- ^docker.*
- ^cbr.*
- ^dummy.*
- ^virbr.*
- ^lxcbr.*
- ^veth.*
- ^lo$
- ^cali.*
- ^tunl.*
- ^flannel.*
- ^kube-ipvs.*
- ^cni.*
- ^nodelocaldns.*
- ^lxc.*
`

func TestParse(t *testing.T) {
	tests := []struct {
		name     string
		data     string
		excluded []string
		kept     []string
		wantBad  []string // each bad entry's message must contain one
		wantErr  bool
	}{
		{
			name:     "the chart's default list",
			data:     chartDefault,
			excluded: []string{"docker0", "veth1a2b3c4d", "lo", "cali1234", "flannel.1", "kube-ipvs0", "cni0", "nodelocaldns", "lxc99", "tunl0"},
			kept:     []string{"eth0", "ens3", "bond0", "br0", "lo0", "eno1.100"},
		},
		{name: "empty document", data: "", kept: []string{"eth0", "veth0"}},
		{name: "empty list", data: "announcedInterfacesToExclude: []\n", kept: []string{"veth0"}},
		{name: "unknown fields are ignored", data: "other: 1\nannouncedInterfacesToExclude: [\"^veth\"]\n", excluded: []string{"veth0"}},
		{
			name:     "a bad entry is reported, the others apply",
			data:     "announcedInterfacesToExclude:\n- ^veth.*\n- ^cali(\n- ^cni.*\n",
			excluded: []string{"veth0", "cni0"},
			kept:     []string{"cali0", "eth0"},
			wantBad:  []string{`announcedInterfacesToExclude[1] "^cali("`},
		},
		{name: "not YAML", data: "announcedInterfacesToExclude: [\n", wantErr: true},
		{name: "not a list", data: "announcedInterfacesToExclude: veth\n", wantErr: true},
		{name: "not a map", data: "- veth\n", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			patterns, bad, err := Parse(tt.data)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, want error %v", err, tt.wantErr)
			}
			if err != nil {
				if !strings.Contains(err.Error(), ConfigMapName) || !strings.Contains(err.Error(), Key) {
					t.Errorf("error %q does not name the ConfigMap and key", err)
				}
				return
			}
			matches := func(name string) bool {
				for _, re := range patterns {
					if re.MatchString(name) {
						return true
					}
				}
				return false
			}
			for _, n := range tt.excluded {
				if !matches(n) {
					t.Errorf("%s not excluded", n)
				}
			}
			for _, n := range tt.kept {
				if matches(n) {
					t.Errorf("%s excluded", n)
				}
			}
			var got []string
			for _, b := range bad {
				got = append(got, b.Error())
			}
			if len(got) != len(tt.wantBad) {
				t.Fatalf("bad entries %v, want %d", got, len(tt.wantBad))
			}
			for i, want := range tt.wantBad {
				if !strings.Contains(got[i], want) || !strings.Contains(got[i], ConfigMapName) {
					t.Errorf("bad entry %q does not name %s and the ConfigMap", got[i], want)
				}
			}
		})
	}
}

// FuzzParse: any document is either refused with an error, or gives
// patterns that all compile and entry errors that each name their entry.
func FuzzParse(f *testing.F) {
	for _, s := range []string{chartDefault, "", "announcedInterfacesToExclude: [\"(\"]", "a: b", "- x", "announcedInterfacesToExclude: {a: 1}"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data string) {
		patterns, bad, err := Parse(data)
		if err != nil {
			if patterns != nil || bad != nil {
				t.Errorf("an unreadable document gave patterns %v, bad %v", patterns, bad)
			}
			return
		}
		for _, re := range patterns {
			if re == nil {
				t.Fatal("nil pattern")
			}
			re.MatchString("eth0")
		}
		for _, b := range bad {
			if b.Err == nil || !strings.Contains(b.Error(), "announcedInterfacesToExclude[") {
				t.Errorf("entry error %q names no entry", b.Error())
			}
		}
	})
}
