package imagebuild

import (
	"crypto/sha256"
	"debug/buildinfo"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"runtime/debug"
	"strings"
	"time"
)

// SBOMMediaType is the media type of the SBOMs, as a file and as the
// artifact type of the manifest that attaches one to its image.
const SBOMMediaType = "application/spdx+json"

// spdxDocument is the part of an SPDX 2.3 JSON document we write: one
// package per Go module linked into the binary, the Go standard library,
// and the relationships from the command's module to each.
type spdxDocument struct {
	SPDXVersion       string             `json:"spdxVersion"`
	DataLicense       string             `json:"dataLicense"`
	SPDXID            string             `json:"SPDXID"`
	Name              string             `json:"name"`
	DocumentNamespace string             `json:"documentNamespace"`
	CreationInfo      spdxCreationInfo   `json:"creationInfo"`
	Packages          []spdxPackage      `json:"packages"`
	Relationships     []spdxRelationship `json:"relationships"`
}

type spdxCreationInfo struct {
	Created  string   `json:"created"`
	Creators []string `json:"creators"`
}

type spdxPackage struct {
	Name             string            `json:"name"`
	SPDXID           string            `json:"SPDXID"`
	VersionInfo      string            `json:"versionInfo"`
	DownloadLocation string            `json:"downloadLocation"`
	FilesAnalyzed    bool              `json:"filesAnalyzed"`
	Checksums        []spdxChecksum    `json:"checksums,omitempty"`
	ExternalRefs     []spdxExternalRef `json:"externalRefs,omitempty"`
	Comment          string            `json:"comment,omitempty"`
}

type spdxChecksum struct {
	Algorithm     string `json:"algorithm"`
	ChecksumValue string `json:"checksumValue"`
}

type spdxExternalRef struct {
	ReferenceCategory string `json:"referenceCategory"`
	ReferenceType     string `json:"referenceType"`
	ReferenceLocator  string `json:"referenceLocator"`
}

type spdxRelationship struct {
	Element string `json:"spdxElementId"`
	Type    string `json:"relationshipType"`
	Related string `json:"relatedSpdxElement"`
}

// SBOM describes the Go binary at path as an SPDX 2.3 JSON document:
// the command's module, every module it links (after replace directives)
// and the standard library of the toolchain that built it, each with a
// purl, and the build settings (platform, flags) and the source revision
// as the main package's comment. name names the image; meta gives the
// release version (the main module's, which a build from a checkout does
// not record), the revision and the build's reproducible time. The
// document namespace is derived from the binary's hash, so the same
// binary always gets the same document.
func SBOM(path, name string, meta Meta) ([]byte, error) {
	info, err := buildinfo.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read build information of %s: %w", path, err)
	}
	sum, err := fileSHA256(path)
	if err != nil {
		return nil, err
	}
	doc := sbomFromBuildInfo(info, name, sum, meta)
	out, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encode SBOM of %s: %w", path, err)
	}
	return append(out, '\n'), nil
}

func sbomFromBuildInfo(info *debug.BuildInfo, name, binarySHA256 string, meta Meta) spdxDocument {
	const mainID = "SPDXRef-Package-main"
	version := info.Main.Version
	if version == "" || version == "(devel)" {
		version = meta.Version
	}
	main := spdxPackage{
		Name:             info.Main.Path,
		SPDXID:           mainID,
		VersionInfo:      version,
		DownloadLocation: "NOASSERTION",
		Checksums:        []spdxChecksum{{Algorithm: "SHA256", ChecksumValue: binarySHA256}},
		ExternalRefs:     []spdxExternalRef{purl(info.Main.Path, version)},
		Comment:          buildSettings(info) + "\nsource " + meta.Source + "\nrevision " + meta.Revision,
	}
	doc := spdxDocument{
		SPDXVersion:       "SPDX-2.3",
		DataLicense:       "CC0-1.0",
		SPDXID:            "SPDXRef-DOCUMENT",
		Name:              name,
		DocumentNamespace: "https://github.com/steadylb/steadylb/spdx/" + name + "/" + binarySHA256,
		CreationInfo: spdxCreationInfo{
			Created:  meta.Created.UTC().Format(time.RFC3339),
			Creators: []string{"Tool: steadylb-imagebuild"},
		},
		Packages:      []spdxPackage{main, stdlib(info.GoVersion)},
		Relationships: []spdxRelationship{{"SPDXRef-DOCUMENT", "DESCRIBES", mainID}, {mainID, "DEPENDS_ON", "SPDXRef-Package-stdlib"}},
	}
	for i, dep := range info.Deps {
		m := dep
		if dep.Replace != nil {
			m = dep.Replace
		}
		id := fmt.Sprintf("SPDXRef-Package-%d-%s", i, spdxIDPart(m.Path))
		p := spdxPackage{
			Name:             m.Path,
			SPDXID:           id,
			VersionInfo:      m.Version,
			DownloadLocation: "NOASSERTION",
			ExternalRefs:     []spdxExternalRef{purl(m.Path, m.Version)},
		}
		if m.Sum != "" {
			p.Comment = "go.sum " + m.Sum
		}
		doc.Packages = append(doc.Packages, p)
		doc.Relationships = append(doc.Relationships, spdxRelationship{mainID, "DEPENDS_ON", id})
	}
	return doc
}

func stdlib(goVersion string) spdxPackage {
	return spdxPackage{
		Name:             "stdlib",
		SPDXID:           "SPDXRef-Package-stdlib",
		VersionInfo:      goVersion,
		DownloadLocation: "NOASSERTION",
		ExternalRefs:     []spdxExternalRef{purl("stdlib", goVersion)},
	}
}

// purl is a Go module's package URL, the name vulnerability scanners match.
func purl(path, version string) spdxExternalRef {
	loc := "pkg:golang/" + path
	if version != "" && version != "(devel)" {
		loc += "@" + version
	}
	return spdxExternalRef{ReferenceCategory: "PACKAGE-MANAGER", ReferenceType: "purl", ReferenceLocator: loc}
}

// buildSettings renders the settings the binary was built with, one
// key=value a line, in the order the toolchain recorded them.
func buildSettings(info *debug.BuildInfo) string {
	lines := []string{"go " + info.GoVersion, "path " + info.Path}
	for _, s := range info.Settings {
		lines = append(lines, s.Key+"="+s.Value)
	}
	return strings.Join(lines, "\n")
}

// spdxIDPart keeps the characters an SPDX identifier allows (letters,
// digits, '.' and '-') and turns the rest into '-'.
func spdxIDPart(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '.', r == '-':
			return r
		}
		return '-'
	}, s)
}

func fileSHA256(path string) (string, error) {
	data, err := readFile(path)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:]), nil
}
