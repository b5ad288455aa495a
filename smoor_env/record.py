"""Game records: every finished round as a JSON object, JSON-lines files, and replay.

A record has exactly the keys of the rules specification::

    {"rules": {...all options...}, "seed": int, "round": int, "dealer": int,
     "hands": [[card text, ...] per seat, as dealt], "dead": [card text, ...],
     "passes": [[3 card texts] per seat] or null, "bids": [...] or null,
     "cursed_suit": "H" or null, "actions": [[seat, action id], ...] in order,
     "trick_winners": [seat, ...], "round_points": [...], "totals": [...]}

``round_points`` is the whole round score after every bonus, penalty and
doubling (Hearts: positive penalty points); ``totals`` are the match totals
after the round. One optional key may follow them: ``"agents"``, the seats' names
(``smoor-play`` writes it, ``smoor-view`` shows it; replay does not use it).

``check_record`` checks the form (exactly these keys, each of its JSON type,
every rule option); ``read_records`` reads a JSON-lines file and raises
``RecordError`` naming the file and line of anything that is not a record;
``replay(record)`` re-derives every field through the engine and raises
``ReplayError`` naming the field and its first difference.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from smoor_env.core import cards as C
from smoor_env.core.checks import SEED_LIMIT
from smoor_env.core.deal import game_keys
from smoor_env.core.engine import Engine
from smoor_env.core.rules import Rules, turn_order
from smoor_env.core.state import BID_OFFSET, CURSE_OFFSET

RECORD_KEYS = ("rules", "seed", "round", "dealer", "hands", "dead", "passes", "bids",
               "cursed_suit", "actions", "trick_winners", "round_points", "totals")
#: Keys a record may carry besides RECORD_KEYS (after them), which replay does not use.
OPTIONAL_KEYS = ("agents",)


class RecordError(ValueError):
    """A record (or a records file) does not have the specified form: a key missing or
    extra, a value of the wrong type, a line that is not a JSON object."""


class ReplayError(RecordError):
    """A record does not replay: malformed, or the engine disagrees with one of its fields
    (the message starts with the field, then the first difference)."""


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _list_of(check: Callable[[Any], bool]) -> Callable[[Any], bool]:
    return lambda value: isinstance(value, list) and all(check(v) for v in value)


def _or_null(check: Callable[[Any], bool]) -> Callable[[Any], bool]:
    return lambda value: value is None or check(value)


_TEXTS = _list_of(lambda v: isinstance(v, str))
_INTS = _list_of(_is_int)
# The JSON type of each key, and how it reads in an error message.
_FIELD_TYPES: dict[str, tuple[Callable[[Any], bool], str]] = {
    "rules": (lambda v: isinstance(v, dict), "an object of every rule option"),
    "seed": (_or_null(_is_int), "an int or null"),
    "round": (_is_int, "an int"),
    "dealer": (_is_int, "an int"),
    "hands": (_list_of(_TEXTS), "a list of card-text lists, one per seat"),
    "dead": (_TEXTS, "a list of card texts"),
    "passes": (_or_null(_list_of(_TEXTS)), "null or a list of card-text lists, one per seat"),
    "bids": (_or_null(_INTS), "null or a list of ints, one per seat"),
    "cursed_suit": (_or_null(lambda v: isinstance(v, str)), 'null or a suit letter ("H")'),
    "actions": (_list_of(lambda v: isinstance(v, list) and len(v) == 2 and all(map(_is_int, v))),
                "a list of [seat, action id] pairs"),
    "trick_winners": (_INTS, "a list of seats"),
    "round_points": (_INTS, "a list of ints, one per seat"),
    "totals": (_INTS, "a list of ints, one per seat"),
    "agents": (_TEXTS, "a list of names, one per seat"),
}
_RULE_OPTIONS = tuple(Rules().to_dict())


def check_record(record: Any, error: type[RecordError] = RecordError) -> None:
    """Raise ``error`` unless ``record`` is a dict with exactly ``RECORD_KEYS`` (and perhaps
    ``OPTIONAL_KEYS``), each of its JSON type, and ``rules`` holds exactly every rule
    option (``Rules.to_dict()``)."""
    if not isinstance(record, dict):
        raise error(f"a record must be a JSON object, got {type(record).__name__} {record!r:.80}")
    missing = [k for k in RECORD_KEYS if k not in record]
    extra = [k for k in record if k not in RECORD_KEYS + OPTIONAL_KEYS]
    if missing or extra:
        raise error("not a game record: " + "; ".join(
            f"{what} key(s) {keys}" for what, keys in (("missing", missing), ("unknown", extra))
            if keys) + f" (the keys are {list(RECORD_KEYS)}, optionally {list(OPTIONAL_KEYS)})")
    for key, (check, kind) in _FIELD_TYPES.items():
        if key in record and not check(record[key]):
            raise error(f"{key}: must be {kind}, got {record[key]!r:.120}")
    options = record["rules"]
    missing = [k for k in _RULE_OPTIONS if k not in options]
    extra = [k for k in options if k not in _RULE_OPTIONS]
    if missing or extra:
        raise error("rules: " + "; ".join(
            f"{what} option(s) {keys}" for what, keys in (("missing", missing), ("unknown", extra))
            if keys))


def _texts(mask: int) -> list[str]:
    return [C.card_str(c) for c in C.cards_of(mask)]


def _stream_is_game_zero(engine: Engine, game: int, seed: int) -> bool:
    """Whether game ``game`` of the engine draws from seed ``seed``'s game id 0 stream
    (the one a record's seed names)."""
    return game_keys(seed, np.zeros(1, np.uint64))[0] == engine.state.game_key[game]


def round_record(engine: Engine, game: int, seed: int | None) -> dict:
    """The record of the round that game ``game`` just finished (call it on ``round_over``).

    Built from ``state.finished``, the snapshot the engine takes at the end of each
    round, with the round's points and the match totals after it. ``seed`` is the seed
    the game was reset with, as game id 0 (as in the AEC environment), so that
    ``replay`` can re-derive the deals of later rounds from it; ``None`` for a game of
    another stream.

    Raises:
        ValueError: if the game is not seed ``seed``'s game id 0.
    """
    if seed is not None and not _stream_is_game_zero(engine, game, seed):
        raise ValueError(f"game {game} was not reset as game id 0 of seed {seed}; a record "
                         f"names that stream only (pass seed=None for another one)")
    st, rules = engine.state, engine.rules
    fin = {name: value[game] for name, value in st.finished.items()}
    p = rules.num_players
    dealer = int(fin["dealer"])
    order = turn_order(dealer + 1, p).tolist()  # clockwise from the dealer's left
    actions: list[list[int]] = []
    passes = fin["passes"]  # (P, 3)
    passed = bool((passes >= 0).any())
    if passed:
        actions += [[seat, int(card)] for seat in order for card in passes[seat]]
    cursed = int(fin["cursed_suit"])
    if cursed >= 0:
        actions.append([dealer, CURSE_OFFSET + cursed])
    bids = fin["bids"]  # (P,)
    if rules.bidding:
        actions += [[seat, BID_OFFSET + int(bids[seat])] for seat in order]
    for leader, cards in zip(fin["trick_leader"], fin["trick_cards"], strict=True):
        actions += [[seat, int(cards[seat])] for seat in turn_order(int(leader), p).tolist()]
    return {
        "rules": rules.to_dict(),
        "seed": seed,
        "round": int(fin["round_number"]),
        "dealer": dealer,
        "hands": [_texts(int(h)) for h in fin["dealt"]],
        "dead": _texts(int(fin["dead"])),
        "passes": [[C.card_str(c) for c in seat] for seat in passes] if passed else None,
        "bids": [int(b) for b in bids] if rules.bidding else None,
        "cursed_suit": C.SUITS[cursed] if cursed >= 0 else None,
        "actions": actions,
        "trick_winners": [int(w) for w in fin["trick_winner"]],
        "round_points": [int(x) for x in st.round_points[game]],
        "totals": [int(x) for x in st.totals[game]],
    }


def write_records(path: str | Path, records: Iterable[dict]) -> None:
    """Append records to a JSON-lines file (one round per line)."""
    with open(path, "a", encoding="utf-8") as f:
        for record in records:
            f.write(json.dumps(record) + "\n")


def read_records(path: str | Path) -> Iterator[dict]:
    """The records of a JSON-lines file, in order (blank lines are skipped).

    Raises:
        RecordError: naming the file and line, for a line that is not UTF-8 text or
            not JSON (a truncated line included), not a JSON object, or not of the record's form
            (``check_record``).
    """
    with open(path, "rb") as f:
        for number, raw in enumerate(f, 1):
            where = f"{path}:{number}"
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as error:
                raise RecordError(f"{where}: not UTF-8 text (byte {error.start + 1})") from None
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as error:
                raise RecordError(f"{where}: not JSON ({error.msg} at column {error.colno}"
                                  f"{'; truncated line?' if not line.endswith(chr(10)) else ''})"
                                  ) from None
            except RecursionError:
                raise RecordError(f"{where}: not a record (JSON nested too deeply)") from None
            try:
                check_record(record)
            except RecordError as error:
                raise RecordError(f"{where}: {error}") from None
            yield record


def _first_difference(recorded: Any, derived: Any, where: str) -> str | None:
    """Where two JSON values first differ (``hands[2][5]: record has 'AS', the engine
    gives 'KS'``), or None if they are equal."""
    if isinstance(recorded, list) and isinstance(derived, list):
        for i, (a, b) in enumerate(zip(recorded, derived, strict=False)):
            found = _first_difference(a, b, f"{where}[{i}]")
            if found:
                return found
        if len(recorded) != len(derived):
            return (f"{where}: record has {len(recorded)} entries, the engine gives "
                    f"{len(derived)}")
        return None
    if isinstance(recorded, dict) and isinstance(derived, dict):
        for key in derived:
            found = _first_difference(recorded.get(key), derived[key], f"{where}.{key}")
            if found:
                return found
        return None
    if recorded != derived or type(recorded) is not type(derived):
        return f"{where}: record has {recorded!r}, the engine gives {derived!r}"
    return None


def _check_totals_before(rules: Rules, record: dict, before: np.ndarray) -> None:
    """The totals before the round (``totals - round_points``, (P,)) must be a state the
    match can be in at the start of round ``record["round"]``: zero in round 1, within
    ``(round - 1) * rules.round_points_bound``, never negative where no rule subtracts,
    equal on partners' seats, and not already a finished match."""
    def need(ok: bool, why: str) -> None:
        if not ok:
            raise ReplayError(f"totals: the totals before round {rounds} (totals - "
                              f"round_points = {before.tolist()}) {why}")

    rounds = record["round"]
    need(rounds >= 1, "need a round number from 1")
    need(rounds == 1 or rules.target_score is not None,
         "cannot exist: a match with target_score None has a single round")
    need(np.abs(before).max() <= (rounds - 1) * rules.round_points_bound,
         f"cannot be reached in {rounds - 1} rounds (at most "
         f"{rules.round_points_bound} points a round)")
    subtracts = rules.bidding or rules.cupids_arrow
    need(subtracts or before.min() >= 0, "cannot be negative under these rules")
    need(not rules.partners or (before[0] == before[2] and before[1] == before[3]),
         "must be equal on partners' seats")
    if rounds > 1 and rules.target_score is not None:
        best = before.min() if rules.is_hearts else before.max()
        leaders = np.count_nonzero(before == best)
        reached = before.max() >= rules.target_score
        ended = reached if rules.is_hearts else reached and leaders == (
            2 if rules.partners else 1)
        need(not ended, f"already end the match (target {rules.target_score})")


def replay(record: dict) -> Engine:
    """Check a record and play it through the engine; raise ``ReplayError`` at the first
    difference.

    The record must have exactly the specified keys and types (``check_record``). The
    round starts from the record's deal, dealer, round number and the totals before it
    (``totals - round_points``), which must be reachable at that round; from round 2
    on, with a seed, the deal must be what the seed deals (a first round may hold a
    deal given to ``reset``). Every action must be legal and made by the recorded
    seat; then every field the engine derives (dead pile, passes, bids, cursed suit,
    actions, trick winners, round points, totals; hands in dealt order) must equal
    the record's.

    Returns:
        The engine after the round (its ``state.finished`` holds the replayed round).

    Raises:
        ReplayError: naming the field and its first difference.
    """
    check_record(record, ReplayError)
    try:
        rules = Rules(**record["rules"])
    except ValueError as error:
        raise ReplayError(f"rules: {error}") from None
    seed = record["seed"]
    if seed is not None and not 0 <= seed < SEED_LIMIT:
        raise ReplayError(f"seed: must be in 0..2**64 - 1, got {seed}")
    for key in ("round_points", "totals"):
        if len(record[key]) != rules.num_players:
            raise ReplayError(f"{key}: must have one entry per seat ({rules.num_players}), got "
                              f"{len(record[key])}")
    engine = Engine(rules, 1)
    before = np.array(record["totals"]) - np.array(record["round_points"])  # (P,)
    _check_totals_before(rules, record, before)
    setup = {"hands": [record["hands"]], "dealers": [record["dealer"]],
             "round_number": [record["round"]], "totals": [before]}
    for key, value in setup.items():
        try:
            engine.reset(seed or 0, **{key: value})  # one at a time: name the bad field
        except ValueError as error:
            field = {"dealers": "dealer", "round_number": "round"}.get(key, key)
            raise ReplayError(f"{field}: {error}") from None
    if seed is not None and record["round"] > 1:
        engine.reset(seed, dealers=[record["dealer"]], round_number=[record["round"]])
        dealt = [_texts(int(h)) for h in engine.state.dealt[0]]
        found = _first_difference(record["hands"], dealt, "hands")
        if found:
            raise ReplayError(f"{found} (round {record['round']} of seed {seed})")
    engine.reset(seed or 0, **setup)
    st = engine.state
    for step, (seat, action) in enumerate(record["actions"]):
        if st.round_over[0]:
            raise ReplayError(f"actions[{step}]: the round ended before the record's last "
                              f"action")
        if int(st.current_player[0]) != seat:
            raise ReplayError(f"actions[{step}]: record says seat {seat} acts, engine says "
                              f"seat {int(st.current_player[0])}")
        try:
            engine.step(np.array([action]))
        except ValueError as error:
            raise ReplayError(f"actions[{step}]: {error}") from error
    if not st.round_over[0]:
        raise ReplayError("actions: the record's actions end before the round does")
    derived = round_record(engine, 0, seed)
    for key in RECORD_KEYS:
        found = _first_difference(record[key], derived[key], key)
        if found:
            raise ReplayError(found)
    return engine


def replay_match(records: Sequence[dict]) -> Engine:
    """Replay the records of one match in order (``raw_env.game_record()``, or a match's
    lines of a log), checking each with ``replay`` and the links between them.

    A single record cannot show the totals before its round, nor (from round 2) who
    deals it; here they come from the previous record: every record has the same rules
    and seed, the rounds count 1, 2, ..., the totals before a round are the previous
    record's totals, its dealer is the one the engine picks after the previous round
    (clockwise, or Cupid's Arrow's rule), with a seed its deal is the seed's, and no
    record follows the one that ended the match.

    Returns:
        The engine after the last round.

    Raises:
        ReplayError: naming the record, the field and the first difference.
    """
    engine: Engine | None = None
    previous: dict = {}
    for index, record in enumerate(records):
        where = f"record {index}"
        try:
            if engine is None:
                check_record(record, ReplayError)
                if record["round"] != 1:
                    raise ReplayError(f"round: a match starts at round 1, got {record['round']}")
            else:
                check_record(record, ReplayError)
                st = engine.state
                expected = {
                    "rules": previous["rules"], "seed": previous["seed"],
                    "round": previous["round"] + 1, "dealer": int(st.dealer[0]),
                    "totals before the round": previous["totals"]}
                if previous["seed"] is not None:
                    expected["hands"] = [_texts(int(h)) for h in st.dealt[0]]
                got = {**record, "totals before the round": [
                    t - r for t, r in zip(record["totals"], record["round_points"], strict=False)]}
                if st.match_over[0]:
                    raise ReplayError(f"round: the match ended after round {previous['round']}"
                                      f", yet another record follows")
                for key, value in expected.items():
                    found = _first_difference(got[key], value, key)
                    if found:
                        raise ReplayError(f"{found} (from the previous record)")
            engine = replay(record)
        except ReplayError as error:
            raise ReplayError(f"{where}: {error}") from None
        previous = record
    if engine is None:
        raise ReplayError("a match has at least one record, got none")
    return engine
