"""The secret scan on long lines (foldstudy/secrets.py): linear in a line's length. A
pasted screenshot is a single base64 line of megabytes inside a session (a Gemini JSONL
user message's inlineData part); one detect-secrets pattern (the NPM token's
`\\/\\/.+\\/:_authToken=`) backtracked over the rest of the line at every `//`, so 1, 2, 4
and 8 MB took 0.2, 0.6, 3.3 and 13 s on it alone and a 50 MB screenshot hung the dry
run. A long line is scanned in overlapping windows, and a run of base64 data by its two
edges; a secret across a window's edge, or typed against the data, is still found.
bench/secret_scan.py prints the times (docs/benchmarks.md)."""

from __future__ import annotations

import base64
import json
import random
from pathlib import Path

import pytest

from foldstudy.secrets import (
    DATA_RUN_CHARS,
    WINDOW_LINE_CHARS,
    WINDOW_OVERLAP_CHARS,
    SecretHit,
    _windows,
    find_secrets,
    redact_secrets,
)
from foldstudy.study.sessions import credential_lines
from foldstudy.transcripts import read_transcript

DATA = Path(__file__).parent / "data" / "sessions"
SLACK = "xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx"
STEP = WINDOW_LINE_CHARS - WINDOW_OVERLAP_CHARS


def image(chars: int, seed: int = 7) -> str:
    """A pasted PNG's base64, `chars` long (random bytes: its `//` and `+` as often as
    a real image's)."""
    rnd = random.Random(seed)
    return base64.b64encode(rnd.randbytes(chars * 3 // 4 + 3)).decode()[:chars]


def prose(chars: int) -> str:
    """A long line that is no data run: minified JSON of log entries with URLs (a `//`
    every few dozen characters, the NPM pattern's candidate start)."""
    unit = '{"url":"https://mirror.example/v2/blobs","status":502},'
    return (unit * (chars // len(unit) + 1))[:chars]


@pytest.mark.parametrize("at", [WINDOW_LINE_CHARS - 20, STEP - 20, STEP, STEP + 1,
                                 2 * STEP - len(SLACK) // 2, WINDOW_LINE_CHARS])
def test_a_secret_across_a_window_edge_is_found_once(at):
    line = prose(3 * WINDOW_LINE_CHARS)
    line = line[:at] + f" {SLACK} " + line[at:]
    assert find_secrets(line) == [SecretHit(1, "Slack Token")]
    redacted, n = redact_secrets(line)
    assert n == 1 and SLACK not in redacted and "AbCdEfGhIjKlMnOp" not in redacted


def test_windows_cover_a_long_line_each_bounded_and_overlapping():
    """Every character is in a window, no window is longer than the bound, each overlaps
    the next by the overlap, and each match is kept by one window only."""
    line = prose(5 * WINDOW_LINE_CHARS + 123)
    windows = list(_windows(line))
    assert len(windows) > 1 and windows[0][0] == 0 and windows[-1][2] == len(line)
    assert all(end - start <= WINDOW_LINE_CHARS for start, _, end in windows)
    for (_, owned, end), (start, _, _) in zip(windows, windows[1:], strict=False):
        assert owned == start and end - start == WINDOW_OVERLAP_CHARS
    assert list(_windows("short line")) == [(0, 10, 10)]


def test_a_secret_typed_against_a_pasted_image_is_found():
    """A data run is scanned by its edges only: a key written right against it, before
    or after, with or without a separator, is still whole in what is scanned."""
    data = image(4 * DATA_RUN_CHARS)
    for line in (f"{SLACK}{data}", f"{data}{SLACK}", f"{data} {SLACK} {data}",
                 f'"data":"{data}","note":"token {SLACK}"'):
        assert "Slack Token" in {h.kind for h in find_secrets(line)}, line[:40]


def gemini_with_a_screenshot(tmp_path: Path, mb: float) -> Path:
    """harbor.gemini.jsonl with a user message holding a pasted screenshot (an
    inlineData part, as the Gemini API's Part writes it) and, in its text, a key."""
    lines = (DATA / "harbor.gemini.jsonl").read_text(encoding="utf-8").splitlines()
    shot = {"id": "9c0b7a51-1111-4c2d-8e3f-0a1b2c3d4e5f",
            "timestamp": "2026-11-29T07:10:00.500Z", "type": "user",
            "content": [{"text": f"here is the screenshot; the bot token is {SLACK}"},
                        {"inlineData": {"mimeType": "image/png",
                                        "data": image(int(mb * 1_000_000))}}]}
    lines.insert(2, json.dumps(shot))
    p = tmp_path / "session.jsonl"
    p.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return p


def test_a_50_mb_pasted_screenshot_is_scanned_and_its_key_found(tmp_path):
    """A screenshot as a user pastes one: 49.8 MB of base64 on one line (under the
    reader's max_mb: 50). Before, the scan of this line did not return within 600 s."""
    p = gemini_with_a_screenshot(tmp_path, 49.8)
    assert credential_lines(read_transcript(p, "gemini")) == [(3, "Slack Token")]


def test_a_long_line_of_urls_is_scanned():
    """8 MB of minified JSON with a `//` every 55 characters: the NPM pattern's worst
    case, each window's backtracking bounded by the window."""
    line = prose(8_000_000)
    assert find_secrets(line + f" {SLACK}") == [SecretHit(1, "Slack Token")]


