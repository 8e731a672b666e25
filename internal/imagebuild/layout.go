package imagebuild

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Annotations on the layout's index.json entry that name the image: the
// OCI one, and containerd's, which `ctr images import` names the image by.
const (
	annotationRefName        = "org.opencontainers.image.ref.name"
	annotationContainerdName = "io.containerd.image.name"
)

// emptyJSON is the config blob of an artifact manifest, as the OCI image
// spec prescribes for artifacts that have no configuration.
var emptyJSON = []byte("{}")

// SBOMFile is one image's SBOM.
type SBOMFile struct {
	// Platform is the image's platform; Image is its manifest.
	Platform v1.Platform
	Image    v1.Descriptor
	// Data is the SPDX JSON document.
	Data []byte
}

// WriteLayout writes idx as an OCI image layout in dir (replacing what
// was there), named ref, and attaches each SBOM to its platform image as
// an OCI artifact: a manifest whose subject is the image and whose layer
// is the document, listed in index.json beside the image index.
func WriteLayout(dir, ref string, idx v1.ImageIndex, sboms []SBOMFile, created time.Time) error {
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("clear %s: %w", dir, err)
	}
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return fmt.Errorf("create layout %s: %w", dir, err)
	}
	name := map[string]string{annotationRefName: ref, annotationContainerdName: ref}
	if err := p.AppendIndex(idx, layout.WithAnnotations(name)); err != nil {
		return fmt.Errorf("write %s into %s: %w", ref, dir, err)
	}
	for _, s := range sboms {
		if err := appendSBOM(p, s, created); err != nil {
			return fmt.Errorf("attach SBOM of %s for %s: %w", ref, s.Platform, err)
		}
	}
	return nil
}

// artifactManifest is an OCI image manifest that carries an artifact.
type artifactManifest struct {
	SchemaVersion int               `json:"schemaVersion"`
	MediaType     types.MediaType   `json:"mediaType"`
	ArtifactType  string            `json:"artifactType"`
	Config        v1.Descriptor     `json:"config"`
	Layers        []v1.Descriptor   `json:"layers"`
	Subject       *v1.Descriptor    `json:"subject"`
	Annotations   map[string]string `json:"annotations"`
}

func appendSBOM(p layout.Path, s SBOMFile, created time.Time) error {
	configDesc, err := writeBlob(p, types.OCIEmptyJSON, emptyJSON)
	if err != nil {
		return err
	}
	docDesc, err := writeBlob(p, SBOMMediaType, s.Data)
	if err != nil {
		return err
	}
	subject := v1.Descriptor{MediaType: s.Image.MediaType, Digest: s.Image.Digest, Size: s.Image.Size}
	m := artifactManifest{
		SchemaVersion: 2,
		MediaType:     types.OCIManifestSchema1,
		ArtifactType:  SBOMMediaType,
		Config:        configDesc,
		Layers:        []v1.Descriptor{docDesc},
		Subject:       &subject,
		Annotations:   map[string]string{LabelCreated: created.UTC().Format(time.RFC3339)},
	}
	raw, err := json.Marshal(m)
	if err != nil {
		return fmt.Errorf("encode manifest: %w", err)
	}
	desc, err := writeBlob(p, types.OCIManifestSchema1, raw)
	if err != nil {
		return err
	}
	desc.ArtifactType = SBOMMediaType
	if err := p.AppendDescriptor(desc); err != nil {
		return fmt.Errorf("list manifest %s: %w", desc.Digest, err)
	}
	return nil
}

func writeBlob(p layout.Path, mt types.MediaType, data []byte) (v1.Descriptor, error) {
	h, size, err := v1.SHA256(bytes.NewReader(data))
	if err != nil {
		return v1.Descriptor{}, fmt.Errorf("hash blob: %w", err)
	}
	if err := p.WriteBlob(h, io.NopCloser(bytes.NewReader(data))); err != nil {
		return v1.Descriptor{}, fmt.Errorf("write blob %s: %w", h, err)
	}
	return v1.Descriptor{MediaType: mt, Digest: h, Size: size}, nil
}

// WriteTarball packs the layout directory dir into the tar file path, the
// form `ctr images import` reads: files in lexical order, owned by root,
// with fixed modes and the build's time.
func WriteTarball(dir, path string, created time.Time) (err error) {
	var files []string
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p != dir {
			files = append(files, p)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("list %s: %w", dir, err)
	}
	slices.Sort(files)
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("create %s: %w", path, err)
	}
	defer func() {
		if cerr := f.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("close %s: %w", path, cerr)
		}
	}()
	tw := tar.NewWriter(f)
	for _, file := range files {
		if err := addToTar(tw, dir, file, created); err != nil {
			return fmt.Errorf("pack %s: %w", path, err)
		}
	}
	if err := tw.Close(); err != nil {
		return fmt.Errorf("pack %s: %w", path, err)
	}
	return nil
}

func addToTar(tw *tar.Writer, dir, file string, created time.Time) error {
	rel, err := filepath.Rel(dir, file)
	if err != nil {
		return err
	}
	st, err := os.Stat(file)
	if err != nil {
		return err
	}
	h := &tar.Header{Name: filepath.ToSlash(rel), Mode: 0o644, ModTime: created, Typeflag: tar.TypeReg, Format: tar.FormatPAX}
	if st.IsDir() {
		h.Name, h.Mode, h.Typeflag = h.Name+"/", 0o755, tar.TypeDir
		return tw.WriteHeader(h)
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	h.Size = int64(len(data))
	if err := tw.WriteHeader(h); err != nil {
		return err
	}
	_, err = tw.Write(data)
	return err
}
