"""The secret scan's time against a line's length: linear, a pasted screenshot in seconds.

    .venv/bin/python bench/secret_scan.py [--mb 1 2 4 8 50]

A session may hold one line of megabytes: a pasted screenshot's base64 (a Gemini JSONL
user message's inlineData part), a minified JSON document, a log pasted without its
line breaks. foldstudy/secrets.py scans a line longer than WINDOW_LINE_CHARS in
overlapping windows, and a run of base64 data by its two edges only. For each length
this prints the seconds of `find_secrets` on a line of random base64 (a screenshot) and
on a line of minified JSON with a URL every 55 characters (no data run: every window
scanned), and for the lengths up to 4 MB the seconds of detect-secrets' NPM token pattern
alone over the whole screenshot line at once, as the scan ran before (quadratic: every
`//`, one every 4096 characters of base64, starts a backtrack over the rest of the line;
on the minified JSON, a `//` every 55 characters, 4 MB took 338 s). Goal: seconds per MB
flat as the length doubles, and a 50 MB screenshot within a few seconds.
"""

from __future__ import annotations

import base64
import random
import sys
import time
from pathlib import Path

from common import cli

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "workflow"))

from foldstudy.secrets import _detectors, find_secrets  # noqa: E402

WHOLE_LINE_UP_TO_MB = 4


def screenshot(chars: int) -> str:
    rnd = random.Random(7)
    return base64.b64encode(rnd.randbytes(chars * 3 // 4 + 3)).decode()[:chars]


def minified(chars: int) -> str:
    unit = '{"url":"https://mirror.example/v2/blobs","status":502},'
    return (unit * (chars // len(unit) + 1))[:chars]


def seconds(work) -> float:
    t0 = time.perf_counter()
    work()
    return time.perf_counter() - t0


def main(sizes: list[float]) -> None:
    find_secrets("warm the detectors up")
    npm = next(p for kind, p in _detectors() if kind == "NPM tokens")
    print(f"{'MB':>5} {'screenshot s':>13} {'s/MB':>6} {'minified JSON s':>16} {'s/MB':>6} "
          f"{'screenshot whole, NPM pattern s':>32}")
    for mb in sizes:
        chars = int(mb * 1_000_000)
        shot = screenshot(chars)
        a = seconds(lambda s=shot: find_secrets(s))
        whole = (f"{seconds(lambda s=shot: list(npm.finditer(s))):.2f}"
                 if mb <= WHOLE_LINE_UP_TO_MB else "-")
        del shot
        text = minified(chars)
        b = seconds(lambda t=text: find_secrets(t))
        print(f"{mb:>5g} {a:>13.2f} {a / mb:>6.2f} {b:>16.2f} {b / mb:>6.2f} {whole:>32}",
              flush=True)


if __name__ == "__main__":
    parser = cli(__doc__)
    parser.add_argument("--mb", type=float, nargs="+", default=[1, 2, 4, 8, 50])
    main(parser.parse_args().mb)
