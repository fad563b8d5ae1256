"""Synthetic operations sessions with planted facts (paper §3.1), byte-for-byte from a seed.

Values are high-entropy and non-derivable: no stock ports, no documentation hosts, no
canonical example UUID, no round times or counts, and no graded value is a substring of
any other planted value or occurs anywhere else in the session. `distributed` puts its
five planted segments in five distinct chunks (the paper's landed in three).
"""

from __future__ import annotations

import logging
import random
import string
from dataclasses import dataclass, replace
from typing import Any

from ..io import load_yaml
from ..transcripts.turns import last_turn_number, turn_line
from .fixture_files import CHARS_PER_TOKEN, size_meta, write_fixture
from .fixture_types import Fact, Fixture
from .sessions import make_session_fixture
from .spec import SpecError

log = logging.getLogger(__name__)

PAPER_SESSION_TOKENS = 150_000
PAPER_CHUNK_TOKENS = 30_000

_CONS = "bdfgklmnprstvz"
_VOW = "aeiou"
_CYR_CONS = "бвгдклмнпрстфхз"
_CYR_VOW = "аеиоуя"
_CYR_HEADS = ("Отдел", "Служба", "Управление")


def pseudo_word(rng: random.Random, syllables: int = 3) -> str:
    return "".join(rng.choice(_CONS) + rng.choice(_VOW) for _ in range(syllables)) + rng.choice(
        "nrsktlm"
    )


def _hex(rng: random.Random, n: int) -> str:
    return "".join(rng.choice("0123456789abcdef") for _ in range(n))


def _port(rng: random.Random, stock: set[int]) -> str:
    while True:
        p = rng.randint(20000, 64999)
        if p % 10 and p not in stock:
            return str(p)


def _utc_time(rng: random.Random) -> str:
    while True:
        h, m = rng.randint(0, 23), rng.randint(1, 59)
        if m % 5:
            return f"{h:02d}:{m:02d} UTC"


def _shard_count(rng: random.Random) -> str:
    while True:
        n = rng.randint(11, 97)
        if n % 5 and n % 8 and n & (n - 1):
            return f"{n} shards"


def _uuid(rng: random.Random) -> str:
    h = _hex(rng, 32)
    h = h[:12] + "4" + h[13:16] + rng.choice("89ab") + h[17:]
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def _cyrillic_department(rng: random.Random) -> str:
    word = "".join(rng.choice(_CYR_CONS) + rng.choice(_CYR_VOW) for _ in range(3))
    word += rng.choice("нрск")
    return f"{rng.choice(_CYR_HEADS)} {word.capitalize()}"


def make_value(fact_class: str, rng: random.Random, stock_ports: set[int]) -> str:
    """One fresh value of a fact class."""
    w = lambda n=3: pseudo_word(rng, n)  # noqa: E731
    gens = {
        "port": lambda: _port(rng, stock_ports),
        "path": lambda: f"/{rng.choice(['opt', 'srv', 'var/lib'])}/{w(2)}/{w(2)}/{w(2)}"
        f".{rng.choice(['lock', 'state', 'ckpt'])}",
        "shard_count": lambda: _shard_count(rng),
        "uuid": lambda: _uuid(rng),
        "utc_time": lambda: _utc_time(rng),
        "url": lambda: f"https://{w(2)}-{_hex(rng, 4)}.{w(2)}.internal/{w(2)}",
        "dns_zone": lambda: f"{w(2)}.{w(3)}.{rng.choice(['lan', 'corp', 'zone'])}",
        "key_id": lambda: f"kid-{_hex(rng, 6)}-{w(2)}",
        "handle": lambda: f"@{w(2)}.{w(3)}",
        "release_tag": lambda: f"v{rng.randint(2, 19)}.{rng.randint(11, 89)}.{rng.randint(3, 97)}"
        f"-{w(2)}",
        "cyrillic_department": lambda: _cyrillic_department(rng),
        "cluster_id": lambda: f"clu-{_hex(rng, 10)}",
        "tenant_code": lambda: "TN-"
        + "".join(rng.choice(string.ascii_uppercase) for _ in range(6)),
        "licence_key": lambda: "-".join(
            "".join(rng.choice(string.ascii_uppercase + string.digits) for _ in range(5))
            for _ in range(4)
        ),
        "image_digest": lambda: f"sha256:{_hex(rng, 64)}",
    }
    if fact_class not in gens:
        raise SpecError(f"fact class {fact_class!r} has no generator (known: {' '.join(gens)})")
    return gens[fact_class]()


def _fill(template: str, rng: random.Random, words: dict[str, list[str]]) -> str:
    """Fill a filler template; numbers stay small so they cannot form a graded value."""
    service = rng.choice(words["services"])
    pods = "\n".join(
        f"{service}-{_hex(rng, 5)}   1/1   Running   {rng.randint(0, 3)}   {rng.randint(2, 59)}m"
        for _ in range(rng.randint(2, 4))
    )
    logs = "\n".join(
        f"{rng.choice(['INFO', 'WARN', 'INFO', 'DEBUG'])} {service}: "
        f"{rng.choice(['request served', 'retry scheduled', 'cache refreshed', 'lease renewed'])}"
        f" in {rng.randint(2, 900)}ms"
        for _ in range(rng.randint(2, 4))
    )
    return template.format(
        service=service,
        region=rng.choice(words["regions"]),
        namespace=rng.choice(words["namespaces"]),
        host=f"node-{_hex(rng, 4)}",
        ms=rng.randint(2, 900),
        pct=rng.randint(1, 99),
        count=rng.randint(2, 9),
        uptime=rng.randint(60, 9999),
        disk=rng.choice(["sda1", "sdb1", "nvme0n1p1"]),
        size=rng.randint(100, 900),
        used=rng.randint(10, 99),
        avail=rng.randint(10, 99),
        podlines=pods,
        loglines=logs,
    )


def _segment_turn(facts: list[Fact], rng: random.Random) -> str:
    lead = rng.choice(
        [
            "Before we lose track, note these decisions from the planning call:",
            "Recording the outcome of the change review:",
            "For the runbook, these are now settled:",
            "Summary of what the migration channel agreed:",
            "Writing these down so the next shift has them:",
        ]
    )
    lines = [f"  - {f.statement.format(value=f.value)}" for f in facts]
    return lead + "\n" + "\n".join(lines)


def _plan_facts(
    scenario: str, facts_spec: dict[str, Any], rng: random.Random, stock: set[int]
) -> list[list[Fact]]:
    """Values for every planted fact, grouped into segments."""
    sc = facts_spec["scenarios"][scenario]
    graded_specs = facts_spec["graded"]
    if scenario == "single_chunk":
        graded_specs = [g for g in graded_specs if g.get("single_chunk")]
    if len(graded_specs) != sc["graded"]:
        raise SpecError(
            f"facts.yaml: scenario {scenario} grades {sc['graded']} facts "
            f"but {len(graded_specs)} are marked for it"
        )
    graded = [
        Fact(
            fact_id=g["id"],
            fact_class=g["fact_class"],
            value=make_value(g["fact_class"], rng, stock),
            graded=True,
            label=g["label"],
            unit=g.get("unit", ""),
            statement=g["statement"],
        )
        for g in graded_specs
    ]
    decoys = []
    n_decoys = sc["planted"] - sc["graded"]
    for i in range(n_decoys):
        d = facts_spec["decoys"][i % len(facts_spec["decoys"])]
        decoys.append(
            Fact(
                fact_id=f"decoy_{i:02d}_{d['fact_class']}",
                fact_class=d["fact_class"],
                value=make_value(d["fact_class"], rng, stock),
                graded=False,
                statement=d["statement"],
            )
        )
    n_seg = sc["segments"]
    order = list(range(len(graded)))
    rng.shuffle(order)
    segments: list[list[Fact]] = [[] for _ in range(n_seg)]
    for k, gi in enumerate(order):  # graded facts spread round-robin over the segments
        segments[k % n_seg].append(graded[gi])
    for k, d in enumerate(decoys):
        segments[k % n_seg].append(d)
    for seg in segments:
        rng.shuffle(seg)
    return segments


def graded_facts(scenario: str, seed: int, facts_spec: dict[str, Any], stock_ports: set[int]
                 ) -> list[Fact]:
    """The graded facts a fixture of this scenario and seed plants, without its session.

    The values are drawn before any filler, so they are the fixture's own unless a value
    collided with the filler and the fixture was redrawn (rare; lengths barely move):
    enough for the config-time capacity check, which must not build a whole session.
    """
    if scenario not in facts_spec["scenarios"]:
        known = " ".join(facts_spec["scenarios"])
        raise SpecError(f"scenario {scenario!r} is not known (known: {known})")
    segments = _plan_facts(scenario, facts_spec, random.Random(f"{scenario}:{seed}:0"),
                           stock_ports)
    return [f for seg in segments for f in seg if f.graded]


def synthetic_chunk_chars(scale: float) -> int:
    """The characters of one chunk at this scale (the generator's target)."""
    return int(PAPER_CHUNK_TOKENS * scale * CHARS_PER_TOKEN)


def _collision(facts: list[Fact], text: str) -> str | None:
    """Why these values break the non-derivability rules, or None."""
    values = [f.value for f in facts]
    for f in facts:
        if not (f.graded or f.control):
            continue
        for other in values:
            if other != f.value and f.value in other:
                return f"{f.value!r} is a substring of {other!r}"
        if text.count(f.value) != 1:
            return f"{f.value!r} occurs {text.count(f.value)} times in the session"
    if len(set(values)) != len(values):
        return "duplicate values"
    return None


@dataclass(frozen=True)
class _Plan:
    """What one fixture is generated from (the same for every collision retry)."""

    scenario: str
    seed: int
    scale: float
    facts_spec: dict[str, Any]
    filler: dict[str, Any]
    stock_ports: set[int]
    single_chunk_index: int


def build_fixture(
    scenario: str,
    seed: int,
    scale: float,
    facts_spec: dict[str, Any],
    filler: dict[str, Any],
    stock_ports: set[int],
    single_chunk_index: int = 2,
) -> Fixture:
    """Generate one scenario. Retries with the next sub-seed on a value collision."""
    if scenario not in facts_spec["scenarios"]:
        known = " ".join(facts_spec["scenarios"])
        raise SpecError(f"scenario {scenario!r} is not known (known: {known})")
    plan = _Plan(scenario, seed, scale, facts_spec, filler, stock_ports, single_chunk_index)
    for attempt in range(100):
        fixture = _attempt(plan, random.Random(f"{scenario}:{seed}:{attempt}"))
        why = _collision(list(fixture.facts), "\n".join(fixture.chunks))
        if why is None:
            return replace(fixture, meta={**fixture.meta, "attempt": attempt})
    raise SpecError(f"could not generate collision-free values for {scenario} seed {seed}")


def plant_controls(fixture: Fixture, n: int, facts_spec: dict[str, Any],
                   stock_ports: set[int]) -> Fixture:
    """The fixture with n control facts (facts.yaml `controls`, the first n) planted in
    one turn appended to its last chunk: where every working carrier keeps them, since
    the last fold reads them and no fold drops them after (a row that loses one shows a
    broken recall turn or grader, not a carrier's loss). Their values come from a seed
    of their own (redrawn on a collision), so the rest of the fixture, graded facts
    included, is that of the same sweep without controls."""
    specs = list(facts_spec.get("controls") or [])
    if not 1 <= n <= len(specs):
        raise SpecError(f"controls.tail: {n} control facts asked; facts.yaml defines "
                        f"{len(specs)} (1 to {len(specs)})")
    last = len(fixture.chunks) - 1
    previous = last_turn_number(fixture.chunks[last])
    turn = previous + 1 if previous is not None else 0
    for attempt in range(100):
        rng = random.Random(f"{fixture.scenario}:{fixture.seed}:controls:{attempt}")
        facts = [Fact(fact_id=c["id"], fact_class=c["fact_class"], graded=False,
                      value=make_value(c["fact_class"], rng, stock_ports), label=c["label"],
                      unit=c.get("unit", ""), statement=c["statement"], chunk=last,
                      control=True) for c in specs[:n]]
        text = fixture.chunks[last] + turn_line(turn, "user", _segment_turn(facts, rng)) + "\n"
        chunks = (*fixture.chunks[:last], text)
        placed = [replace(f, offset=text.index(f.value)) for f in facts]
        if _collision([*fixture.facts, *placed], "\n".join(chunks)) is None:
            return replace(fixture, chunks=chunks, facts=(*fixture.facts, *placed),
                           meta={**fixture.meta, **size_meta(chunks)})
    raise SpecError(f"could not draw collision-free control values for {fixture.scenario} "
                    f"seed {fixture.seed}")


def _attempt(plan: _Plan, rng: random.Random) -> Fixture:
    scenario, seed, scale, facts_spec, filler, stock_ports, single_chunk_index = (
        plan.scenario, plan.seed, plan.scale, plan.facts_spec, plan.filler, plan.stock_ports,
        plan.single_chunk_index)
    n_chunks = PAPER_SESSION_TOKENS // PAPER_CHUNK_TOKENS
    chunk_chars = synthetic_chunk_chars(scale)
    segments = _plan_facts(scenario, facts_spec, rng, stock_ports)
    if len(segments) == 1:
        seg_chunk = {single_chunk_index: 0}
    else:
        # One segment per chunk, in order: five segments land in five distinct folds.
        seg_chunk = {c: c for c in range(len(segments))}
    words = filler["words"]
    chunks: list[str] = []
    placed: list[Fact] = []
    turn = 0
    for c in range(n_chunks):
        header = f"=== session chunk {c + 1} of {n_chunks} ===\n"
        body: list[str] = []
        size = len(header)
        seg_at = None
        if c in seg_chunk:
            # somewhere in the first two thirds, so filler follows the planted turn
            seg_at = rng.uniform(0.15, 0.66) * chunk_chars
        while size < chunk_chars or seg_at is not None:
            if seg_at is not None and size >= seg_at:
                facts = segments[seg_chunk[c]]
                text = turn_line(turn, "user", _segment_turn(facts, rng))
                placed += [replace(f, segment=seg_chunk[c], chunk=c) for f in facts]
                body.append(text)
                seg_at = None
            else:
                role = rng.choice(["user", "assistant", "tool", "tool", "assistant"])
                text = turn_line(turn, role, _fill(rng.choice(filler[role]), rng, words))
                body.append(text)
            size += len(text) + 1
            turn += 1
        chunk_text = header + "\n".join(body) + "\n"
        chunks.append(chunk_text)
    # Offsets into the final chunk text; each value occurs once (checked by _collision).
    resolved = []
    for f in placed:
        text = chunks[f.chunk]
        pos = text.index(f.value)
        resolved.append(replace(f, offset=pos))
    meta = {
        "n_chunks": n_chunks,
        "chunk_chars_target": chunk_chars,
        **size_meta(chunks),
    }
    return Fixture(scenario, seed, scale, tuple(chunks), tuple(resolved), meta)


# -- the fixture job (I/O at the edge) -------------------------------------------------


def make_fixture(scenario: str, seed: int, scale: float, facts_yaml: str, filler_yaml: str,
                 grading_yaml: str, fixture_out: str, manifest_out: str,
                 controls: int = 0) -> Fixture:
    """Generate one sweep's session and write it with its manifest; controls: how many
    control facts to plant at its end (config sweeps.X.controls.tail; plant_controls)."""
    facts_spec = load_yaml(facts_yaml)
    # planted values avoid the grader's stock signature (paper §3.1: non-derivable)
    stock_ports = {int(p) for p in load_yaml(grading_yaml)["stock_signature"]["ports"]}
    fx = build_fixture(scenario, seed, scale, facts_spec=facts_spec,
                       filler=load_yaml(filler_yaml), stock_ports=stock_ports)
    if controls:
        fx = plant_controls(fx, controls, facts_spec, stock_ports)
    m = write_fixture(fx, fixture_out, manifest_out)
    log.info("%s seed %d scale %g: %d chunks (%s chars), %d planted, %d graded in chunks %s",
             scenario, seed, scale, len(fx.chunks), m["chunk_chars"], m["n_planted"],
             m["n_graded"], m["graded_chunks"])
    return fx


def fixture_stage(input: Any, output: Any, params: Any) -> Fixture:
    """Rule fixture: one sweep's fixture and manifest; a session sweep's from its
    transcript (study/sessions.py), a built-in one's generated."""
    if "session" in params.fx:
        spec = {**params.fx["session"], "transcript": input.transcript,
                "facts": input.own_facts}
        return make_session_fixture(spec, params.fx["seed"], output.fixture, output.manifest)
    return make_fixture(**params.fx, facts_yaml=input.facts, filler_yaml=input.filler,
                        grading_yaml=input.grading, fixture_out=output.fixture,
                        manifest_out=output.manifest)
