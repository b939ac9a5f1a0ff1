package metrics

import (
	"os"
	"runtime"
	"strconv"
	"strings"
)

// writeRuntime writes the Go runtime's figures (go_*) and, on Linux, the
// process's (process_*, as Prometheus's own client names them): goroutines,
// heap, GC, resident memory, open files, CPU.
func writeRuntime(e *expo) {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	gauge := func(name, help string, v float64) {
		e.header(name, "gauge", help)
		e.sample(name, "", "", v)
	}
	counter := func(name, help string, v float64) {
		e.header(name, "counter", help)
		e.sample(name, "", "", v)
	}
	gauge("go_goroutines", "Number of goroutines that currently exist.", float64(runtime.NumGoroutine()))
	gauge("go_memstats_heap_alloc_bytes", "Bytes of allocated heap objects.", float64(ms.HeapAlloc))
	gauge("go_memstats_heap_inuse_bytes", "Bytes in in-use heap spans.", float64(ms.HeapInuse))
	gauge("go_memstats_sys_bytes", "Bytes of memory obtained from the OS.", float64(ms.Sys))
	counter("go_gc_cycles_total", "Completed GC cycles.", float64(ms.NumGC))
	counter("go_gc_pause_seconds_total", "Time the GC stopped the world, in all.", float64(ms.PauseTotalNs)/1e9)
	e.header("go_info", "gauge", "Information about the Go environment.")
	e.labelled("go_info", 1, "version", runtime.Version())
	if p, ok := readProc(); ok {
		gauge("process_resident_memory_bytes", "Resident memory size in bytes.", p.rss)
		gauge("process_virtual_memory_bytes", "Virtual memory size in bytes.", p.vsize)
		counter("process_cpu_seconds_total", "Total user and system CPU time spent in seconds.", p.cpu)
		gauge("process_start_time_seconds", "Start time of the process since unix epoch in seconds.", p.start)
		gauge("process_open_fds", "Number of open file descriptors.", p.fds)
		if p.maxFDs > 0 {
			gauge("process_max_fds", "Maximum number of open file descriptors.", p.maxFDs)
		}
	}
}

// procStat is what /proc says of this process.
type procStat struct {
	rss, vsize, cpu, start, fds, maxFDs float64
}

// clockTicks is USER_HZ, 100 on every Linux of today.
const clockTicks = 100

// readProc reads /proc/self/stat, /proc/stat's boot time and
// /proc/self/fd; false where there is no /proc (another OS).
func readProc() (procStat, bool) {
	var p procStat
	stat, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		return p, false
	}
	// The fields after the command, which is in parentheses and may hold
	// anything: state is field 3, utime 14, stime 15, starttime 22,
	// vsize 23, rss 24 (pages).
	i := strings.LastIndexByte(string(stat), ')')
	if i < 0 {
		return p, false
	}
	f := strings.Fields(string(stat[i+1:]))
	field := func(n int) float64 {
		if n-3 >= len(f) {
			return 0
		}
		v, _ := strconv.ParseFloat(f[n-3], 64)
		return v
	}
	p.cpu = (field(14) + field(15)) / clockTicks
	p.vsize = field(23)
	p.rss = field(24) * float64(os.Getpagesize())
	if boot := bootTime(); boot > 0 {
		p.start = boot + field(22)/clockTicks
	}
	if fds, err := os.ReadDir("/proc/self/fd"); err == nil {
		p.fds = float64(len(fds))
	}
	p.maxFDs = maxFDs()
	return p, true
}

// bootTime is /proc/stat's btime, seconds since the epoch.
func bootTime() float64 {
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0
	}
	for line := range strings.Lines(string(data)) {
		if v, ok := strings.CutPrefix(line, "btime "); ok {
			b, _ := strconv.ParseFloat(strings.TrimSpace(v), 64)
			return b
		}
	}
	return 0
}
