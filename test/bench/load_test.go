package bench

import (
	"bytes"
	"cmp"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/steadylb/steadylb/test/testenv"
)

// phase is one measured stretch of an iteration: it accounts for the CPU
// time spent and the API requests made, and reports them on one log line,
// because benchmark output keeps only the first ten lines of log.
type phase struct {
	name   string
	env    *testenv.Env
	n      int
	load   *loadSampler
	before map[string]float64
	notes  []string
}

func beginPhase(b *testing.B, cl *cleanups, env *testenv.Env, name string, n int) *phase {
	b.Helper()
	return &phase{name: name, env: env, n: n, load: sampleLoad(cl), before: apiRequests(b, env)}
}

func (ph *phase) notef(format string, args ...any) {
	ph.notes = append(ph.notes, fmt.Sprintf(format, args...))
}

func (ph *phase) end(b *testing.B) {
	b.Helper()
	cpu := ph.load.summary()
	reqs := diff(apiRequests(b, ph.env), ph.before)
	keys := slices.SortedFunc(maps.Keys(reqs), func(x, y string) int {
		if c := cmp.Compare(reqs[y], reqs[x]); c != 0 {
			return c
		}
		return strings.Compare(x, y)
	})
	var parts []string
	for _, k := range keys {
		// Below one request per 100 Services is the controller's or the
		// API server's fixed overhead, not per-Service work.
		if reqs[k] >= float64(ph.n)/100 {
			parts = append(parts, fmt.Sprintf("%s %.3g", k, reqs[k]/float64(ph.n)))
		}
	}
	line := fmt.Sprintf("%s: %s; API requests per Service: %s", ph.name, cpu, strings.Join(parts, ", "))
	if len(ph.notes) > 0 {
		line += "; " + strings.Join(ph.notes, "; ")
	}
	b.Log(line)
}

func diff(after, before map[string]float64) map[string]float64 {
	out := map[string]float64{}
	for k, v := range after {
		if d := v - before[k]; d != 0 {
			out[k] = d
		}
	}
	return out
}

// loadSampler accounts, once a second, for the CPU time the machine spent
// during a phase: this benchmark's processes (itself and its children: the
// control plane and the controller) against everything else. The machine
// is shared, and a phase that had to share its two cores with someone
// else's work is slower for reasons the figures cannot show.
type loadSampler struct {
	stop, done chan struct{}
	once       sync.Once
	began      time.Time
	wall       time.Duration

	mu           sync.Mutex
	busy0, busy1 int64 // machine-wide busy ticks, first and last sample
	first        bool
	start, last  map[int]int64 // ticks per process of ours
	name         map[int]string
}

// clockTicks is USER_HZ, 100 on every Linux platform Go supports.
const clockTicks = 100

func sampleLoad(cl *cleanups) *loadSampler {
	l := &loadSampler{stop: make(chan struct{}), done: make(chan struct{}), began: time.Now(),
		first: true, start: map[int]int64{}, last: map[int]int64{}, name: map[int]string{}}
	l.sample()
	go func() {
		defer close(l.done)
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-l.stop:
				l.sample()
				return
			case <-t.C:
				l.sample()
			}
		}
	}()
	cl.add(l.end)
	return l
}

func (l *loadSampler) end() {
	l.once.Do(func() {
		close(l.stop)
		<-l.done
		l.wall = time.Since(l.began)
	})
}

// summary ends sampling and describes the phase's CPU account.
func (l *loadSampler) summary() string {
	l.end()
	l.mu.Lock()
	defer l.mu.Unlock()
	var ours int64
	byName := map[string]int64{}
	for pid, t := range l.last {
		ours += t - l.start[pid]
		byName[l.name[pid]] += t - l.start[pid]
	}
	var parts []string
	for _, name := range slices.Sorted(maps.Keys(byName)) {
		parts = append(parts, fmt.Sprintf("%s %.1fs", name, float64(byName[name])/clockTicks))
	}
	total := l.busy1 - l.busy0
	return fmt.Sprintf("%.1fs wall; CPU %.1fs by this benchmark's processes (%s), %.1fs by others, of %.0fs",
		l.wall.Seconds(), float64(ours)/clockTicks, strings.Join(parts, ", "),
		float64(max(total-ours, 0))/clockTicks, 2*l.wall.Seconds())
}

func (l *loadSampler) sample() {
	busy, ok := machineBusy()
	if !ok {
		return
	}
	self := os.Getpid()
	entries, _ := os.ReadDir("/proc")
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.first {
		l.busy0 = busy
	}
	l.busy1 = busy
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		ppid, comm, ticks, ok := procTicks(pid)
		if !ok || (pid != self && ppid != self) {
			continue
		}
		if _, seen := l.start[pid]; !seen {
			// A process that started after the first sample spent all
			// its time within the phase.
			l.start[pid] = 0
			if l.first {
				l.start[pid] = ticks
			}
		}
		l.last[pid] = ticks
		l.name[pid] = comm
	}
	l.first = false
}

// machineBusy sums the non-idle ticks of all CPUs from /proc/stat.
func machineBusy() (int64, bool) {
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, false
	}
	line, _, _ := strings.Cut(string(data), "\n")
	f := strings.Fields(line)
	if len(f) < 9 || f[0] != "cpu" {
		return 0, false
	}
	var busy int64
	// user nice system idle iowait irq softirq steal
	for i, v := range f[1:9] {
		if i == 3 || i == 4 {
			continue
		}
		n, _ := strconv.ParseInt(v, 10, 64)
		busy += n
	}
	return busy, true
}

// procTicks reads a process's parent, command name and user plus system
// ticks.
func procTicks(pid int) (ppid int, comm string, ticks int64, ok bool) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, "", 0, false
	}
	// The command name may hold spaces and parentheses: fields start after
	// the last ')'.
	open, i := bytes.IndexByte(data, '('), bytes.LastIndexByte(data, ')')
	if open < 0 || i < open || i+2 > len(data) {
		return 0, "", 0, false
	}
	comm = string(data[open+1 : i])
	f := strings.Fields(string(data[i+2:]))
	if len(f) < 13 {
		return 0, "", 0, false
	}
	ppid, _ = strconv.Atoi(f[1])
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	return ppid, comm, utime + stime, true
}
