// Package kubeletvol lays out a Secret, ConfigMap or projected volume in a
// directory the way the kubelet's atomic writer does, for tests of code
// that reads mounted files:
//
//	dir/..2026_12_05_13_04_05.123456789/secretkey   the files, one directory per version
//	dir/..data -> ..2026_12_05_13_04_05.123456789   swapped atomically on update
//	dir/secretkey -> ..data/secretkey                one link per top-level name
//
// A write lays the new version's directory out, points a temporary link
// at it and renames that over ..data (one atomic step, so a reader sees
// the old files or the new ones, never a mix), then adds links for new
// names, removes links of names that went, and deletes the old version.
// A Secret with no data is a volume with ..data and no file.
package kubeletvol

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"
)

const dataLink = "..data"

// File is one file of a volume.
type File struct {
	Data []byte
	// Mode is the file's mode; 0 means the volume's default mode.
	Mode os.FileMode
}

// versions numbers the version directories, so that two writes within a
// clock tick still get directories of their own.
var versions atomic.Uint64

// Write lays files (keyed by their path in the volume) out in dir, which
// is created if missing, replacing what an earlier Write put there.
func Write(dir string, files map[string]File, mode os.FileMode) error {
	if err := write(dir, files, mode); err != nil {
		return fmt.Errorf("kubeletvol %s: %w", dir, err)
	}
	return nil
}

func write(dir string, files map[string]File, mode os.FileMode) error {
	version := fmt.Sprintf("..%s.%09d", time.Now().UTC().Format("2006_01_02_15_04_05"), versions.Add(1))
	if err := os.MkdirAll(filepath.Join(dir, version), 0o755); err != nil {
		return err
	}
	old, _ := os.Readlink(filepath.Join(dir, dataLink))
	top := map[string]bool{}
	for name, f := range files {
		if err := writeFile(filepath.Join(dir, version), name, f, mode); err != nil {
			return err
		}
		top[strings.SplitN(name, "/", 2)[0]] = true
	}
	tmp := filepath.Join(dir, "..data_tmp")
	_ = os.Remove(tmp)
	if err := os.Symlink(version, tmp); err != nil {
		return err
	}
	if err := os.Rename(tmp, filepath.Join(dir, dataLink)); err != nil {
		return fmt.Errorf("swap %s: %w", dataLink, err)
	}
	if err := relink(dir, top); err != nil {
		return err
	}
	if old != "" {
		return os.RemoveAll(filepath.Join(dir, old))
	}
	return nil
}

func writeFile(root, name string, f File, mode os.FileMode) error {
	if filepath.IsAbs(name) || strings.Contains(name, "..") {
		return fmt.Errorf("file name %q", name)
	}
	path := filepath.Join(root, name)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	m := f.Mode
	if m == 0 {
		m = mode
	}
	if err := os.WriteFile(path, f.Data, m); err != nil {
		return err
	}
	// WriteFile's mode passes through the umask.
	return os.Chmod(path, m)
}

// relink makes dir's top-level links those of top: one per name, into
// ..data.
func relink(dir string, top map[string]bool) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if name := e.Name(); !strings.HasPrefix(name, "..") && !top[name] {
			if err := os.Remove(filepath.Join(dir, name)); err != nil {
				return err
			}
		}
	}
	for name := range top {
		link := filepath.Join(dir, name)
		if _, err := os.Lstat(link); err == nil {
			continue
		}
		if err := os.Symlink(filepath.Join(dataLink, name), link); err != nil {
			return err
		}
	}
	return nil
}

// Volume is one mounted Secret volume, of mode 0400 as the DaemonSet's.
type Volume struct {
	// Dir is the mount point.
	Dir string
}

// New lays out the volume with data in dir.
func New(dir string, data map[string][]byte) (*Volume, error) {
	v := &Volume{Dir: dir}
	if err := v.Update(data); err != nil {
		return nil, err
	}
	return v, nil
}

// Update replaces the volume's files with data, as the kubelet does when
// the Secret changed.
func (v *Volume) Update(data map[string][]byte) error {
	files := make(map[string]File, len(data))
	for k, b := range data {
		files[k] = File{Data: b}
	}
	return Write(v.Dir, files, 0o400)
}
