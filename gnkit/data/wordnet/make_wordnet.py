"""Convert WordNet 3.0's database files into `wordnet.npz.xz`, the compact copy gnkit ships.

Reads `data.noun`, `data.verb`, `data.adj` and `data.adv` (Debian's `wordnet-base` package puts
them in /usr/share/wordnet) and writes, for the 117,659 synsets in file order (nouns, verbs,
adjectives, adverbs), as one xz-compressed `.npz`:

- `lexname`: uint8 `[N]`, the lexicographer file (0..44, the 45 names in `LEXNAMES`).
- `pos`: uint8 `[N]`, 0 noun, 1 verb, 2 adjective (head or satellite), 3 adverb.
- `offset`: int32 `[N]`, the synset's byte offset in its data file (WordNet's synset id).
- `senders`, `receivers`: int32 `[E]`, every pointer of every synset (semantic and lexical),
  from the synset that lists it to its target; `pointer`: uint8 `[E]`, index into `POINTERS`.
- `gloss_indptr` int32 `[N + 1]`, `gloss_bucket` uint16, `gloss_count` uint8: each synset's
  gloss (definition and examples) as a hashed bag of words, CSR rows: lower-cased runs of
  letters, CRC-32 of the word modulo `HASH_BUCKETS`, with counts.

Run: `python gnkit/data/wordnet/make_wordnet.py [/usr/share/wordnet]`.
"""

from __future__ import annotations

import io
import lzma
import re
import sys
import zlib
from pathlib import Path

import numpy as np

from gnkit.tasks.wordnet import HASH_BUCKETS, POINTERS

FILES = (("noun", 0), ("verb", 1), ("adj", 2), ("adv", 3))
POS_FILE = {"n": "noun", "v": "verb", "a": "adj", "s": "adj", "r": "adv"}
WORD = re.compile(r"[a-z]+")


def bucket_of(word: str) -> int:
    """The hash bucket of a lower-case word: CRC-32 modulo `HASH_BUCKETS`."""
    return zlib.crc32(word.encode()) % HASH_BUCKETS


def read_synsets(folder: Path):
    """`(records, index)`: per synset `(file, offset, lexname, pointers, gloss)`, in file order,
    and `{(file, offset): row}`."""
    records = []
    for name, _ in FILES:
        with open(folder / f"data.{name}", encoding="latin-1") as lines:
            for line in lines:
                if line.startswith("  "):  # the licence header
                    continue
                head, _, gloss = line.partition(" | ")
                fields = head.split()
                n_words = int(fields[3], 16)
                at = 4 + 2 * n_words
                n_pointers = int(fields[at])
                pointers = [
                    (fields[at + 1 + 4 * j], int(fields[at + 2 + 4 * j]),
                     POS_FILE[fields[at + 3 + 4 * j]])
                    for j in range(n_pointers)
                ]
                records.append((name, int(fields[0]), int(fields[1]), pointers, gloss.strip()))
    index = {(name, offset): row for row, (name, offset, *_) in enumerate(records)}
    return records, index


def convert(folder: Path) -> dict[str, np.ndarray]:
    """The arrays described in the module docstring."""
    records, index = read_synsets(folder)
    pos_of = dict(FILES)
    senders, receivers, pointer = [], [], []
    gloss_indptr, gloss_bucket, gloss_count = [0], [], []
    for row, (_, _, _, pointers, gloss) in enumerate(records):
        for symbol, offset, target_file in pointers:
            senders.append(row)
            receivers.append(index[(target_file, offset)])
            pointer.append(POINTERS.index(symbol))
        buckets, counts = np.unique([bucket_of(w) for w in WORD.findall(gloss.lower())],
                                    return_counts=True)
        gloss_bucket.extend(buckets)
        gloss_count.extend(np.minimum(counts, 255))
        gloss_indptr.append(len(gloss_bucket))
    return {
        "lexname": np.array([r[2] for r in records], np.uint8),
        "pos": np.array([pos_of[r[0]] for r in records], np.uint8),
        "offset": np.array([r[1] for r in records], np.int32),
        "senders": np.array(senders, np.int32),
        "receivers": np.array(receivers, np.int32),
        "pointer": np.array(pointer, np.uint8),
        "gloss_indptr": np.array(gloss_indptr, np.int32),
        "gloss_bucket": np.array(gloss_bucket, np.uint16),
        "gloss_count": np.array(gloss_count, np.uint8),
    }


def main(argv: list[str]) -> int:
    folder = Path(argv[0] if argv else "/usr/share/wordnet")
    arrays = convert(folder)
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    out = Path(__file__).with_name("wordnet.npz.xz")
    out.write_bytes(lzma.compress(buffer.getvalue(), preset=9 | lzma.PRESET_EXTREME))
    print(f"{out}: {arrays['lexname'].size} synsets, {arrays['senders'].size} pointers, "
          f"{out.stat().st_size / 1e6:.1f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
