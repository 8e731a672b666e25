// Package kubeletvol lays out a Secret or ConfigMap volume in a directory
// the way the kubelet does, for tests of code that reads mounted Secrets:
//
//	dir/..2026_12_05_13_04_05.123456789/secretkey   the files, one directory per version
//	dir/..data -> ..2026_12_05_13_04_05.123456789   swapped atomically on update
//	dir/secretkey -> ..data/secretkey                one link per key, made once
//
// An update writes the new version's directory, points a temporary link
// at it and renames that over ..data (one atomic step, so a reader sees
// the old files or the new ones, never a mix), then adds links for new
// keys, removes links of keys that went, and deletes the old version. A
// Secret with no data is a volume with ..data and no file.
package kubeletvol

import (
	"fmt"
	"os"
	"path/filepath"
	"time"
)

const dataLink = "..data"

// Volume is one mounted volume.
type Volume struct {
	// Dir is the mount point.
	Dir     string
	version string
	keys    map[string]bool
	n       int
}

// New lays out the volume with data in dir, which must exist.
func New(dir string, data map[string][]byte) (*Volume, error) {
	v := &Volume{Dir: dir, keys: map[string]bool{}}
	if err := v.Update(data); err != nil {
		return nil, err
	}
	return v, nil
}

// Update replaces the volume's files with data, as the kubelet does when
// the Secret changed.
func (v *Volume) Update(data map[string][]byte) error {
	v.n++
	version := fmt.Sprintf("..%s.%09d", time.Now().UTC().Format("2006_01_02_15_04_05"), v.n)
	dir := filepath.Join(v.Dir, version)
	if err := os.Mkdir(dir, 0o755); err != nil {
		return fmt.Errorf("kubeletvol: %w", err)
	}
	for k, b := range data {
		if err := os.WriteFile(filepath.Join(dir, k), b, 0o400); err != nil {
			return fmt.Errorf("kubeletvol: %w", err)
		}
	}
	tmp := filepath.Join(v.Dir, "..data_tmp")
	if err := os.Symlink(version, tmp); err != nil {
		return fmt.Errorf("kubeletvol: %w", err)
	}
	if err := os.Rename(tmp, filepath.Join(v.Dir, dataLink)); err != nil {
		return fmt.Errorf("kubeletvol: swap %s: %w", dataLink, err)
	}
	for k := range data {
		if !v.keys[k] {
			if err := os.Symlink(filepath.Join(dataLink, k), filepath.Join(v.Dir, k)); err != nil {
				return fmt.Errorf("kubeletvol: %w", err)
			}
			v.keys[k] = true
		}
	}
	for k := range v.keys {
		if _, ok := data[k]; !ok {
			if err := os.Remove(filepath.Join(v.Dir, k)); err != nil {
				return fmt.Errorf("kubeletvol: %w", err)
			}
			delete(v.keys, k)
		}
	}
	if v.version != "" {
		if err := os.RemoveAll(filepath.Join(v.Dir, v.version)); err != nil {
			return fmt.Errorf("kubeletvol: %w", err)
		}
	}
	v.version = version
	return nil
}
