//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package fsstore

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mcpx-dev/mcpx/store"
	"github.com/mcpx-dev/mcpx/store/storetest"
)

// The crash tests run this test binary again as a helper process (selected
// by FSSTORE_HELPER) and kill it with SIGKILL: at a named point of Put or
// Delete, or at a random moment of a put/delete loop.

func TestMain(m *testing.M) {
	if mode := os.Getenv("FSSTORE_HELPER"); mode != "" {
		if err := helperMain(mode, os.Getenv("FSSTORE_DIR")); err != nil {
			fmt.Fprintln(os.Stderr, "helper:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func killSelf(string) { syscall.Kill(os.Getpid(), syscall.SIGKILL) }

func helperMain(mode, dir string) error {
	ctx := context.Background()
	s, err := Open(ctx, dir, Config{})
	if err != nil {
		return err
	}
	switch mode {
	case "crash":
		point := os.Getenv("FSSTORE_POINT")
		s.hook.fn = func(p string) {
			if p == point {
				killSelf(p)
			}
		}
		if id := os.Getenv("FSSTORE_DELETE"); id != "" {
			err = s.Delete(ctx, id)
		} else {
			_, err = s.Put(ctx, bytes.NewReader(crashContent), store.PutOptions{Namespace: "crash"})
		}
		if err != nil {
			return err
		}
		return fmt.Errorf("point %q was never reached", point)
	case "churn":
		r := rand.New(rand.NewPCG(uint64(os.Getpid()), 1))
		var ids []string
		for i := 0; ; i++ {
			data := storetest.RandomBytes(r.Uint64(), r.IntN(300<<10))
			ref, err := s.Put(ctx, bytes.NewReader(data), store.PutOptions{Namespace: fmt.Sprint("ns", r.IntN(3)),
				Scope: store.Scope{SessionID: fmt.Sprint(r.IntN(4))}})
			if err != nil {
				return err
			}
			ids = append(ids, ref.ID)
			if i == 0 {
				fmt.Println("ready") // the parent kills us from now on
			}
			if i%3 == 2 {
				j := r.IntN(len(ids))
				if err := s.Delete(ctx, ids[j]); err != nil {
					return err
				}
				ids = slices.Delete(ids, j, j+1)
			}
		}
	case "gc":
		return gcHelper(ctx, s)
	case "index":
		return indexHelper(ctx, s)
	case "writer":
		n, _ := strconv.Atoi(os.Getenv("FSSTORE_N"))
		tag := os.Getenv("FSSTORE_TAG")
		for i := range n {
			if _, err := s.Put(ctx, bytes.NewReader(writerContent(tag, i)), store.PutOptions{Namespace: tag, Scope: store.Scope{SessionID: tag}}); err != nil {
				return err
			}
		}
		return s.Close(ctx)
	}
	return fmt.Errorf("unknown helper mode %q", mode)
}

var crashContent = []byte("content a killed process was putting")

func writerContent(tag string, i int) []byte {
	return append(storetest.RandomBytes(uint64(i), 20000), fmt.Sprintf("%s-%d", tag, i)...)
}

// helperCmd returns the command that runs this test binary as a helper.
func helperCmd(dir, mode string, env ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], "-test.run=^$", "-test.bench=^$")
	cmd.Env = append(os.Environ(), append([]string{"FSSTORE_HELPER=" + mode, "FSSTORE_DIR=" + dir}, env...)...)
	return cmd
}

func helper(t *testing.T, mode, dir string, env ...string) *exec.Cmd {
	t.Helper()
	cmd := helperCmd(dir, mode, env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	t.Cleanup(func() {
		if t.Failed() && stderr.Len() > 0 {
			t.Logf("helper stderr: %s", stderr.String())
		}
	})
	return cmd
}

func wantKilled(t *testing.T, err error) {
	t.Helper()
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		t.Fatalf("helper: %v, want it killed", err)
	}
	if ws, ok := ee.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("helper ended with %v, want SIGKILL", err)
	}
}

func TestCrashPoints(t *testing.T) {
	t.Parallel()
	sum := storetest.SHA256Hex(crashContent)
	crashBlob := func(dir string) string { return filepath.Join(dir, blobsName, sum[:2], sum) }
	cases := []struct {
		point  string
		delete bool
		// before checks the folder the killed process left.
		before func(t *testing.T, dir string)
		// recovered is set when recovery must keep the killed call's blob,
		// re-indexed: linked into place but never recorded, nothing
		// proves it garbage.
		recovered bool
		// kept is set when the killed call's artifact must be listed:
		// a put that committed, a delete that did not.
		kept bool
	}{
		{"put:synced", false, func(t *testing.T, dir string) {
			if left := readDirNames(t, filepath.Join(dir, tmpName)); len(left) != 1 {
				t.Errorf("killed after the temp file's fsync: tmp/ holds %v, want the temp file", left)
			}
		}, false, false},
		{"put:linked", false, func(t *testing.T, dir string) {
			if _, err := os.Stat(crashBlob(dir)); err != nil {
				t.Errorf("killed after the link: blob missing: %v", err)
			}
		}, true, false},
		{"put:committed", false, func(t *testing.T, dir string) {
			if left := readDirNames(t, filepath.Join(dir, tmpName)); len(left) != 1 {
				t.Errorf("killed after the commit: tmp/ holds %v, want the temp file", left)
			}
		}, false, true},
		{"delete:parked", true, func(t *testing.T, dir string) {
			if _, err := os.Stat(crashBlob(dir)); !os.IsNotExist(err) {
				t.Errorf("killed before the delete's commit: blob still in place (%v), want it parked", err)
			}
		}, false, true},
		{"delete:committed", true, func(t *testing.T, dir string) {
			if left := readDirNames(t, filepath.Join(dir, tmpName)); len(left) != 1 {
				t.Errorf("killed after the delete's commit: tmp/ holds %v, want the parked blob", left)
			}
		}, false, false},
	}
	for _, tc := range cases {
		t.Run(tc.point, func(t *testing.T) {
			dir := t.TempDir()
			s := openT(t, dir, Config{})
			base := []store.Ref{
				putT(t, s, []byte("survivor one"), store.PutOptions{}),
				putT(t, s, storetest.RandomBytes(20, 100000), store.PutOptions{}),
			}
			var env []string
			if tc.delete {
				victim := putT(t, s, crashContent, store.PutOptions{Namespace: "crash"})
				env = append(env, "FSSTORE_DELETE="+victim.ID)
			}
			// The helper shares the folder while this handle is open, then
			// this handle closes so that the reopen below recovers.
			cmd := helper(t, "crash", dir, append(env, "FSSTORE_POINT="+tc.point)...)
			wantKilled(t, cmd.Run())
			s.Close(context.Background())
			tc.before(t, dir)

			refs := checkConsistent(t, dir)
			var got []string
			for _, r := range refs {
				got = append(got, r.ID)
			}
			want := []string{base[0].ID, base[1].ID}
			if tc.kept {
				want = append(want, store.NewID("crash", sum, store.DefaultIDPrefixLen))
			}
			if tc.recovered {
				want = append(want, store.NewID(recoveredNamespace, sum, store.DefaultIDPrefixLen))
			}
			if !slices.Equal(got, want) {
				t.Errorf("after the kill lists %v, want %v", got, want)
			}
			_, err := os.Stat(crashBlob(dir))
			if (tc.recovered || tc.kept) && err != nil {
				t.Errorf("blob of the killed put gone after recovery: %v", err)
			}
			if !tc.recovered && !tc.kept && !os.IsNotExist(err) {
				t.Errorf("blob of the killed call still there after recovery (%v)", err)
			}
		})
	}
}

func TestKillLoop(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("kills a helper process several times")
	}
	dir := t.TempDir()
	r := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 2))
	total := 0
	for round := range 6 {
		cmd := helper(t, "churn", dir)
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		if line, err := bufio.NewReader(out).ReadString('\n'); err != nil || line != "ready\n" {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("helper did not start: %q, %v", line, err)
		}
		time.Sleep(time.Duration(r.IntN(250)) * time.Millisecond)
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		wantKilled(t, cmd.Wait())
		refs := checkConsistent(t, dir)
		t.Logf("round %d: %d artifacts consistent after kill", round, len(refs))
		total = len(refs)
		if t.Failed() {
			return
		}
	}
	if total == 0 {
		t.Errorf("the helper stored nothing in six rounds")
	}
}

func TestMultiProcess(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	s := openT(t, dir, Config{})
	const n = 40
	var cmds []*exec.Cmd
	for _, tag := range []string{"p1", "p2"} {
		cmd := helper(t, "writer", dir, "FSSTORE_TAG="+tag, "FSSTORE_N="+strconv.Itoa(n))
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, cmd)
	}
	for i := range n {
		putT(t, s, writerContent("p0", i), store.PutOptions{Namespace: "p0", Scope: store.Scope{SessionID: "p0"}})
	}
	for _, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Fatalf("writer: %v", err)
		}
	}
	for _, tag := range []string{"p0", "p1", "p2"} {
		refs, _ := storetest.ListAll(t, s, store.Scope{SessionID: tag})
		if len(refs) != n {
			t.Errorf("this process sees %d artifacts of %s, want %d", len(refs), tag, n)
		}
		for i, r := range refs {
			got, _ := storetest.ReadAll(t, s, r.ID, nil)
			if !bytes.Equal(got, writerContent(tag, i)) {
				t.Errorf("%s item %d (%s) reads back wrong", tag, i, r.ID)
			}
		}
	}
	s.Close(ctx)
	if refs := checkConsistent(t, dir); len(refs) != 3*n {
		t.Errorf("after reopen lists %d artifacts, want %d", len(refs), 3*n)
	}
}

// TestNewIndexManyProcesses: processes that put into a store whose index
// does not exist yet race to create it and switch it to WAL; none may
// fail with SQLITE_BUSY (it did once in a dozen runs of 4 processes), and
// every put is indexed.
func TestNewIndexManyProcesses(t *testing.T) {
	t.Parallel()
	const rounds, procs, per = 6, 4, 3
	for r := range rounds {
		dir := t.TempDir()
		openT(t, dir, Config{}).Close(context.Background()) // a store with no index
		var wg sync.WaitGroup
		for p := range procs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				cmd := helperCmd(dir, "writer", "FSSTORE_TAG="+fmt.Sprintf("r%dp%d", r, p), "FSSTORE_N="+strconv.Itoa(per))
				if out, err := cmd.CombinedOutput(); err != nil {
					t.Errorf("round %d, writer %d: %v: %s", r, p, err, out)
				}
			}()
		}
		wg.Wait()
		s := openT(t, dir, Config{})
		refs, _, err := s.List(context.Background(), store.Scope{}, "")
		if err != nil || len(refs) != procs*per {
			t.Errorf("round %d: %d artifacts listed, want %d (%v)", r, len(refs), procs*per, err)
		}
		s.Close(context.Background())
	}
}
