// Package podproc runs a Pod's containers as processes, doing what the
// kubelet and a container runtime would do with the Pod's spec, so that
// the shipped manifests start steadylb in the lab instead of a command
// line a test wrote:
//
//   - the command is the image's entrypoint (an image stands for a built
//     binary) with the container's args;
//   - the environment is exactly the container's: literal values,
//     downward-API fields of the Pod object, Secret and ConfigMap keys,
//     plus the KUBERNETES_SERVICE_* variables the kubelet adds;
//   - volumes are files in directories laid out as the kubelet lays them
//     out (the `..data` symlink to a timestamped directory), with the
//     volume's modes: Secrets, ConfigMaps, emptyDirs, and the service
//     account token (a TokenRequest bound to the Pod), its CA and
//     namespace under /var/run/secrets/kubernetes.io/serviceaccount;
//   - the security context is applied: user and group, the capabilities a
//     container runtime grants by default with the container's drops and
//     adds, a read-only root file system, no_new_privs;
//   - the process runs in a network namespace the caller chooses (the
//     node's for hostNetwork Pods) and a mount namespace of its own, in an
//     empty root with only its volumes and binary (test/podinit does that
//     part).
//
// What is not done: image pulls, cgroups and resource limits, probes run
// by a kubelet (Container.Get lets a test call them), restarts, $(VAR)
// expansion and envFrom (refused, so a manifest that starts using them
// fails here instead of running differently than in a cluster).
package podproc
