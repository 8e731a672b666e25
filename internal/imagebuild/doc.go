// Package imagebuild builds steadylb's container images without a
// container runtime: static Go binaries compiled for each platform, one
// layer per image (the binary and the files a non-root user needs, no
// shell), an OCI image index over the platforms, written as an OCI layout
// directory and a tarball of it, with an SPDX SBOM per image made from the
// binary's embedded build information.
//
// Everything that goes into an image is a function of the source commit:
// file times, the image's creation time and the SBOM's are the commit time
// (SOURCE_DATE_EPOCH), tar entries are written in a fixed order with fixed
// owners and modes, and nothing reads the clock, the host's user database or
// the environment beyond the Go toolchain. Two builds of one commit give the
// same digests.
//
// hack/images wires it for `make images`.
package imagebuild
