package imagebuild

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"os"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// User is the user and group the images run as: distroless' "nonroot",
// a uid no host account is likely to have.
const User = "65532:65532"

// Labels an image carries, the OCI annotation keys.
const (
	LabelSource   = "org.opencontainers.image.source"
	LabelVersion  = "org.opencontainers.image.version"
	LabelRevision = "org.opencontainers.image.revision"
	LabelCreated  = "org.opencontainers.image.created"
	LabelTitle    = "org.opencontainers.image.title"
)

// Meta is what every image of one build shares.
type Meta struct {
	// Source is the repository's URL, for the source label.
	Source string
	// Version and Revision are the release version and the commit.
	Version, Revision string
	// Created is the commit time: every timestamp in the images.
	Created time.Time
}

// labels are the OCI labels of the image called name, also put on its
// index as annotations.
func (m Meta) labels(name string) map[string]string {
	return map[string]string{
		LabelSource:   m.Source,
		LabelVersion:  m.Version,
		LabelRevision: m.Revision,
		LabelCreated:  m.Created.UTC().Format(time.RFC3339),
		LabelTitle:    name,
	}
}

// passwd and group name the image's users, so that tools inside and out
// show "nonroot" rather than a bare number; nobody can log in.
const (
	passwd = "root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n"
	group  = "root:x:0:\nnonroot:x:65532:\n"
)

// layerFile is one entry of the image's only layer.
type layerFile struct {
	name string
	mode int64
	uid  int
	dir  bool
	data []byte
}

// rootLayer is the image's filesystem as a tar: the binary at /name, the
// user database, a writable /tmp and the non-root user's home. Entries are
// in a fixed order with fixed owners, modes and times.
func rootLayer(name string, binary []byte, created time.Time) ([]byte, error) {
	files := []layerFile{
		{name: "etc/", mode: 0o755, dir: true},
		{name: "etc/group", mode: 0o644, data: []byte(group)},
		{name: "etc/passwd", mode: 0o644, data: []byte(passwd)},
		{name: "home/", mode: 0o755, dir: true},
		{name: "home/nonroot/", mode: 0o700, uid: 65532, dir: true},
		{name: "tmp/", mode: 0o1777, dir: true},
		{name: name, mode: 0o755, data: binary},
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range files {
		h := &tar.Header{
			Name: f.name, Mode: f.mode, Uid: f.uid, Gid: f.uid, ModTime: created,
			Typeflag: tar.TypeReg, Size: int64(len(f.data)), Format: tar.FormatPAX,
		}
		if f.dir {
			h.Typeflag = tar.TypeDir
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, fmt.Errorf("write %s into the layer: %w", f.name, err)
		}
		if _, err := tw.Write(f.data); err != nil {
			return nil, fmt.Errorf("write %s into the layer: %w", f.name, err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, fmt.Errorf("close layer: %w", err)
	}
	return buf.Bytes(), nil
}

// Image builds the single-platform image of the binary at path: one
// layer, the entrypoint /name, the non-root user, and meta's labels.
func Image(path, name string, platform v1.Platform, meta Meta) (v1.Image, error) {
	binary, err := readFile(path)
	if err != nil {
		return nil, err
	}
	tarBytes, err := rootLayer(name, binary, meta.Created)
	if err != nil {
		return nil, fmt.Errorf("image %s for %s: %w", name, platform, err)
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(tarBytes)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, fmt.Errorf("image %s for %s: layer: %w", name, platform, err)
	}
	created := v1.Time{Time: meta.Created.UTC()}
	base := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	img, err := mutate.Append(base, mutate.Addendum{
		Layer:     layer,
		MediaType: types.OCILayer,
		History:   v1.History{Created: created, CreatedBy: "steadylb imagebuild: /" + name, Comment: "static Go binary"},
	})
	if err != nil {
		return nil, fmt.Errorf("image %s for %s: %w", name, platform, err)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("image %s for %s: config: %w", name, platform, err)
	}
	cfg = cfg.DeepCopy()
	cfg.Created = created
	cfg.OS, cfg.Architecture, cfg.Variant = platform.OS, platform.Architecture, platform.Variant
	cfg.Config = v1.Config{
		User:       User,
		Entrypoint: []string{"/" + name},
		WorkingDir: "/",
		Env:        []string{"PATH=/"},
		Labels:     meta.labels(name),
	}
	img, err = mutate.ConfigFile(img, cfg)
	if err != nil {
		return nil, fmt.Errorf("image %s for %s: config: %w", name, platform, err)
	}
	return img, nil
}

// PlatformImage is an image and the platform it runs on.
type PlatformImage struct {
	Platform v1.Platform
	Image    v1.Image
}

// Index puts the images of one component under one OCI image index, in
// the order given, annotated with meta's labels.
func Index(name string, images []PlatformImage, meta Meta) v1.ImageIndex {
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	for _, pi := range images {
		p := pi.Platform
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{
			Add:        pi.Image,
			Descriptor: v1.Descriptor{Platform: &p},
		})
	}
	return mutate.Annotations(idx, meta.labels(name)).(v1.ImageIndex)
}

func readFile(path string) ([]byte, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return data, nil
}
