package main

// The CPU time spent around each measured minute: the agent's (this process's) and the whole
// machine's, so that a late minute can be told from a busy machine.

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// cpuWindow is the CPU time spent in one window around a minute.
type cpuWindow struct {
	agent   time.Duration // this process: the agent, and the bench idle meanwhile
	machine time.Duration // every core of the machine, the server's backends included
	err     error
}

// cpuSample is the CPU time spent so far.
type cpuSample struct {
	process, machine time.Duration
}

// sampleCPU reads the CPU time this process and the whole machine have spent.
func sampleCPU() (cpuSample, error) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return cpuSample{}, fmt.Errorf("getrusage: %w", err)
	}
	process := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	f, err := os.Open("/proc/stat")
	if err != nil {
		return cpuSample{}, err
	}
	defer f.Close()
	line, err := bufio.NewReader(f).ReadString('\n')
	if err != nil {
		return cpuSample{}, fmt.Errorf("/proc/stat: %w", err)
	}
	fields := strings.Fields(line)
	if len(fields) < 8 || fields[0] != "cpu" {
		return cpuSample{}, fmt.Errorf("/proc/stat: unexpected first line %q", line)
	}
	// user nice system idle iowait irq softirq: busy is all but idle and iowait, in USER_HZ (100).
	var busy int64
	for i, s := range fields[1:8] {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return cpuSample{}, fmt.Errorf("/proc/stat: field %d: %w", i+1, err)
		}
		if i != 3 && i != 4 {
			busy += n
		}
	}
	return cpuSample{process: process, machine: time.Duration(busy) * 10 * time.Millisecond}, nil
}

// watchCPU measures the CPU time spent from before to after each of the minutes starting at
// first; the result is complete once the channel is closed.
func watchCPU(first time.Time, minutes int, before, after time.Duration) <-chan []cpuWindow {
	done := make(chan []cpuWindow, 1)
	go func() {
		windows := make([]cpuWindow, minutes)
		for m := range minutes {
			at := first.Add(time.Duration(m) * time.Minute)
			time.Sleep(time.Until(at.Add(-before)))
			start, err := sampleCPU()
			if err == nil {
				time.Sleep(time.Until(at.Add(after)))
				var end cpuSample
				end, err = sampleCPU()
				windows[m] = cpuWindow{agent: end.process - start.process, machine: end.machine - start.machine}
			}
			windows[m].err = err
		}
		done <- windows
		close(done)
	}()
	return done
}
