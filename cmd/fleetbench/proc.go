package main

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// procRSS reads the resident set size of process pid (0: this process) in bytes.
func procRSS(pid int) (int64, error) {
	raw, err := os.ReadFile(procPath(pid, "status"))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb << 10, err
		}
	}
	return 0, errors.New("no VmRSS in /proc status")
}

// procCPU reads the user plus system CPU time process pid (0: this process) used so far.
func procCPU(pid int) (time.Duration, error) {
	raw, err := os.ReadFile(procPath(pid, "stat"))
	if err != nil {
		return 0, err
	}
	// The command name may hold spaces: fields start after the last ')'.
	s := string(raw)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 13 {
		return 0, errors.New("short /proc stat")
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, errors.New("bad /proc stat")
	}
	const clkTck = 100 // USER_HZ on Linux
	return time.Duration(utime+stime) * time.Second / clkTck, nil
}

// procTreeCPU reads the user plus system CPU time process pid and its
// children used so far: for a PostgreSQL postmaster, the whole server
// (its backends are its children). A child that ended before the read is
// not counted, so over an interval the figure covers the processes that
// lived through it; a server's backends are its pool's connections.
func procTreeCPU(pid int) (time.Duration, error) {
	total, err := procCPU(pid)
	if err != nil {
		return 0, err
	}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0, err
	}
	for _, e := range entries {
		child, err := strconv.Atoi(e.Name())
		if err != nil || child == pid {
			continue
		}
		raw, err := os.ReadFile(procPath(child, "stat"))
		if err != nil {
			continue // ended meanwhile
		}
		s := string(raw)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(f) < 2 || f[1] != strconv.Itoa(pid) {
			continue
		}
		if d, err := procCPU(child); err == nil {
			total += d
		}
	}
	return total, nil
}

func procPath(pid int, name string) string {
	if pid == 0 {
		return "/proc/self/" + name
	}
	return fmt.Sprintf("/proc/%d/%s", pid, name)
}

// cpuMeter measures the cores two processes use over an interval, and
// those of a third process and its children when tree is set.
type cpuMeter struct {
	pid        int
	began      time.Time
	srv, local time.Duration
	tree       int
	treeStart  time.Duration
}

func startCPU(pid int) *cpuMeter {
	m := &cpuMeter{pid: pid, began: time.Now()}
	m.srv, _ = procCPU(pid)
	m.local, _ = procCPU(0)
	return m
}

// alsoTree measures the process pid and its children too (none when pid
// is 0).
func (m *cpuMeter) alsoTree(pid int) *cpuMeter {
	m.tree = pid
	if pid != 0 {
		m.treeStart, _ = procTreeCPU(pid)
	}
	return m
}

// treeCores returns the CPU cores the tree of alsoTree used since start,
// and false when there is none.
func (m *cpuMeter) treeCores() (float64, bool) {
	if m.tree == 0 {
		return 0, false
	}
	d, err := procTreeCPU(m.tree)
	if err != nil {
		return 0, false
	}
	return (d - m.treeStart).Seconds() / time.Since(m.began).Seconds(), true
}

// cores returns the CPU cores the server and this process used since start.
func (m *cpuMeter) cores() (server, local float64) {
	el := time.Since(m.began).Seconds()
	s, _ := procCPU(m.pid)
	l, _ := procCPU(0)
	return (s - m.srv).Seconds() / el, (l - m.local).Seconds() / el
}
