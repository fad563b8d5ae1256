"""One embedded fold through the backend against raw llama-cpp-python, same prompt.

    .venv/bin/python bench/embedded_fold.py

The backend adds the budget check, the request-body builder and the reply record; the
ratio says what that costs. Same model, threads, prompt, seed and max_tokens; each side
warmed once, then timed over three calls (median). Prints the ratio last. Goal: ~1.0.
"""

from __future__ import annotations

from common import cli, median_wall  # (also puts the checkout on sys.path)

from foldstudy.backends.base import ChatRequest
from foldstudy.backends.embedded import EmbeddedBackend, packaged_weights

PROMPT = ("PREVIOUS SUMMARY:\n(none yet)\n\nNEXT CHUNK (1 of 5):\n"
          + "tool: port 48213 relays the ingest; the cutover is at 02:17 UTC.\n" * 40
          + "\nReply with the replacement summary.\n")
MESSAGES = ({"role": "system", "content": "You maintain the running memory of a session."},
            {"role": "user", "content": PROMPT})
MAX_TOKENS, THREADS = 128, 2


def main() -> None:
    from llama_cpp import Llama

    backend = EmbeddedBackend("smollm2-135m", {"n_ctx": 4096, "threads": THREADS})
    req = ChatRequest(messages=MESSAGES, max_tokens=MAX_TOKENS, temperature=0.2, seed=7)
    ours = median_wall(lambda: backend.complete(req), warm=True)
    backend.close()
    raw = Llama(model_path=str(packaged_weights()), n_ctx=4096, n_threads=THREADS,
                n_threads_batch=THREADS, seed=0, verbose=False)
    theirs = median_wall(lambda: raw.create_chat_completion(
        messages=[dict(m) for m in MESSAGES], max_tokens=MAX_TOKENS, temperature=0.2,
        seed=7), warm=True)
    raw.close()
    print(f"backend {ours:.2f} s, raw llama-cpp-python {theirs:.2f} s per fold")
    print(f"embedded fold ratio (backend / raw): {ours / theirs:.2f}")


if __name__ == "__main__":
    cli(__doc__).parse_args()
    main()
