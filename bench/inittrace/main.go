// Command inittrace measures the package initialisation of Go programs:
// it runs each command with GODEBUG=inittrace=1, round after round in
// turn (so that load on a shared machine falls on all of them alike), and
// prints per command the median, first quartile and least of the summed
// "ms clock" column, then each package's median clock per command, the
// costliest first, "-" where a command does not link the package. The
// last line per command sums the medians of the packages the first
// command links and the others do not: what the first adds.
//
//	inittrace [-n ROUNDS] [-warmup N] [-top K] CMD [CMD...]
//
// Each CMD is split on spaces and run without a shell; its stdout is
// discarded and its exit status ignored (a program that prints its usage
// and fails still initialises every package it links), but a run that
// prints no init line stops the measurement.
package main

import (
	"bufio"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "inittrace:", err)
		os.Exit(1)
	}
}

// trace is one run's initialisations: package to milliseconds of clock.
type trace map[string]float64

func run(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("inittrace", flag.ContinueOnError)
	rounds := fs.Int("n", 41, "measured `rounds`")
	warmup := fs.Int("warmup", 3, "unmeasured rounds first")
	top := fs.Int("top", 40, "packages listed, the costliest first (0: all)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	cmds := fs.Args()
	if len(cmds) == 0 || *rounds < 1 || *warmup < 0 || *top < 0 {
		return errors.New("usage: inittrace [-n ROUNDS] [-warmup N] [-top K] CMD [CMD...]")
	}
	traces := make([][]trace, len(cmds))
	for r := range *warmup + *rounds {
		for i, c := range cmds {
			t, err := traceOne(strings.Fields(c))
			if err != nil {
				return fmt.Errorf("%s: %w", c, err)
			}
			if r >= *warmup {
				traces[i] = append(traces[i], t)
			}
		}
	}
	var b bytes.Buffer
	report(&b, cmds, traces, *top)
	_, err := out.Write(b.Bytes())
	return err
}

// traceOne runs argv once with GODEBUG=inittrace=1 and parses its trace.
func traceOne(argv []string) (trace, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), "GODEBUG=inittrace=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		// A program that exits non-zero still printed its inits.
		var exited *exec.ExitError
		if !errors.As(err, &exited) {
			return nil, err
		}
	}
	t := parse(&stderr)
	if len(t) == 0 {
		return nil, fmt.Errorf("no init lines on stderr (is it a Go program?)")
	}
	return t, nil
}

// parse reads the runtime's init lines, as
// "init PKG @0.51 ms, 0.014 ms clock, 2048 bytes, 12 allocs", and
// ignores every other line. A package initialised twice (it is not, but
// the runtime does not promise it) is summed.
func parse(r io.Reader) trace {
	t := trace{}
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 7 || f[0] != "init" || f[5] != "ms" || f[6] != "clock," {
			continue
		}
		v, err := strconv.ParseFloat(f[4], 64)
		if err != nil {
			continue
		}
		t[f[1]] += v
	}
	return t
}

func report(out *bytes.Buffer, cmds []string, traces [][]trace, top int) {
	fmt.Fprintf(out, "%d rounds, commands in turn; sums of the \"ms clock\" column: median (first quartile, least), packages\n", len(traces[0]))
	meds := make([]map[string]float64, len(cmds))
	for i, c := range cmds {
		sums := make([]float64, len(traces[i]))
		for j, t := range traces[i] {
			for _, v := range t {
				sums[j] += v
			}
		}
		slices.Sort(sums)
		meds[i] = packageMedians(traces[i])
		fmt.Fprintf(out, "  %-12s %.3f ms (%.3f, %.3f)  %3d packages   %s\n",
			filepath.Base(strings.Fields(c)[0]), quantile(sums, 0.5), quantile(sums, 0.25), sums[0], len(meds[i]), c)
	}
	pkgs := make([]string, 0, len(meds[0]))
	for p := range meds[0] {
		pkgs = append(pkgs, p)
	}
	slices.SortFunc(pkgs, func(a, b string) int {
		if meds[0][a] != meds[0][b] {
			if meds[0][a] > meds[0][b] {
				return -1
			}
			return 1
		}
		return strings.Compare(a, b)
	})
	if top > 0 && len(pkgs) > top {
		pkgs = pkgs[:top]
	}
	fmt.Fprintf(out, "package medians, ms (the costliest of the first command's %d):\n", len(meds[0]))
	for _, p := range pkgs {
		fmt.Fprint(out, " ")
		for i := range cmds {
			if v, ok := meds[i][p]; ok {
				fmt.Fprintf(out, " %7.3f", v)
			} else {
				fmt.Fprintf(out, " %7s", "-")
			}
		}
		fmt.Fprintf(out, "  %s\n", p)
	}
	for i := 1; i < len(cmds); i++ {
		var sum float64
		n := 0
		for p, v := range meds[0] {
			if _, ok := meds[i][p]; !ok {
				sum += v
				n++
			}
		}
		fmt.Fprintf(out, "linked by %s and not by %s: %d packages, medians summing to %.3f ms\n",
			filepath.Base(strings.Fields(cmds[0])[0]), filepath.Base(strings.Fields(cmds[i])[0]), n, sum)
	}
}

// packageMedians is each package's median clock over the runs that
// initialised it.
func packageMedians(ts []trace) map[string]float64 {
	all := map[string][]float64{}
	for _, t := range ts {
		for p, v := range t {
			all[p] = append(all[p], v)
		}
	}
	m := make(map[string]float64, len(all))
	for p, v := range all {
		slices.Sort(v)
		m[p] = quantile(v, 0.5)
	}
	return m
}

// quantile of sorted v: the median averages the middle two of an even count.
func quantile(v []float64, q float64) float64 {
	if q == 0.5 && len(v)%2 == 0 {
		return (v[len(v)/2-1] + v[len(v)/2]) / 2
	}
	return v[int(q*float64(len(v)-1)+0.5)]
}
