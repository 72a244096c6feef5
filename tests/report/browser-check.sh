#!/usr/bin/env bash
# tests/report/browser-check.sh — renders a scaletune report in headless Chromium (Debian's
# chromium) and checks that the page loads without console errors and that the screenshot shows
# something: the PNG has the window's size, at least 2% non-white pixels and at least 16 colours
# (the figures). Usage: tests/report/browser-check.sh [REPORT.html [OUT.png]]; default report:
# build/tiny-gpt-scaling/report.html (make demo). Prints PASS/FAIL/SKIP; SKIP (exit 0) when
# chromium is not installed or the report does not exist. Chromium logs the page's console as
# "INFO:CONSOLE(...)" lines (uncaught exceptions as "Uncaught ..."), resource failures as
# "Failed to load resource"; any such error fails the check. Its own D-Bus noise is ignored.
set -uo pipefail
cd "$(dirname "$0")/../.."
html=${1:-build/tiny-gpt-scaling/report.html}
png=${2:-${html%.html}.png}
W=1200 H=2600
browser=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$browser" ]; then
  echo "SKIP report.browser: chromium is not installed"
  exit 0
fi
if [ ! -f "$html" ]; then
  echo "SKIP report.browser: no report at $html (make demo or make demo-quick first)"
  exit 0
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
log=$tmp/chromium.log
rm -f "$png"
timeout 120 "$browser" --headless --no-sandbox --disable-gpu --disable-background-networking \
  --disable-component-update --no-first-run --user-data-dir="$tmp/profile" \
  --enable-logging=stderr --v=0 --screenshot="$png" --window-size=$W,$H \
  "file://$(realpath "$html")" >"$log" 2>&1
rc=$?
fail=0
if [ $rc -ne 0 ]; then
  echo "chromium exited with $rc"; fail=1
fi
# the page's console: every message is logged with CONSOLE and the page's source
console=$(grep -E 'CONSOLE' "$log" || true)
errors=$(printf '%s\n' "$console" |
  grep -Ei 'ERROR:CONSOLE|Uncaught|Error|Failed to load|Refused to|net::ERR_' || true)
if [ -n "$errors" ]; then
  echo "console errors:"; printf '%s\n' "$errors"; fail=1
elif [ -n "$console" ]; then
  echo "console messages (not errors):"; printf '%s\n' "$console"
fi
if [ ! -s "$png" ]; then
  echo "no screenshot written"; tail -n 20 "$log"; fail=1
else
  /usr/bin/python3 - "$png" $W $H <<'EOF' || fail=1
# decodes the PNG (8-bit RGB/RGBA, non-interlaced: what chromium writes) with zlib only
import struct, sys, zlib
path, W, H = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
data = open(path, "rb").read()
assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
pos, idat, hdr = 8, b"", None
while pos < len(data):
    n, typ = struct.unpack(">I4s", data[pos:pos + 8])
    body = data[pos + 8:pos + 8 + n]
    if typ == b"IHDR":
        hdr = struct.unpack(">IIBBBBB", body)
    elif typ == b"IDAT":
        idat += body
    pos += 12 + n
w, h, depth, ctype, _, _, interlace = hdr
if depth != 8 or ctype not in (2, 6) or interlace:
    print("screenshot %dx%d: unexpected PNG format (depth %d, colour type %d)" % (w, h, depth, ctype))
    sys.exit(1)
bpp = 3 if ctype == 2 else 4
raw, stride = zlib.decompress(idat), w * bpp
prev, nonwhite, colours, i = bytearray(stride), 0, set(), 0
for y in range(h):
    f, line = raw[i], bytearray(raw[i + 1:i + 1 + stride])
    i += 1 + stride
    for x in range(stride):
        a = line[x - bpp] if x >= bpp else 0
        b, c = prev[x], prev[x - bpp] if x >= bpp else 0
        if f == 1: line[x] = (line[x] + a) & 255
        elif f == 2: line[x] = (line[x] + b) & 255
        elif f == 3: line[x] = (line[x] + (a + b) // 2) & 255
        elif f == 4:
            p = a + b - c
            pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
            line[x] = (line[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
    for x in range(0, stride, bpp * 2):  # every other pixel is enough
        px = bytes(line[x:x + 3])
        if px != b"\xff\xff\xff":
            nonwhite += 1
        if len(colours) < 4096:
            colours.add(px)
    prev = line
share = nonwhite / (h * ((w + 1) // 2))
print("screenshot %dx%d: %.1f%% non-white pixels, %s colours"
      % (w, h, 100 * share, "4096+" if len(colours) >= 4096 else len(colours)))
ok = (w, h) == (W, H) and share >= 0.02 and len(colours) >= 16
if not ok:
    print("the screenshot looks empty or has the wrong size")
sys.exit(0 if ok else 1)
EOF
fi
if [ $fail -ne 0 ]; then
  echo "FAIL report.browser ($html)"
  exit 1
fi
echo "PASS report.browser: $html renders without console errors; screenshot $png"
