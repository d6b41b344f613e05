#!/usr/bin/env bash
# make.sh regenerates the reference corpus in this folder with real encoders
# and archivers (Debian bookworm: ffmpeg, 7zip, webp, libheif-examples,
# libavif-bin, wabt, sqlite3, xz-utils, zstd, bzip2, zip, python3-docx,
# python3-openpyxl, python3-odf, python3-ebooklib; pptxgenjs from npm).
# The files are committed; tests never run this script. Every output must
# stay under 8 KB.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
ff() { ffmpeg -nostdin -hide_banner -loglevel error -y "$@"; }

# A 0.1 s 440 Hz tone and a 16x16 two-frame test pattern are the sources.
tone=(-f lavfi -i "sine=frequency=440:duration=0.1:sample_rate=8000")
tone44=(-f lavfi -i "sine=frequency=440:duration=0.1:sample_rate=44100")
tone48=(-f lavfi -i "sine=frequency=440:duration=0.1:sample_rate=48000")
video=(-f lavfi -i "testsrc=size=16x16:rate=10:duration=0.2")

# Images.
ff -f lavfi -i "testsrc=size=8x8:duration=0.1" -frames:v 1 "$tmp/src.png"
ff -i "$tmp/src.png" -pix_fmt bgr24 image.bmp
ff -i "$tmp/src.png" -compression_algo raw image.tiff
cwebp -quiet -q 50 "$tmp/src.png" -o image-lossy.webp
cwebp -quiet -lossless "$tmp/src.png" -o image-lossless.webp
heif-enc -q 30 "$tmp/src.png" -o image.heic
avifenc --min 30 --max 40 "$tmp/src.png" image.avif >/dev/null

# Audio.
ff "${tone44[@]}" -c:a libmp3lame -b:a 32k -write_xing 0 -id3v2_version 0 audio-frames.mp3
ff "${tone44[@]}" -c:a libmp3lame -b:a 32k audio-id3.mp3
ff "${tone[@]}" -c:a libmp3lame -b:a 16k -id3v2_version 0 -write_xing 0 audio-mpeg2.mp3
ff "${tone48[@]}" -c:a mp2 -b:a 64k audio.mp2
ff "${tone[@]}" -c:a aac -b:a 16k -f adts audio.aac
ff "${tone[@]}" -c:a pcm_s16le audio.wav
# ffmpeg pads a FLAC header with 8 KiB: keep the head (see below).
ff "${tone[@]}" -c:a flac "$tmp/audio.flac"
ff "${tone[@]}" -c:a libvorbis -q:a 0 audio-vorbis.ogg
ff "${tone48[@]}" -c:a libopus -b:a 8k audio.opus
ff "${tone[@]}" -c:a flac -f ogg audio-flac.oga
ff "${tone[@]}" -c:a libspeex -f ogg audio.spx
ff "${tone[@]}" -c:a aac -b:a 16k audio.m4a

# Video (and audio in ISO base media containers).
ff "${video[@]}" -c:v libx264 -pix_fmt yuv420p video.mp4
ff "${video[@]}" -c:v libx264 -pix_fmt yuv420p video.mov
ff "${video[@]}" -c:v libx264 -pix_fmt yuv420p -f ipod video.m4v
ff "${video[@]}" -c:v h263 -s 128x96 video.3gp
ff "${video[@]}" -c:v h263 -s 128x96 video.3g2
ff "${video[@]}" -c:v mjpeg video.avi
ff "${video[@]}" -c:v libvpx -b:v 20k video.webm
ff "${video[@]}" -c:v mjpeg video.mkv
ff "${video[@]}" -c:v libtheora -q:v 1 video.ogv

# Archives and compressed streams of the same small text.
printf 'hello, reference corpus\n' > "$tmp/hello.txt"
(cd "$tmp" && zip -q -X hello.zip hello.txt) && mv "$tmp/hello.zip" archive.zip
(cd "$tmp" && 7zz a -bd -bso0 hello.7z hello.txt) && mv "$tmp/hello.7z" archive.7z
xz -c "$tmp/hello.txt" > archive.xz
zstd -q -c "$tmp/hello.txt" > archive.zst
bzip2 -c "$tmp/hello.txt" > archive.bz2
gzip -n -c "$tmp/hello.txt" > archive.gz
tar --format=gnu --blocking-factor=1 -C "$tmp" -cf archive-gnu.tar hello.txt
tar --format=posix --blocking-factor=1 -C "$tmp" -cf archive-pax.tar hello.txt

# Documents.
OUT=$tmp /usr/bin/python3 - <<'PY'
import os, docx, openpyxl, ebooklib
o = os.environ["OUT"]
from ebooklib import epub
from odf.opendocument import OpenDocumentText, OpenDocumentSpreadsheet, OpenDocumentPresentation
from odf.text import P
from odf.style import Style, MasterPage, PageLayout
from odf.draw import Page

d = docx.Document(); d.add_paragraph("hello"); d.save(o + "/doc.docx")
wb = openpyxl.Workbook(); wb.active["A1"] = "hello"; wb.save(o + "/book.xlsx")
t = OpenDocumentText(); t.text.addElement(P(text="hello")); t.save(o + "/doc.odt")
s = OpenDocumentSpreadsheet(); s.save(o + "/book.ods")
p = OpenDocumentPresentation()
pl = PageLayout(name="pl"); p.automaticstyles.addElement(pl)
mp = MasterPage(name="m", pagelayoutname=pl); p.masterstyles.addElement(mp)
p.presentation.addElement(Page(masterpagename=mp)); p.save(o + "/slides.odp")
b = epub.EpubBook(); b.set_identifier("id1"); b.set_title("hello"); b.set_language("en")
c = epub.EpubHtml(title="c", file_name="c.xhtml", lang="en"); c.content = "<h1>hello</h1>"
b.add_item(c); b.spine = [c]; b.add_item(epub.EpubNcx()); b.add_item(epub.EpubNav())
epub.write_epub(o + "/book.epub", b)
PY

# A PowerPoint file from pptxgenjs (npm), in a scratch folder.
(cd "$tmp" && npm init -y >/dev/null && npm install --silent pptxgenjs >/dev/null &&
	node -e 'const P=require("pptxgenjs");const p=new P();p.addSlide().addText("hello",{x:1,y:1});p.writeFile({fileName:"slides.pptx"})')

# The office files and the FLAC file are larger than 8 KB: keep the head that mcpx sniffs
# (magic.HeadSize, 4096 bytes), which is all either detector reads.
for f in doc.docx book.xlsx slides.pptx doc.odt book.ods slides.odp book.epub audio.flac; do
	head -c 4096 "$tmp/$f" > "$f"
done

# SQLite with 512-byte pages, one table.
rm -f db.sqlite && sqlite3 -cmd 'PRAGMA page_size=512;' db.sqlite 'CREATE TABLE t(x); INSERT INTO t VALUES (1);'

# WebAssembly: the smallest module with one exported function.
printf '(module (func (export "f") (result i32) i32.const 42))' > "$tmp/m.wat"
wat2wasm "$tmp/m.wat" -o module.wasm

ls -l | awk 'NR > 1 && $5 >= 8192 { print "too big: " $9; bad = 1 } END { exit bad }'
