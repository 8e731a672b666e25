// Command podinit starts a container's process the way a container
// runtime would, for test/podproc: it is run by `ip netns exec <pod's
// namespace> unshare --mount` with exactly the container's environment,
// and it
//
//   - sets the host name to the Pod's (--hostname, for a Pod off the
//     host network, run in a UTS namespace of its own);
//   - bind-mounts the volumes (--mount src:dst[:ro]) and the image's
//     binary into an otherwise empty root directory, with /proc, /sys and
//     /dev;
//   - makes that root read-only (--read-only, readOnlyRootFilesystem);
//   - chroots into it;
//   - keeps only the capabilities the container is granted (--caps, a
//     comma-separated list such as "NET_RAW"; empty keeps none) in the
//     bounding set, sets no_new_privs (--no-new-privs,
//     allowPrivilegeEscalation: false) and switches to --uid and --gid;
//   - and executes the command after "--".
//
// A mount namespace of its own keeps every mount private to the
// container, so nothing on the machine changes.
package main

import (
	"flag"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// init locks the main goroutine to the main thread: the bounding set and
// no_new_privs are per thread and must be those of the thread that
// executes the command.
func init() { runtime.LockOSThread() }

type mounts []string

func (m *mounts) String() string     { return strings.Join(*m, ",") }
func (m *mounts) Set(v string) error { *m = append(*m, v); return nil }

type options struct {
	root       string
	mounts     mounts
	readOnly   bool
	caps       string
	noNewPrivs bool
	uid, gid   int
	hostname   string
	command    []string
}

func main() {
	var o options
	flag.StringVar(&o.root, "root", "", "empty directory to use as the container's root")
	flag.Var(&o.mounts, "mount", "src:dst[:ro] bind mount into the root (repeatable)")
	flag.BoolVar(&o.readOnly, "read-only", false, "make the root read-only")
	flag.StringVar(&o.caps, "caps", "", "capabilities to keep, comma-separated (e.g. NET_RAW)")
	flag.BoolVar(&o.noNewPrivs, "no-new-privs", false, "set no_new_privs")
	flag.IntVar(&o.uid, "uid", 0, "user to run as")
	flag.IntVar(&o.gid, "gid", 0, "group to run as")
	flag.StringVar(&o.hostname, "hostname", "", "host name to set (the caller made a UTS namespace for it)")
	flag.Parse()
	o.command = flag.Args()
	if err := start(o); err != nil {
		log.Fatalf("podinit: %v", err)
	}
}

func start(o options) error {
	if o.root == "" || len(o.command) == 0 {
		return fmt.Errorf("usage: podinit --root DIR [flags] -- command [args]")
	}
	keep, err := parseCaps(o.caps)
	if err != nil {
		return err
	}
	if o.hostname != "" {
		if err := unix.Sethostname([]byte(o.hostname)); err != nil {
			return fmt.Errorf("set the host name: %w", err)
		}
	}
	if err := setupRoot(o); err != nil {
		return err
	}
	if err := unix.Chroot(o.root); err != nil {
		return fmt.Errorf("chroot %s: %w", o.root, err)
	}
	if err := os.Chdir("/"); err != nil {
		return err
	}
	for c := 0; c <= unix.CAP_LAST_CAP; c++ {
		if keep[c] {
			continue
		}
		// EINVAL: a capability this kernel does not know.
		if err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0); err != nil && err != unix.EINVAL {
			return fmt.Errorf("drop capability %d: %w", c, err)
		}
	}
	if o.noNewPrivs {
		if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
			return fmt.Errorf("no_new_privs: %w", err)
		}
	}
	if err := syscall.Setgroups(nil); err != nil {
		return fmt.Errorf("setgroups: %w", err)
	}
	if err := syscall.Setgid(o.gid); err != nil {
		return fmt.Errorf("setgid %d: %w", o.gid, err)
	}
	if err := syscall.Setuid(o.uid); err != nil {
		return fmt.Errorf("setuid %d: %w", o.uid, err)
	}
	if err := syscall.Exec(o.command[0], o.command, os.Environ()); err != nil {
		return fmt.Errorf("exec %s: %w", o.command[0], err)
	}
	return nil
}

// setupRoot mounts what the container sees under the root directory.
func setupRoot(o options) error {
	// The root becomes a mount point of its own, so it can be made
	// read-only without touching the directory it lives in.
	if err := unix.Mount(o.root, o.root, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
		return fmt.Errorf("bind %s: %w", o.root, err)
	}
	system := []struct{ src, dst, fstype string }{{"proc", "proc", "proc"}, {"sysfs", "sys", "sysfs"}, {"/dev", "dev", ""}}
	for _, m := range system {
		dst := filepath.Join(o.root, m.dst)
		if err := os.MkdirAll(dst, 0o755); err != nil {
			return err
		}
		flags := uintptr(0)
		if m.fstype == "" {
			flags = unix.MS_BIND | unix.MS_REC
		}
		if err := unix.Mount(m.src, dst, m.fstype, flags, ""); err != nil {
			return fmt.Errorf("mount %s on %s: %w", m.src, dst, err)
		}
	}
	for _, spec := range o.mounts {
		if err := bind(o.root, spec); err != nil {
			return err
		}
	}
	if o.readOnly {
		if err := unix.Mount("", o.root, "", unix.MS_REMOUNT|unix.MS_BIND|unix.MS_RDONLY, ""); err != nil {
			return fmt.Errorf("make the root read-only: %w", err)
		}
	}
	return nil
}

// bind mounts src:dst[:ro] under root, creating the mount point (a file
// for a file, a directory for a directory).
func bind(root, spec string) error {
	parts := strings.Split(spec, ":")
	if len(parts) < 2 || len(parts) > 3 || len(parts) == 3 && parts[2] != "ro" {
		return fmt.Errorf("mount %q: want src:dst[:ro]", spec)
	}
	src, dst := parts[0], filepath.Join(root, parts[1])
	info, err := os.Stat(src)
	if err != nil {
		return fmt.Errorf("mount %q: %w", spec, err)
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	if info.IsDir() {
		err = os.MkdirAll(dst, 0o755)
	} else {
		err = os.WriteFile(dst, nil, 0o644)
	}
	if err != nil {
		return fmt.Errorf("mount point %s: %w", dst, err)
	}
	if err := unix.Mount(src, dst, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
		return fmt.Errorf("bind %s on %s: %w", src, dst, err)
	}
	if len(parts) == 3 {
		if err := unix.Mount("", dst, "", unix.MS_REMOUNT|unix.MS_BIND|unix.MS_RDONLY, ""); err != nil {
			return fmt.Errorf("make %s read-only: %w", dst, err)
		}
	}
	return nil
}

// capNames are the capabilities a container may be granted by name.
var capNames = map[string]int{
	"CHOWN": unix.CAP_CHOWN, "DAC_OVERRIDE": unix.CAP_DAC_OVERRIDE, "FOWNER": unix.CAP_FOWNER,
	"FSETID": unix.CAP_FSETID, "KILL": unix.CAP_KILL, "SETGID": unix.CAP_SETGID, "SETUID": unix.CAP_SETUID,
	"SETPCAP": unix.CAP_SETPCAP, "NET_BIND_SERVICE": unix.CAP_NET_BIND_SERVICE, "NET_RAW": unix.CAP_NET_RAW,
	"NET_ADMIN": unix.CAP_NET_ADMIN, "SYS_CHROOT": unix.CAP_SYS_CHROOT, "MKNOD": unix.CAP_MKNOD,
	"AUDIT_WRITE": unix.CAP_AUDIT_WRITE, "SETFCAP": unix.CAP_SETFCAP, "SYS_ADMIN": unix.CAP_SYS_ADMIN,
}

func parseCaps(list string) (map[int]bool, error) {
	keep := map[int]bool{}
	for name := range strings.SplitSeq(list, ",") {
		name = strings.TrimPrefix(strings.ToUpper(strings.TrimSpace(name)), "CAP_")
		if name == "" {
			continue
		}
		c, ok := capNames[name]
		if !ok {
			return nil, fmt.Errorf("unknown capability %q", name)
		}
		keep[c] = true
	}
	return keep, nil
}
