"""Redaction by value: the text of every secret a session's scan found is
redacted wherever any of it appears, a private key's body line on its own included; and
the shape of such a line is a detect-secrets plugin of the project's."""

from __future__ import annotations

import base64
import io
import json
import random
import textwrap

import pandas as pd
import pytest

from foldstudy.secrets import (
    WINDOW_CHARS,
    SecretIndex,
    find_secrets,
    redact_secrets,
    secret_texts,
)


def openssh_key(seed: int = 7) -> tuple[str, list[str]]:
    """A fake unencrypted OpenSSH private key block, shaped as ssh-keygen writes one: the
    `openssh-key-v1` magic, cipher and kdf `none`, then random bytes for the keys, base64
    wrapped at 70 columns between the BEGIN and END lines. Its block and body lines."""
    rng = random.Random(seed)
    raw = (b"openssh-key-v1\x00" + b"\x00\x00\x00\x04none" * 2 + b"\x00\x00\x00\x00"
           + b"\x00\x00\x00\x01" + bytes(rng.randrange(256) for _ in range(360)))
    body = textwrap.wrap(base64.b64encode(raw).decode(), 70)
    block = ("-----BEGIN OPENSSH PRIVATE KEY-----\n" + "\n".join(body)
             + "\n-----END OPENSSH PRIVATE KEY-----\n")
    return block, body


def transcript_line(block: str) -> str:
    """A Claude Code tool result holding the block, as the JSONL writes it (`\\n`)."""
    return json.dumps({"type": "user", "toolUseResult": f"$ cat ~/.ssh/id_ed25519\n{block}"})


def package_csv(cells: list[str]) -> str:
    """folds.csv's shape: a carry per line, written as the evidence rule writes it."""
    df = pd.DataFrame({"row_id": [f"mine/m/r{i}/j" for i in range(len(cells))],
                       "fold": 1, "carry": cells})
    return df.to_csv(index=False, lineterminator="\n")


def gone(text: str, body: list[str]) -> bool:
    """No stretch of WINDOW_CHARS characters of any body line is left in text."""
    return not any(line[i:i + WINDOW_CHARS] in text for line in body
                   for i in range(len(line) - WINDOW_CHARS + 1))


def test_each_body_line_of_a_key_block_is_redacted_wherever_it_appears():
    """The carry kept one body line without BEGIN or END (22 lines of a
    package "scanned clean"); another kept a line cut short by its cap; an answer quotes
    one inside prose. Each is gone, the rest of each cell kept, the CSV still reads."""
    block, body = openssh_key()
    index = SecretIndex(secret_texts(transcript_line(block)))
    csv = package_csv([body[2], f"kept: {body[3][:40]}", f"the key was {body[4]} (rotated)",
                       "port 8443, nothing secret"])
    out, n = index.redact(csv)
    assert gone(out, body) and n == 3
    cells = pd.read_csv(io.StringIO(out))["carry"].tolist()
    assert cells == ["<redacted: Private Key>", "kept: <redacted: Private Key>",
                     "the key was <redacted: Private Key> (rotated)", "port 8443, nothing secret"]
    assert index.kinds_in(csv) == ["Private Key"] and index.kinds_in(out) == []


def test_every_line_of_the_block_is_a_secret_text_once():
    block, body = openssh_key()
    texts = secret_texts(transcript_line(block))
    assert {t.value for t in texts} >= set(body)
    assert len({t.value for t in texts}) == len(texts) and {t.line for t in texts} == {1}
    # a block cut off before its END line still gives the lines it has
    head = "-----BEGIN OPENSSH PRIVATE KEY-----\n" + "\n".join(body[:5]) + "\n" + body[5][:30]
    cut = {t.value for t in secret_texts(transcript_line(head))}
    assert cut >= {*body[:5], body[5][:30]} and not cut & set(body[6:])


def test_a_body_line_alone_is_found_by_its_shape():
    """Without the transcript (an unpublished release, a reviewer's scan) the plugin
    finds the line by its shape, in a CSV cell or after an escaped line break."""
    _, body = openssh_key()
    csv = package_csv([body[1], "x"])
    assert [h.kind for h in find_secrets(csv)] == ["Private Key body line"]
    text, n = redact_secrets(csv)
    assert n == 1 and body[1] not in text
    assert find_secrets(f'"carry": "kept\\n{body[2]}\\nmore"')


@pytest.mark.parametrize("text", [
    # a Claude Code thinking block's signature and a tool's opaque field: values of a JSON key
    '{"type": "thinking", "signature": "EqoBCkgIBxABGAIiQL' + "Zx9" * 30 + '"}',
    '{"encrypted_content":"gAAAAABo' + "Qk3v9" * 20 + '"}',
    "sha256 " + "0f3a9c" * 12,  # a hex digest: no upper case
    "results/runs/main/smollm2-135m/r0/j.json," + "a" * 70,  # one letter, no mix
    # a path in a temporary clone (a config check refused it as a key), and a URL's path
    '"transcript": "/tmp/tmp.AC1IzgZeXZ/p/tests/data/sessions/codex/sessions/2026/11/29/'
    'rollout-2026-11-29T08-02-00.jsonl"',
    "see https://github.com/AcmeCorp/Agent2/blob/main/src/Compaction/Views/Summary4Panel"
    "Renderer.py",
], ids=["signature", "encrypted content", "hex digest", "no mix", "path", "url path"])
def test_what_is_no_body_line(text):
    assert [h for h in find_secrets(text) if h.kind == "Private Key body line"] == []
