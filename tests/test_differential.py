"""Differential tests: the vectorised engine against the scalar reference, step by step.

For each rule set a batch of B games is reset from a seed and played with uniformly
random legal actions. Beside it runs one ``RefMatch`` (``tests/reference.py``, written
independently from RULES.md) per game, dealt the engine's cards at the start of every
round. After every step, for every live game, the two must agree on the exact legal
action set, the seat to act, the dealer, the round and the phase, the trick winners so
far, the trick in progress, every hand and the totals; at the end of each round on the
finished round's record (deal, dead pile, passes, bids, cursed suit, card of each seat
in each trick, leaders, winners), round points, totals and round winners; at the end of
the match on the winners. Events seen (sweeps, moons, ties, ...) are counted, and each
case lists the events it must produce, so that a case cannot silently lose coverage.

Games of one batch normally move in lockstep (same phase, same place in the trick), and
the engine has fast paths for that. Staggered cases (``stagger=k``) start game ``g``
``g % k`` random steps ahead, so the batch mixes phases, trick positions, trick numbers
and round ends, and the engine's general (non-lockstep) paths are compared too.

Some cases start from a rigged first deal (``rig=True``, even-numbered games only; see
``_rigged_deal``), so that sweeps (Smoorverliefd), shooting the moon and a first trick
with nothing but hearts and ``QS`` to discard (Hearts) are frequent instead of rare.

A failure names the case, rules, seed, step and game: ``run_differential`` with the same
arguments replays it exactly.
"""

from __future__ import annotations

import dataclasses
import zlib
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pytest
from reference import RefMatch

from smoor_env import Engine, Phase, Rules
from smoor_env.core.cards import cards_of, mask_of

PHASE_NAMES = {
    Phase.PLAY: "play",
    Phase.PASS: "pass",
    Phase.CURSE: "curse",
    Phase.BID: "bid",
    Phase.OVER: "match_over",
}
HEARTS = list(range(26, 39))
QS, KS, AS, AC = 49, 50, 51, 12


@dataclass(frozen=True)
class Case:
    """One rule set of the differential run."""

    name: str
    rules: dict
    batch: int = 128
    rig: bool = False  # rigged first deal in even games (see module docstring)
    stagger: int = 0  # game g starts g % stagger steps ahead (see _stagger)
    expect: Sequence[str] = ()  # events that must occur at least once (see _Stats)

    def make_rules(self) -> Rules:
        return Rules(**self.rules)

    @property
    def seed(self) -> int:
        return zlib.crc32(self.name.encode())


SMOOR_SINGLE = {"target_score": None}
MATCH_50 = {"target_score": 50, "max_rounds": 5}
HEARTS_100 = {"game": "hearts", "target_score": 100, "max_rounds": 5}

CASES = [
    # --- Smoorverliefd base, single round and matches to 50 ------------------------
    Case("smoor-3p", {"num_players": 3, **SMOOR_SINGLE}, 192),
    Case("smoor-4p", {"num_players": 4, **SMOOR_SINGLE}, 192, rig=True, expect=["sweep"]),
    Case("smoor-5p", {"num_players": 5, **SMOOR_SINGLE}, 192, rig=True, expect=["sweep"]),
    Case("smoor-3p-to50", {"num_players": 3, **MATCH_50}, 64, expect=["next_round"]),
    Case("smoor-4p-to50", {"num_players": 4, **MATCH_50}, 64, rig=True,
         expect=["next_round", "target_reached"]),
    Case("smoor-5p-to50", {"num_players": 5, **MATCH_50}, 64, expect=["next_round"]),
    Case("smoor-4p-to8-ties", {"ace_of_hearts_points": 1, "target_score": 8,
                               "max_rounds": 6}, 64, expect=["tied_lead_continues"]),
    # --- each variant alone ---------------------------------------------------------
    Case("trump-4p", {"trump_hearts": True, **SMOOR_SINGLE}, 160),
    Case("trump-3p-to50", {"num_players": 3, "trump_hearts": True, **MATCH_50}, 48),
    Case("bidding-4p", {"bidding": True, **SMOOR_SINGLE}, 160, expect=["bid_hit"]),
    Case("bidding-3p-to50", {"num_players": 3, "bidding": True, **MATCH_50}, 48,
         expect=["bid_hit", "negative_total"]),
    Case("partners-4p", {"partners": True, **SMOOR_SINGLE}, 160, rig=True, expect=["sweep"]),
    Case("partners-4p-to50", {"partners": True, **MATCH_50}, 64, expect=["next_round"]),
    Case("pip-4p", {"pip_scoring": True, **SMOOR_SINGLE}, 160, rig=True, expect=["sweep"]),
    Case("pip-5p-to50", {"num_players": 5, "pip_scoring": True, **MATCH_50}, 48,
         expect=["target_reached"]),
    Case("cupids-4p-to50", {"cupids_arrow": True, "target_score": 50, "max_rounds": 5}, 64,
         expect=["curse"]),
    Case("cupids-3p-no-cursed-hearts",
         {"num_players": 3, "cupids_arrow": True, "cursed_suit_may_be_hearts": False,
          "target_score": 30, "max_rounds": 4}, 48, expect=["curse"]),
    Case("sweep-all13-3p", {"num_players": 3, "sweep_needs_all_thirteen": True,
                            **SMOOR_SINGLE}, 192, rig=True, expect=["dead_heart"]),
    Case("sweep-any-3p", {"num_players": 3, **SMOOR_SINGLE}, 192, rig=True,
         expect=["dead_heart", "sweep"]),
    Case("sweep-all13-5p", {"num_players": 5, "sweep_needs_all_thirteen": True,
                            **SMOOR_SINGLE}, 160, rig=True, expect=["dead_heart"]),
    Case("ace3-4p", {"ace_of_hearts_points": 3, **SMOOR_SINGLE}, 160, rig=True),
    Case("ace3-3p-to50", {"num_players": 3, "ace_of_hearts_points": 3, **MATCH_50}, 48),
    # --- combinations ---------------------------------------------------------------
    Case("trump+bidding+pip-5p", {"num_players": 5, "trump_hearts": True, "bidding": True,
                                  "pip_scoring": True, **SMOOR_SINGLE}, 160, rig=True),
    Case("trump+bidding+pip-5p-to50",
         {"num_players": 5, "trump_hearts": True, "bidding": True, "pip_scoring": True,
          **MATCH_50}, 48),
    Case("partners+bidding+cupids-4p",
         {"partners": True, "bidding": True, "cupids_arrow": True, "target_score": 50,
          "max_rounds": 4}, 64, expect=["curse"]),
    Case("all-smoor-variants-4p",
         {"trump_hearts": True, "bidding": True, "partners": True, "pip_scoring": True,
          "cupids_arrow": True, "sweep_needs_all_thirteen": True, "ace_of_hearts_points": 3,
          "target_score": 50, "max_rounds": 4}, 64, rig=True, expect=["curse", "sweep"]),
    Case("cupids+pip+sweep13-3p",
         {"num_players": 3, "cupids_arrow": True, "pip_scoring": True,
          "sweep_needs_all_thirteen": True, "target_score": 120, "max_rounds": 3}, 48),
    # --- staggered batches: mixed phases and trick positions (non-lockstep paths) ------
    Case("staggered-smoor-4p-to20", {"target_score": 20, "max_rounds": 4}, 64, stagger=11,
         expect=["mixed_trick_positions", "next_round"]),
    Case("staggered-smoor-5p-trump", {"num_players": 5, "trump_hearts": True,
                                      **SMOOR_SINGLE}, 64, stagger=7),
    Case("staggered-bidding+cupids-3p",
         {"num_players": 3, "bidding": True, "cupids_arrow": True, "target_score": 30,
          "max_rounds": 4}, 64, stagger=9, expect=["mixed_phases", "curse"]),
    Case("staggered-partners+pip+bidding",
         {"partners": True, "pip_scoring": True, "bidding": True, "target_score": 60,
          "max_rounds": 3}, 64, stagger=6, expect=["mixed_phases"]),
    Case("staggered-hearts-4p", {"game": "hearts", "target_score": 40, "max_rounds": 5}, 64,
         stagger=17, expect=["mixed_phases", "mixed_trick_positions"]),
    Case("staggered-hearts-3p-queen-rules",
         {"game": "hearts", "num_players": 3, "queen_never_first_trick": True,
          "queen_breaks_hearts": True, "target_score": None}, 64, stagger=13),
    # --- Hearts ---------------------------------------------------------------------
    Case("hearts-3p", {"game": "hearts", "num_players": 3, "target_score": None}, 160,
         expect=["pass"]),
    Case("hearts-4p", {"game": "hearts", "num_players": 4, "target_score": None}, 160,
         expect=["pass"]),
    Case("hearts-5p", {"game": "hearts", "num_players": 5, "target_score": None}, 160,
         expect=["pass"]),
    Case("hearts-3p-nopass-moon", {"game": "hearts", "num_players": 3, "passing": False,
                                   "target_score": None}, 160, rig=True, expect=["moon"]),
    Case("hearts-4p-nopass", {"game": "hearts", "passing": False, "target_score": None}, 128,
         rig=True, expect=["first_trick_penalty_legal"]),
    Case("hearts-5p-nopass", {"game": "hearts", "num_players": 5, "passing": False,
                              "target_score": None}, 128),
    Case("hearts-4p-queen-never-first",
         {"game": "hearts", "queen_never_first_trick": True, "target_score": None}, 160),
    Case("hearts-4p-nopass-queen-never-first",
         {"game": "hearts", "passing": False, "queen_never_first_trick": True,
          "target_score": None}, 128, rig=True, expect=["first_trick_qs_withheld"]),
    Case("hearts-5p-nopass-queen-never-first",
         {"game": "hearts", "num_players": 5, "passing": False,
          "queen_never_first_trick": True, "target_score": None}, 128, rig=True,
         expect=["first_trick_qs_withheld"]),
    Case("hearts-3p-queen-never-first",
         {"game": "hearts", "num_players": 3, "queen_never_first_trick": True,
          "target_score": None}, 160),
    Case("hearts-4p-queen-breaks",
         {"game": "hearts", "queen_breaks_hearts": True, "target_score": None}, 160),
    Case("hearts-3p-to100", {**HEARTS_100, "num_players": 3, "max_rounds": 9}, 24,
         expect=["next_round", "target_reached"]),
    Case("hearts-4p-to100", {**HEARTS_100, "num_players": 4, "max_rounds": 6}, 32,
         expect=["next_round"]),
    Case("hearts-5p-to100-queen-rules",
         {**HEARTS_100, "num_players": 5, "queen_never_first_trick": True,
          "queen_breaks_hearts": True}, 32, expect=["next_round"]),
    Case("hearts-4p-to40-nopass", {"game": "hearts", "passing": False, "target_score": 40,
                                   "max_rounds": 6}, 48, expect=["target_reached"]),
]


# ------------------------------------------------------------------ rigged deals
def _rigged_deal(rules: Rules, rng: np.random.Generator) -> tuple[list[list[int]], int]:
    """A first deal (hands per seat) and a dealer with one very strong (or loaded) hand.

    Smoorverliefd: the lowest hearts are the dead cards and the seat left of the dealer
    (the first leader) holds the highest hearts (all of them with 4 players): sweeps.
    Hearts, 3 players: one seat holds every heart, QS, KS, AS and AC: it shoots the moon
    (without passing). Hearts, 4 or 5 players: one seat holds only QS and hearts, so on
    the first trick it has nothing harmless to discard (``queen_never_first_trick``).
    """
    p, n = rules.num_players, rules.hand_size
    deck = cards_of(rules.deck_mask)
    dealer = int(rng.integers(p))
    holder = int(rng.integers(p))
    if rules.is_hearts and p == 3:
        strong = HEARTS + [QS, KS, AS, AC]
    elif rules.is_hearts:
        strong = [QS] + HEARTS[::-1][: n - 1]
    else:
        dead = HEARTS[: rules.dead_count]
        strong = HEARTS[rules.dead_count:][::-1][:n]
        holder = (dealer + 1) % p
        deck = [c for c in deck if c not in dead]
    rest = [c for c in deck if c not in strong]
    rest = [rest[i] for i in rng.permutation(len(rest))]
    hands: list[list[int]] = []
    for seat in range(p):
        if seat == holder:
            need = n - len(strong)
            hands.append(sorted(strong + rest[:need]))
            rest = rest[need:]
        else:
            hands.append(sorted(rest[:n]))
            rest = rest[n:]
    return hands, dealer


# ------------------------------------------------------------------ the comparison
@dataclass
class _Stats:
    """Events seen during a run, to make sure the interesting paths were exercised."""

    games: int = 0
    rounds: int = 0
    steps: int = 0
    events: dict[str, int] = field(default_factory=dict)

    def see(self, event: str, happened: bool = True) -> None:
        if happened:
            self.events[event] = self.events.get(event, 0) + 1


def _seats(flags: np.ndarray) -> list[int]:
    return [int(s) for s in np.flatnonzero(flags)]


def _start_ref_round(ref: RefMatch, st, g: int) -> None:
    hands = [cards_of(m) for m in st.dealt[g].tolist()]
    ref.start_round(hands, cards_of(st.dead[g]))


def _ref_tricks(ref: RefMatch, p: int) -> tuple[list[list[int]], list[int]]:
    """Card per seat of each trick, and each trick's leader, from the reference's actions."""
    plays = [(seat, a) for seat, a in ref.actions if a < 52]
    if ref.passes is not None:
        plays = plays[3 * p:]  # the three cards each seat chose to pass come first
    cards, leaders = [], []
    for t in range(0, len(plays), p):
        trick = [-1] * p
        for seat, card in plays[t: t + p]:
            trick[seat] = card
        cards.append(trick)
        leaders.append(plays[t][0])
    return cards, leaders


def _note_first_trick(stats: _Stats, ref: RefMatch, legal: list[int]) -> None:
    """Hearts, first trick, not leading: was a penalty card legal, or QS held back?"""
    penalty = [c for c in legal if c in HEARTS or c == QS]
    stats.see("first_trick_penalty_legal", bool(penalty))
    hand = ref.hands[ref.current_player]
    stats.see("first_trick_qs_withheld", bool(penalty) and QS in hand and QS not in legal)


def _note_round(stats: _Stats, rules: Rules, ref: RefMatch) -> None:
    """Record which scoring paths a finished round (in the reference) went through."""
    stats.rounds += 1
    dead_hearts = [c for c in ref.dead if c in HEARTS]
    stats.see("dead_heart", bool(dead_hearts))
    if rules.is_hearts:
        stats.see("moon", sorted(ref.round_points) == [0] + [26] * (rules.num_players - 1))
    else:
        in_play = 13 - len(dead_hearts)
        teams = [[0, 2], [1, 3]] if rules.partners else [[s] for s in range(rules.num_players)]
        for team in teams:
            won = sum(1 for s in team for c in ref.won_cards[s] if c in HEARTS)
            stats.see("sweep", won == in_play)
        if rules.bidding:
            stats.see("bid_hit", any(
                sum(1 for c in ref.won_cards[s] if c in HEARTS) == ref.bids[s]
                for s in range(rules.num_players)))
    if ref.cursed_suit is not None:
        stats.see("curse")
    stats.see("negative_total", min(ref.totals) < 0)
    target = rules.target_score
    reached = target is not None and max(ref.totals) >= target
    if ref.match_over:
        stats.see("target_reached", reached and ref.round_number < rules.max_rounds)
        stats.see("max_rounds", ref.round_number == rules.max_rounds and target is not None)
        stats.see("shared_win", len(ref.winners) > (2 if rules.partners else 1))
    else:
        stats.see("next_round")
        stats.see("tied_lead_continues", reached)


def _random_actions(engine: Engine, rng: np.random.Generator) -> np.ndarray:
    """A uniformly random legal action per game, from ``legal_mask`` (0 once over)."""
    mask = engine.legal_mask
    return np.argmax(np.where(mask, rng.random(mask.shape), -1.0), axis=1)


def _stagger(engine: Engine, refs: list[RefMatch], stagger: int,
             rng: np.random.Generator) -> None:
    """Move game g of a freshly reset batch ``g % stagger`` random steps ahead.

    The engine can only step every game at once, so the batch is stepped ``stagger - 1``
    times on copies and each game's row is taken from the copy at its own offset; the
    reference of each game gets the same actions.
    """
    fields = [f.name for f in dataclasses.fields(engine.state) if f.name != "finished"]
    merged = engine.state.copy()
    offset = np.arange(engine.batch_size) % stagger
    for k in range(1, stagger):
        actions = _random_actions(engine, rng)
        for g in np.flatnonzero((offset >= k) & ~engine.state.match_over).tolist():
            refs[g].apply(int(actions[g]))
        engine.step(actions)
        st, rows = engine.state, offset == k
        for name in fields:
            getattr(merged, name)[rows] = getattr(st, name)[rows]
        for name, array in st.finished.items():
            merged.finished[name][rows] = array[rows]
    engine.state = merged
    merged.round_over[:] = False


def run_differential(rules: Rules, batch: int, seed: int, rig: bool = False,
                     stagger: int = 0, name: str = "") -> _Stats:
    """Play ``batch`` games of ``rules`` in the engine and the reference; assert agreement."""
    rng = np.random.default_rng(seed)
    engine = Engine(rules, batch)
    if rig:
        deals = [_rigged_deal(rules, rng) for _ in range(batch)]
        st = engine.reset(seed)  # a shuffled deal for the odd games
        hands = [deals[g][0] if g % 2 == 0 else [cards_of(m) for m in st.dealt[g].tolist()]
                 for g in range(batch)]
        dealers = [deals[g][1] if g % 2 == 0 else int(st.dealer[g]) for g in range(batch)]
        st = engine.reset(seed, hands=hands, dealers=dealers)
    else:
        st = engine.reset(seed)
    refs = [RefMatch(rules, first_dealer=int(st.dealer[g])) for g in range(batch)]
    for g, ref in enumerate(refs):
        _start_ref_round(ref, st, g)
    if stagger:
        _stagger(engine, refs, stagger, rng)
        st = engine.state
        # A game moved into its next round: the reference needs its deal.
        for g in np.flatnonzero(st.round_number > 1).tolist():
            assert refs[g].phase == "deal", f"{name}: staggered game {g} is not between rounds"
            _start_ref_round(refs[g], st, g)
    stats = _Stats(games=batch)
    rounds = st.round_number.tolist()
    step = 0

    def where(g: int, what: str) -> str:
        return (f"{name}: {what} differs in game {g} at step {step} (rules={rules!r}, "
                f"seed={seed}, rig={rig}, batch={batch}, round={rounds[g]})")

    while True:
        # ---- compare every live game before the step
        mask = engine.legal_mask
        live = (~st.match_over).tolist()
        phase = st.phase.tolist()
        player = st.current_player.tolist()
        dealer = st.dealer.tolist()
        round_number = st.round_number.tolist()
        trick_index = st.trick_index.tolist()
        trick_winner = st.trick_winner.tolist()
        hands = st.hands.tolist()
        current_trick = st.current_trick.tolist()
        totals = st.totals.tolist()
        for g, ref in enumerate(refs):
            if not live[g]:
                assert ref.phase == "match_over", where(g, "match over")
                assert not mask[g].any(), where(g, "legal mask after the match")
                continue
            assert PHASE_NAMES[phase[g]] == ref.phase, where(g, "phase")
            legal = ref.legal_actions()
            assert np.flatnonzero(mask[g]).tolist() == legal, where(g, "legal set")
            if rules.is_hearts and trick_index[g] == 0 and ref.current_trick:
                _note_first_trick(stats, ref, legal)
            assert player[g] == ref.current_player, where(g, "current player")
            assert dealer[g] == ref.dealer, where(g, "dealer")
            assert round_number[g] == ref.round_number, where(g, "round number")
            assert trick_winner[g][: trick_index[g]] == ref.trick_winners, where(
                g, "trick winners so far")
            assert hands[g] == [mask_of(h) for h in ref.hands], where(g, "hands")
            trick = [-1] * rules.num_players
            for seat, card in ref.current_trick:
                trick[seat] = card
            assert current_trick[g] == trick, where(g, "current trick")
            assert totals[g] == ref.totals, where(g, "totals")
        if not any(live):
            break
        for event in ("pass", "curse", "bid"):
            stats.see(event, any(PHASE_NAMES[ph] == event for ph in phase))

        stats.see("mixed_phases", len(set(p for p, ok in zip(phase, live, strict=True) if ok)) > 1)
        sizes = st.trick_size[~st.match_over]
        stats.see("mixed_trick_positions", len(sizes) > 0 and bool((sizes != sizes[0]).any()))

        # ---- one uniformly random legal action per game (ignored once the match is over)
        actions = np.argmax(np.where(mask, rng.random(mask.shape), -1.0), axis=1)
        for g, ref in enumerate(refs):
            if live[g]:
                ref.apply(int(actions[g]))
        engine.step(actions)
        step += 1
        stats.steps += 1

        # ---- rounds that ended in this step
        ended = np.flatnonzero(st.round_over).tolist()
        assert all(live[g] for g in ended), f"{name}: a finished match ended a round again"
        fin = st.finished
        for g in ended:
            ref = refs[g]
            assert ref.phase in ("deal", "match_over"), where(g, "end of round")
            assert fin["trick_winner"][g].tolist() == ref.trick_winners, where(
                g, "finished trick winners")
            assert st.round_points[g].tolist() == ref.round_points, where(g, "round points")
            assert st.totals[g].tolist() == ref.totals, where(g, "totals")
            assert _seats(st.round_winners[g]) == ref.round_winners, where(g, "round winners")
            assert bool(st.match_over[g]) == ref.match_over, where(g, "match over")
            if ref.match_over:
                assert _seats(st.winners[g]) == ref.winners, where(g, "match winners")
            assert fin["round_number"][g] == rounds[g], where(g, "finished round number")
            bids = fin["bids"][g].tolist()
            assert bids == [-1 if b is None else b for b in ref.bids], where(g, "bids")
            cards, leaders = _ref_tricks(ref, rules.num_players)
            assert fin["trick_cards"][g].tolist() == cards, where(g, "finished trick cards")
            assert fin["trick_leader"][g].tolist() == leaders, where(g, "trick leaders")
            assert leaders == ref.trick_leaders, where(g, "reference trick leaders")
            dealt = [mask_of(h) for h in ref.dealt_hands]
            assert fin["dealt"][g].tolist() == dealt, where(g, "finished deal")
            assert int(fin["dead"][g]) == mask_of(ref.dead), where(g, "finished dead pile")
            passes = ref.passes or [[-1] * 3] * rules.num_players
            assert fin["passes"][g].tolist() == passes, where(g, "passes")
            cursed = -1 if ref.cursed_suit is None else ref.cursed_suit
            assert fin["cursed_suit"][g] == cursed, where(g, "cursed suit")
            _note_round(stats, rules, ref)
        # ---- new rounds: deal the engine's cards to the reference
        new_rounds = st.round_number.tolist()
        for g, ref in enumerate(refs):
            if new_rounds[g] != rounds[g]:
                assert g in ended and not st.match_over[g], where(g, "round change")
                assert ref.phase == "deal", where(g, "phase between rounds")
                assert (ref.round_number, ref.dealer) == (new_rounds[g], int(st.dealer[g])), \
                    where(g, "next round and dealer")
                _start_ref_round(ref, st, g)
            else:
                assert g not in ended or st.match_over[g], where(g, "round not advanced")
        rounds = new_rounds
        assert step < 2000 * rules.max_rounds, f"{name}: the batch never finishes"
    return stats


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_engine_matches_reference(case: Case) -> None:
    stats = run_differential(case.make_rules(), case.batch, case.seed, case.rig,
                             case.stagger, case.name)
    for event in case.expect:
        assert stats.events.get(event, 0) > 0, f"{case.name}: no {event!r} happened: {stats}"


@pytest.mark.slow
@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_engine_matches_reference_many_games(case: Case) -> None:
    """Ten times the games of the quick run, with other seeds."""
    for k in range(5):
        run_differential(case.make_rules(), 2 * case.batch, case.seed + 1000 + k, case.rig,
                         case.stagger, case.name)

