// Package excludel2 reads MetalLB's interface exclusion: the ConfigMap
// metallb-excludel2 in the speaker's namespace, whose key excludel2.yaml
// holds announcedInterfacesToExclude, a list of regular expressions
// (Go syntax, unanchored) naming interfaces that never answer ARP or NDP.
// MetalLB's Helm chart renders it with a default list (docker, veth,
// cali, cni, flannel, kube-ipvs, nodelocaldns, lxc... prefixes).
//
// Parse keeps every entry that compiles and reports each one that does
// not, so one bad entry excludes nothing wrongly and harms no other.
// Loader is the speaker's side: it reads the ConfigMap from the cache,
// hands the patterns to the Announcer when they change, and keeps what is
// wrong with it for the ConfigurationState.
package excludel2
