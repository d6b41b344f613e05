//go:build pdfcorpus

// Command generate makes the PDF corpus of package inspect's tests with
// real generators, and poppler's reading of each file as the reference:
//
//	./scripts/pdf-corpus.sh   (installs the tools, then runs this)
//
// From inspect/testdata/pdf/src it prints chromium.html with Chromium's
// print to PDF, and report.ps and hundred.ps with Ghostscript's ps2pdf;
// qpdf rewrites the Chromium file with object and cross-reference
// streams, linearized, and encrypted with an empty user password
// (AES-256). The Ghostscript file gets bytes after %%EOF, a
// cross-reference table whose offsets are all wrong, none at all, and an
// incremental update that adds a page and a new title; a page rendered by
// Ghostscript to an image (a scan, no text) follows one with text. For
// every file it writes pdftotext -layout's text (NAME.txt, pages ended by
// form feeds; gzipped past 64 kB) and pdfinfo's page count and title
// (corpus.json).
package main

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/mcpx-dev/mcpx/internal/pdfcorpus"
)

// maxPlainReference is the largest reference text kept as it is; a
// larger one is gzipped (hundred.txt: 420 kB, 5 kB gzipped).
const maxPlainReference = 64 << 10

func main() {
	dir := flag.String("dir", "inspect/testdata/pdf", "the corpus folder (sources in src/)")
	flag.Parse()
	log.SetFlags(0)
	chromium := os.Getenv("MCPX_CHROMIUM")
	if chromium == "" {
		chromium = "chromium"
	}
	src := func(name string) string { return filepath.Join(*dir, "src", name) }
	out := func(name string) string { return filepath.Join(*dir, name) }
	var corpus []pdfcorpus.Entry
	add := func(file, generator string, noText ...int) {
		corpus = append(corpus, pdfcorpus.Entry{File: file, Generator: generator, NoText: noText})
	}

	abs, err := filepath.Abs(src("chromium.html"))
	check(err)
	run(chromium, "--headless", "--no-sandbox", "--disable-gpu", "--no-pdf-header-footer",
		"--print-to-pdf="+out("chromium.pdf"), "file://"+abs)
	add("chromium.pdf", "Chromium print to PDF: DejaVu Serif ligatures, CJK, Greek, Cyrillic and Arabic, all CID fonts with ToUnicode")
	run("qpdf", "--object-streams=generate", out("chromium.pdf"), out("chromium-objstm.pdf"))
	add("chromium-objstm.pdf", "qpdf --object-streams=generate of chromium.pdf: object and cross-reference streams")
	run("qpdf", "--linearize", out("chromium.pdf"), out("chromium-linearized.pdf"))
	add("chromium-linearized.pdf", "qpdf --linearize of chromium.pdf")
	run("qpdf", "--encrypt", "", "owner", "256", "--", out("chromium.pdf"), out("chromium-aes256.pdf"))
	add("chromium-aes256.pdf", `qpdf --encrypt "" owner 256 of chromium.pdf: AES-256, empty user password`)

	run("ps2pdf", src("report.ps"), out("ghostscript.pdf"))
	add("ghostscript.pdf", "Ghostscript ps2pdf: Times with fi and fl ligature glyphs, a Courier table, a label turned a quarter")
	gs := read(out("ghostscript.pdf"))
	write(out("ghostscript-trailing.pdf"), append(bytes.Clone(gs), trailer()...))
	add("ghostscript-trailing.pdf", "ghostscript.pdf with 4 kB after %%EOF, as mail gateways append")
	write(out("ghostscript-shifted.pdf"), shifted(gs))
	add("ghostscript-shifted.pdf", "ghostscript.pdf with a line inserted after the header: every cross-reference offset is wrong")
	write(out("ghostscript-noxref.pdf"), noXref(gs))
	add("ghostscript-noxref.pdf", "ghostscript.pdf without its cross-reference table (trailer kept)")
	write(out("ghostscript-incremental.pdf"), incremental(gs))
	add("ghostscript-incremental.pdf", "ghostscript.pdf with an incremental update: a third page and a new title")

	run("gs", "-q", "-dSAFER", "-dBATCH", "-dNOPAUSE", "-sDEVICE=pdfimage8", "-r100", "-dFirstPage=1", "-dLastPage=1",
		"-sOutputFile="+out("scan-page.pdf"), out("ghostscript.pdf"))
	run("qpdf", "--empty", "--pages", out("ghostscript.pdf"), "2", out("scan-page.pdf"), "1", "--", out("scan.pdf"))
	check(os.Remove(out("scan-page.pdf")))
	add("scan.pdf", "qpdf --pages: ghostscript.pdf's page 2, then its page 1 rendered to an image by Ghostscript's pdfimage8 (a scan)", 2)

	run("ps2pdf", src("hundred.ps"), out("hundred.pdf"))
	add("hundred.pdf", "Ghostscript ps2pdf: 100 pages of 50 lines")

	for i, e := range corpus {
		corpus[i].Pages, corpus[i].Title, err = pdfcorpus.PopplerInfo(out(e.File))
		check(err)
		text, err := pdfcorpus.PopplerText(out(e.File))
		check(err)
		name := out(pdfcorpus.ReferenceName(e.File))
		if len(text) > maxPlainReference {
			var z bytes.Buffer
			w := gzip.NewWriter(&z)
			_, err := w.Write(text)
			check(err)
			check(w.Close())
			text, name = z.Bytes(), name+".gz"
		}
		write(name, text)
	}
	js, err := json.MarshalIndent(corpus, "", "  ")
	check(err)
	write(out("corpus.json"), append(js, '\n'))
}

// trailer is what a mail gateway appends after a message's attachment.
func trailer() []byte {
	var b bytes.Buffer
	for i := 0; b.Len() < 4096; i++ {
		fmt.Fprintf(&b, "\r\n-- \r\nThis attachment was scanned for viruses (%d). Confidential: if you are not the intended recipient, delete it.", i)
	}
	return b.Bytes()
}

// shifted inserts a comment line after the header line, moving every
// object away from where the cross-reference table says it is.
func shifted(pdf []byte) []byte {
	i := bytes.IndexByte(pdf, '\n') + 1
	out := append([]byte{}, pdf[:i]...)
	out = append(out, "% a line inserted after the header moves every object\n"...)
	return append(out, pdf[i:]...)
}

// noXref removes the cross-reference table, keeping the trailer and a
// startxref that points where the table was.
func noXref(pdf []byte) []byte {
	x := bytes.LastIndex(pdf, []byte("\nxref\n"))
	t := bytes.LastIndex(pdf, []byte("trailer"))
	if x < 0 || t < x {
		log.Fatal("noXref: no classic cross-reference table")
	}
	return append(append([]byte{}, pdf[:x+1]...), pdf[t:]...)
}

var (
	objRe     = regexp.MustCompile(`(?s)(?:^|\n)(\d+) 0 obj\s*(.*?)endobj`)
	refRe     = func(key string) *regexp.Regexp { return regexp.MustCompile(`/` + key + `\s+(\d+) 0 R`) }
	sizeRe    = regexp.MustCompile(`/Size\s+(\d+)`)
	startRe   = regexp.MustCompile(`startxref\s+(\d+)\s+%%EOF\s*$`)
	countRe   = regexp.MustCompile(`/Count\s+\d+`)
	kidsEndRe = regexp.MustCompile(`(/Kids\s*\[[^\]]*)\]`)
)

// incremental appends an update to pdf, as an editor saving in place
// does: a new page 3 (its content, font and page objects), the page tree
// with three kids, and an Info dictionary with a new title, then a
// cross-reference section for them and a trailer with /Prev.
func incremental(pdf []byte) []byte {
	t := pdf[bytes.LastIndex(pdf, []byte("trailer")):]
	num := func(re *regexp.Regexp, b []byte) int {
		m := re.FindSubmatch(b)
		if m == nil {
			log.Fatalf("incremental: no %s", re)
		}
		n, err := strconv.Atoi(string(m[1]))
		check(err)
		return n
	}
	root, info, size, prev := num(refRe("Root"), t), num(refRe("Info"), t), num(sizeRe, t), num(startRe, pdf)
	objs := map[int][]byte{}
	for _, m := range objRe.FindAllSubmatch(pdf, -1) {
		n, _ := strconv.Atoi(string(m[1]))
		objs[n] = m[2]
	}
	pagesNum := num(refRe("Pages"), objs[root])
	content, font, page := size, size+1, size+2
	stream := "BT /F1 12 Tf 72 720 Td (The third page came with an incremental update.) Tj ET\n"
	pages := countRe.ReplaceAll(objs[pagesNum], []byte("/Count 3"))
	pages = kidsEndRe.ReplaceAll(pages, []byte(fmt.Sprintf("$1 %d 0 R]", page)))
	update := map[int]string{
		content:  fmt.Sprintf("<< /Length %d >>\nstream\n%sendstream\n", len(stream), stream),
		font:     "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>\n",
		page:     fmt.Sprintf("<< /Type /Page /Parent %d 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 %d 0 R >> >> /Contents %d 0 R >>\n", pagesNum, font, content),
		pagesNum: string(pages) + "\n",
		info:     "<< /Title (Revised figures) /Producer (pdfcorpus incremental update) >>\n",
	}
	out := bytes.Clone(pdf)
	if !bytes.HasSuffix(out, []byte("\n")) {
		out = append(out, '\n')
	}
	nums := make([]int, 0, len(update))
	offsets := map[int]int{}
	for n := range update {
		nums = append(nums, n)
	}
	sort.Ints(nums)
	for _, n := range nums {
		offsets[n] = len(out)
		out = append(out, fmt.Sprintf("%d 0 obj\n%sendobj\n", n, update[n])...)
	}
	xref := len(out)
	out = append(out, "xref\n0 1\n0000000000 65535 f \n"...)
	for _, n := range nums {
		out = append(out, fmt.Sprintf("%d 1\n%010d 00000 n \n", n, offsets[n])...)
	}
	out = append(out, fmt.Sprintf("trailer\n<< /Size %d /Root %d 0 R /Info %d 0 R /Prev %d >>\nstartxref\n%d\n%%%%EOF\n", size+3, root, info, prev, xref)...)
	return out
}

func run(name string, args ...string) {
	cmd := exec.Command(name, args...)
	cmd.Stderr = os.Stderr
	if err := cmd.Run(); err != nil {
		log.Fatalf("%s %s: %v", name, strings.Join(args, " "), err)
	}
}

func read(name string) []byte {
	b, err := os.ReadFile(name)
	check(err)
	return b
}

func write(name string, b []byte) {
	check(os.WriteFile(name, b, 0o644))
}

func check(err error) {
	if err != nil {
		log.Fatal(err)
	}
}
