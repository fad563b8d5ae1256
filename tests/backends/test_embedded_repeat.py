"""The embedded backend's stop on a reply that repeats itself (backends/embedded.py)."""

from __future__ import annotations

from foldstudy.backends.embedded import (
    MASKED_PERIODS,
    MIN_SPAN,
    PERIODS,
    EmbeddedBackend,
    RepeatWatch,
    _identity,
    repeat_period,
)


def test_a_pair_said_over_and_over_stops_once_it_spans_min_span():
    # a tiny-study j fold wrote "b2b2b2..." to its 600-token budget
    text = [7, 8, 9, 10] + [5, 6] * (MIN_SPAN // 2)
    assert repeat_period(text) == 2
    assert repeat_period(text[:-1]) is None  # one token short of the span


def test_a_line_said_three_times_in_a_row_stops_and_twice_does_not():
    line = list(range(100, 140))  # a 40-token line, longer than MIN_SPAN
    assert repeat_period([1, 2, 3] + line * PERIODS) == len(line)
    assert repeat_period([1, 2, 3] + line * (PERIODS - 1)) is None


def test_distinct_lines_of_one_shape_never_stop():
    # a summary lists values that differ: "- tenant TN-ABCDEF is excluded" per line
    lines = [tok for i in range(12) for tok in (1, 2, 300 + i, 301 + i, 3, 4)]
    assert repeat_period(lines) is None


def test_the_shortest_period_is_named():
    assert repeat_period([9] * 40) == 1


def test_the_watch_reads_the_prompt_first_then_stops_on_the_reply_and_stays_stopped():
    watch = RepeatWatch()
    prompt = [4, 5] * 40  # a prompt that repeats itself is no reason to stop
    assert watch(prompt, None) is False
    written = [4, 5] * (MIN_SPAN // 2)
    assert watch(prompt + written[:-1], None) is False
    assert watch(prompt + written, None) is True and watch.period == 2
    assert watch(prompt + written + [9], None) is True  # asked again after the last token


def test_the_stop_is_in_the_identity_so_no_stored_reply_crosses_the_setting(tmp_path):
    on = EmbeddedBackend.resolve_config({})
    off = EmbeddedBackend.resolve_config({"stop_on_repeat": False})
    assert on["stop_on_repeat"] is True
    gguf = tmp_path / "w.gguf"
    assert "stop_on_repeat" in _identity("m", gguf, "0" * 64, on)
    assert "stop_on_repeat" not in _identity("m", gguf, "0" * 64, off)


def test_a_line_whose_number_counts_up_stops_after_masked_periods_and_not_before():
    # the default study's m folds: "[turn 39] user: The rollout ...", "[turn 40] ..."
    digits = frozenset(range(15, 25))
    watch = RepeatWatch(digits)
    assert watch([1, 2, 3], None) is False
    written = []
    for turn in range(39, 39 + MASKED_PERIODS):
        line = [75, 20589, 216, 15 + turn // 10, 15 + turn % 10, 77] + list(range(100, 110))
        written += line
        stopped = watch([1, 2, 3] + written, None)
        assert stopped is (turn == 38 + MASKED_PERIODS)
    assert watch.period == 16
    # without the digits masked the lines differ: no stop
    assert repeat_period(written) is None


def test_a_short_list_of_one_shape_is_no_repetition():
    digits = frozenset(range(15, 25))
    watch = RepeatWatch(digits)
    assert watch([1], None) is False
    ports = [t for p in ("48213", "51234", "60012", "39917", "45521")
             for t in [300, 301, *(15 + int(c) for c in p), 302, 303, 304, 305]]
    assert watch([1] + ports, None) is False  # five values listed, below MASKED_PERIODS
