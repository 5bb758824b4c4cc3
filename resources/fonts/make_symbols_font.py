"""Rebuild WorkbenchSymbols.ttf: the symbol glyphs that DejaVu Sans lacks (⏸, ⧗, ...).

Maintainers only; the app just loads the .ttf. It needs fontTools (``pip install fonttools``,
not a dependency of the workbench) and the two OFL fonts from Debian's fonts-noto-core:

    python resources/fonts/make_symbols_font.py \
        /usr/share/fonts/truetype/noto/NotoSansSymbols2-Regular.ttf \
        /usr/share/fonts/truetype/noto/NotoSansMath-Regular.ttf

It keeps, from the symbol blocks below, every code point DejaVu Sans does not have (taken from
the first Noto font that has it), merges them into one font and renames it "Workbench Symbols"
(a Modified Version under the SIL OFL 1.1: see LICENSE-OFL.txt).
"""

from __future__ import annotations

import sys
from pathlib import Path

from fontTools import subset
from fontTools.merge import Merger
from fontTools.ttLib import TTFont

HERE = Path(__file__).resolve().parent
FAMILY = "Workbench Symbols"
BLOCKS = [  # arrows, maths, technical (⏸), shapes, symbols, dingbats, more arrows and maths
    (0x2190, 0x21FF), (0x2200, 0x22FF), (0x2300, 0x23FF), (0x25A0, 0x25FF), (0x2600, 0x26FF),
    (0x2700, 0x27BF), (0x27C0, 0x27EF), (0x27F0, 0x27FF), (0x2900, 0x297F), (0x2980, 0x29FF),
    (0x2A00, 0x2AFF), (0x2B00, 0x2BFF),
]


def main(sources: list[str]) -> None:
    have = set(TTFont(HERE / "DejaVuSans.ttf").getBestCmap())
    wanted = {c for first, last in BLOCKS for c in range(first, last + 1)} - have
    parts = []
    for i, source in enumerate(sources):
        font = TTFont(source)
        points = sorted(wanted & set(font.getBestCmap()))
        wanted -= set(points)
        options = subset.Options()
        options.drop_tables += ["MATH", "GSUB", "GPOS", "GDEF"]
        options.layout_features = []
        options.name_IDs = ["*"]
        options.hinting = False
        subsetter = subset.Subsetter(options)
        subsetter.populate(unicodes=points)
        subsetter.subset(font)
        part = HERE / f".part{i}.ttf"
        font.save(part)
        parts.append(part)
        print(f"{Path(source).name}: {len(points)} glyphs")
    merged = Merger().merge([str(p) for p in parts])
    for part in parts:
        part.unlink()
    names = merged["name"]
    for record in list(names.names):
        if record.nameID in (16, 17, 21, 22):  # typographic family names: drop, keep one family
            names.removeNames(nameID=record.nameID)
    for name_id, value in ((1, FAMILY), (2, "Regular"), (3, f"{FAMILY} Regular"), (4, f"{FAMILY} Regular"),
                           (6, FAMILY.replace(" ", "") + "-Regular")):
        names.setName(value, name_id, 3, 1, 0x409)
        names.setName(value, name_id, 1, 0, 0)
    merged.save(HERE / "WorkbenchSymbols.ttf")
    print(f"WorkbenchSymbols.ttf: {len(merged.getBestCmap())} code points")


if __name__ == "__main__":
    main(sys.argv[1:] or ["/usr/share/fonts/truetype/noto/NotoSansSymbols2-Regular.ttf",
                          "/usr/share/fonts/truetype/noto/NotoSansMath-Regular.ttf"])
