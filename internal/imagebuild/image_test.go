package imagebuild

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"debug/buildinfo"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

var (
	amd64 = v1.Platform{OS: "linux", Architecture: "amd64"}
	arm64 = v1.Platform{OS: "linux", Architecture: "arm64"}
)

func testMeta() Meta {
	return Meta{
		Source: "https://example.test/steadylb", Version: "v1.2.3", Revision: "0123456789abcdef",
		Created: time.Date(2026, 12, 5, 10, 0, 0, 0, time.UTC),
	}
}

// testBinary is a real Go binary with build information: this test's own.
func testBinary(t *testing.T) string {
	t.Helper()
	path, err := os.Executable()
	if err != nil {
		t.Fatalf("find the test binary: %v", err)
	}
	return path
}

// fakeBinary is a small file standing in for a command: the image
// builder copies it without looking inside.
func fakeBinary(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "controller")
	if err := os.WriteFile(path, bytes.Repeat([]byte("\x7fELF steadylb "), 4096), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

func mustImage(t *testing.T, p v1.Platform, meta Meta) v1.Image {
	t.Helper()
	img, err := Image(fakeBinary(t), "controller", p, meta)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

func digest(t *testing.T, d interface{ Digest() (v1.Hash, error) }) v1.Hash {
	t.Helper()
	h, err := d.Digest()
	if err != nil {
		t.Fatalf("digest: %v", err)
	}
	return h
}

func TestImageConfig(t *testing.T) {
	meta := testMeta()
	img := mustImage(t, arm64, meta)
	cfg, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	want := v1.Config{
		User: "65532:65532", Entrypoint: []string{"/controller"}, WorkingDir: "/", Env: []string{"PATH=/"},
		Labels: map[string]string{
			LabelSource: meta.Source, LabelVersion: "v1.2.3", LabelRevision: "0123456789abcdef",
			LabelCreated: "2026-12-05T10:00:00Z", LabelTitle: "controller",
		},
	}
	if diff := cmp.Diff(want, cfg.Config); diff != "" {
		t.Errorf("image config (-want +got):\n%s", diff)
	}
	if cfg.OS != "linux" || cfg.Architecture != "arm64" || !cfg.Created.Time.Equal(meta.Created) {
		t.Errorf("config says %s/%s created %s, want linux/arm64 created %s", cfg.OS, cfg.Architecture, cfg.Created, meta.Created)
	}
	mt, err := img.MediaType()
	if err != nil || mt != types.OCIManifestSchema1 {
		t.Errorf("manifest media type %q (%v), want %q", mt, err, types.OCIManifestSchema1)
	}
}

// TestImageFiles reads the one layer back: the binary, the user database
// and two directories, no shell, every time the commit's.
func TestImageFiles(t *testing.T) {
	meta := testMeta()
	img := mustImage(t, amd64, meta)
	layers, err := img.Layers()
	if err != nil || len(layers) != 1 {
		t.Fatalf("image has %d layers (%v), want 1", len(layers), err)
	}
	rc, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	binary := bytes.Repeat([]byte("\x7fELF steadylb "), 4096)
	var names []string
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, h.Name)
		if !h.ModTime.Equal(meta.Created) {
			t.Errorf("%s has time %s, want %s", h.Name, h.ModTime, meta.Created)
		}
		if h.Name == "controller" {
			data, _ := io.ReadAll(tr)
			if !bytes.Equal(data, binary) || h.Mode != 0o755 {
				t.Errorf("controller in the layer: mode %o, %d bytes, want mode 755 and the binary's %d", h.Mode, len(data), len(binary))
			}
		}
	}
	want := []string{"etc/", "etc/group", "etc/passwd", "home/", "home/nonroot/", "tmp/", "controller"}
	if diff := cmp.Diff(want, names); diff != "" {
		t.Errorf("layer files (-want +got):\n%s", diff)
	}
}

// TestImageReproducible builds each image twice; a change of commit time
// must change the digest, or the comparison proves nothing.
func TestImageReproducible(t *testing.T) {
	meta := testMeta()
	a, b := mustImage(t, amd64, meta), mustImage(t, amd64, meta)
	if da, db := digest(t, a), digest(t, b); da != db {
		t.Errorf("two builds differ: %s and %s", da, db)
	}
	later := meta
	later.Created = meta.Created.Add(time.Second)
	if digest(t, mustImage(t, amd64, later)) == digest(t, a) {
		t.Error("an image of another commit time has the same digest: the comparison cannot fail")
	}
	idx := func() v1.ImageIndex {
		return Index("controller", []PlatformImage{{amd64, a}, {arm64, mustImage(t, arm64, meta)}}, meta)
	}
	if d1, d2 := digest(t, idx()), digest(t, idx()); d1 != d2 {
		t.Errorf("two indexes differ: %s and %s", d1, d2)
	}
}

func TestIndexListsPlatformsInOrder(t *testing.T) {
	meta := testMeta()
	idx := Index("speaker", []PlatformImage{{amd64, mustImage(t, amd64, meta)}, {arm64, mustImage(t, arm64, meta)}}, meta)
	m, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, d := range m.Manifests {
		got = append(got, d.Platform.String())
	}
	if diff := cmp.Diff([]string{"linux/amd64", "linux/arm64"}, got); diff != "" {
		t.Errorf("index platforms (-want +got):\n%s", diff)
	}
	if m.MediaType != types.OCIImageIndex || m.Annotations[LabelRevision] != meta.Revision {
		t.Errorf("index media type %q, revision annotation %q", m.MediaType, m.Annotations[LabelRevision])
	}
}

// TestSBOMListsEveryModule builds the SBOM of a build information with
// a replaced module: every module at the version linked, with a purl,
// the standard library, and the build settings.
func TestSBOMListsEveryModule(t *testing.T) {
	info := &debug.BuildInfo{
		GoVersion: "go1.26.8",
		Path:      "github.com/steadylb/steadylb/cmd/controller",
		Main:      debug.Module{Path: "github.com/steadylb/steadylb", Version: "v0.0.0-20261205100000-0123456789ab"},
		Deps: []*debug.Module{
			{Path: "github.com/go-logr/logr", Version: "v1.4.3", Sum: "h1:abc="},
			{Path: "k8s.io/api", Version: "v0.37.2", Replace: &debug.Module{Path: "example.com/fork/api", Version: "v0.37.2-fork"}},
		},
		Settings: []debug.BuildSetting{{Key: "GOARCH", Value: "arm64"}, {Key: "vcs.revision", Value: "0123456789ab"}},
	}
	doc := sbomFromBuildInfo(info, "controller-linux-arm64", "feedbeef", testMeta())
	got := map[string]string{}
	for _, p := range doc.Packages {
		if len(p.ExternalRefs) != 1 || p.ExternalRefs[0].ReferenceType != "purl" {
			t.Errorf("package %s has no purl: %+v", p.Name, p.ExternalRefs)
			continue
		}
		got[p.Name] = p.ExternalRefs[0].ReferenceLocator
	}
	want := map[string]string{
		"github.com/steadylb/steadylb": "pkg:golang/github.com/steadylb/steadylb@v0.0.0-20261205100000-0123456789ab",
		"stdlib":                       "pkg:golang/stdlib@go1.26.8",
		"github.com/go-logr/logr":      "pkg:golang/github.com/go-logr/logr@v1.4.3",
		"example.com/fork/api":         "pkg:golang/example.com/fork/api@v0.37.2-fork",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("packages and purls (-want +got):\n%s", diff)
	}
	if len(doc.Relationships) != len(doc.Packages) {
		t.Errorf("%d relationships for %d packages, want one DESCRIBES and a DEPENDS_ON per dependency", len(doc.Relationships), len(doc.Packages))
	}
	main := doc.Packages[0]
	if !strings.Contains(main.Comment, "GOARCH=arm64") || !strings.Contains(main.Comment, "revision 0123456789abcdef") ||
		main.Checksums[0].ChecksumValue != "feedbeef" {
		t.Errorf("main package: %+v", main)
	}
	if doc.SPDXVersion != "SPDX-2.3" || doc.CreationInfo.Created != "2026-12-05T10:00:00Z" ||
		doc.DocumentNamespace != "https://github.com/steadylb/steadylb/spdx/controller-linux-arm64/feedbeef" {
		t.Errorf("SBOM header: %+v %+v", doc.SPDXVersion, doc.CreationInfo)
	}
}

// TestSBOMOfABinary reads a real binary's build information: this test's.
func TestSBOMOfABinary(t *testing.T) {
	path := testBinary(t)
	data, err := SBOM(path, "x", testMeta())
	if err != nil {
		t.Fatal(err)
	}
	var doc spdxDocument
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatalf("SBOM is not JSON: %v", err)
	}
	info, err := buildinfo.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if doc.Packages[0].Name != info.Main.Path || doc.Packages[0].VersionInfo == "" || doc.Packages[1].VersionInfo != info.GoVersion {
		t.Errorf("SBOM packages %+v for build information %v", doc.Packages[:2], info)
	}
	again, err := SBOM(path, "x", testMeta())
	if err != nil || !bytes.Equal(again, data) {
		t.Errorf("a second SBOM of the same binary differs (%v)", err)
	}
	if _, err := SBOM(filepath.Join(t.TempDir(), "missing"), "x", testMeta()); err == nil {
		t.Error("an SBOM of a missing file")
	}
}

func TestSPDXIDPart(t *testing.T) {
	for in, want := range map[string]string{
		"github.com/go-logr/logr": "github.com-go-logr-logr",
		"k8s.io/api":              "k8s.io-api",
		"gopkg.in/yaml.v3":        "gopkg.in-yaml.v3",
		"example.com/a_b+c":       "example.com-a-b-c",
	} {
		if got := spdxIDPart(in); got != want {
			t.Errorf("spdxIDPart(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestLayoutAndTarball writes the same index twice: the tarballs must be
// byte for byte equal, and the layout must read back with the image
// named and each SBOM attached to its platform image.
func TestLayoutAndTarball(t *testing.T) {
	meta := testMeta()
	write := func(dir string) (v1.ImageIndex, []byte) {
		a, b := mustImage(t, amd64, meta), mustImage(t, arm64, meta)
		idx := Index("controller", []PlatformImage{{amd64, a}, {arm64, b}}, meta)
		var sboms []SBOMFile
		for _, pi := range []PlatformImage{{amd64, a}, {arm64, b}} {
			desc, err := imageDescriptor(pi.Image)
			if err != nil {
				t.Fatal(err)
			}
			sboms = append(sboms, SBOMFile{Platform: pi.Platform, Image: desc, Data: []byte(`{"sbom":"` + pi.Platform.Architecture + `"}`)})
		}
		if err := WriteLayout(filepath.Join(dir, "controller"), "registry.test/controller:v1.2.3", idx, sboms, meta.Created); err != nil {
			t.Fatal(err)
		}
		tarPath := filepath.Join(dir, "controller.tar")
		if err := WriteTarball(filepath.Join(dir, "controller"), tarPath, meta.Created); err != nil {
			t.Fatal(err)
		}
		data, err := os.ReadFile(tarPath)
		if err != nil {
			t.Fatal(err)
		}
		return idx, data
	}
	dir := t.TempDir()
	idx, first := write(dir)
	_, second := write(t.TempDir())
	if sha256.Sum256(first) != sha256.Sum256(second) {
		t.Error("two tarballs of the same images differ")
	}

	root, err := layout.ImageIndexFromPath(filepath.Join(dir, "controller"))
	if err != nil {
		t.Fatal(err)
	}
	m, err := root.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Manifests) != 3 {
		t.Fatalf("index.json lists %d manifests, want the image index and two SBOMs", len(m.Manifests))
	}
	if top := m.Manifests[0]; top.Digest != digest(t, idx) || top.Annotations[annotationContainerdName] != "registry.test/controller:v1.2.3" {
		t.Errorf("first entry %s named %q, want the index %s named registry.test/controller:v1.2.3", top.Digest, top.Annotations, digest(t, idx))
	}
	inner, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	for i, d := range m.Manifests[1:] {
		if d.ArtifactType != SBOMMediaType {
			t.Errorf("entry %d has artifact type %q", i+1, d.ArtifactType)
		}
		raw, err := layout.Path(filepath.Join(dir, "controller")).Bytes(d.Digest)
		if err != nil {
			t.Fatal(err)
		}
		var am artifactManifest
		if err := json.Unmarshal(raw, &am); err != nil {
			t.Fatal(err)
		}
		if am.Subject == nil || am.Subject.Digest != inner.Manifests[i].Digest {
			t.Errorf("SBOM %d is attached to %v, want the %s image %s", i, am.Subject, inner.Manifests[i].Platform, inner.Manifests[i].Digest)
		}
	}
	if !slices.IsSorted(tarNames(t, first)) {
		t.Error("tarball entries are not in lexical order")
	}
}

func tarNames(t *testing.T, data []byte) []string {
	t.Helper()
	var names []string
	tr := tar.NewReader(bytes.NewReader(data))
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return names
		}
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, h.Name)
	}
}
