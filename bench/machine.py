"""R, the machine's own reference: one fixed piece of model work, timed raw.

    .venv/bin/python bench/machine.py [--runs 3]

Machines of this project's kind differ by up to about three times in model speed, so a
timing in seconds says little on its own. R is what one fold's fixed work costs here: raw
llama-cpp-python (no workflow, no backend) on the default weights (SmolLM2-135M-Instruct,
Q4_1, the file setup.sh installs) at one thread, reading a 1,500-token prompt and writing
600 tokens. R_json is the same work with the 600 tokens decoded under a JSON-schema grammar
(one string field, as arm j's), since the grammar costs extra on every token written.

The prompt is the default scenario's synthetic session (seed 20260728), cut to exactly
1,500 of the model's tokens. Both sides write exactly 600 tokens, whatever the model would
have said: the end-of-text token is banned for R, and for R_json, once the reply has
opened its one string field, every token holding a double quote too, so the string never
closes and the grammar admits no end before the budget. Each figure is the median of
--runs timed calls after one untimed call.

Every timing in docs/benchmarks.md gives its value in R measured in the same hour beside
its seconds (a suite of 900 s on a machine where R = 60 s is 15 R).
"""

from __future__ import annotations

import json
import statistics
import time

from common import ROOT, cli  # (also puts the checkout on sys.path)

PROMPT_TOKENS, WRITTEN_TOKENS = 1500, 600
SEED = 20260728
SCHEMA = {"type": "object", "properties": {"summary": {"type": "string"}},
          "required": ["summary"]}


def prompt_tokens(llm) -> list[int]:
    """The default scenario's session text, cut to exactly PROMPT_TOKENS tokens."""
    from foldstudy.io import load_yaml
    from foldstudy.study.fixtures import build_fixture

    res = ROOT / "resources"
    stock = {int(p) for p in load_yaml(res / "grading.yaml")["stock_signature"]["ports"]}
    fixture = build_fixture("distributed", SEED, 0.035, load_yaml(res / "facts.yaml"),
                            load_yaml(res / "scenario" / "filler.yaml"), stock)
    text = "\n".join(fixture.chunks)
    toks = llm.tokenize(text.encode("utf-8"), add_bos=True, special=False)
    if len(toks) < PROMPT_TOKENS:
        raise SystemExit(f"the session holds {len(toks)} tokens, fewer than {PROMPT_TOKENS}")
    return toks[:PROMPT_TOKENS]


def quote_tokens(llm):
    """Every token whose text holds a double quote, and the end of text."""
    import numpy as np

    quotes = [t for t in range(llm.n_vocab()) if b'"' in llm.detokenize([t])]
    return np.array([*quotes, llm.token_eos()])


def open_string_ban(llm, prompt_len: int, banned):
    """A logits processor: once the reply has opened the summary's string (its third
    double quote, after `{"summary":`), the `banned` tokens (quote_tokens) are, so the
    string never closes and the grammar admits no end."""
    import numpy as np

    state = {"opened": False}

    def ban(input_ids, scores):
        if not state["opened"]:
            written = llm.detokenize(list(input_ids[prompt_len:]))
            state["opened"] = written.count(b'"') >= 3
        if state["opened"]:
            scores[banned] = -np.inf
        return scores

    return ban


def timed(fn, runs: int) -> tuple[float, int]:
    """(median wall seconds, tokens written) of `runs` calls after one untimed call."""
    out = fn()
    walls = []
    for _ in range(runs):
        t0 = time.perf_counter()
        out = fn()
        walls.append(time.perf_counter() - t0)
    return statistics.median(walls), int(out["usage"]["completion_tokens"])


def main(runs: int) -> None:
    from llama_cpp import Llama, LlamaGrammar

    from foldstudy.backends.embedded import packaged_weights

    llm = Llama(model_path=str(packaged_weights()), n_ctx=4096, n_threads=1,
                n_threads_batch=1, seed=0, verbose=False)
    prompt = prompt_tokens(llm)
    no_end = {llm.token_eos(): float("-inf")}
    grammar = LlamaGrammar.from_json_schema(json.dumps(SCHEMA), verbose=False)
    banned = quote_tokens(llm)

    def plain():
        llm.reset()  # no prompt cache between calls: every call reads the whole prompt
        return llm.create_completion(prompt=prompt, max_tokens=WRITTEN_TOKENS,
                                     temperature=0.2, seed=7, logit_bias=no_end)

    def json_grammar():
        from llama_cpp import LogitsProcessorList

        llm.reset()
        ban = open_string_ban(llm, len(prompt), banned)
        return llm.create_completion(prompt=prompt, max_tokens=WRITTEN_TOKENS,
                                     temperature=0.2, seed=7, grammar=grammar,
                                     logits_processor=LogitsProcessorList([ban]))

    r, n = timed(plain, runs)
    r_json, n_json = timed(json_grammar, runs)
    llm.close()
    for name, written in (("R", n), ("R_json", n_json)):
        if written != WRITTEN_TOKENS:
            raise SystemExit(f"{name}: wrote {written} tokens, not {WRITTEN_TOKENS}")
    print(f"prompt {PROMPT_TOKENS} tokens, {WRITTEN_TOKENS} written, one thread, "
          f"median of {runs}")
    print(f"R_json {r_json:.1f} s (JSON grammar / plain: {r_json / r:.2f})")
    print(f"R {r:.1f} s")


if __name__ == "__main__":
    parser = cli(__doc__)
    parser.add_argument("--runs", type=int, default=3, help="timed calls per figure")
    main(parser.parse_args().runs)
