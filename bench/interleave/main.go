// Command interleave times commands run in turn, round after round, so
// that load on a shared machine falls on all of them alike (hyperfine runs
// each command's rounds in a row), the order turned by one each round:
// the figures of BENCHMARKS.md that compare mcpx with a floor program.
// Before every run it runs the prepare command (with sh -c), untimed. It
// prints, per command, the median and the least wall-clock time, the
// median CPU time (user and system, all threads) and the ratio of its
// median to the last command's. With
// -first-line the time measured is from the start to the first line the
// command writes to stdout (what a user waiting on `mcpx artifacts ls`
// sees), the rest of its output still read to the end.
//
//	interleave [-n ROUNDS] [-warmup N] [-prepare CMD] [-first-line] CMD...
//
// Each CMD is split on spaces and run without a shell; its stdout is
// discarded, and a command that fails stops the run.
package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "interleave:", err)
		os.Exit(1)
	}
}

// sample is one run's wall-clock and CPU time.
type sample struct{ wall, cpu time.Duration }

func run(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("interleave", flag.ContinueOnError)
	rounds := fs.Int("n", 20, "timed `rounds`")
	warmup := fs.Int("warmup", 2, "untimed rounds first")
	prepare := fs.String("prepare", "", "`command` run with sh -c before every run, untimed")
	firstLine := fs.Bool("first-line", false, "time to the first line of stdout, not to the exit")
	if err := fs.Parse(args); err != nil {
		return err
	}
	cmds := fs.Args()
	if len(cmds) == 0 || *rounds < 1 {
		return errors.New("usage: interleave [-n ROUNDS] [-warmup N] [-prepare CMD] [-first-line] CMD [CMD...]")
	}
	samples := make([][]sample, len(cmds))
	for r := range *warmup + *rounds {
		// The order turns by one each round: a command run right after
		// a heavy one (ls of a full store spends 200 ms of CPU after its
		// first line) starts about 0.5 ms later, so each follows each of
		// the others as often.
		for k := range cmds {
			i := (k + r) % len(cmds)
			c := cmds[i]
			if *prepare != "" {
				if b, err := exec.Command("sh", "-c", *prepare).CombinedOutput(); err != nil {
					return fmt.Errorf("prepare: %w\n%s", err, b)
				}
			}
			s, err := timeOne(strings.Fields(c), *firstLine)
			if err != nil {
				return fmt.Errorf("%s: %w", c, err)
			}
			if r >= *warmup {
				samples[i] = append(samples[i], s)
			}
		}
	}
	ref := median(samples[len(cmds)-1], func(s sample) time.Duration { return s.wall })
	what := "wall"
	if *firstLine {
		what = "time to the first line of stdout"
	}
	fmt.Fprintf(out, "%d rounds, commands in turn (the order turning each round); medians of %s (least); ratio to the last command's median\n", *rounds, what)
	for i, c := range cmds {
		wall := median(samples[i], func(s sample) time.Duration { return s.wall })
		least := slices.MinFunc(samples[i], func(a, b sample) int { return int(a.wall - b.wall) }).wall
		cpu := median(samples[i], func(s sample) time.Duration { return s.cpu })
		fmt.Fprintf(out, "  %-14s wall %6.1f ms (least %5.1f)  cpu %6.1f ms  %.2fx   %s\n",
			filepath.Base(strings.Fields(c)[0]), ms(wall), ms(least), ms(cpu), float64(wall)/float64(ref), c)
	}
	return nil
}

// timeOne runs argv and returns its wall-clock and CPU time; with
// firstLine the wall-clock time ends at the first newline on its stdout.
func timeOne(argv []string, firstLine bool) (sample, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return sample{}, err
	}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return sample{}, err
	}
	r := bufio.NewReader(stdout)
	var wall time.Duration
	if firstLine {
		if _, err := r.ReadSlice('\n'); err != nil && !errors.Is(err, bufio.ErrBufferFull) && !errors.Is(err, io.EOF) {
			return sample{}, fmt.Errorf("read stdout: %w", err)
		}
		wall = time.Since(start)
	}
	if _, err := io.Copy(io.Discard, r); err != nil {
		return sample{}, fmt.Errorf("read stdout: %w", err)
	}
	if err := cmd.Wait(); err != nil {
		return sample{}, err
	}
	if !firstLine {
		wall = time.Since(start)
	}
	return sample{wall: wall, cpu: cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()}, nil
}

func median(s []sample, key func(sample) time.Duration) time.Duration {
	v := make([]time.Duration, len(s))
	for i := range s {
		v[i] = key(s[i])
	}
	slices.Sort(v)
	if len(v)%2 == 1 {
		return v[len(v)/2]
	}
	return (v[len(v)/2-1] + v[len(v)/2]) / 2
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
