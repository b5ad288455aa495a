"""Perfect-Information Monte Carlo (PIMC): sample hidden worlds, play them out, pick the best.

For each decision of the play phase the agent

1. reads what its seat knows from the observation alone (``smoor_env.observation``):
   its hand, every card each seat played this round, the trick in progress, the
   cards won, the voids revealed, the bids, the cursed suit, the dealer, the
   cards it passed (Hearts) and the rule flags;
2. samples ``worlds`` hidden worlds consistent with that (``sample_worlds``): the
   cards it has not seen go to the other seats and the dead pile, with the right
   hand sizes (deal size less the cards each seat played) and dead-pile size, no
   card of a suit to a seat that failed to follow it, and in Hearts the cards it
   passed to the receiver unless already played;
3. builds one engine ``State`` per (world, legal action, rollout) and evaluates
   them all in ONE batch of the vectorised engine: the candidate card is played,
   then every seat (itself included) plays with the rollout policy (``"random"``:
   ``Engine.sample_legal``; ``"greedy"``: the greedy agent on each seat's own
   observation) to the end of the round;
4. scores each game by its own round points (Smoorverliefd: points, higher is
   better; with partners ``round_points`` are already the team's; Hearts: minus
   penalty points, after shooting the moon) and plays the action with the best
   mean over worlds and rollouts (ties: the lowest action id).

Seats are relative in the observation, so every sampled world puts the observer
in seat 0; the rules are seat-symmetric (partners: relative seat 2 is the
partner), so nothing is lost.

Rules: by default they are read from the observation (the ``rules`` flags and the
``num_players`` block). The numeric options that the observation does not carry
(``ace_of_hearts_points``, ``bid_bonus``, ``bid_penalty``, ``cursed_penalty``) then take
their defaults; pass ``rules=`` at construction to play non-default values (its
flags must match the observations). ``target_score`` is not observable and does
not matter: the agent values a move by the points of the current round only
(rollouts use ``target_score=None``); match standing is ignored.

Not done by search (documented simplifications):

* Phases other than play (Hearts passing, Blinde Liefde bids, Cupid's Arrow's
  cursed suit) use the greedy agent's choice.
* World sampling uses voids, hand sizes, the dead pile and passed cards, but not
  the weaker inferences of Hearts' special rules (a heart discarded to the first
  trick, or hearts led before they were broken, reveal more about that hand).
* Worlds are drawn card by card, each card going to a seat with probability
  proportional to its free places among the seats allowed to hold it and able to
  keep the rest of the deal feasible (checked exactly with Hall's condition over
  the 16 suit subsets). Without voids that is an exactly uniform deal; with voids
  it is close to, not exactly, uniform over the consistent deals.
* Once a decision is left with one legal action it is played without search.

Determinism: the decision is a function of (observation, the generator's state)
when ``time_budget`` is None. With a ``time_budget`` the number of worlds adapts
to the measured speed of earlier decisions, so it can differ between runs.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from agents.base import check_mask, register
from agents.greedy import GreedyAgent
from smoor_env import cards as C
from smoor_env.engine import Engine
from smoor_env.observation import RULE_FLAGS, SLICES, observe, split_observation
from smoor_env.rules import Rules
from smoor_env.state import Phase, State

_SLOTS = 6  # relative seats 0..4 and the dead pile (slot 5)
_DEAD = 5
# (16, 4) bool: suit s belongs to subset S (bit s of S), for Hall's condition.
_IN_SUBSET = ((np.arange(16)[:, None] >> np.arange(4)[None, :]) & 1).astype(bool)
_SUIT_MASKS = C.SUIT_MASKS  # (4,) uint64


def _to_masks(block: np.ndarray) -> np.ndarray:
    """(..., 52) 0/1 floats -> (...) uint64 card sets."""
    flags = np.asarray(block) > 0.5
    packed = np.packbits(flags, axis=-1, bitorder="little")  # (..., 7) uint8
    padded = np.zeros((*packed.shape[:-1], 8), np.uint8)
    padded[..., :7] = packed
    return padded.view(np.uint64)[..., 0]


def _popcount(masks: np.ndarray) -> np.ndarray:
    return np.bitwise_count(masks).astype(np.int64)


def rules_from_observation(obs: np.ndarray) -> Rules:
    """The rules of one observation (1076,) as far as it shows them (see the module docs).

    ``target_score`` is None (one round), except with Cupid's Arrow, which needs a
    match: there it is 50 (the default); it never matters for a single round's points.
    """
    v = split_observation(np.asarray(obs, np.float32))
    flags = v["rules"] > 0.5
    players = int(np.argmax(v["num_players"])) + 3
    options: dict[str, Any] = {name: bool(flags[i + 1]) for i, name in enumerate(RULE_FLAGS)}
    hearts = bool(flags[0])
    if hearts:
        for name in ("trump_hearts", "bidding", "partners", "pip_scoring", "cupids_arrow",
                     "sweep_needs_all_thirteen"):
            options.pop(name)
    else:
        for name in ("passing", "queen_never_first_trick", "queen_breaks_hearts"):
            options.pop(name)
    target = 50 if options.get("cupids_arrow") else None
    return Rules(game="hearts" if hearts else "smoorverliefd", num_players=players,
                 target_score=target, **options)


def rollout_rules(rules: Rules) -> Rules:
    """The rules rollouts play: the same play and scoring, one round, no passing or curse.

    Cupid's Arrow only decides who deals and names the suit; the named suit is in
    the state and is scored with the full rules (``round_score``).
    """
    changes: dict[str, Any] = {"target_score": None, "cupids_arrow": False}
    if rules.is_hearts:
        changes["passing"] = False
    return rules.replace(**changes)


def decode(obs: np.ndarray, rules: Rules) -> dict[str, np.ndarray]:
    """What the observer knows, from a batch of observations (B, 1076), relative seats 0..P-1.

    Returns a dict of arrays (B, ...): ``hand`` uint64, ``played_by`` (B, P) uint64,
    ``won`` (B, P), ``trick`` (B, P) int8 card in the trick in progress (-1 none),
    ``trick_size``, ``leader`` (-1 before the lead), ``trick_index``, ``voids``
    (B, P, 4) bool, ``bids`` (B, P) int8, ``cursed_suit``, ``dealer``,
    ``hearts_broken``, ``passed`` uint64 (cards I passed, Hearts) and ``receiver``
    (relative seat they went to, 0 = no pass this round).
    """
    p, t = rules.num_players, rules.num_tricks
    v = split_observation(np.asarray(obs, np.float32))
    b = obs.shape[0]
    in_trick = v["current_trick"][:, :p].max(axis=2) > 0.5  # (B, P)
    trick = np.where(in_trick, np.argmax(v["current_trick"][:, :p], axis=2), -1).astype(np.int8)
    size = in_trick.sum(axis=1).astype(np.int8)
    leader = np.where(size > 0, np.argmax(v["trick_leader"][:, :p], axis=1), -1).astype(np.int8)
    has_bid = v["bids"][:, :p].max(axis=2) > 0.5
    bids = np.where(has_bid, np.argmax(v["bids"][:, :p], axis=2), -1).astype(np.int8)
    has_curse = v["cursed_suit"].max(axis=1) > 0.5
    direction = v["pass_direction"]
    passing = direction.max(axis=1) > 0.5
    return {
        "hand": _to_masks(v["hand"]),
        "played_by": _to_masks(v["played"][:, :p]),
        "won": _to_masks(v["won"][:, :p]),
        "trick": trick,
        "trick_size": size,
        "leader": leader,
        "trick_index": np.rint(v["trick_number"][:, 0] * t).astype(np.int8),
        "voids": v["voids"][:, :p] > 0.5,
        "bids": bids,
        "cursed_suit": np.where(has_curse, np.argmax(v["cursed_suit"], axis=1), -1).astype(
            np.int8),
        "dealer": np.argmax(v["dealer"][:, :p], axis=1).astype(np.int8),
        "hearts_broken": v["hearts_broken"][:, 0] > 0.5,
        "passed": _to_masks(v["passed"]) if b else np.zeros(0, np.uint64),
        "receiver": np.where(passing, np.argmax(direction, axis=1), 0).astype(np.int64),
    }


def sample_hidden(know: dict[str, np.ndarray], rules: Rules, worlds: int,
                  rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Hidden cards of ``worlds`` worlds per decision.

    Returns (hands (B * W, P) uint64, dead (B * W,) uint64); row ``b * W + w`` is
    world w of decision b; seat 0 (the observer) holds its own hand. See the
    module docstring for the constraints and the sampling scheme.
    """
    p, w = rules.num_players, worlds
    b = len(know["hand"])
    r = b * w
    rep = np.repeat(np.arange(b), w)  # (R,) decision of each row
    hand = know["hand"][rep]
    played_by = know["played_by"][rep]  # (R, P)
    played = np.bitwise_or.reduce(played_by, axis=1)
    deck = np.uint64(rules.deck_mask)
    receiver = know["receiver"][rep]  # (R,) 0 = none
    # Cards I passed and nobody has played yet are with the receiver: pinned.
    pinned = np.where(receiver > 0, know["passed"][rep] & ~played & ~hand, np.uint64(0))
    unknown = deck & ~hand & ~played & ~pinned  # (R,)
    hands = np.zeros((r, _SLOTS), np.uint64)
    rows = np.arange(r)
    hands[rows, receiver] |= pinned  # receiver 0 only when pinned is empty
    cap = np.zeros((r, _SLOTS), np.int64)
    cap[:, 1:p] = rules.hand_size - _popcount(played_by[:, 1:])
    cap[rows, receiver] -= _popcount(pinned)
    cap[:, 0] = 0
    cap[:, _DEAD] = rules.dead_count
    elig = np.zeros((r, _SLOTS, 4), bool)
    elig[:, 1:p] = ~know["voids"][rep][:, 1:p]
    elig[:, _DEAD] = True
    demand = _popcount(unknown[:, None] & _SUIT_MASKS[None, :])  # (R, 4)
    if (cap.sum(axis=1) != demand.sum(axis=1)).any():
        raise ValueError("inconsistent observation: the unseen cards do not fill the hands")
    # Hall's condition for every suit subset S: cards of S <= places open to some suit of S.
    nbr = (elig[:, :, None, :] & _IN_SUBSET[None, None, :, :]).any(axis=3).astype(np.int64)
    slack = (cap[:, :, None] * nbr).sum(axis=1) - demand @ _IN_SUBSET.T.astype(np.int64)
    if (slack < 0).any():
        raise ValueError("inconsistent observation: no deal respects the revealed voids")
    todo = np.bitwise_or.reduce(unknown) if r else np.uint64(0)
    in_subset = _IN_SUBSET.T.astype(np.int64)  # (4, 16)
    # Slot j may take a card of suit s iff no subset S with s not in S is tight
    # (slack 0) and has j among its places: giving j the card would leave S short.
    # Subsets as the bits of a 16-bit word: bit S of nbr_bits[r, j] = j can hold a suit of S.
    subset_bits = np.left_shift(1, np.arange(16))  # (16,)
    nbr_bits = nbr @ subset_bits  # (R, 6)
    voids = bool((~elig[:, 1:p]).any())  # without voids every open place is feasible
    for card in C.cards_of(int(todo)):
        suit = card // 13
        bit = C.CARD_BITS[card]
        has = (unknown & bit) != 0  # (R,)
        weight = np.where(elig[:, :, suit], cap, 0)  # (R, 6)
        if voids:
            tight = ((slack == 0) & ~_IN_SUBSET[:, suit]) @ subset_bits  # (R,)
            weight = np.where(nbr_bits & tight[:, None], 0, weight)
        cum = np.cumsum(weight, axis=1)
        x = rng.random(r) * cum[:, -1]
        slot = np.minimum((cum <= x[:, None]).sum(axis=1), _SLOTS - 1)
        sel = rows[has]
        js = slot[has]
        hands[sel, js] |= bit
        cap[sel, js] -= 1
        if voids:
            slack[sel] += in_subset[suit][None, :] - nbr[sel, js]
    return hands[:, :p].copy(), hands[:, _DEAD].copy()


def build_worlds(know: dict[str, np.ndarray], rules: Rules, worlds: int,
                 rng: np.random.Generator) -> State:
    """Engine states (B * W games, row ``b * W + w``) of sampled worlds, observer in seat 0.

    The state is in the play phase with seat 0 to act; ``legal`` is left at 0
    (the engine computes it, see ``MCAgent``). Completed tricks are not rebuilt
    card by card (the observation does not give their order): ``trick_cards`` and
    ``trick_winner`` of earlier tricks stay -1; nothing in play or scoring reads them.
    """
    p, t = rules.num_players, rules.num_tricks
    b = len(know["hand"])
    rep = np.repeat(np.arange(b), worlds)
    hands, dead = sample_hidden(know, rules, worlds, rng)
    hands[:, 0] = know["hand"][rep]
    r = len(rep)
    st = State.empty(r, p, t)
    played_by = know["played_by"][rep]
    st.hands[:] = hands
    st.dealt[:] = hands | played_by
    st.dead[:] = dead
    st.won[:] = know["won"][rep]
    st.played[:] = np.bitwise_or.reduce(played_by, axis=1)
    trick = know["trick"][rep]
    st.current_trick[:] = trick
    st.trick_mask[:] = np.bitwise_or.reduce(
        np.where(trick >= 0, C.CARD_BITS[np.maximum(trick, 0)], np.uint64(0)), axis=1)
    st.trick_size[:] = know["trick_size"][rep]
    st.trick_index[:] = know["trick_index"][rep]
    leader = know["leader"][rep]
    lead_card = trick[np.arange(r), np.maximum(leader, 0)]
    st.led_suit[:] = np.where(leader >= 0, lead_card // 13, -1)
    at = np.minimum(st.trick_index, t - 1).astype(np.int64)
    st.trick_leader[np.arange(r), at] = np.where(leader >= 0, leader, -1)
    st.current_player[:] = 0
    st.hearts_broken[:] = know["hearts_broken"][rep]
    st.bids[:] = know["bids"][rep]
    st.cursed_suit[:] = know["cursed_suit"][rep]
    st.dealer[:] = know["dealer"][rep]
    st.phase[:] = Phase.PLAY
    return st


@register("mc")
class MCAgent:
    """Perfect-Information Monte Carlo; see the module docstring.

    Args:
        worlds: hidden worlds sampled per decision (W).
        rollouts: playouts per (world, action); more than 1 repeats each world.
        rollout: rollout policy of every seat after the candidate move:
            ``"random"`` (uniform legal moves, fastest) or ``"greedy"``.
        time_budget: seconds per decision, or None. When set, W is reduced (never
            below 1) so that the predicted cost fits, using the cost per game-step
            measured on earlier decisions (so decisions then depend on timing).
        rules: the exact rules, if they have non-default numeric options the
            observation does not carry; default: read from the observation.

    The defaults (128 worlds, 1 random rollout) take well under 50 ms per decision on
    a 2-core machine (see ``experiments/agent_strength.py``).
    """

    name = "mc"
    uses_observation = True

    def __init__(self, worlds: int = 128, rollouts: int = 1, rollout: str = "random",
                 time_budget: float | None = None, rules: Rules | None = None) -> None:
        if not isinstance(worlds, int | np.integer) or worlds < 1:
            raise ValueError(f"worlds must be a positive int, got {worlds!r}")
        if not isinstance(rollouts, int | np.integer) or rollouts < 1:
            raise ValueError(f"rollouts must be a positive int, got {rollouts!r}")
        if rollout not in ("random", "greedy"):
            raise ValueError(f"rollout must be 'random' or 'greedy', got {rollout!r}")
        if time_budget is not None and not time_budget > 0:
            raise ValueError(f"time_budget must be positive seconds or None, got {time_budget!r}")
        if rules is not None and not isinstance(rules, Rules):
            raise TypeError(f"rules must be a smoor_env.Rules or None, got {type(rules).__name__}")
        self.worlds = int(worlds)
        self.rollouts = int(rollouts)
        self.rollout = rollout
        self.time_budget = time_budget
        self.rules = rules
        self._greedy = GreedyAgent()
        self._engines: dict[tuple[Rules, int], Engine] = {}
        self._rules_cache: dict[bytes, Rules] = {}
        # Time model for time_budget: seconds = fixed + per_game_step * games * steps.
        self._per_game_step = 2e-6
        self._fixed = 2e-3

    # ------------------------------------------------------------------ api
    def act(self, observations: dict[str, np.ndarray], rng: np.random.Generator) -> np.ndarray:
        mask = check_mask(observations)
        obs = np.asarray(observations["observation"], np.float32)
        actions = np.argmax(mask, axis=1).astype(np.int64)  # the only one, where forced
        play = obs[:, SLICES["phase"]][:, Phase.PLAY] > 0.5
        choice = mask.sum(axis=1) > 1
        other = np.flatnonzero(choice & ~play)
        if len(other):
            sub = {"observation": obs[other], "action_mask": mask[other]}
            actions[other] = self._greedy.act(sub, rng)
        search = np.flatnonzero(choice & play)
        if len(search):
            keys = np.ascontiguousarray(obs[search][:, SLICES["num_players"].start:])
            groups: dict[bytes, list[int]] = {}
            for i, row in zip(search.tolist(), keys, strict=True):
                groups.setdefault(row.tobytes(), []).append(i)
            for key, idx in groups.items():
                rows = np.array(idx)
                rules = self._rules_for(key, obs[rows[0]])
                actions[rows] = self._search(obs[rows], mask[rows], rules, rng)
        return actions

    # ------------------------------------------------------------- helpers
    def _rules_for(self, key: bytes, obs: np.ndarray) -> Rules:
        if self.rules is not None:
            return self.rules
        if key not in self._rules_cache:
            self._rules_cache[key] = rules_from_observation(obs)
        return self._rules_cache[key]

    def _engine(self, rules: Rules, n: int) -> Engine:
        key = (rules, n)
        if key not in self._engines:
            if len(self._engines) > 64:
                self._engines.clear()
            self._engines[key] = Engine(rules, n)
        return self._engines[key]

    def _worlds_for(self, games_per_world: int, steps: int, decisions: int) -> int:
        if self.time_budget is None:
            return self.worlds
        budget = self.time_budget * decisions - self._fixed
        per_world = self._per_game_step * games_per_world * max(steps, 1)
        return int(np.clip(budget / per_world, 1, self.worlds))

    def _search(self, obs: np.ndarray, mask: np.ndarray, rules: Rules,
                rng: np.random.Generator) -> np.ndarray:
        """Best action of each of B play-phase decisions of one rule set."""
        start = time.perf_counter()
        b = len(obs)
        know = decode(obs, rules)
        card_mask = mask[:, :52]
        counts = card_mask.sum(axis=1)  # (B,) legal actions A_b
        steps = int(rules.num_players * rules.num_tricks - _popcount(
            np.bitwise_or.reduce(know["played_by"], axis=1)).min())
        w = self._worlds_for(int(counts.sum()) * self.rollouts, steps, b)
        states = build_worlds(know, rules, w, rng)
        # Games: for each decision b, each legal action a, each rollout, each world.
        dec, act = np.nonzero(card_mask)  # (sum A_b,) ascending action within each decision
        reps = w * self.rollouts
        pair = np.repeat(np.arange(len(dec)), reps)  # (N,) (decision, action) pair of each game
        world = dec[pair] * w + np.tile(np.arange(w), len(dec) * self.rollouts)
        n = len(pair)
        engine = self._engine(rollout_rules(rules), n)
        engine.state = states.take(world)
        engine.refresh_legal()  # legal sets from the sampled hands
        engine.step(act[pair])
        st = engine.state
        greedy_rollout = self.rollout == "greedy"
        while not st.match_over.all():
            if greedy_rollout:
                live = np.flatnonzero(~st.match_over)
                moves = np.zeros(n, np.int64)
                seats = st.current_player.astype(np.int64)
                sub = {"observation": observe(engine, seats)[live],
                       "action_mask": engine.legal_mask[live]}
                moves[live] = self._greedy.act(sub, rng)
            else:
                moves = engine.sample_legal(rng)
            engine.step(moves)
        points = engine.round_score(st.won, st.dead, st.bids, st.cursed_suit)[:, 0]
        if rules.cupids_arrow:  # the curse is scored with the full rules
            points = self._engine(rules, 1).round_score(st.won, st.dead, st.bids,
                                                        st.cursed_suit)[:, 0]
        value = -points if rules.is_hearts else points
        mean = np.bincount(pair, weights=value, minlength=len(dec)) / reps  # (sum A_b,)
        best = np.full(b, -np.inf)
        choice = np.zeros(b, np.int64)
        for k in range(len(dec)):  # ascending action ids: a strict > keeps the lowest on ties
            if mean[k] > best[dec[k]]:
                best[dec[k]] = mean[k]
                choice[dec[k]] = act[k]
        if self.time_budget is not None:
            spent = time.perf_counter() - start
            work = n * max(steps, 1)
            self._per_game_step = 0.7 * self._per_game_step + 0.3 * max(spent - self._fixed,
                                                                        1e-9) / work
        return choice
