// Package excludel2 reads MetalLB's interface exclusion: the ConfigMap
// metallb-excludel2 in the speaker's namespace, whose key excludel2.yaml
// holds announcedInterfacesToExclude, a list of regular expressions
// (Go syntax, unanchored) naming interfaces that never answer ARP or NDP.
// MetalLB's Helm chart renders it with a default list (docker, veth,
// cali, cni, flannel, kube-ipvs, nodelocaldns, lxc... prefixes).
//
// Parse keeps every entry that compiles and reports each one that does
// not, so one bad entry excludes nothing wrongly and harms no other.
package excludel2
