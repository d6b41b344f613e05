package s3store_test

import (
	"bufio"
	"bytes"
	"cmp"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// Every process that links the S3 store pays for the package
// initialisation of its client library before main, the "mcpx
// transform" a host runs per result among them. Two probes are built
// and run with GODEBUG=inittrace=1, in turns: one links what the store
// needs anyway (net/http, encoding/xml, hclog, errgroup, store), the
// other the store too. The S3 store may add at most 1.5 times the
// baseline's initialisation: minio-go added 3 (regexps compiled at init,
// CPU feature detection, a machine id, compression tables), the SDK's S3
// client adds well under 1. The bound is relative, so a loaded machine
// slows both sides alike.
func TestInitCost(t *testing.T) {
	dir := t.TempDir()
	build := func(name string) string {
		bin := filepath.Join(dir, name)
		if out, err := exec.Command("go", "build", "-o", bin, "./testdata/initprobe/"+name).CombinedOutput(); err != nil {
			t.Fatalf("go build %s: %v\n%s", name, err, out)
		}
		return bin
	}
	base, s3 := build("base"), build("s3")
	const runs = 21
	var baseMs, s3Ms []float64
	var last []initStep
	for range runs {
		steps := initTrace(t, base)
		baseMs = append(baseMs, sumClock(steps))
		last = initTrace(t, s3)
		s3Ms = append(s3Ms, sumClock(last))
	}
	b, s := median(baseMs), median(s3Ms)
	t.Logf("package initialisation, median of %d runs: %.3f ms baseline, %.3f ms with the S3 store", runs, b, s)
	if extra := s - b; extra > 1.5*b {
		slices.SortFunc(last, func(x, y initStep) int { return cmp.Compare(y.ms, x.ms) })
		t.Errorf("linking the S3 store adds %.3f ms of package initialisation to the baseline's %.3f ms (%.1f times; at most 1.5): "+
			"a dependency does too much at start-up. Costliest in the last run: %v", extra, b, extra/b, last[:min(8, len(last))])
	}
}

// initStep is one line of GODEBUG=inittrace=1: a package and its
// initialisation's clock time.
type initStep struct {
	pkg string
	ms  float64
}

func (s initStep) String() string { return fmt.Sprintf("%s %.3f ms", s.pkg, s.ms) }

// initTrace runs bin and returns its packages' initialisation.
func initTrace(t *testing.T, bin string) []initStep {
	t.Helper()
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(), "GODEBUG=inittrace=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s: %v\n%s", bin, err, stderr.Bytes())
	}
	var steps []initStep
	// init internal/bytealg @0.004 ms, 0 ms clock, 0 bytes, 0 allocs
	for sc := bufio.NewScanner(&stderr); sc.Scan(); {
		f := strings.Fields(sc.Text())
		if len(f) < 7 || f[0] != "init" || f[6] != "clock," {
			continue
		}
		ms, err := strconv.ParseFloat(f[4], 64)
		if err != nil {
			t.Fatalf("inittrace line %q: %v", sc.Text(), err)
		}
		steps = append(steps, initStep{pkg: f[1], ms: ms})
	}
	if len(steps) == 0 {
		t.Fatalf("%s printed no inittrace lines", bin)
	}
	return steps
}

func sumClock(steps []initStep) float64 {
	total := 0.0
	for _, s := range steps {
		total += s.ms
	}
	return total
}

func median(v []float64) float64 {
	v = slices.Clone(v)
	slices.Sort(v)
	return v[len(v)/2]
}
