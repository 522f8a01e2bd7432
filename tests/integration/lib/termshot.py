"""termshot - render a terminal capture (tmux capture-pane -e -p) to PNG.

The capture is text with SGR escape sequences (colours, bold, reverse,
underline); each cell is drawn in DejaVu Sans Mono with Pillow (Debian's
python3-pil and fonts-dejavu-core; scripts/deps.sh installs them).  Used by
test_jobfsctl.py to make docs/img/jobfsctl-top.png when JOBFS_SCREENSHOTS
names a directory.
"""
import re

FONT = "/usr/share/fonts/truetype/dejavu/DejaVuSansMono.ttf"
FONT_BOLD = "/usr/share/fonts/truetype/dejavu/DejaVuSansMono-Bold.ttf"
# xterm's palette, a little softened; index 8+ are the bright ones
PALETTE = [
    (0x1e, 0x1e, 0x1e), (0xcd, 0x31, 0x31), (0x0d, 0xbc, 0x79), (0xe5, 0xe5, 0x10),
    (0x24, 0x72, 0xc8), (0xbc, 0x3f, 0xbc), (0x11, 0xa8, 0xcd), (0xe5, 0xe5, 0xe5),
    (0x66, 0x66, 0x66), (0xf1, 0x4c, 0x4c), (0x23, 0xd1, 0x8b), (0xf5, 0xf5, 0x43),
    (0x3b, 0x8e, 0xea), (0xd6, 0x70, 0xd6), (0x29, 0xb8, 0xdb), (0xff, 0xff, 0xff),
]
FG, BG = (0xd4, 0xd4, 0xd4), (0x1e, 0x1e, 0x1e)
SGR = re.compile(r"\x1b\[([0-9;]*)m")


def cells(text):
    """[[ (char, fg, bg, bold, underline) ]] per line of the capture."""
    rows = []
    fg = bg = None
    bold = dim = ul = rev = False
    for line in text.split("\n"):
        row = []
        pos = 0
        for m in list(SGR.finditer(line)) + [None]:
            end = m.start() if m else len(line)
            for ch in line[pos:end]:
                f = PALETTE[fg] if fg is not None else FG
                b = PALETTE[bg] if bg is not None else BG
                if dim:
                    f = tuple(c * 2 // 3 for c in f)
                if rev:
                    f, b = b, f
                row.append((ch, f, b, bold, ul))
            if not m:
                break
            pos = m.end()
            codes = [int(c) if c else 0 for c in m.group(1).split(";")] or [0]
            i = 0
            while i < len(codes):
                c = codes[i]
                if c == 0:
                    fg = bg = None
                    bold = dim = ul = rev = False
                elif c == 1:
                    bold = True
                elif c == 2:
                    dim = True
                elif c == 4:
                    ul = True
                elif c == 7:
                    rev = True
                elif c == 22:
                    bold = dim = False
                elif c == 24:
                    ul = False
                elif c == 27:
                    rev = False
                elif 30 <= c <= 37:
                    fg = c - 30
                elif c == 39:
                    fg = None
                elif 40 <= c <= 47:
                    bg = c - 40
                elif c == 49:
                    bg = None
                elif 90 <= c <= 97:
                    fg = c - 90 + 8
                elif 100 <= c <= 107:
                    bg = c - 100 + 8
                elif c in (38, 48) and i + 2 < len(codes) and codes[i + 1] == 5:
                    n = codes[i + 2]
                    if n < 16:
                        if c == 38:
                            fg = n
                        else:
                            bg = n
                    i += 2
                i += 1
        rows.append(row)
    while rows and not rows[-1]:
        rows.pop()
    return rows


def render(text, path, cols, size=14):
    from PIL import Image, ImageDraw, ImageFont
    font = ImageFont.truetype(FONT, size)
    bold = ImageFont.truetype(FONT_BOLD, size)
    box = font.getbbox("M")
    cw = int(font.getlength("M") + 0.5)
    ch = int(size * 1.35)
    rows = cells(text)
    pad = 8
    img = Image.new("RGB", (cols * cw + 2 * pad, max(1, len(rows)) * ch + 2 * pad), BG)
    d = ImageDraw.Draw(img)
    for y, row in enumerate(rows):
        for x, (c, f, b, bo, ul) in enumerate(row[:cols]):
            x0, y0 = pad + x * cw, pad + y * ch
            if b != BG:
                d.rectangle([x0, y0, x0 + cw - 1, y0 + ch - 1], fill=b)
            if c != " ":
                d.text((x0, y0 + (ch - (box[3] - box[1])) // 2 - box[1]), c, fill=f,
                       font=bold if bo else font)
            if ul:
                d.line([x0, y0 + ch - 2, x0 + cw - 1, y0 + ch - 2], fill=f)
    img.save(path)


if __name__ == "__main__":
    # run by Debian's /usr/bin/python3, which has python3-pil, whatever
    # python runs the tests: termshot.py CAPTURE PNG COLS
    import sys
    with open(sys.argv[1], encoding="utf-8", errors="replace") as f:
        render(f.read(), sys.argv[2], int(sys.argv[3]))
