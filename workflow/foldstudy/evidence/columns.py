"""Column lists of every evidence artifact: the one place they are written down.

docs/design.md §8 fixes the names other tools rely on; columns may be added, never renamed.
"""

from __future__ import annotations

SCHEMA_VERSION = 1

ROWS = [
    "row_id", "sweep", "scenario", "model", "arm", "repeat", "position", "valid",
    "invalid_reason", "n_graded", "n_correct", "recall", "n_fields",
    "declared_ceiling_chars", "carried_chars", "fill", "headings_carried",
    "json_envelope_carried", "folds", "folds_clipped", "parse_failures", "finish_stop",
    "finish_length", "prompt_tokens", "completion_tokens", "carrier_present", "abstained",
    "catchup_fired", "system_prompt_sha256",
    # additions
    "n_correct_unit_lenient", "n_fabricated", "n_stock_signature", "schema_invalid_folds",
    "token_count_method", "endpoint", "served_by", "temperature", "recall_finish_reason",
    "answer",
    # how the declared ceiling reached the model: response_format (in the schema on the
    # wire), validated_after (embedded: structure-only grammar, reply checked), none
    "ceiling_delivery",
    # the attempt that made this row (> 1: earlier attempts failed on infrastructure and
    # were retried, paper §3.3; they are kept in the run record)
    "attempt",
    # `abstained` on the answer's first 400 characters (docs/design.md §8): the paper kept only
    # those, and its §4.11 counts compare with this one. An addition, so a package made
    # before it is still read (the abstention table then shows the whole-answer test only).
    "abstained_prefix400",
    # the tokens the run retained at its end: the final carry's and, on an index arm,
    # its identifier index's, counted as the study counts tokens (token_count_method);
    # empty on a row whose record predates it. The retained-token table's x axis.
    "retained_tokens",
    # control facts (config sweeps.X.controls), graded apart and never in recall: how
    # many the recall turn asked (0: none planted), how many the answer got right, and
    # the labels it missed (`;`-joined); the last two empty where none was asked
    "n_control", "n_control_correct", "control_missed",
    # folds the embedded backend ended because the reply repeated one block of tokens
    # (its stop_on_repeat; finish_reason "repetition"): neither finish_stop nor
    # finish_length, the two paper §4.9 counts. Empty on a row whose package predates it.
    "finish_repeat",
]
# Not in rows.csv: how many calls came from the response store. That depends on the
# execution history (a resumed or replayed run hits the store), not on the study, and a
# replay must reproduce rows.csv byte for byte; folds.csv keeps store_hit per fold.

CHECKS = [
    "row_id", "label", "fact_class", "expected", "in_carrier", "correct",
    "correct_unit_lenient", "abstained",
    # additions
    "answered", "fabricated", "stock_signature", "answer_line",
]

FOLDS = [
    "row_id", "fold", "chunks", "prompt_tokens", "completion_tokens", "token_count_method",
    "finish_reason", "parse_ok", "schema_valid", "schema_errors", "carried_chars", "clipped",
    "headings_carried", "json_envelope_carried", "latency_s", "cost_usd", "served_by",
    "attempts", "store_hit", "seed", "max_tokens", "reply", "carry",
]

RECALL_TABLE = ["sweep", "model", "arm", "n_valid", "mean_recall", "rows_full", "rows_ge_half",
                "n_rows", "n_invalid"]

# results/tables/partition.csv (docs/design.md §8): one line per in-scope model.
PARTITION_TABLE = ["sweep", "model", "j_n", "j_mean", "j_rows_ge_half", "q_n", "q_mean",
                   "q_rows_ge_half", "j_fill", "failing", "rescued", "mode", "borderline",
                   # additions
                   "gap", "j_carried_chars", "q_fill"]

# The paper's released package names two rows.csv columns differently (paper §4.8
# "carried_fixed_headings", §5 "carried_json_envelope"); evidence mode reads them as the
# project's names. Paper's name -> this project's.
ALIASES = {
    "carried_fixed_headings": "headings_carried",
    "carried_json_envelope": "json_envelope_carried",
}

BOOLEAN = {
    "valid", "json_envelope_carried", "carried_json_envelope", "abstained",
    "abstained_prefix400", "catchup_fired",
    "in_carrier", "correct",
    "correct_unit_lenient", "answered", "fabricated", "stock_signature", "parse_ok",
    "schema_valid", "clipped", "store_hit",
}

# Evidence input mode (--config evidence=DIR): what a package must hold to rebuild every
# statistic, table and figure. docs/design.md §8's columns are required; later additions are read
# when present.
ROWS_REQUIRED = ROWS[: ROWS.index("system_prompt_sha256") + 1]
CHECKS_REQUIRED = CHECKS[: CHECKS.index("abstained") + 1]
NUMERIC = {
    "repeat", "position", "n_graded", "n_correct", "recall", "n_fields",
    "declared_ceiling_chars", "carried_chars", "fill", "headings_carried", "folds",
    "folds_clipped", "parse_failures", "finish_stop", "finish_length", "prompt_tokens",
    "completion_tokens", "carrier_present", "n_correct_unit_lenient", "n_fabricated",
    "n_stock_signature", "schema_invalid_folds", "attempt", "retained_tokens",
    "n_control", "n_control_correct", "finish_repeat",
}
# Of the numeric columns, those that count something (calls, tokens, folds, checks,
# characters of a ceiling, a block's index): whole numbers, at least 0 and at most
# MAX_COUNT (beyond it a float no longer holds every integer: 1e308 is no count).
COUNTS = NUMERIC - {"recall", "fill", "carried_chars"}
MAX_COUNT = 2**53
# carried_chars is a mean over folds (a fraction of a character is fine) but still a
# number of characters: 0 to MAX_COUNT. recall is n_correct / n_graded (load.py checks
# it as that, with n_correct at most n_graded). fill is carried_chars /
# declared_ceiling_chars and is checked as that quotient, not by a bound: a carry can
# be longer than its declared ceiling (a t reply at its ceiling rendered under its
# heading reads 1.0017; an endpoint that ignores maxLength overruns
# it by far, clipped only by the carry cap), so fill has no upper bound of its own.
# fill as written (write_csv's %.6g; a package rounded to four decimals, as the
# synthetic test packages are, is off by up to 5e-5) against carried_chars / declared_ceiling_chars.
FILL_TOLERANCE = 1e-4
# Boolean columns a row cannot leave empty. in_carrier may be: it is empty exactly where
# the row's carrier_present is, on rows whose carrier was not recorded (docs/design.md §8; the
# paper's §4.10 recorded it on 215 rows), and load.py checks the two together.
BOOLEAN_REQUIRED = {"valid", "correct"}
# Optional files of a package, checked when present: the fold columns the design's
# "each fold records" names, and one verdict per probed model (docs/design.md §3, §5).
FOLDS_REQUIRED = ["row_id", "fold", "prompt_tokens", "completion_tokens", "finish_reason",
                  "parse_ok", "carried_chars", "clipped", "headings_carried"]
PROBES_REQUIRED = ["model", "verdict"]

# results/evidence/trace.csv (docs/design.md §8): one line per (run, graded fact, fold made); fold
# and planted_fold are 1-based, present is the grader's boundary rule on that fold's carry.
# An optional file of a package, checked against TRACE_REQUIRED when present.
TRACE = ["row_id", "label", "fold", "present", "planted_fold",
         # an addition: where the value was, "carry", "index" (an index arm's identifier
         # index), "both", or empty (neither); present is true exactly where it is not
         # empty, so an index arm's fact survives in either
         "carried_in"]
TRACE_REQUIRED = TRACE[: TRACE.index("planted_fold") + 1]
# present is empty on the lines of a run whose carry is opaque (a native arm's encrypted
# compaction): neither kept nor lost, as that row's carrier_present is empty.
BOOLEAN |= {"present"}

# Arm against arm (docs/design.md §8), both read from trace.csv, checks.csv and rows.csv
# (analysis/compare.py). paired-arms: one line per (scope, pair of arms) over the blocks
# where both arms have a valid row; a_only counts facts arm a kept and arm b did not.
PAIRED_ARMS_TABLE = ["sweep", "pair", "blocks", "facts", "both_kept", "a_only", "b_only",
                     "neither",
                     # additions: the arms, the shares and the block-resampled interval of
                     # b's kept share minus a's, then the same in the answer
                     "a", "b", "models", "a_kept_share", "b_kept_share", "kept_diff",
                     "kept_diff_low", "kept_diff_high", "both_recalled", "a_only_recalled",
                     "b_only_recalled", "neither_recalled", "a_recalled_share",
                     "b_recalled_share", "recalled_diff", "recalled_diff_low",
                     "recalled_diff_high"]
# fact-survival: one line per (scope, arm, k folds after planting).
FACT_SURVIVAL_TABLE = ["sweep", "arm", "k", "facts", "carried", "share", "share_low",
                       "share_high",
                       # additions: the rows and blocks read; the share of the facts the
                       # planting fold's carry took in (loss over folds alone); survival
                       # with runs' ends as censoring (product-limit), and its band
                       "rows", "blocks", "taken_in", "share_of_taken_in", "survival",
                       "survival_low", "survival_high"]

# Cells that name something (a run, a sweep, a model, a label): a table prints them as
# row headings and a path may be built from them. Each is at most this many characters
# (a config name is at most 100: study/schema.py's name rule), and holds no control or
# invisible formatting character (zero-width, a right-to-left override), which would
# make two names look alike or a heading read backwards.
NAME_MAX_CHARS = {"row_id": 400, "sweep": 100, "model": 100, "scenario": 100, "arm": 100,
                  "label": 100}
# Cells a table may print as written: one beginning like a spreadsheet formula (= + - @)
# would run as one when a reader opens the table CSV, so the loader refuses it.
PRINTED = set(NAME_MAX_CHARS) | {"fact_class", "served_by", "invalid_reason"}
