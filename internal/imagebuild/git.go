package imagebuild

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// GitMeta reads the version, revision and commit time of the checkout in
// dir: the version is `git describe --tags --always --dirty` (a commit
// without a tag gives its short hash), the time is the commit's, so that
// two builds of one commit agree. sourceDateEpoch, when not empty,
// overrides the time as the reproducible-builds convention asks.
func GitMeta(ctx context.Context, dir, source, sourceDateEpoch string) (Meta, error) {
	m := Meta{Source: source}
	var err error
	if m.Revision, err = git(ctx, dir, "rev-parse", "HEAD"); err != nil {
		return Meta{}, err
	}
	if m.Version, err = git(ctx, dir, "describe", "--tags", "--always", "--dirty"); err != nil {
		return Meta{}, err
	}
	epoch := sourceDateEpoch
	if epoch == "" {
		if epoch, err = git(ctx, dir, "log", "-1", "--format=%ct", "HEAD"); err != nil {
			return Meta{}, err
		}
	}
	secs, err := strconv.ParseInt(epoch, 10, 64)
	if err != nil {
		return Meta{}, fmt.Errorf("SOURCE_DATE_EPOCH %q is not a number of seconds: %w", epoch, err)
	}
	m.Created = time.Unix(secs, 0).UTC()
	return m, nil
}

func git(ctx context.Context, dir string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, stderr.String())
	}
	return strings.TrimSpace(stdout.String()), nil
}
