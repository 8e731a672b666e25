// Package servicelist lists every Service of a cluster and decodes the
// protobuf LIST as it streams in, one Service at a time, without their
// managedFields. It is the plugin's one read that grows with the cluster,
// kept apart so that the benchmark's floor can run exactly this read and
// nothing else of the plugin.
package servicelist
