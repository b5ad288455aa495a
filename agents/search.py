"""What the search agents share: the rules and knowledge an observation gives, worlds
consistent with it, and playing worlds out in one engine batch.

A *world* is a full deal of the hidden cards that agrees with everything the
observing seat knows (``sample_hidden``): its hand, the cards each seat played, the
trick in progress, the cards won, the voids revealed (with Hearts' inferences, see
``smoor_env.observation``), the hand sizes, the dead pile's size, and in Hearts the
cards it passed (with the receiver unless already played). Worlds put the observer
in seat 0 (seats are relative in observations; the rules are seat-symmetric, with
partners in relative seat 2).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from agents.base import check_count, check_mask, check_observation, pack_mask
from agents.greedy import greedy_play
from agents.rollout import RolloutPolicy
from smoor_env.core import cards as C
from smoor_env.core.engine import Engine
from smoor_env.core.legal import LED_MASKS, opening_card, play_legal
from smoor_env.core.rules import GAME_ONLY_OPTIONS, Rules
from smoor_env.core.state import Phase, State
from smoor_env.core.tricks import hearts_breakers
from smoor_env.observation import RULE_FLAGS, SLICES, decode, observe

_SLOTS = 6  # relative seats 0..4 and the dead pile (slot 5)
_DEAD = 5
# (16, 4) bool: suit s belongs to subset S (bit s of S), for Hall's condition.
_IN_SUBSET = ((np.arange(16)[:, None] >> np.arange(4)[None, :]) & 1).astype(bool)
_SUIT_MASKS = C.SUIT_MASKS  # (4,) uint64


def _popcount(masks: np.ndarray) -> np.ndarray:
    return np.bitwise_count(masks).astype(np.int64)


def rules_of(view: dict[str, Any], row: int) -> Rules:
    """The rules of decoded observation ``row`` as far as it shows them.

    Numeric options the observation does not carry (``ace_of_hearts_points``,
    ``bid_bonus``, ``bid_penalty``, ``cursed_penalty``) take their defaults (give the
    agents ``rules=`` for others). ``target_score`` is None (one round), except with
    Cupid's Arrow, which needs a match (50); it never matters for one round's points.
    """
    hearts = bool(view["flags"]["hearts"][row])
    options: dict[str, Any] = {name: bool(view["flags"][name][row]) for name in RULE_FLAGS}
    for name in GAME_ONLY_OPTIONS["smoorverliefd" if hearts else "hearts"]:
        options.pop(name)
    target = 50 if options.get("cupids_arrow") else None
    return Rules(game="hearts" if hearts else "smoorverliefd",
                 num_players=int(view["players"][row]), target_score=target, **options)


def _check_same_game(built: Rules, seen: Rules, agent: str) -> None:
    """A ValueError if observations of ``seen`` (as far as they show the rules: the game,
    the player count, every flag) come to an agent built with ``rules=built``."""
    fields = ("game", "num_players", *RULE_FLAGS)
    differ = [f"{name}={getattr(seen, name)!r} (built for {getattr(built, name)!r})"
              for name in fields if getattr(seen, name) != getattr(built, name)]
    if differ:
        raise ValueError(f"{agent} was built with rules= for another game; the observations "
                         f"show " + ", ".join(differ))


def rollout_rules(rules: Rules) -> Rules:
    """The rules rollouts play: the same play and scoring, one round, no passing or curse.

    Cupid's Arrow only decides who deals and names the suit; the named suit is in
    the state and is scored with the full rules (``values``).
    """
    changes: dict[str, Any] = {"target_score": None, "cupids_arrow": False}
    if rules.is_hearts:
        changes["passing"] = False
    return rules.replace(**changes)


def knowledge(view: dict[str, Any], rows: np.ndarray, p: int) -> dict[str, np.ndarray]:
    """The decoded fields of observations ``rows`` the world sampler reads, seats 0..P-1."""
    return {
        "hand": view["hand"][rows],
        "played_by": view["played"][rows, :p],
        "won": view["won"][rows, :p],
        "trick": view["trick"][rows, :p],
        "trick_size": view["trick_size"][rows],
        "leader": view["leader"][rows],
        "trick_index": view["trick_index"][rows],
        "voids": view["voids"][rows, :p],
        "bids": view["bids"][rows, :p],
        "cursed_suit": view["cursed_suit"][rows],
        "dealer": view["dealer"][rows],
        "hearts_broken": view["hearts_broken"][rows],
        "passed": view["passed"][rows],
        "receiver": view["pass_offset"][rows],
        "received": view["received"][rows],
        "card_trick": view["card_trick"][rows],
    }


def sample_hidden(know: dict[str, np.ndarray], rules: Rules, worlds: int,
                  rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Hidden cards of ``worlds`` worlds per decision.

    Returns (hands (D * W, P) uint64, dead (D * W,) uint64); row ``d * W + w`` is
    world w of decision d; seat 0 (the observer, whose hand is known) is left empty.

    Worlds are drawn card by card, each card going to a seat (or the dead pile) with
    probability proportional to its free places among the places allowed to hold
    it and able to keep the rest of the deal feasible (checked exactly with Hall's
    condition over the 16 suit subsets); that is close to, not exactly, uniform over
    the consistent deals. Only the cards of suits some seat is void in are drawn so;
    the others fit any place and are shuffled into the room left (``_shuffled``, all
    rows at once), so a decision with no void shown gets an exactly uniform deal.
    """
    p, w = rules.num_players, worlds
    d = len(know["hand"])
    # What the seat knows is the same in every world of a decision: worked out per
    # decision (D rows), then repeated for the W worlds where the draws begin.
    hand, played_by = know["hand"], know["played_by"]  # (D,), (D, P)
    played = np.bitwise_or.reduce(played_by, axis=1)
    receiver = know["receiver"]  # (D,) 0 = none
    # Cards I passed and nobody has played yet are with the receiver: pinned.
    pinned = np.where(receiver > 0, know["passed"] & ~played & ~hand, np.uint64(0))
    unknown = np.uint64(rules.deck_mask) & ~hand & ~played & ~pinned  # (D,)
    at = np.arange(d)
    hands = np.zeros((d, _SLOTS), np.uint64)
    hands[at, receiver] |= pinned  # receiver 0 only when pinned is empty
    cap = np.zeros((d, _SLOTS), np.int64)  # (D, 6) free places of each seat and the dead
    cap[:, 1:p] = rules.hand_size - _popcount(played_by[:, 1:])
    cap[at, receiver] -= _popcount(pinned)
    cap[:, 0] = 0
    cap[:, _DEAD] = rules.dead_count
    elig = np.zeros((d, _SLOTS, 4), bool)  # (D, 6, 4) place may hold suit
    elig[:, 1:p] = ~know["voids"][:, 1:p]
    elig[:, _DEAD] = True
    demand = _popcount(unknown[:, None] & _SUIT_MASKS[None, :])  # (D, 4)
    if (cap.sum(axis=1) != demand.sum(axis=1)).any():
        raise ValueError("inconsistent observation: the unseen cards do not fill the hands")
    # Hall's condition for every suit subset S: cards of S <= places open to some suit of S.
    nbr = (elig[:, :, None, :] & _IN_SUBSET[None, None, :, :]).any(axis=3).astype(np.int64)
    slack = (cap[:, :, None] * nbr).sum(axis=1) - demand @ _IN_SUBSET.T.astype(np.int64)
    if (slack < 0).any():
        raise ValueError("inconsistent observation: no deal respects the revealed voids")
    # Only the suits some seat is void in need the card-by-card draw; the other cards fit
    # any place, so they are shuffled into the room left afterwards (a decision with no
    # void shown: all its cards, an exactly uniform deal).
    bound = (~elig[:, 1:p]).any(axis=1)  # (D, 4) suits with a void
    drawn = unknown & np.bitwise_or.reduce(
        np.where(bound, _SUIT_MASKS[None, :], np.uint64(0)), axis=1)  # (D,)
    out, cap = np.repeat(hands, w, axis=0), np.repeat(cap, w, axis=0)  # (R, 6) each
    slow = np.flatnonzero(drawn)  # decisions with cards to draw one by one
    if len(slow):
        rows = (slow[:, None] * w + np.arange(w)).reshape(-1)  # (r,) their worlds
        sub = np.repeat(slow, w)  # (r,) their decision
        out[rows], cap[rows] = _draw_bound(out[rows], cap[rows], slack[sub], elig[sub],
                                           nbr[sub], drawn[sub], rng)
    out |= _shuffled(np.repeat(unknown & ~drawn, w), cap, rng)
    return out[:, :p].copy(), out[:, _DEAD].copy()


def _draw_bound(hands: np.ndarray, cap: np.ndarray, slack: np.ndarray, elig: np.ndarray,
                nbr: np.ndarray, drawn: np.ndarray, rng: np.random.Generator
                ) -> tuple[np.ndarray, np.ndarray]:
    """Deal the cards ``drawn`` (r,) card by card into hands (r, 6) with room cap (r, 6);
    returns the hands and the room left. Each card goes to a place allowed to hold its
    suit with probability proportional to its room, among the places that keep every
    suit subset S feasible (Hall's slack (r, 16) stays >= 0)."""
    r = len(hands)
    rows = np.arange(r)
    in_subset = _IN_SUBSET.T.astype(np.int64)  # (4, 16)
    # Slot j may take a card of suit s iff no subset S with s not in S is tight
    # (slack 0) and has j among its places: giving j the card would leave S short.
    # Subsets as the bits of a 16-bit word: bit S of nbr_bits[r, j] = j can hold a suit of S.
    subset_bits = np.left_shift(1, np.arange(16))  # (16,)
    nbr_bits = nbr @ subset_bits  # (r, 6)
    for card in C.cards_of(int(np.bitwise_or.reduce(drawn))):
        suit = card // 13
        bit = C.CARD_BITS[card]
        has = (drawn & bit) != 0  # (r,)
        weight = np.where(elig[:, :, suit], cap, 0)  # (r, 6)
        tight = ((slack == 0) & ~_IN_SUBSET[:, suit]) @ subset_bits  # (r,)
        weight = np.where(nbr_bits & tight[:, None], 0, weight)
        cum = np.cumsum(weight, axis=1)
        x = rng.random(r) * cum[:, -1]
        slot = np.minimum((cum <= x[:, None]).sum(axis=1), _SLOTS - 1)
        sel = rows[has]
        js = slot[has]
        hands[sel, js] |= bit
        cap[sel, js] -= 1
        slack[sel] += in_subset[suit][None, :] - nbr[sel, js]
    return hands, cap


def _shuffled(unknown: np.ndarray, cap: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """(n, 6) uint64: the unseen cards (n,) dealt uniformly into places with free room
    cap (n, 6) (their sum is the number of unseen cards): the cards in a random order,
    the first cap[0] to slot 0, the next cap[1] to slot 1, and so on."""
    n = len(unknown)
    keys = rng.random((n, 52))  # (n, 52) random order; cards not unseen go last
    keys[~C.mask_to_bool(unknown)] = 2.0
    order = np.argsort(keys, axis=1)  # (n, 52) card ids
    # The cards are distinct bits, so a sum of them is their union: each slot's share is
    # a difference of the running sums at the ends of consecutive shares.
    sums = np.zeros((n, 53), np.uint64)  # (n, 53) union of the first k cards of the order
    np.cumsum(C.CARD_BITS[order], axis=1, out=sums[:, 1:])
    ends = np.cumsum(cap, axis=1)  # (n, 6) end position of each slot's share
    at_end = np.take_along_axis(sums, ends, axis=1)  # (n, 6)
    return at_end - np.concatenate([np.zeros((n, 1), np.uint64), at_end[:, :-1]], axis=1)


class Belief:
    """How the search agents sample worlds: ``"uniform"`` (every consistent deal alike,
    ``sample_hidden``) or ``"greedy:EPS"``: worlds weighed by how likely the other seats'
    plays of this round are in them (``play_likelihood``) if each seat played the
    greedy card with probability 1 - EPS and a uniformly random legal card otherwise.

    A weighed sample draws ``candidates`` times the worlds wanted and keeps as many as
    wanted, without repeats, each with a chance that grows with its likelihood (the
    Gumbel top-k trick: the largest log-likelihood + Gumbel noise). So the worlds kept
    are distinct and mostly the plausible ones, and a model that fits badly cannot
    collapse the sample onto one world.
    """

    def __init__(self, spec: str = "uniform", candidates: int = 4) -> None:
        name, _, eps = str(spec).partition(":")
        try:
            epsilon = float(eps) if eps else 0.1
        except ValueError:
            epsilon = -1.0
        if name not in ("uniform", "greedy") or (name == "uniform" and eps) \
                or not 0.0 < epsilon <= 1.0:
            raise ValueError(f"belief must be 'uniform' or 'greedy:EPS' with 0 < EPS <= 1, "
                             f"got {spec!r}")
        candidates = check_count("belief_candidates", candidates)
        self.spec, self.candidates = str(spec), int(candidates)
        self.epsilon = epsilon if name == "greedy" else None  # None: uniform

    def __repr__(self) -> str:
        return f"Belief({self.spec!r}, candidates={self.candidates})"

    @property
    def weighed(self) -> bool:
        """Whether worlds are weighed (else every consistent deal is as likely)."""
        return self.epsilon is not None and self.candidates > 1

    def pool(self, know: dict[str, np.ndarray], rules: Rules, worlds: int,
             rng: np.random.Generator, phase: int = Phase.PLAY
             ) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
        """Candidates for ``pick``: (hands (D * N, P), dead (D * N,), log-likelihoods
        (D * N,)) of N = ``candidates * worlds`` sampled worlds per decision; None when
        nothing is weighed (a uniform belief, another phase than play, or no card played
        yet: then every consistent world is as likely, and ``sample_hidden`` draws them)."""
        if not self.weighed or phase != Phase.PLAY or not (know["card_trick"] >= 0).any():
            return None
        hands, dead = sample_hidden(know, rules, worlds * self.candidates, rng)
        return hands, dead, play_likelihood(know, hands, rules, self.epsilon)

    def pick(self, pool: tuple[np.ndarray, np.ndarray, np.ndarray], decisions: int,
             worlds: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        """``worlds`` distinct worlds for each of ``decisions`` from a ``pool`` (at most as
        many as it holds per decision), as ``sample_hidden`` returns them: by the Gumbel
        top-k trick, with fresh noise at every call (so one pool serves several waves of
        a search)."""
        hands, dead, log_like = pool
        n = len(hands) // decisions  # candidates per decision
        if not 1 <= worlds <= n:
            raise ValueError(f"cannot pick {worlds} worlds from {n} candidates")
        keys = log_like.reshape(decisions, n) + rng.gumbel(size=(decisions, n))  # (D, N)
        kept = np.sort(np.argpartition(-keys, worlds - 1, axis=1)[:, :worlds], axis=1)
        rows = (np.arange(decisions)[:, None] * n + kept).reshape(-1)  # (D * W,)
        return hands[rows], dead[rows]

    def sample(self, know: dict[str, np.ndarray], rules: Rules, worlds: int,
               rng: np.random.Generator, phase: int = Phase.PLAY
               ) -> tuple[np.ndarray, np.ndarray]:
        """Hidden cards of ``worlds`` worlds per decision, as ``sample_hidden`` returns them
        (seat 0 empty), drawn by this belief (``pool``, then ``pick``)."""
        pool = self.pool(know, rules, worlds, rng, phase)
        if pool is None:
            return sample_hidden(know, rules, worlds, rng)
        return self.pick(pool, len(know["hand"]), worlds, rng)


def _history(know: dict[str, np.ndarray], rules: Rules
             ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The round so far as the observation tells it (``card_trick``): (D, 52) the
    relative seat that played each card (-1 none), (D, T) uint64 the cards of each
    trick, (D, T) its winner (-1 until it is finished) and (D, T) its leader (the
    first trick: the opening card's player in Hearts, else left of the dealer; every
    later one: the winner of the one before; -1 before it starts)."""
    p, t = rules.num_players, rules.num_tricks
    trick_of = know["card_trick"]  # (D, 52) trick of each card, -1 = not played
    bits = C.mask_to_bool(know["played_by"])  # (D, P, 52)
    owner = np.where(bits.any(axis=1), np.argmax(bits, axis=1), -1)  # (D, 52) relative seat
    in_trick = trick_of[:, None, :] == np.arange(t)[None, :, None]  # (D, T, 52)
    trick_sets = (in_trick * C.CARD_BITS[None, None, :]).sum(axis=2, dtype=np.uint64)
    took = (know["won"][:, None, :] & trick_sets[:, :, None]) != 0  # (D, T, P)
    winner = np.where(took.any(axis=2), np.argmax(took, axis=2), -1)  # (D, T)
    first = owner[:, opening_card(rules)] if rules.is_hearts else (know["dealer"] + 1) % p
    leader = np.concatenate([first[:, None], winner[:, :-1]], axis=1)  # (D, T)
    leader = np.where(np.arange(t)[None, :] <= know["trick_index"][:, None], leader, -1)
    return owner, trick_sets, winner, leader


def play_likelihood(know: dict[str, np.ndarray], hands: np.ndarray, rules: Rules,
                    epsilon: float) -> np.ndarray:
    """(D * N,) float64 log-probability, in each of N worlds per decision, of the cards the
    other seats played this round, if each played the greedy card (``greedy_play``) with
    probability 1 - ``epsilon`` and a uniformly random legal card otherwise.

    Args:
        know: ``knowledge`` of D decisions (with ``card_trick``: the order of play).
        hands: (D * N, P) uint64 the hidden hands now of world n of decision d at row
            ``d * N + n`` (``sample_hidden``; seat 0's is not read).
        rules: the rules (one rule set for every decision).
        epsilon: the model's share of random play, 0 < epsilon <= 1.

    The history is the observation's: trick t holds the cards whose ``card_trick`` is
    t, each played by the seat whose ``played`` set holds it; the first trick is led
    by the seat left of the dealer (Hearts: the holder of the opening card), every
    later one by the winner of the one before (the seat whose ``won`` set took its
    cards). A seat's hand when it played in trick t is its hand now plus the cards it
    played from trick t on, so each world's plays are replayed in one batch of
    ``greedy_play`` over (play, world) rows; only the hands differ between worlds.
    """
    d, p, t = len(know["hand"]), rules.num_players, rules.num_tricks
    n = len(hands) // max(d, 1)
    trick_of = know["card_trick"]  # (D, 52) trick of each card, -1 = not played
    owner, trick_sets, winner, leader = _history(know, rules)
    # Each play of another seat: (decision, card), its trick, its place in the trick.
    dec, card = np.nonzero((owner > 0) & (trick_of >= 0))  # (K,) each
    if not len(dec):
        return np.zeros(len(hands))
    seat, trick = owner[dec, card], trick_of[dec, card]  # (K,)
    place = (seat - leader[dec, trick]) % p  # (K,) 0 = it led
    # (D, T, P) card at each place of each trick (-1 none), then what each play saw.
    at_place = np.full((d, t, p), -1, np.int64)
    all_dec, all_card = np.nonzero(trick_of >= 0)
    all_trick = trick_of[all_dec, all_card]
    at_place[all_dec, all_trick, (owner[all_dec, all_card] - leader[all_dec, all_trick]) % p] \
        = all_card
    place_bits = np.where(at_place >= 0, C.CARD_BITS[np.maximum(at_place, 0)], np.uint64(0))
    so_far = np.zeros((d, t, p), np.uint64)  # (D, T, P) the trick's cards before each place
    for k in range(1, p):
        so_far[:, :, k] = so_far[:, :, k - 1] | place_bits[:, :, k - 1]
    before = np.zeros((d, t), np.uint64)  # (D, T) the cards of the earlier tricks
    for k in range(1, t):
        before[:, k] = before[:, k - 1] | trick_sets[:, k - 1]
    from_here = np.zeros((d, t), np.uint64)  # (D, T) the cards of trick t and later ones
    from_here[:, t - 1] = trick_sets[:, t - 1]
    for k in range(t - 2, -1, -1):
        from_here[:, k] = from_here[:, k + 1] | trick_sets[:, k]
    trick_before = so_far[dec, trick, place]  # (K,)
    seen = before[dec, trick] | trick_before  # (K,) every card played before this one
    lead_card = at_place[dec, trick, 0]
    led = np.where(place > 0, lead_card // 13, -1)  # (K,)
    later = know["played_by"][dec, seat] & from_here[dec, trick]  # (K,) its cards from here
    # (K * N,) rows: play k in world n of its decision.
    world = (dec[:, None] * n + np.arange(n)[None, :]).reshape(-1)
    kn = np.repeat(np.arange(len(dec)), n)
    hand = hands[world, seat[kn]] | later[kn]
    breakers = np.uint64(C.mask_of(np.flatnonzero(hearts_breakers(rules))))
    legal = play_legal(rules, hand, LED_MASKS[led[kn]], place[kn] == 0, trick[kn] == 0,
                       (before[dec, trick][kn] & breakers) != 0, few=False)
    made = None  # (K * N,) bool: Blinde Liefde, the seat had won exactly the hearts it bid
    if rules.bidding:
        hearts = np.bitwise_count(trick_sets & np.uint64(C.HEART_MASK)).astype(np.int64)
        hearts_won = hearts[:, :, None] * (winner[:, :, None] == np.arange(p))  # (D, T, P)
        before_won = np.cumsum(hearts_won, axis=1) - hearts_won  # (D, T, P) before trick t
        made = (before_won[dec, trick, seat] == know["bids"][dec, seat])[kn]
    partner = None  # (K * N,) Partner: the partner's card in the trick (-1 none)
    if rules.partners:
        partner = np.where(place >= 2, at_place[dec, trick, np.maximum(place - 2, 0)], -1)[kn]
    choice = greedy_play(hand, legal, trick_before[kn], led[kn], place[kn] == p - 1,
                         seen[kn], hearts=rules.is_hearts, trump_hearts=rules.trump_hearts,
                         made_bid=made, partner=partner)
    options = np.bitwise_count(legal).astype(np.float64)
    prob = np.where(choice == card[kn], 1.0 - epsilon, 0.0) + epsilon / options
    # (A card the world's hand could not have played has no chance: the sampler never
    # makes one, as every played card is out of the hidden hands and voids hold.)
    prob = np.where((legal & C.CARD_BITS[card[kn]]) != 0, prob, 1e-12)
    out = np.zeros(d * n)
    np.add.at(out, world, np.log(prob))
    return out


def build_worlds(know: dict[str, np.ndarray], rules: Rules, worlds: int,
                 rng: np.random.Generator, phase: int = Phase.PLAY,
                 belief: Belief | None = None,
                 hidden: tuple[np.ndarray, np.ndarray] | None = None) -> State:
    """Engine states (D * W games, row ``d * W + w``) of sampled worlds, observer in seat 0
    and to act, in ``phase`` (play, or Blinde Liefde's bid); the hidden cards drawn by
    ``belief`` (default: uniform, ``sample_hidden``), or ``hidden`` if given (hands
    (D * W, P), dead (D * W,), as ``sample_hidden`` returns them).

    The completed tricks are rebuilt from the observation's order of play
    (``trick_cards``, ``trick_leader``, ``trick_winner``), and seat 0's passed cards
    (``passes``, in card order), so that observations of the worlds (``observe``, for
    any seat) show the history as it was. Install the result with ``Engine.install``.
    """
    p, t = rules.num_players, rules.num_tricks
    d = len(know["hand"])
    rep = np.repeat(np.arange(d), worlds)
    hands, dead = hidden if hidden is not None else (belief or _UNIFORM).sample(
        know, rules, worlds, rng, phase)
    hands = hands.copy()
    hands[:, 0] = know["hand"][rep]
    r = len(rep)
    st = State.empty(r, p, t)
    played_by = know["played_by"][rep]
    st.hands[:] = hands
    st.dealt[:] = hands | played_by
    st.dead[:] = dead
    st.won[:] = know["won"][rep]
    st.played[:] = np.bitwise_or.reduce(played_by, axis=1)
    trick = know["trick"][rep].astype(np.int8)
    st.current_trick[:] = trick
    st.trick_mask[:] = np.bitwise_or.reduce(
        np.where(trick >= 0, C.CARD_BITS[np.maximum(trick, 0)], np.uint64(0)), axis=1)
    st.trick_size[:] = know["trick_size"][rep]
    st.trick_index[:] = know["trick_index"][rep]
    leader = know["leader"][rep]
    lead_card = trick[np.arange(r), np.maximum(leader, 0)]
    st.led_suit[:] = np.where(leader >= 0, lead_card // 13, -1)
    owner, _, winner, leaders = _history(know, rules)  # per decision
    trick_of = know["card_trick"]  # (D, 52)
    done = (trick_of >= 0) & (trick_of < know["trick_index"][:, None])  # (D, 52)
    dec, card = np.nonzero(done)
    cards = np.full((d, t, p), -1, np.int8)  # (D, T, P) card of each seat in each trick
    cards[dec, trick_of[dec, card], owner[dec, card]] = card
    st.trick_cards[:] = cards[rep]
    st.trick_winner[:] = winner[rep]
    st.trick_leader[:] = leaders[rep]
    at = np.minimum(st.trick_index, t - 1).astype(np.int64)
    st.trick_leader[np.arange(r), at] = np.where(leader >= 0, leader, -1)
    # The passes seat 0 knows: its own, and the giver's (the cards it received); and a
    # round number with this pass direction (the first of the cycle that has it).
    passes = np.full((d, p, 3), -1, np.int8)
    passes[:, 0] = _three_cards(know["passed"])
    giver = (-know["receiver"]) % p  # (D,) 0 when there is no pass
    passes[np.arange(d), giver] = np.where((giver > 0)[:, None], _three_cards(know["received"]),
                                           passes[np.arange(d), giver])
    st.passes[:] = passes[rep]
    if rules.is_hearts and rules.passing:
        cycle = np.arange(1, 9)  # rounds covering every pass direction of the cycle
        offsets = rules.pass_offset(cycle)  # (P,)
        first = np.argmax(offsets[None, :] == know["receiver"][:, None], axis=1)  # (D,)
        st.round_number[:] = cycle[first][rep]
    st.current_player[:] = 0
    st.hearts_broken[:] = know["hearts_broken"][rep]
    st.bids[:] = know["bids"][rep]
    st.cursed_suit[:] = know["cursed_suit"][rep]
    st.dealer[:] = know["dealer"][rep]
    st.phase[:] = phase
    return st


def _three_cards(sets: np.ndarray) -> np.ndarray:
    """(D, 3) int8 the cards of (D,) uint64 sets of at most 3 cards, in card order, -1 after."""
    held = C.mask_to_bool(sets)  # (D, 52)
    order = np.argsort(~held, axis=1, kind="stable")[:, :3]  # held cards first
    return np.where(np.take_along_axis(held, order, axis=1), order, -1).astype(np.int8)


_UNIFORM = Belief()


class Playouts:
    """Plays batches of worlds to the end of the round and values them for seat 0.

    Keeps one engine per (rules, batch size) (engines are cheap to step, not to build).

    Args:
        policy: the rollout policy of every seat.
        reply: an agent for the other seats' replies (``respond``), or None.
        player: an agent that plays every seat to the end of the round instead of
            ``policy`` (``finish``), or None.
        reply_rollouts: without a ``reply`` agent, K > 0 chooses the other seats' replies
            by a one-ply search in the world itself (``respond``); 0: no reply search.
    """

    def __init__(self, policy: RolloutPolicy, reply: Any = None, player: Any = None,
                 reply_rollouts: int = 0) -> None:
        self.policy = policy
        self.reply = reply
        self.player = player
        self.reply_rollouts = reply_rollouts
        self._engines: dict[tuple[Rules, int, str], Engine] = {}

    def respond(self, engine: Engine, rules: Rules, rng: np.random.Generator) -> None:
        """The other seats' moves until seat 0 is to act again (or the round is over),
        chosen by the ``reply`` agent on their observations of the worlds (read with
        the full ``rules``, as in the real game), or else, with ``reply_rollouts`` K > 0,
        by ``search_replies``; nothing otherwise."""
        if self.reply is not None:
            self._agent_plays(engine, rules, rng, self.reply, others_only=True)
        elif self.reply_rollouts:
            self.search_replies(engine, rules, rng)

    def search_replies(self, engine: Engine, rules: Rules, rng: np.random.Generator) -> None:
        """The other seats' moves until seat 0 is to act again, each chosen by a one-ply
        search in the world itself: every legal move of the replying seat is played out
        ``reply_rollouts`` times with the rollout policy, and the seat plays the move with
        the best mean value for itself (ties: the lowest card).

        The replying seat sees the world's cards (the search is perfect-information): a
        cheap model of opponents who search, that dump points on the trick's taker and
        duck when that is safe. Measured (README "What limits the search"), it makes
        ``mc`` worse than the rollout policy's noisy replies do. All replies of a ply,
        over every game, are played out in one engine batch."""
        st, k = engine.state, self.reply_rollouts
        while True:
            acting = (st.current_player != 0) & ~st.match_over & (st.phase == Phase.PLAY)
            rows = np.flatnonzero(acting)  # (n,)
            if not len(rows):
                return
            game, card = np.nonzero(C.mask_to_bool(st.legal[rows]))  # (M,) each
            pair = np.repeat(np.arange(len(game)), k)  # (N,) the (game, card) of each playout
            # Engines come in batch sizes of powers of two (a few engines serve every
            # ply); the padding rows repeat the last playout and are not counted.
            size = 1 << max(int(len(pair) - 1).bit_length(), 6)
            padded = np.concatenate([pair, np.full(size - len(pair), pair[-1])])
            sub = self.engine(engine.rules, size, role="reply")  # never ``engine`` itself
            sub.state = st.take(rows[game[padded]])
            sub.refresh_legal()
            sub.step(card[padded])
            self.finish(sub, rules, rng)
            seat = st.current_player[rows[game]].astype(np.int64)  # (M,) the replying seat
            mine = self.points(sub, rules)[np.arange(len(pair)), seat[pair]]  # (N,)
            value = np.bincount(pair, weights=-mine if rules.is_hearts else mine,
                                minlength=len(game))  # (M,) k times the mean
            score = np.full((len(rows), 52), -np.inf)  # (n, 52)
            score[game, card] = value
            moves = np.zeros(engine.batch_size, np.int64)
            moves[rows] = np.argmax(score, axis=1)
            engine.step(moves, active=acting)

    def _agent_plays(self, engine: Engine, rules: Rules, rng: np.random.Generator,
                     agent: Any, others_only: bool) -> None:
        """``agent`` moves, on the acting seats' observations, until no game has a seat
        to act (others_only: only seats other than 0, in the play phase)."""
        st = engine.state
        view = self.engine(rules, engine.batch_size)
        while True:
            if others_only:
                acting = (st.current_player != 0) & ~st.match_over & (st.phase == Phase.PLAY)
            else:
                acting = ~st.match_over & ((st.phase == Phase.PLAY) | (st.phase == Phase.BID))
            if not acting.any():
                return
            rows = np.flatnonzero(acting)
            view.state = st  # the same games, observed under the full rules
            obs = observe(view, st.current_player[rows].astype(np.int64), games=rows)
            moves = np.zeros(engine.batch_size, np.int64)
            moves[rows] = agent.act({"observation": obs,
                                     "action_mask": engine.legal_mask[rows]}, rng)
            engine.step(moves, active=acting)

    def engine(self, rules: Rules, n: int, role: str = "") -> Engine:
        """An engine of ``n`` games of ``rules`` (reused between calls; engines of
        different ``role`` are different engines)."""
        key = (rules, n, role)
        if key not in self._engines:
            if len(self._engines) > 64:
                self._engines.clear()
            self._engines[key] = Engine(rules, n)
        return self._engines[key]

    def finish(self, engine: Engine, rules: Rules, rng: np.random.Generator) -> None:
        """Step every game of ``engine`` with the rollout policy until its round is over
        (with a ``player``: that agent plays every seat instead, on their observations
        read with the full ``rules``)."""
        if self.player is not None:
            self._agent_plays(engine, rules, rng, self.player, others_only=False)
        st = engine.state
        while not st.match_over.all():
            engine.step(self.policy(engine, rng))

    def values(self, engine: Engine, rules: Rules) -> np.ndarray:
        """(n,) float64 each finished game's value for seat 0: its round points
        (the team's, with partners), or minus its penalty points in Hearts; the cursed
        suit is scored with the full ``rules``."""
        points = self.points(engine, rules)[:, 0]
        return -points if rules.is_hearts else points

    def points(self, engine: Engine, rules: Rules) -> np.ndarray:
        """(n, P) float64 each finished game's round points per seat (the cursed suit
        scored with the full ``rules``)."""
        st = engine.state
        scorer = engine if not rules.cupids_arrow else self.engine(rules, 1)
        return scorer.round_score(st.won, st.dead, st.bids, st.cursed_suit).astype(np.float64)


_RANKS, _SUIT_OF = C.RANK_OF, C.SUIT_OF  # (52,) each
_QS = C.QUEEN_OF_SPADES


def pass_card(hand: np.ndarray, legal: np.ndarray) -> np.ndarray:
    """(N,) int64 the card to pass next in Hearts, by a hand-aware heuristic of the kind
    strong players use (the search agents' passing; ``greedy`` passes by a fixed order).

    Args:
        hand: (N,) uint64 the hand as dealt (cards already chosen to pass included).
        legal: (N,) uint64 the cards still to choose from.

    Scores, highest passed first: ``QS`` unless guarded by four other spades;
    ``AS``/``KS`` without ``QS`` unless guarded by four lower spades; the cards of a
    short club or diamond suit (three or fewer: passing them makes a void, to
    discard penalty cards on); high hearts; then high cards. Low spades are kept
    (they guard against ``QS``).
    """
    cards = C.mask_to_bool(hand)  # (N, 52)
    spades = np.bitwise_count(hand & C.SUIT_MASKS[3]).astype(np.int64)  # (N,)
    low_spades = np.bitwise_count(hand & C.SUIT_MASKS[3] & np.uint64((1 << 49) - 1)).astype(
        np.int64)  # spades below QS
    has_queen = (hand & np.uint64(1 << _QS)) != 0
    lengths = np.bitwise_count(hand[:, None] & C.SUIT_MASKS[None, :]).astype(np.int64)
    score = _RANKS[None, :].astype(np.float64).repeat(len(hand), 0)  # high cards first
    score[:, _SUIT_OF == C.HEARTS] += 8 + _RANKS[_SUIT_OF == C.HEARTS] * 0.5
    short = (lengths[:, :2] <= 3)  # (N, 2) clubs, diamonds short enough to void
    for suit in range(2):
        score[:, suit == _SUIT_OF] += np.where(short[:, suit], 20 - 3 * lengths[:, suit], 0)[
            :, None]
    score[:, (_SUIT_OF == 3) & (_RANKS < 10)] -= 10  # low spades guard the queen
    guarded = spades - 1 >= 4
    score[:, _QS] = np.where(has_queen & ~guarded, 100, -5)
    top = np.isin(np.arange(52), C.parse_cards("KS AS"))
    unsafe = ~has_queen & (low_spades < 4)
    score[:, top] = np.where(unsafe, 90, 5)[:, None] + _RANKS[top][None, :]
    held = C.mask_to_bool(legal) & cards
    return np.argmax(np.where(held, score, -np.inf), axis=1)


class SearchAgent:
    """What ``mc`` and ``ismcts`` share around their searches: forced moves, Hearts
    passing (``pass_card``), and the decisions of a batch grouped by their rules.

    Subclasses set ``self.rules`` (the exact rules, or None to read them from the
    observations) and ``self._rules_cache = {}`` in their ``__init__``.
    """

    rules: Rules | None
    _rules_cache: dict[bytes, Rules]

    def _prepare(self, observations: dict[str, np.ndarray]
                 ) -> tuple[np.ndarray, np.ndarray, dict[str, Any], np.ndarray, np.ndarray]:
        """(mask (B, 70) bool, observations (B, D) float32, their decoding, actions (B,)
        with the forced moves and Hearts' passes filled in, and (B,) bool where a search
        is still to choose)."""
        mask = check_mask(observations)
        obs = check_observation(observations, mask)  # (B, D) float32
        view = decode(obs)
        actions = np.argmax(mask, axis=1).astype(np.int64)  # the only one, where forced
        choice = mask.sum(axis=1) > 1
        passing = choice & (view["phase"] == Phase.PASS)
        rows = np.flatnonzero(passing)
        if len(rows):
            actions[rows] = pass_card(view["hand"][rows],
                                      pack_mask(mask[rows])[:, 0] & C.DECK_MASK)
        return mask, obs, view, actions, choice & ~passing

    def _groups(self, obs: np.ndarray, view: dict[str, Any], rows: np.ndarray
                ) -> list[tuple[Rules, int, np.ndarray]]:
        """Decisions ``rows`` grouped by (rules, phase): [(rules, phase, rows)]."""
        keys = np.ascontiguousarray(obs[rows][:, SLICES["num_players"].start:
                                                  SLICES["rules"].stop])
        groups: dict[tuple[bytes, int], list[int]] = {}
        for i, key, phase in zip(rows.tolist(), keys, view["phase"][rows].tolist(), strict=True):
            groups.setdefault((key.tobytes(), phase), []).append(i)
        out = []
        for (key, phase), idx in groups.items():
            if key not in self._rules_cache:
                self._rules_cache[key] = rules_of(view, idx[0])
            rules = self._rules_cache[key]
            if self.rules is not None:
                _check_same_game(self.rules, rules, type(self).__name__)
                rules = self.rules
            out.append((rules, phase, np.array(idx)))
        return out
