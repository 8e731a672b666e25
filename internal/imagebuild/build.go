package imagebuild

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// Component is one image: its name (the image's last path element and its
// entrypoint, /name) and the Go package of its command.
type Component struct {
	Name, Package string
}

// Components are steadylb's images: the controller, the speaker and the
// kubectl plugin (an image too, so it ships and verifies the same way).
var Components = []Component{
	{Name: "controller", Package: "./cmd/controller"},
	{Name: "speaker", Package: "./cmd/speaker"},
	{Name: "kubectl-steadylb", Package: "./cmd/kubectl-steadylb"},
}

// Config is one build of every image.
type Config struct {
	// ModuleDir is the root of the Go module the packages belong to.
	ModuleDir string
	// OutDir receives, per component, the layout directory <name>/, the
	// tarball <name>.tar and the SBOMs <name>.<os>-<arch>.spdx.json.
	OutDir string
	// Repository prefixes the image names: <Repository>/<name>:<version>.
	Repository string
	// Platforms are built in this order; the index lists them so.
	Platforms []v1.Platform
	Meta      Meta
}

// Result is one component's image as built.
type Result struct {
	Name string
	// Repository is <repository>/<name>; Tag is it with :<version>.
	Repository, Tag string
	// Digest is the image index's.
	Digest v1.Hash
	// Layout, Tarball and SBOMs are the files written.
	Layout, Tarball string
	SBOMs           []string
}

// Reference is the image by digest, <repository>/<name>@<digest>, what
// manifests should pin.
func (r Result) Reference() string {
	return r.Repository + "@" + r.Digest.String()
}

// Build compiles every component for every platform and writes its
// image, tarball and SBOMs into cfg.OutDir.
func Build(ctx context.Context, cfg Config, components []Component) ([]Result, error) {
	binDir := filepath.Join(cfg.OutDir, "bin")
	var results []Result
	for _, c := range components {
		r, err := buildComponent(ctx, cfg, c, binDir)
		if err != nil {
			return nil, err
		}
		results = append(results, r)
	}
	return results, nil
}

func buildComponent(ctx context.Context, cfg Config, c Component, binDir string) (Result, error) {
	repo := cfg.Repository + "/" + c.Name
	r := Result{
		Name:       c.Name,
		Repository: repo,
		Tag:        repo + ":" + cfg.Meta.Version,
		Layout:     filepath.Join(cfg.OutDir, c.Name),
		Tarball:    filepath.Join(cfg.OutDir, c.Name+".tar"),
	}
	var images []PlatformImage
	var sboms []SBOMFile
	for _, p := range cfg.Platforms {
		suffix := p.OS + "-" + p.Architecture
		bin := filepath.Join(binDir, suffix, c.Name)
		if err := GoBuild(ctx, cfg.ModuleDir, c.Package, p, bin); err != nil {
			return Result{}, err
		}
		img, err := Image(bin, c.Name, p, cfg.Meta)
		if err != nil {
			return Result{}, err
		}
		images = append(images, PlatformImage{Platform: p, Image: img})
		doc, err := SBOM(bin, c.Name+"-"+suffix, cfg.Meta)
		if err != nil {
			return Result{}, err
		}
		sbomPath := filepath.Join(cfg.OutDir, c.Name+"."+suffix+".spdx.json")
		if err := os.WriteFile(sbomPath, doc, 0o644); err != nil {
			return Result{}, fmt.Errorf("write SBOM: %w", err)
		}
		r.SBOMs = append(r.SBOMs, sbomPath)
		desc, err := imageDescriptor(img)
		if err != nil {
			return Result{}, fmt.Errorf("image %s for %s: %w", c.Name, p, err)
		}
		sboms = append(sboms, SBOMFile{Platform: p, Image: desc, Data: doc})
	}
	idx := Index(c.Name, images, cfg.Meta)
	digest, err := idx.Digest()
	if err != nil {
		return Result{}, fmt.Errorf("index of %s: %w", c.Name, err)
	}
	r.Digest = digest
	if err := WriteLayout(r.Layout, r.Tag, idx, sboms, cfg.Meta.Created); err != nil {
		return Result{}, err
	}
	if err := WriteTarball(r.Layout, r.Tarball, cfg.Meta.Created); err != nil {
		return Result{}, err
	}
	return r, nil
}

func imageDescriptor(img v1.Image) (v1.Descriptor, error) {
	mt, err := img.MediaType()
	if err != nil {
		return v1.Descriptor{}, err
	}
	d, err := img.Digest()
	if err != nil {
		return v1.Descriptor{}, err
	}
	size, err := img.Size()
	if err != nil {
		return v1.Descriptor{}, err
	}
	return v1.Descriptor{MediaType: mt, Digest: d, Size: size}, nil
}

// GoBuild compiles pkg of the module in moduleDir for platform into out:
// static (no cgo), without file system paths (-trimpath), stripped of
// symbol tables, for the baseline of each architecture. VCS stamping is
// off: the toolchain finds no repository in a git worktree, so a clone and
// a worktree of one commit would build different binaries; the SBOM and
// the labels carry the revision instead. GOFLAGS from the environment is
// ignored so that no local setting changes the result.
func GoBuild(ctx context.Context, moduleDir, pkg string, platform v1.Platform, out string) error {
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-buildvcs=false", "-ldflags=-s -w", "-o", out, pkg)
	cmd.Dir = moduleDir
	cmd.Env = append(os.Environ(),
		"CGO_ENABLED=0", "GOFLAGS=", "GOOS="+platform.OS, "GOARCH="+platform.Architecture,
		"GOAMD64=v1", "GOARM64=v8.0")
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stderr, &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go build %s for %s/%s: %w\n%s", pkg, platform.OS, platform.Architecture, err, stderr.String())
	}
	return nil
}
