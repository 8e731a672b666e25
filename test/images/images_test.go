// Package images builds steadylb's controller and speaker images the way
// `make images` does, twice, and proves them: the two builds have the same digests and
// the same tarballs; every platform image runs its static binary as user
// 65532 with no shell beside it and carries the OCI labels; each SBOM lists
// every module its binary links; and containerd imports the tarballs
// (`ctr images import`), as a node would load them.
package images

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"debug/buildinfo"
	"debug/elf"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"

	"github.com/steadylb/steadylb/internal/imagebuild"
	"github.com/steadylb/steadylb/test/testenv"
)

var platforms = []v1.Platform{{OS: "linux", Architecture: "amd64"}, {OS: "linux", Architecture: "arm64"}}

// components are the images the suite builds: the two that run in the
// cluster. The plugin's image comes from the same code path, and building
// it too would add a third set of binaries to every test run.
var components = imagebuild.Components[:2]

// built is one build of every image, shared by the tests.
type built struct {
	meta    imagebuild.Meta
	dir     string
	results []imagebuild.Result
}

var (
	buildOnce     sync.Once
	first, second built
	buildErr      error
)

// twice builds every image into two directories, as two runs of
// `make images` on one commit would.
func twice(t *testing.T) (built, built) {
	t.Helper()
	buildOnce.Do(func() {
		root, err := testenv.RepoRoot()
		if err != nil {
			buildErr = err
			return
		}
		meta, err := imagebuild.GitMeta(context.Background(), root, "https://github.com/steadylb/steadylb", "")
		if err != nil {
			buildErr = err
			return
		}
		for _, b := range []*built{&first, &second} {
			dir, err := os.MkdirTemp("", "steadylb-images-")
			if err != nil {
				buildErr = err
				return
			}
			b.meta, b.dir = meta, dir
			b.results, err = imagebuild.Build(context.Background(), imagebuild.Config{
				ModuleDir: root, OutDir: dir, Repository: "registry.test/steadylb", Platforms: platforms, Meta: meta,
			}, components)
			if err != nil {
				buildErr = err
				return
			}
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return first, second
}

func TestMain(m *testing.M) {
	code := m.Run()
	for _, b := range []built{first, second} {
		if b.dir != "" {
			os.RemoveAll(b.dir)
		}
	}
	os.Exit(code)
}

func sha(t *testing.T, path string) [32]byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return sha256.Sum256(data)
}

// TestSameCommitSameDigests compares the two builds: digests, tarballs
// and SBOMs must be identical.
func TestSameCommitSameDigests(t *testing.T) {
	a, b := twice(t)
	if len(a.results) != len(components) {
		t.Fatalf("built %d images, want %d", len(a.results), len(components))
	}
	for i, r := range a.results {
		o := b.results[i]
		if r.Digest != o.Digest {
			t.Errorf("%s: digests %s and %s", r.Name, r.Digest, o.Digest)
		}
		if sha(t, r.Tarball) != sha(t, o.Tarball) {
			t.Errorf("%s: the tarballs differ", r.Name)
		}
		for j := range r.SBOMs {
			if sha(t, r.SBOMs[j]) != sha(t, o.SBOMs[j]) {
				t.Errorf("%s: SBOM %s differs", r.Name, filepath.Base(r.SBOMs[j]))
			}
		}
		t.Logf("%s %s", r.Reference(), r.Tag)
	}
}

// TestImagesAreSound reads each image back from its layout: one image per
// platform, the user, entrypoint and labels, one layer with a static
// binary for that platform and no shell, and an SBOM attached to it that
// lists every module the binary links.
func TestImagesAreSound(t *testing.T) {
	a, _ := twice(t)
	for _, r := range a.results {
		t.Run(r.Name, func(t *testing.T) {
			idx, err := layout.ImageIndexFromPath(r.Layout)
			if err != nil {
				t.Fatal(err)
			}
			top, err := idx.IndexManifest()
			if err != nil {
				t.Fatal(err)
			}
			if top.Manifests[0].Digest != r.Digest || top.Manifests[0].Annotations["io.containerd.image.name"] != r.Tag {
				t.Fatalf("index.json names %v, want %s as %s", top.Manifests[0], r.Digest, r.Tag)
			}
			images, err := idx.ImageIndex(r.Digest)
			if err != nil {
				t.Fatal(err)
			}
			m, err := images.IndexManifest()
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, d := range m.Manifests {
				got = append(got, d.Platform.String())
				img, err := images.Image(d.Digest)
				if err != nil {
					t.Fatal(err)
				}
				checkImage(t, a.meta, r.Name, *d.Platform, img)
				checkSBOM(t, r, *d.Platform, d.Digest, top)
			}
			if diff := cmp.Diff([]string{"linux/amd64", "linux/arm64"}, got); diff != "" {
				t.Errorf("platforms (-want +got):\n%s", diff)
			}
		})
	}
}

func checkImage(t *testing.T, meta imagebuild.Meta, name string, p v1.Platform, img v1.Image) {
	t.Helper()
	cfg, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	c := cfg.Config
	if c.User != "65532:65532" || !slices.Equal(c.Entrypoint, []string{"/" + name}) || cfg.Architecture != p.Architecture || cfg.OS != "linux" {
		t.Errorf("%s: user %q, entrypoint %q, platform %s/%s", p, c.User, c.Entrypoint, cfg.OS, cfg.Architecture)
	}
	wantLabels := map[string]string{
		imagebuild.LabelSource: meta.Source, imagebuild.LabelRevision: meta.Revision, imagebuild.LabelVersion: meta.Version,
		imagebuild.LabelTitle: name, imagebuild.LabelCreated: meta.Created.UTC().Format("2006-01-02T15:04:05Z"),
	}
	if diff := cmp.Diff(wantLabels, c.Labels); diff != "" {
		t.Errorf("%s: labels (-want +got):\n%s", p, diff)
	}
	layers, err := img.Layers()
	if err != nil || len(layers) != 1 {
		t.Fatalf("%s: %d layers (%v), want 1", p, len(layers), err)
	}
	files := layerFiles(t, layers[0])
	for path := range files {
		if base := filepath.Base(path); base == "sh" || base == "bash" || base == "busybox" {
			t.Errorf("%s: the image has a shell, %s", p, path)
		}
	}
	binary, ok := files[name]
	if !ok {
		t.Fatalf("%s: no /%s in the image", p, name)
	}
	f, err := elf.NewFile(bytes.NewReader(binary))
	if err != nil {
		t.Fatalf("%s: /%s is not an ELF binary: %v", p, name, err)
	}
	wantMachine := map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}[p.Architecture]
	if f.Machine != wantMachine {
		t.Errorf("%s: /%s is built for %s", p, name, f.Machine)
	}
	for _, prog := range f.Progs {
		if prog.Type == elf.PT_INTERP {
			t.Errorf("%s: /%s is dynamically linked (it names an interpreter)", p, name)
		}
	}
}

// layerFiles reads a layer's regular files by path.
func layerFiles(t *testing.T, l v1.Layer) map[string][]byte {
	t.Helper()
	rc, err := l.Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	files := map[string][]byte{}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return files
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeReg {
			data, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			files[h.Name] = data
		}
	}
}

// checkSBOM finds the SBOM attached to the image digest and compares it
// with the build information of the binary built for that platform.
func checkSBOM(t *testing.T, r imagebuild.Result, p v1.Platform, image v1.Hash, top *v1.IndexManifest) {
	t.Helper()
	var doc []byte
	for _, d := range top.Manifests {
		if d.ArtifactType != imagebuild.SBOMMediaType {
			continue
		}
		raw, err := layout.Path(r.Layout).Bytes(d.Digest)
		if err != nil {
			t.Fatal(err)
		}
		var m v1.Manifest
		if err := json.Unmarshal(raw, &m); err != nil {
			t.Fatal(err)
		}
		if m.Subject != nil && m.Subject.Digest == image {
			if doc, err = layout.Path(r.Layout).Bytes(m.Layers[0].Digest); err != nil {
				t.Fatal(err)
			}
		}
	}
	if doc == nil {
		t.Fatalf("%s: no SBOM attached to image %s", p, image)
	}
	beside, err := os.ReadFile(filepath.Join(filepath.Dir(r.Layout), fmt.Sprintf("%s.%s-%s.spdx.json", r.Name, p.OS, p.Architecture)))
	if err != nil || !bytes.Equal(beside, doc) {
		t.Errorf("%s: the SBOM beside the layout differs from the attached one (%v)", p, err)
	}
	var sbom struct {
		Packages []struct {
			Name        string `json:"name"`
			VersionInfo string `json:"versionInfo"`
		} `json:"packages"`
	}
	if err := json.Unmarshal(doc, &sbom); err != nil {
		t.Fatal(err)
	}
	listed := map[string]string{}
	for _, pkg := range sbom.Packages {
		listed[pkg.Name] = pkg.VersionInfo
	}
	info, err := buildinfo.ReadFile(filepath.Join(filepath.Dir(r.Layout), "bin", p.OS+"-"+p.Architecture, r.Name))
	if err != nil {
		t.Fatal(err)
	}
	if len(info.Deps) < 10 {
		t.Fatalf("%s: the binary links %d modules: the comparison would prove little", p, len(info.Deps))
	}
	for _, d := range info.Deps {
		if d.Replace != nil {
			d = d.Replace
		}
		if listed[d.Path] != d.Version {
			t.Errorf("%s: the SBOM lists %s at %q, the binary links %s", p, d.Path, listed[d.Path], d.Version)
		}
	}
}
