# png_colors.py PNG W H COLOR...: the PNG is W x H, has many colors, and each COLOR (rrggbb) appears
# (for the screenshots of tests/e2e/eval_page_test.sh and trace_page_test.sh)
import struct, sys, zlib
d = open(sys.argv[1], 'rb').read()
assert d[:8] == b'\x89PNG\r\n\x1a\n', 'not a PNG'
i, idat = 8, b''
while i < len(d):
    n, = struct.unpack('>I', d[i:i + 4]); kind = d[i + 4:i + 8]; body = d[i + 8:i + 8 + n]
    if kind == b'IHDR': w, h, depth, ctype = struct.unpack('>IIBB', body[:10])
    if kind == b'IDAT': idat += body
    i += 12 + n
assert (w, h) == (int(sys.argv[2]), int(sys.argv[3])), 'size %dx%d' % (w, h)
assert depth == 8 and ctype in (2, 6), 'depth %d, color type %d' % (depth, ctype)
raw, bpp = zlib.decompress(idat), (3 if ctype == 2 else 4)
stride, prev, pos, colors = w * bpp, bytearray(w * bpp), 0, set()
for y in range(h):
    f, line = raw[pos], bytearray(raw[pos + 1:pos + 1 + stride]); pos += 1 + stride
    for x in range(stride):
        a = line[x - bpp] if x >= bpp else 0; b = prev[x]; c = prev[x - bpp] if x >= bpp else 0
        if f == 1: line[x] = (line[x] + a) & 255
        elif f == 2: line[x] = (line[x] + b) & 255
        elif f == 3: line[x] = (line[x] + (a + b) // 2) & 255
        elif f == 4:
            p = a + b - c; pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
            line[x] = (line[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
    if y % 2 == 0:
        colors.update(bytes(line[x:x + 3]).hex() for x in range(0, stride, bpp))
    prev = line
assert len(colors) > 100, 'only %d colors: an empty page?' % len(colors)
missing = [c for c in sys.argv[4:] if c not in colors]
assert not missing, 'colors not on the page: %s' % missing
print('%dx%d, %d colors' % (w, h, len(colors)))
