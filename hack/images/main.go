// Command images builds steadylb's container images without a container
// runtime (`make images`): the controller, the speaker and the kubectl
// plugin, each an OCI image index for linux/amd64 and linux/arm64 written
// as an OCI layout directory and a tarball under -out, with an SPDX SBOM
// per image, and prints each image's reference by digest.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/steadylb/steadylb/internal/imagebuild"
)

func main() {
	out := flag.String("out", "build/images", "directory for the layouts, tarballs and SBOMs")
	repo := flag.String("repository", "ghcr.io/steadylb", "registry and path the image names start with")
	platforms := flag.String("platforms", "linux/amd64,linux/arm64", "comma-separated os/arch list")
	source := flag.String("source", "https://github.com/steadylb/steadylb", "the source repository, for the images' labels")
	only := flag.String("only", "", "comma-separated component names to build (default: all)")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, *out, *repo, *platforms, *source, *only); err != nil {
		fmt.Fprintln(os.Stderr, "images:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, out, repo, platformList, source, only string) error {
	meta, err := imagebuild.GitMeta(ctx, ".", source, os.Getenv("SOURCE_DATE_EPOCH"))
	if err != nil {
		return err
	}
	var platforms []v1.Platform
	for _, s := range strings.Split(platformList, ",") {
		p, err := v1.ParsePlatform(s)
		if err != nil {
			return fmt.Errorf("platform %q: %w", s, err)
		}
		platforms = append(platforms, *p)
	}
	comps := imagebuild.Components
	if only != "" {
		comps = nil
		for _, c := range imagebuild.Components {
			if strings.Contains(","+only+",", ","+c.Name+",") {
				comps = append(comps, c)
			}
		}
	}
	results, err := imagebuild.Build(ctx, imagebuild.Config{
		ModuleDir: ".", OutDir: out, Repository: repo, Platforms: platforms, Meta: meta,
	}, comps)
	if err != nil {
		return err
	}
	for _, r := range results {
		fmt.Printf("%s\n  tag:     %s\n  digest:  %s\n  tarball: %s\n  layout:  %s\n  sboms:   %s\n",
			r.Reference(), r.Tag, r.Digest, r.Tarball, r.Layout, strings.Join(r.SBOMs, " "))
	}
	return nil
}
