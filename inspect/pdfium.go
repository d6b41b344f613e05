package inspect

// The PDF reader is PDFium, Chromium's own, compiled to WebAssembly by
// github.com/klippa-app/go-pdfium and run on wazero, the runtime the WASM
// plugins use: no cgo, the binary stays static. It reads what browsers read
// (an empty user password, bytes after %%EOF, a cross-reference table
// rebuilt by scanning the objects, object and cross-reference streams,
// incremental updates, CID fonts with ToUnicode), where the pure-Go reader
// it replaced gave up. Text comes from its characters and their boxes,
// joined into words and lines here (pdflayout.go).
//
// One runtime serves the process, made on the first PDF: compiling the
// 5.8 MB module takes seconds, once per machine, as wazero's
// compilation cache (the folder the WASM plugins use) keeps the result for
// every later process. Each document gets an instance of its own, closed
// with it: nothing of one document (or tenant) is left in memory for the
// next, and an instance costs a few milliseconds. An instance's memory is
// capped and kept off the Go heap (internal/wasmmem); the document's
// deadline stops a call mid-way.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"sync"
	"time"
	"unicode/utf16"

	"github.com/klippa-app/go-pdfium"
	pdfiumerrors "github.com/klippa-app/go-pdfium/errors"
	"github.com/klippa-app/go-pdfium/references"
	"github.com/klippa-app/go-pdfium/requests"
	"github.com/klippa-app/go-pdfium/webassembly"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"

	"github.com/mcpx-dev/mcpx/internal/wasmmem"
)

// The PDF reader's fixed bounds.
const (
	// PDFMemoryLimit caps the memory of one PDFium instance (one document
	// being read); past it PDFium's allocations fail and the document or
	// page is given up. Rendering a page of 1568 px takes about 10 MB.
	PDFMemoryLimit = 256 << 20
	// PDFStartTimeout bounds the wait for the reader to be made, once per
	// process: the compilation, 3 s of CPU on a machine's first run and
	// 0.1 s from the cache (BENCHMARKS.md), half a minute under the race
	// detector. It is not counted in an inspection's Timeout, which bounds
	// the document's own work.
	PDFStartTimeout = 2 * time.Minute
	// maxPDFInstances bounds the documents read at once, each on its own
	// instance: PDFium is CPU-bound, so more than the cores gains nothing,
	// and each may hold PDFMemoryLimit.
	maxPDFInstances = 4
)

// ErrPDFPassword is returned (wrapped) for a PDF that needs a password:
// documents encrypted with an empty user password open without one.
var ErrPDFPassword = errors.New("inspect: the PDF is encrypted with a password")

// pdfRuntime is the process's PDFium, made on first use.
type pdfRuntime struct {
	once sync.Once
	done chan struct{}
	pool pdfium.Pool
	err  error
}

// pdfReader is the process's PDF reader.
var pdfReader = &pdfRuntime{done: make(chan struct{})}

// ready returns the pool, starting the runtime on the first call. It
// waits at most PDFStartTimeout, and stops waiting when ctx is cancelled,
// but not at ctx's deadline: a start cut short there would be paid again
// by the next process, as only a finished compilation is cached, so the
// start is the machine's cost, paid once, not the document's. A runtime
// still compiling when the wait ends goes on, for the next call.
func (rt *pdfRuntime) ready(ctx context.Context) (pdfium.Pool, error) {
	rt.once.Do(func() { go rt.start() })
	t := time.NewTimer(PDFStartTimeout)
	defer t.Stop()
	cancelled := ctx.Done()
	for {
		select {
		case <-rt.done:
			return rt.pool, rt.err
		case <-cancelled:
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				cancelled = nil
				continue
			}
			return nil, fmt.Errorf("inspect: waiting for the PDF reader to start: %w", ctx.Err())
		case <-t.C:
			return nil, fmt.Errorf("inspect: the PDF reader did not start in %v: %w", PDFStartTimeout, context.DeadlineExceeded)
		}
	}
}

// StartPDFReader starts the process's PDF reader, once, and waits for it
// as every PDF function does: at most PDFStartTimeout, until ctx is
// cancelled but not past ctx's deadline. A caller that gives one document
// a deadline of its own calls it first, so that the start, a compilation
// paid once per machine, is not taken from the document's time.
func StartPDFReader(ctx context.Context) error {
	_, err := pdfReader.ready(ctx)
	return err
}

func (rt *pdfRuntime) start() {
	defer close(rt.done)
	// Compiling is the cost of a first run: spread it over the cores.
	// The instances' memories are mappings of their limit, grown in place.
	ctx := experimental.WithCompilationWorkers(context.Background(), runtime.GOMAXPROCS(0))
	ctx = experimental.WithMemoryAllocator(ctx, wasmmem.Allocator())
	cfg := wazero.NewRuntimeConfig().
		// go-pdfium's module lowers setjmp/longjmp to exception handling.
		WithCoreFeatures(api.CoreFeaturesV2 | experimental.CoreFeaturesExceptionHandling).
		WithMemoryLimitPages(PDFMemoryLimit / 65536).
		// A call stops when the document's context ends (bind).
		WithCloseOnContextDone(true).
		WithCompilationCache(compilationCache())
	rt.pool, rt.err = webassembly.Init(webassembly.Config{
		Context:       ctx,
		MaxTotal:      min(runtime.GOMAXPROCS(0), maxPDFInstances),
		RuntimeConfig: cfg,
		// No file system, no output: the guest reads the document through
		// the reader it is given and nothing else.
		FSConfig: wazero.NewFSConfig(),
		Stdout:   io.Discard,
		Stderr:   io.Discard,
	})
	if rt.err != nil {
		rt.err = fmt.Errorf("inspect: starting the PDF reader: %w", rt.err)
	}
}

// compilationCache is wazero's compilation cache in pdfCacheDir(), kept
// in memory when the folder is unusable.
func compilationCache() wazero.CompilationCache {
	dir := pdfCacheDir()
	if err := os.MkdirAll(dir, 0o700); err == nil {
		if c, err := wazero.NewCompilationCacheWithDir(dir); err == nil {
			return c
		}
	}
	return wazero.NewCompilationCache()
}

// pdfCacheDir is the folder of the WASM plugins' compilation cache
// (layers/wasm.DefaultCacheDir), so that one folder holds all of mcpx's
// compiled modules: the user's cache folder, else the temporary one.
func pdfCacheDir() string {
	if d, err := os.UserCacheDir(); err == nil && d != "" && filepath.IsAbs(d) {
		return filepath.Join(d, "mcpx", "wasm")
	}
	return filepath.Join(os.TempDir(), fmt.Sprintf("mcpx-%d", os.Getuid()), "wasm")
}

// pdfDoc is a document open on an instance of its own. Its methods are not
// safe for concurrent use.
type pdfDoc struct {
	ctx  context.Context
	inst pdfium.Pdfium
	doc  references.FPDF_DOCUMENT
	raw  *pdfRaw
}

// openPDF opens the size bytes of r on a fresh instance. Reads go through
// r as PDFium asks for them. The instance's calls run under ctx: when it
// ends, a call in flight stops and every later call fails.
func openPDF(ctx context.Context, r io.ReaderAt, size int64) (*pdfDoc, error) {
	if size <= 0 {
		return nil, fmt.Errorf("%w: empty", ErrNotPDF)
	}
	pool, err := pdfReader.ready(ctx)
	if err != nil {
		return nil, err
	}
	inst, err := pool.GetInstanceWithContext(ctx)
	if err != nil {
		return nil, fmt.Errorf("inspect: no PDF reader instance: %w", err)
	}
	d := &pdfDoc{ctx: ctx, inst: inst}
	if d.raw, err = newPDFRaw(ctx, inst); err != nil {
		d.close()
		return nil, err
	}
	// The empty password opens documents encrypted for an owner only, as
	// viewers do.
	empty := ""
	res, err := inst.OpenDocument(&requests.OpenDocument{FileReader: io.NewSectionReader(r, 0, size), FileReaderSize: size, Password: &empty})
	if err != nil {
		d.close()
		if ctx.Err() != nil {
			return nil, fmt.Errorf("inspect: opening the PDF: %w", ctx.Err())
		}
		if errors.Is(err, pdfiumerrors.ErrPassword) {
			return nil, fmt.Errorf("%w: %w", ErrPDFPassword, err)
		}
		return nil, fmt.Errorf("%w: %w", ErrNotPDF, err)
	}
	d.doc = res.Document
	return d, nil
}

// close releases the instance and everything the document holds in it.
func (d *pdfDoc) close() {
	_ = d.inst.Close()
}

// pages is the document's page count.
func (d *pdfDoc) pages() (int, error) {
	res, err := d.inst.FPDF_GetPageCount(&requests.FPDF_GetPageCount{Document: d.doc})
	if err != nil {
		return 0, d.failed("counting pages", err)
	}
	return res.PageCount, nil
}

// meta is the Info entry tag (Title, Author), "" when absent.
func (d *pdfDoc) meta(tag string) string {
	res, err := d.inst.FPDF_GetMetaText(&requests.FPDF_GetMetaText{Document: d.doc, Tag: tag})
	if err != nil {
		return ""
	}
	return res.Value
}

// failed wraps err from PDFium, saying so when it came of ctx's end.
func (d *pdfDoc) failed(what string, err error) error {
	if d.ctx.Err() != nil {
		return fmt.Errorf("inspect: %s: %w", what, d.ctx.Err())
	}
	return fmt.Errorf("inspect: %s: %w", what, err)
}

// pageText is page i's (0-based) text, at most max bytes.
func (d *pdfDoc) pageText(i, max int) (string, error) {
	page, err := d.inst.FPDF_LoadPage(&requests.FPDF_LoadPage{Document: d.doc, Index: i})
	if err != nil {
		return "", d.failed(fmt.Sprintf("page %d", i+1), err)
	}
	defer d.inst.FPDF_ClosePage(&requests.FPDF_ClosePage{Page: page.Page})
	tp, err := d.inst.FPDFText_LoadPage(&requests.FPDFText_LoadPage{Page: requests.Page{ByReference: &page.Page}})
	if err != nil {
		return "", d.failed(fmt.Sprintf("page %d's text", i+1), err)
	}
	defer d.inst.FPDFText_ClosePage(&requests.FPDFText_ClosePage{TextPage: tp.TextPage})
	text, err := d.raw.text(d.ctx, tp.TextPage, max)
	if err != nil {
		return text, d.failed(fmt.Sprintf("page %d's text", i+1), err)
	}
	return text, nil
}

// pdfRaw reaches into go-pdfium's instance, by reflection since it offers
// no way in, for two things. Its calls run under the instance's own
// context, which only Kill ends, and Kill closes the module from another
// goroutine while a call may run in it (its memory, a mapping, unmapped
// under the call): setting the context to the document's instead stops a
// call at the deadline, and wazero frees the memory when the call
// returns. And PDFium's text exports are called directly: go-pdfium wraps
// each call in a request, a handle lookup and, for a box, an allocation in
// the guest, about 7 us a call against 0.7 us for the export itself (both
// measured here on a 100-page document, 2,400 characters a page), which
// made a page's characters cost 100 ms. What is read: the exported
// Context, Module (its Memory and ExportedFunction) and one unexported map
// of text pages. TestPDFCorpus fails if a go-pdfium update moves them.
type pdfRaw struct {
	impl reflect.Value // *implementation_webassembly.PdfiumImplementation
	mem  api.Memory
	fn   struct {
		count, text, unicode, looseBox, origin, fontSize, angle, malloc, free rawFunc
	}
	stack [4]uint64
}

type rawFunc interface {
	CallWithStack(ctx context.Context, stack []uint64) error
}

func newPDFRaw(ctx context.Context, inst pdfium.Pdfium) (r *pdfRaw, err error) {
	defer func() {
		if p := recover(); p != nil {
			r, err = nil, fmt.Errorf("inspect: go-pdfium's instance is not as this reader knows it: %v", p)
		}
	}()
	impl := reflect.ValueOf(inst.GetImplementation())
	impl.Elem().FieldByName("Context").Set(reflect.ValueOf(ctx))
	mod := impl.Elem().FieldByName("Module")
	r = &pdfRaw{impl: impl}
	mem, ok := mod.MethodByName("Memory").Call(nil)[0].Interface().(api.Memory)
	if !ok {
		return nil, errors.New("inspect: go-pdfium's module has no wazero memory")
	}
	r.mem = mem
	for name, f := range map[string]*rawFunc{
		"FPDFText_CountChars":      &r.fn.count,
		"FPDFText_GetText":         &r.fn.text,
		"FPDFText_GetUnicode":      &r.fn.unicode,
		"FPDFText_GetLooseCharBox": &r.fn.looseBox,
		"FPDFText_GetCharOrigin":   &r.fn.origin,
		"FPDFText_GetFontSize":     &r.fn.fontSize,
		"FPDFText_GetCharAngle":    &r.fn.angle,
		"malloc":                   &r.fn.malloc,
		"free":                     &r.fn.free,
	} {
		fn, ok := mod.MethodByName("ExportedFunction").Call([]reflect.Value{reflect.ValueOf(name)})[0].Interface().(rawFunc)
		if !ok {
			return nil, fmt.Errorf("inspect: PDFium exports no %s", name)
		}
		*f = fn
	}
	return r, nil
}

// textPage is the guest pointer of a text page go-pdfium holds.
func (r *pdfRaw) textPage(ref references.FPDF_TEXTPAGE) (p uint64, err error) {
	defer func() {
		if rec := recover(); rec != nil {
			err = fmt.Errorf("inspect: go-pdfium's text pages are not as this reader knows them: %v", rec)
		}
	}()
	h := r.impl.Elem().FieldByName("textPageRefs").MapIndex(reflect.ValueOf(ref))
	if !h.IsValid() {
		return 0, errors.New("inspect: unknown text page")
	}
	return h.Elem().FieldByName("handle").Elem().Uint(), nil
}

// call runs fn under a context that does not end: these exports read a
// page's characters and return, and the caller checks its deadline
// between characters.
func (r *pdfRaw) call(fn rawFunc, args ...uint64) (uint64, error) {
	copy(r.stack[:], args)
	if err := fn.CallWithStack(context.Background(), r.stack[:]); err != nil {
		return 0, err
	}
	return r.stack[0], nil
}

// text lays out the characters of the text page ref (pdflayout.go), at
// most max bytes, checking ctx every few hundred characters.
//
// Every call into the guest costs wazero a goroutine (it watches the
// context of a call that must stop at a deadline): on a 4,300-character
// page, five calls a character cost 17 ms of CPU, against 3 ms for the
// same calls unwatched. So the characters come in one call
// (FPDFText_GetText) when they map one to one onto the page's, and most
// characters cost one call, their loose box, which starts at the origin
// and is as high as the font's ascent to descent: the origin is asked for
// a box of a height not yet seen to be loose, the font size and rotation
// when the height or the bottom changes (another font or size, a new
// line, turned text).
func (r *pdfRaw) text(ctx context.Context, ref references.FPDF_TEXTPAGE, max int) (string, error) {
	tp, err := r.textPage(ref)
	if err != nil {
		return "", err
	}
	count, err := r.call(r.fn.count, tp)
	if err != nil || int32(count) <= 0 {
		return "", err
	}
	n := uint64(int32(count))
	// Room for the page's text as UTF-16 and a terminator, an FS_RECTF
	// (left, top, right, bottom) and an origin's x and y (doubles).
	scratch, err := r.call(r.fn.malloc, 2*(n+1)+32)
	if err != nil {
		return "", fmt.Errorf("inspect: no guest memory for %d characters: %w", n, err)
	}
	if scratch == 0 {
		return "", fmt.Errorf("inspect: no guest memory for %d characters", n)
	}
	defer r.call(r.fn.free, scratch)
	box := scratch + 2*(n+1)
	runes := r.pageRunes(tp, n, scratch)
	var l pageLayout
	l.max = max
	var last struct {
		height, bottom, size float32
		rot                  uint8
		known                bool
	}
	// loose holds the box heights seen to be loose boxes (starting at
	// their origin); a glyph with a box of its own (a ligature's piece, a
	// right-to-left glyph) starts elsewhere, and its origin is asked.
	loose := map[float32]bool{}
	for i := uint64(0); i < n && !l.full(); i++ {
		if i%256 == 0 && ctx.Err() != nil {
			return l.String(), ctx.Err()
		}
		var c pdfChar
		if runes != nil {
			c.r = runes[i]
		} else {
			u, err := r.call(r.fn.unicode, tp, i)
			if err != nil {
				return l.String(), err
			}
			c.r = rune(u)
		}
		ok, err := r.call(r.fn.looseBox, tp, i, box)
		if err != nil {
			return l.String(), err
		}
		if int32(ok) == 0 {
			continue
		}
		var f [4]float32
		for k := range f {
			v, _ := r.mem.ReadFloat32Le(uint32(box) + uint32(4*k))
			f[k] = v
		}
		c.left, c.top, c.right, c.bottom = f[0], f[1], f[2], f[3]
		if isLayoutSpace(c.r) && c.left == c.right && c.top == c.bottom {
			// PDFium's own spaces and line breaks have no box: they are
			// its guesses (after a right-to-left run it breaks every
			// character onto a line); the boxes say better. A space the
			// document has is kept.
			continue
		}
		c.x, c.y = c.left, c.bottom
		h := c.top - c.bottom
		if !loose[h] {
			if ok, err := r.call(r.fn.origin, tp, i, box+16, box+24); err == nil && int32(ok) != 0 {
				x, _ := r.mem.ReadFloat64Le(uint32(box) + 16)
				y, _ := r.mem.ReadFloat64Le(uint32(box) + 24)
				c.x, c.y = float32(x), float32(y)
				if c.x == c.left {
					loose[h] = true
				}
			}
		}
		if !last.known || h != last.height || c.bottom != last.bottom {
			size, err := r.call(r.fn.fontSize, tp, i)
			if err != nil {
				return l.String(), err
			}
			a, err := r.call(r.fn.angle, tp, i)
			if err != nil {
				return l.String(), err
			}
			last.height, last.bottom, last.size, last.rot, last.known = h, c.bottom, float32(math.Float64frombits(size)), quarterTurns(math.Float32frombits(uint32(a))), true
		}
		c.size, c.rot = last.size, last.rot
		l.add(c)
	}
	return l.String(), nil
}

// pageRunes is the text page's n characters from one FPDFText_GetText
// call into buf, or nil when they do not map one to one onto the page's
// characters (PDFium leaves out characters without a Unicode value, and
// one beyond the BMP takes two UTF-16 units): then each is asked for.
func (r *pdfRaw) pageRunes(tp, n, buf uint64) []rune {
	written, err := r.call(r.fn.text, tp, 0, n, buf)
	if err != nil || uint64(int32(written)) != n+1 {
		return nil
	}
	b, ok := r.mem.Read(uint32(buf), uint32(2*n))
	if !ok {
		return nil
	}
	runes := make([]rune, n)
	for i := range runes {
		u := rune(b[2*i]) | rune(b[2*i+1])<<8
		if utf16.IsSurrogate(u) {
			return nil
		}
		runes[i] = u
	}
	return runes
}
