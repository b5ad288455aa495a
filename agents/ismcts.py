"""Information-set Monte Carlo tree search (single-observer ISMCTS), batched.

For each play-phase decision the agent grows one tree over its seat's information
set (Cowling, Powley and Whitehouse, 2012): a node is a sequence of moves from
the current position, by every seat, whatever the hidden cards. Each iteration

1. samples a fresh world consistent with the observation (``agents.search``, the
   same sampler as ``mc``, with Hearts' inferences);
2. walks down the tree, at each node choosing among the moves legal *in that
   world*: an untried move if there is one (the rollout policy's move if it is
   untried, else a random untried one), otherwise the child with the best UCB
   score from the point of view of the seat to move there,
   ``mean + exploration * sqrt(ln(availability) / visits)``, where availability
   counts the visits of the parent in which that move was legal;
3. adds the node of the untried move, plays the rest of the round with the rollout
   policy (``agents.rollout``), and credits every node on the path with the final
   value of the seat that moved into it (round points over ``_value_scale``;
   Hearts: one minus penalty points over 26; partners: the team's; with
   ``value="relative"``, the default where no steering prior plays, those points less
   the opponents' mean).

Batched the way the engine is fast: each wave runs ``walks`` iterations of every
decision at once, in one engine batch of (decisions x walks) worlds, tree walks and
rollouts stepping together (walks still in the tree choose by UCB, the others by
the rollout policy). Walks of a wave that reach the same node choose with a little
independent noise on the scores, so that near-equal children share the wave. The
decision is the root move with the most visits. With ``root="paired"`` the root is
searched as ``mc`` searches it instead: each wave plays every legal root move in the
same worlds, the walks going on down the tree below each, and the decision is the root
move of the best mean value; ``root="halving"`` drops the worse half of the moves
after each such round (sequential halving). By default (``root="auto"``) the root is
searched by halving wherever no steering policy prior (below) steers the walks there.

A trained policy steers the walks at the root (``prior``; by default, in Hearts and in
plain Smoorverliefd the network ``one_network``, taught by the specialist there and by
``mc`` elsewhere): ``prior_weight`` times its log-probability of each root move is added to
that move's UCB score, so that among moves the search values about equally, the walks,
and the decision, favour the policy's. In 4-player Hearts this made ``ismcts`` beat
``mc`` head to head (with the specialist ``ppo_hearts``; README, the measurements:
docs/results/strength.md). In the Smoorverliefd variants, where no specialist was
trained, the same network is the prior, its bonus added to the halved root's
mean values before the best is chosen.

Passing (Hearts) uses ``agents.search.pass_card``; Blinde Liefde's bid and Cupid's
Arrow's cursed suit are chosen by simulation, as ``mc`` does (each candidate played
out over sampled worlds), in ``bid_worlds`` worlds (512; ``mc``: 128). A decision is a
function of the observation and the generator when ``time_budget`` is None.
"""

from __future__ import annotations

import time
from typing import Any, NamedTuple

import numpy as np

from agents.base import check_count, check_number, register
from agents.mc import MCAgent, Prior, _optional_agent
from agents.rollout import RolloutPolicy
from agents.search import (
    Belief,
    Playouts,
    SearchAgent,
    build_worlds,
    knowledge,
    rollout_rules,
    sample_hidden,
)
from smoor_env.core import cards as C
from smoor_env.core.bits import byte_prefix_counts, kth_set_bit
from smoor_env.core.rules import Rules
from smoor_env.core.state import Phase, State
from smoor_env.observation import observe


def _value_scale(rules: Rules) -> float:
    """What values are divided by: the most hearts points a seat can take in a round,
    the sweep's doubling included (Smoorverliefd: 2 x (12 + the ace's points), pips:
    2 x 104); Hearts: the 26 penalty points."""
    if rules.is_hearts:
        return 26.0
    return 2.0 * (104 if rules.pip_scoring else 12 + rules.ace_of_hearts_points)


def _points_per_value(rules: Rules, relative: bool = False) -> float:
    """Points to the seat that make one unit of search value (``_values``' slope is its
    inverse): ``_value_scale``; for relative values, which span twice the range, twice
    that. A prior's bonus (points) is converted by the same divisor, so that it weighs
    the same against either value."""
    return _value_scale(rules) * (2.0 if relative else 1.0)


def _values(points: np.ndarray, rules: Rules, relative: bool = False) -> np.ndarray:
    """(..., P) round points per seat as (..., P) search values in about [0, 1], higher is
    better: over ``_value_scale``; Hearts: one minus the penalty points over 26.

    ``relative``: each seat's points less the mean of its opponents' (with partners: the
    other team's), mapped to [0, 1] as 1/2 + difference / (2 ``_value_scale``). So a
    point taken from an opponent counts too: blocking another seat's sweep (double
    points), or making it miss its bid, is worth what it costs that seat."""
    scale = _points_per_value(rules, relative)
    if not relative:
        return 1.0 - points / scale if rules.is_hearts else points / scale
    own = -points if rules.is_hearts else points  # (..., P) higher is better
    p = points.shape[-1]
    if rules.partners:  # team points per seat: the opponents sit left and right
        others = (np.roll(own, 1, axis=-1) + np.roll(own, -1, axis=-1)) / 2
    else:
        others = (own.sum(axis=-1, keepdims=True) - own) / (p - 1)
    return 0.5 + (own - others) / scale


def _points(values: np.ndarray, rules: Rules, relative: bool = False) -> np.ndarray:
    """``_values`` undone: search values (...) as the seat's points (Hearts: minus its
    penalty points), or with ``relative`` its points less its opponents' mean."""
    scale = _points_per_value(rules, relative)
    if relative:
        return (values - 0.5) * scale
    return (values - 1.0) * scale if rules.is_hearts else values * scale


class _Observed(NamedTuple):
    """What ``observe`` reads of an engine: the rollout engine's states with the full
    rules (the rollout rules drop passing and Cupid's Arrow, which the observation shows)."""

    state: State
    rules: Rules
    batch_size: int


def _leaf_values(estimates: np.ndarray, rules: Rules) -> np.ndarray:
    """(n,) a value head's estimates (the seat's round points over ``_value_scale``;
    Hearts: minus its penalty points over 26) as the search's own values (``_values``)."""
    return estimates.astype(np.float64) + (1.0 if rules.is_hearts else 0.0)


class Analysis(NamedTuple):
    """What ``ISMCTSAgent.analyse`` found for a batch of B decisions."""

    actions: np.ndarray  # (B,) int64 the moves played (``act``'s)
    values: np.ndarray  # (B, 70) the searched mean value of every root move, in points (the
    # seat's, Hearts: minus penalty points; with value="relative" less its opponents' mean);
    # NaN where a move was not searched (illegal, forced, or a heuristic phase)
    visits: np.ndarray  # (B, 70) the worlds each root move was played in (0: not searched)


class _Drawn:
    """Hidden worlds drawn ahead (``sample_hidden``'s output, T per decision), handed out
    in consecutive slices of n per decision."""

    def __init__(self, hidden: tuple[np.ndarray, np.ndarray], decisions: int) -> None:
        self.hands, self.dead = hidden  # (D * T, P), (D * T,)
        self.d, self.per, self.used = decisions, len(hidden[1]) // max(decisions, 1), 0

    def next(self, n: int) -> tuple[np.ndarray, np.ndarray]:
        """The next n worlds of every decision, row ``d * n + w``."""
        rows = (np.arange(self.d)[:, None] * self.per + self.used + np.arange(n)).reshape(-1)
        self.used += n
        return self.hands[rows], self.dead[rows]


class _Tree(NamedTuple):
    """The search trees of a batch of decisions; node i's arrays are row i."""

    child: np.ndarray  # (nodes, 52) int32 node reached by playing the card, -1 = none
    visits: np.ndarray  # (nodes,) walks that moved into the node
    total: np.ndarray  # (nodes,) their values, to the seat that moved into it
    avail: np.ndarray  # (nodes,) walks at the parent to which the node's move was legal


@register("ismcts")
class ISMCTSAgent(SearchAgent):
    """Single-observer information-set MCTS; see the module docstring.

    Args:
        iterations: tree iterations (sampled worlds played out) per decision.
        walks: iterations of one decision run together in a wave (one engine batch). A
            decision costs about the same per wave whatever ``walks`` (the per-call
            overhead of a small batch dominates), so fewer, wider waves are faster:
            384, four waves of the 1,536 iterations (256, six waves, until
            docs/results/strength.md's "Four waves": as strong, 1.4x the time).
        exploration: the UCB constant (values lie in about [0, 1]).
        rollout: rollout policy after the tree: ``"greedy:EPS"`` (default
            ``"greedy:0.2"``: other seats err with probability 0.2), ``"greedy"`` or
            ``"random"``.
        noise: scale of the independent noise on the UCB scores of the walks of a wave.
        time_budget: seconds per decision, or None; when set, waves stop once the
            budget is spent (then decisions depend on timing).
        rules: the exact rules, if they have numeric options the observation does not
            carry; default: read from the observation.
        belief: how worlds are sampled (``agents.search.Belief``): ``"uniform"``, or
            ``"greedy:EPS"``: weighed by the likelihood of the other seats' plays.
        belief_candidates: with a weighed belief, candidate worlds drawn per world kept.
        prior: an agent spec with a ``log_policy`` (a trained policy, e.g.
            ``"ppo:checkpoint=ppo_hearts"``): at the root, ``prior_weight`` times its
            log-probability of each move (in points, divided as the value divides them,
            ``_points_per_value``) is added to
            the move's UCB score, so the walks, and with them the most visited move,
            favour what the policy plays when the search's values are close (as
            ``mc``'s ``prior`` does to its values). One forward pass per decision.
            ``"auto"`` (the default): a prior in every rule set by the table
            (``agents.mc.table_prior``): in Hearts at 3-5 players, with or without
            passing or the queen options, and in plain Smoorverliefd at 3-5 players, the
            network ``one_network`` (``agents.mc.PLAIN_NETWORK_WEIGHTS``); in the
            Smoorverliefd variants the same network at its weight in the table
            (``agents.mc.network_weight``). ``"specialists"``: the specialist
            checkpoints only (``agents.ppo.shipped_policy_for``: ``ppo_hearts`` in
            Hearts at 3 and 4 players and ``ppo_hearts5`` at 5, ``ppo_smoorverliefd``),
            no prior in the variants (``"auto"`` before the networks shipped). A rule
            set whose shipped policy's file is missing (an install without the package
            data) is a FileNotFoundError, not a search without it. None: no prior.
        prior_weight: points per unit of log-probability of ``prior``; None (the
            default): 0.3, or with ``prior="auto"`` the network's weight in the rule
            set's row of the table (``agents.mc.PLAIN_NETWORK_WEIGHTS``,
            ``agents.mc.network_weight``).
        root: ``"ucb"``: the root's moves are chosen by UCB like every node's, each walk
            in a world of its own, and the most visited is played.
            ``"paired"``: every wave plays every legal root move in the same
            ``walks // 8`` worlds (common random numbers, as ``mc`` compares its moves:
            the luck of the deal cancels out of the differences), the tree of the
            seat's later moves growing below each; about ``iterations / legal moves``
            worlds a move (1 to 8 waves; ``seed_worlds`` unused), and the move of the
            best mean value (plus ``prior``'s bonus) is played. ``"halving"``: paired
            rounds by sequential halving (``_grow_paired``): the better half of the
            moves runs on after each round, so the best are searched deepest.
            ``"auto"`` (the default): ``"ucb"`` where a steering prior plays (a
            specialist, a given policy, or the network in Hearts and plain
            Smoorverliefd: it steers
            the walks at the root), ``"halving"`` where none does and where
            ``prior="auto"`` plays the network without steering (the Smoorverliefd
            variants; measured in them in
            docs/results/strength.md: it beats ``"ucb"`` there).
        bid_worlds: worlds in which each candidate of the decisions chosen by
            simulation is played out (Blinde Liefde's bid, Cupid's Arrow's cursed suit;
            ``mc`` uses its ``worlds``, 128 by default): one such decision a round, so
            4x ``mc``'s worlds cost little time, and they choose the bid that a
            4,096-world search values best far more often (docs/results/strength.md).
        value: what the search maximises. ``"own"``: the seat's round points (Hearts:
            minus its penalty points). ``"relative"``: its points less its opponents'
            mean (``_values``), as a match is won: by being ahead. Then keeping one
            heart from a seat that would sweep is worth the sweep's doubling to it, not
            one point, and an opponent's missed bid counts as well. ``"auto"`` (the
            default): ``"relative"`` where no steering prior plays (the
            Smoorverliefd variants, with or without the network; measured in
            docs/results/strength.md: it gains most in Blinde Liefde), ``"own"`` where one does
            (Hearts, plain Smoorverliefd: the specialists were distilled from a search
            of the seat's own points, and those rows were measured so, the networks
            in Hearts too), and wherever ``leaf`` evaluates.
        leaf: a network's value head at the walks' leaves: an agent spec with a
            ``value`` (a ``ppo`` checkpoint trained by ``experiments.expert_iteration``,
            e.g. ``"ppo:checkpoint=gen6.pt"``), or ``"prior"`` (the prior's network in
            each rule set). When a walk has left the tree and the seat is next to move,
            the network values the seat's observation there (its round points over the
            value scale); the walk's value is ``leaf_weight`` times that plus
            ``1 - leaf_weight`` times the rollout's outcome (at ``leaf_weight=1`` the
            rollout stops there). Walks whose round ends first keep the rollout's
            outcome; the seeding wave is played out by rollouts. Needs ``value="own"``
            (the head estimates the seat's own points). Default None: rollouts only.
        leaf_weight: the network's share of a leaf's value, in [0, 1].
    """

    name = "ismcts"
    uses_observation = True

    def __init__(self, iterations: int = 1536, walks: int = 384, exploration: float = 0.05,
                 rollout: str = "greedy:0.2", noise: float = 0.02,
                 opponents_in_tree: bool = False, seed_worlds: int = 64,
                 time_budget: float | None = None,
                 rules: Rules | None = None, belief: str = "uniform",
                 belief_candidates: int = 4, prior: str | None = "auto",
                 prior_weight: float | None = None, root: str = "auto", bid_worlds: int = 512,
                 value: str = "auto", leaf: str | None = None, leaf_weight: float = 0.5
                 ) -> None:
        if root not in ("auto", "ucb", "paired", "halving"):
            raise ValueError(f"root must be 'auto', 'ucb', 'paired' or 'halving', got {root!r}")
        if value not in ("auto", "own", "relative"):
            raise ValueError(f"value must be 'auto', 'own' or 'relative', got {value!r}")
        self.root, self.value = root, value
        leaf_weight = check_number("leaf_weight", leaf_weight)
        if not 0.0 <= leaf_weight <= 1.0:
            raise ValueError(f"leaf_weight must lie in [0, 1], got {leaf_weight}")
        if leaf is not None and value == "relative":
            raise ValueError("leaf evaluates the seat's own points: use value='own' or "
                             "'auto' with a leaf network, not 'relative'")
        if leaf is not None and opponents_in_tree:
            raise ValueError("leaf values the searching seat only: it needs "
                             "opponents_in_tree=False")
        self.leaf, self.leaf_weight = leaf, float(leaf_weight)
        self._leaf = None if leaf in (None, "prior") else _optional_agent("leaf", leaf)
        if self._leaf is not None and not callable(getattr(self._leaf, "value", None)):
            raise ValueError(f"leaf {leaf!r} has no value head: use a network (ppo)")
        iterations, walks = check_count("iterations", iterations), check_count("walks", walks)
        bid_worlds = check_count("bid_worlds", bid_worlds)
        exploration, noise = check_number("exploration", exploration), check_number("noise", noise)
        if time_budget is not None:
            time_budget = check_number("time_budget", time_budget, positive=True)
        self.iterations, self.walks = int(iterations), int(min(walks, iterations))
        self.exploration, self.noise = float(exploration), float(noise)
        self.opponents_in_tree = bool(opponents_in_tree)
        seed_worlds = check_count("seed_worlds", seed_worlds, low=0)
        self.seed_worlds = int(seed_worlds)
        self.belief = Belief(belief, belief_candidates)
        self.rollout, self.time_budget, self.rules = rollout, time_budget, rules
        self._playouts = Playouts(RolloutPolicy(rollout))
        self._prior = Prior(prior, prior_weight)
        self.prior, self.prior_weight = prior, self._prior.weight
        # Bids and cursed suits: chosen by simulation, as mc does it, in more worlds.
        self.bid_worlds = int(bid_worlds)
        self._mc = MCAgent(worlds=self.bid_worlds, rollout=rollout, rules=rules)
        self._rules_cache: dict[bytes, Rules] = {}

    def prior_for(self, rules: Rules) -> Any:
        """The policy agent ``prior`` plays in ``rules`` (with ``"auto"``, the shipped
        ``ppo`` checkpoint of the rule set; a FileNotFoundError if its file is missing),
        or None."""
        return self._prior.agent_for(rules)

    def act(self, observations: dict[str, np.ndarray], rng: np.random.Generator) -> np.ndarray:
        return self.analyse(observations, rng).actions

    def evaluate(self, observations: dict[str, np.ndarray], rng: np.random.Generator
                 ) -> tuple[np.ndarray, np.ndarray]:
        """The chosen actions (B,) and the searched value (B, 70) of every root move, in
        points as ``mc.evaluate`` gives them (``Analysis``); the same actions as ``act``."""
        found = self.analyse(observations, rng)
        return found.actions, found.values

    def analyse(self, observations: dict[str, np.ndarray], rng: np.random.Generator
                ) -> Analysis:
        """``act``'s actions with what the search found on the way (``Analysis``): the
        root moves' values and visits, what expert iteration learns from. The same
        actions and the same draws from ``rng`` as ``act``."""
        mask, obs, view, actions, search = self._prepare(observations)
        values = np.full(mask.shape, np.nan)  # (B, 70)
        visits = np.zeros(mask.shape)  # (B, 70)
        for rules, phase, rows in self._groups(obs, view, np.flatnonzero(search)):
            if phase == Phase.PLAY:
                bonus = self._prior.bonus(obs[rows], mask[rows], rules)  # (D, 70) points, or None
                actions[rows], values[rows, :52], visits[rows, :52] = self._search(
                    view, rows, mask[rows], rules, rng, bonus)
            else:  # bids and cursed suits: by simulation, as mc chooses them
                actions[rows], values[rows] = self._mc.evaluate(
                    {"observation": obs[rows], "action_mask": mask[rows]}, rng)
                visits[rows] = np.where(np.isnan(values[rows]), 0.0, self._mc.worlds)
        return Analysis(actions, values, visits)

    def _search(self, view: dict[str, Any], rows: np.ndarray, mask: np.ndarray, rules: Rules,
                rng: np.random.Generator, bonus: np.ndarray | None = None
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The most visited root move (D,) of D play decisions of one rule set, with the
        root moves' (D, 52) mean values in points (NaN: illegal, or not searched) and
        visits; ``bonus`` (D, 70) points, if given, is added to the root moves' UCB scores
        (``prior``). Searched with a paired root (``root="paired"``, or ``"auto"`` without a
        steering prior, ``Prior.steers``): the root move of the best mean value, ``bonus``
        added."""
        d = len(rows)
        steered = bonus is not None and self._prior.steers(rules)  # else the halved root
        root = self.root if self.root != "auto" else "ucb" if steered else "halving"
        relative = self.value == "relative" or (self.value == "auto" and not steered
                                                 and self._leaf_net(rules) is None)
        mean = np.full((d, 52), np.nan)  # (D, 52) value units
        visits = np.zeros((d, 52))  # (D, 52)
        if root != "ucb":
            tree, alive = self._grow_paired(view, rows, mask, rules, rng, root == "halving",
                                            relative)
            dec, act = np.nonzero(mask[:, :52])
            kids = d + np.arange(len(dec))
            visits[dec, act] = tree.visits[kids]
            mean[dec, act] = tree.total[kids] / np.maximum(tree.visits[kids], 1.0)
            score = np.full((d, 52), -np.inf)  # (D, 52) -inf: illegal or out
            score[dec[alive], act[alive]] = mean[dec[alive], act[alive]]
            if bonus is not None:
                score[dec, act] += bonus[dec, act] / _points_per_value(rules, relative)
            return np.argmax(score, axis=1), _points(mean, rules, relative), visits
        tree = self._grow(view, rows, mask, rules, rng, bonus, relative)
        kids = tree.child[:d]  # (D, 52)
        grown = (kids >= 0) & mask[:, :52]
        dec, act = np.nonzero(grown)
        visits[dec, act] = tree.visits[kids[dec, act]]
        mean[dec, act] = tree.total[kids[dec, act]] / np.maximum(visits[dec, act], 1.0)
        # The most visited legal root move (ties: the lowest card).
        root_visits = np.where(kids >= 0, tree.visits[np.maximum(kids, 0)], -1.0)
        root_visits = np.where(mask[:, :52], root_visits, -2.0)
        return np.argmax(root_visits, axis=1), _points(mean, rules, relative), visits

    def _grow(self, view: dict[str, Any], rows: np.ndarray, mask: np.ndarray, rules: Rules,
              rng: np.random.Generator, bonus: np.ndarray | None = None,
              relative: bool = False) -> _Tree:
        """The trees of D play decisions of one rule set (roots: nodes 0..D-1), grown by
        the seeding wave and then ``iterations`` walks (fewer if ``time_budget`` runs
        out); values ``relative`` or the seat's own (``_values``)."""
        start = time.perf_counter()
        d, p, m = len(rows), rules.num_players, self.walks
        know = knowledge(view, rows, p)
        waves = -(-self.iterations // m)
        # Roots, the seeded root children, and at most one new node per walk.
        capacity = d * (waves * m + 1) + int(mask[:, :52].sum())
        child = np.full((capacity, 52), -1, np.int32)  # (nodes, cards) child node, -1 = none
        visits = np.zeros(capacity)  # (nodes,) walks through the node
        total = np.zeros(capacity)  # (nodes,) sum of values of the seat that moved into it
        avail = np.zeros(capacity)  # (nodes,) parent visits in which its move was legal
        size = d  # nodes 0..D-1 are the roots
        play_rules = rollout_rules(rules)
        engine = self._playouts.engine(play_rules, d * m)
        root_of = np.repeat(np.arange(d), m)  # (R,) decision (= root node) of each walk
        # (D, 52) the prior's bonus in value units, or None
        root_bias = (None if bonus is None
                     else bonus[:, :52] / _points_per_value(rules, relative))
        # A weighed belief draws its candidate worlds and their likelihoods once; the
        # first wave and each later one pick their worlds from them afresh.
        pool = self.belief.pool(know, rules, max(m, self.seed_worlds), rng)  # None: uniform
        # Uniform worlds: drawn for the whole search in one call (the sampler's cost is
        # mostly per call, per card of the deck), then handed out wave by wave.
        drawn = None if pool is not None else \
            _Drawn(sample_hidden(know, rules, self.seed_worlds + waves * m, rng), d)
        if self.seed_worlds:
            hidden = self.belief.pick(pool, d, self.seed_worlds, rng) if pool is not None \
                else drawn.next(self.seed_worlds)
            size = self._seed_root(know, mask, rules, play_rules, child, visits, total, avail,
                                   size, rng, hidden, relative)
        for wave in range(waves):
            if (self.time_budget is not None and wave
                    and time.perf_counter() - start > self.time_budget):
                break
            hidden = self.belief.pick(pool, d, m, rng) if pool is not None else drawn.next(m)
            engine.install(build_worlds(know, rules, m, rng, hidden=hidden))
            size, _ = self._walk(engine, root_of.copy(), rules, child, visits, total, avail,
                                 size, rng, root_bias, relative)
        return _Tree(child[:size], visits[:size], total[:size], avail[:size])

    def _grow_paired(self, view: dict[str, Any], rows: np.ndarray, mask: np.ndarray,
                     rules: Rules, rng: np.random.Generator, halving: bool = False,
                     relative: bool = False
                     ) -> tuple[_Tree, np.ndarray]:
        """The trees of D play decisions of one rule set with a paired root: each round
        plays every root move still in the running in the same worlds (as ``mc`` compares
        its moves on common worlds) and grows the tree of the seat's later moves below
        each. Root children are nodes D.. in ``np.nonzero(mask)`` order.

        ``root="paired"``: every legal move runs in every round, ``walks // 8`` worlds a
        decision and round, about ``iterations / A`` worlds a move for A legal moves (1 to
        8 rounds). ``halving`` (``root="halving"``, sequential halving): ceil(log2 A)
        rounds share the ``iterations``, each round's share split evenly among the moves
        still running, and after every round but the last the better half of them (by
        mean value, ties to the lower card) runs on, so the best moves are played in
        the most worlds and their trees grow deepest; every move still running has met
        the same worlds. Returns the trees and which root moves ran to the end (A,)."""
        start = time.perf_counter()
        d, p = len(rows), rules.num_players
        know = knowledge(view, rows, p)
        dec, act = np.nonzero(mask[:, :52])  # (A,) every (decision, legal card)
        legal = np.maximum(np.bincount(dec, minlength=d), 1)  # (D,)
        k = max(1, self.walks // 8)  # paired: worlds a decision and round
        if halving:
            rounds = np.maximum(np.ceil(np.log2(legal)), 1).astype(np.int64)  # (D,)
        else:
            rounds = np.clip(np.rint(self.iterations / (legal * k)), 1, 8).astype(np.int64)
        # At most one new node per game, and a round plays at least one world a move.
        capacity = d + len(dec) + d * self.iterations + int((legal * rounds).sum()) * k
        child = np.full((capacity, 52), -1, np.int32)  # (nodes, cards) child node, -1 = none
        visits = np.zeros(capacity)  # (nodes,) walks through the node
        total = np.zeros(capacity)  # (nodes,) sum of values of the seat that moved into it
        avail = np.zeros(capacity)  # (nodes,) parent visits in which its move was legal
        kids = d + np.arange(len(dec))  # (A,) the root children
        child[dec, act] = kids
        size = d + len(dec)
        alive = np.ones(len(dec), bool)  # (A,) root moves still running
        play_rules = rollout_rules(rules)
        for r in range(int(rounds.max())):
            if (self.time_budget is not None and r
                    and time.perf_counter() - start > self.time_budget):
                break
            on = np.flatnonzero(rounds > r)  # (n,) decisions still searching
            pairs = np.flatnonzero(alive & (rounds[dec] > r))  # (a,) their running moves
            running = np.bincount(dec[pairs], minlength=d)  # (D,)
            per = (np.maximum(self.iterations // rounds // np.maximum(running, 1), 1)
                   if halving else np.full(d, k))  # (D,) worlds a move this round
            most = int(per[on].max())
            part = {key: value[on] for key, value in know.items()}
            pool = self.belief.pool(part, rules, most, rng)  # None: uniform
            hidden = sample_hidden(part, rules, most, rng) if pool is None else \
                self.belief.pick(pool, len(on), most, rng)
            worlds = build_worlds(part, rules, most, rng, hidden=hidden)  # (n * most,)
            count = per[dec[pairs]]  # (a,) worlds of each running move
            pair = np.repeat(pairs, count)  # (N,) root move of each game
            world = np.arange(len(pair)) - np.repeat(np.cumsum(count) - count, count)  # (N,)
            local = np.searchsorted(on, dec[pair])  # (N,) decision's row among ``on``
            engine = self._playouts.engine(play_rules, len(pair))
            engine.install(worlds.take(local * most + world))
            engine.step(act[pair])
            size, value = self._walk(engine, kids[pair], rules, child, visits, total, avail,
                                     size, rng, relative=relative)
            np.add.at(visits, kids[pair], 1.0)
            np.add.at(total, kids[pair], value[:, 0])
            if halving:  # the better half of each decision's running moves runs on
                last = rounds[dec[pairs]] == r + 1  # (a,) decisions in their last round
                mean = total[kids[pairs]] / visits[kids[pairs]]  # (a,)
                order = np.lexsort((act[pairs], -mean, dec[pairs]))  # by decision, best first
                first = np.searchsorted(dec[pairs][order], dec[pairs][order])
                rank = np.empty(len(pairs), np.int64)
                rank[order] = np.arange(len(pairs)) - first
                keep = last | (rank < -(-running[dec[pairs]] // 2))
                alive[pairs[~keep]] = False
        return _Tree(child[:size], visits[:size], total[:size], avail[:size]), alive

    def _walk(self, engine, node: np.ndarray, rules: Rules, child: np.ndarray,
              visits: np.ndarray, total: np.ndarray, avail: np.ndarray, size: int,
              rng: np.random.Generator, root_bias: np.ndarray | None = None,
              relative: bool = False) -> tuple[int, np.ndarray]:
        """One wave: the R games installed in ``engine``, each walking the tree from its
        ``node`` (R,) where it is the seat's move (every seat's, with
        ``opponents_in_tree``), then played out by the rollout policy; every node on a
        walk's path is credited with the walk's value to the seat that moved into it.
        Returns the new node count and the values (R, P)."""
        st = engine.state
        in_tree = np.ones(len(node), bool)  # (R,) walks still in the tree
        path: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []  # (walks, nodes, movers)
        net = self._leaf_net(rules)
        leaf = np.full(len(node), np.nan)  # (R,) the network's value for seat 0, NaN: none
        while not st.match_over.all():
            if net is not None:  # left the tree, seat 0 to move, not yet valued: value it
                ready = np.flatnonzero(~in_tree & ~st.match_over & (st.current_player == 0)
                                       & np.isnan(leaf))
                if len(ready):
                    obs = observe(_Observed(st, rules, len(node)), 0, games=ready)
                    leaf[ready] = _leaf_values(net.value(obs), rules)
                if self.leaf_weight == 1.0 and not (np.isnan(leaf) & ~st.match_over).any():
                    break  # every walk is valued or over: no rollout to finish
            moves = self._playouts.policy(engine, rng)  # (R,) the rollout moves
            walking = in_tree & ~st.match_over
            if not self.opponents_in_tree:  # other seats play the rollout policy
                walking &= st.current_player == 0
            walking = np.flatnonzero(walking)
            if len(walking):
                cards, nodes, size = self._descend(walking, node, st, moves, child, visits,
                                                   total, avail, size, rng, root_bias)
                moves[walking] = cards
                path.append((walking, nodes, st.current_player[walking].astype(np.int64)))
                new = visits[nodes] == 0
                node[walking] = nodes
                in_tree[walking[new]] = False  # an expanded node ends the tree walk
            engine.step(moves)
        points = self._playouts.points(engine, rules)  # (R, P) (partial where valued)
        value = _values(points, rules, relative)  # (R, P)
        valued = ~np.isnan(leaf)  # (R,)
        value[valued, 0] = ((1.0 - self.leaf_weight) * value[valued, 0]
                            + self.leaf_weight * leaf[valued])
        for walks, nodes, movers in path:
            np.add.at(visits, nodes, 1.0)
            np.add.at(total, nodes, value[walks, movers])
        return size, value

    def _leaf_net(self, rules: Rules) -> Any:
        """The agent whose value head values the leaves in ``rules``, or None."""
        if self.leaf is None:
            return None
        net = self._prior.agent_for(rules) if self.leaf == "prior" else self._leaf
        if net is not None and not callable(getattr(net, "value", None)):
            raise ValueError(f"leaf='prior' in {rules}: the prior has no value head")
        return net

    def _seed_root(self, know: dict[str, np.ndarray], mask: np.ndarray, rules: Rules,
                   play_rules: Rules, child: np.ndarray, visits: np.ndarray, total: np.ndarray,
                   avail: np.ndarray, size: int, rng: np.random.Generator,
                   hidden: tuple[np.ndarray, np.ndarray] | None = None,
                   relative: bool = False) -> int:
        """The first wave, as ``mc`` plays it: every legal root move in the same
        ``seed_worlds`` worlds (common random numbers: the moves are compared on equal
        deals), each played out by the rollout policy; the results start the root's
        children (in the worlds ``hidden``, if given). Returns the new node count."""
        d, k = len(mask), self.seed_worlds
        worlds = build_worlds(know, rules, k, rng, hidden=hidden)
        dec, act = np.nonzero(mask[:, :52])  # (A,) every (decision, legal card)
        pair = np.repeat(np.arange(len(dec)), k)  # (N,) pair of each game
        engine = self._playouts.engine(play_rules, len(pair))
        engine.install(worlds.take(dec[pair] * k + np.tile(np.arange(k), len(dec))))
        engine.step(act[pair])
        self._playouts.finish(engine, rules, rng)
        points = self._playouts.points(engine, rules)  # (N, P)
        value = _values(points, rules, relative)[:, 0]  # (N,)
        ids = size + np.arange(len(dec))
        child[dec, act] = ids
        visits[ids] = k
        total[ids] = np.bincount(pair, weights=value, minlength=len(dec))
        avail[ids] = k * np.bincount(dec, minlength=d)[dec]  # legal in every root visit
        return size + len(dec)

    def _descend(self, walking: np.ndarray, node: np.ndarray, st, moves: np.ndarray,
                 child: np.ndarray, visits: np.ndarray, total: np.ndarray, avail: np.ndarray,
                 size: int, rng: np.random.Generator, root_bias: np.ndarray | None = None
                 ) -> tuple[np.ndarray, np.ndarray, int]:
        """One tree step of the walks still in the tree: their cards, the nodes they move
        to (new nodes for untried moves), and the new node count. ``root_bias`` (D, 52),
        if given, is added to the scores of the moves at the roots (nodes 0..D-1)."""
        here = node[walking]  # (n,)
        legal = st.legal[walking]  # (n,) uint64 card sets
        n = len(walking)
        kids = child[here]  # (n, 52)
        held = C.mask_to_bool(legal)  # (n, 52)
        exists = (kids >= 0) & held
        row, col = np.nonzero(exists)  # (m,) every legal child that exists, by walk
        existing = kids[row, col]  # (m,) their nodes
        np.add.at(avail, existing, 1.0)  # every legal child was available
        untried = legal & ~C.bool_to_mask(exists)  # (n,) uint64
        cards = np.empty(n, np.int64)
        expand = untried != 0
        # Expansion: the rollout policy's move if it is untried, else a random untried one.
        e = np.flatnonzero(expand)
        if len(e):
            own = moves[walking[e]]
            own_untried = (untried[e] >> own.astype(np.uint64)) & np.uint64(1) != 0
            count = np.bitwise_count(untried[e]).astype(np.uint64)
            k = (rng.random(len(e)) * count).astype(np.uint64)
            words = untried[e].copy()
            pick = kth_set_bit(words, k, byte_prefix_counts(words), np.empty_like(words))
            cards[e] = np.where(own_untried, own, pick)
        # Selection by UCB from the mover's point of view, with a little noise per walk;
        # scored only where a child exists (the others cannot be chosen).
        s = np.flatnonzero(~expand)
        if len(s):
            noise = rng.standard_normal((len(s), 52)) if self.noise else None  # (ns, 52)
            on = ~expand[row]  # (m,) the children of the selecting walks
            r, c, kid = row[on], col[on], existing[on]  # (ms,) walk, card, child
            local = (np.cumsum(~expand) - 1)[r]  # (ms,) the walk's row among s
            v = np.maximum(visits[kid], 1e-9)
            score = total[kid] / v + self.exploration * np.sqrt(
                np.log(np.maximum(avail[kid], 1.0)) / v)  # (ms,)
            if noise is not None:
                score = score + self.noise * noise[local, c]
            if root_bias is not None:
                at_root = np.flatnonzero(here[r] < len(root_bias))
                score[at_root] += root_bias[here[r[at_root]], c[at_root]]
            full = np.full((len(s), 52), -np.inf)  # (ns, 52) -inf where no child
            full[local, c] = score
            cards[s] = np.argmax(full, axis=1)
        nodes = child[here, cards].astype(np.int64)  # (n,) -1 where new
        new = np.flatnonzero(nodes < 0)
        if len(new):  # one new node per distinct (node, card), shared by walks that chose it
            keys = here[new].astype(np.int64) * 52 + cards[new]
            unique, back = np.unique(keys, return_inverse=True)
            ids = size + np.arange(len(unique))
            child[unique // 52, unique % 52] = ids
            nodes[new] = ids[back]
            # The new children were available to every walk here to which their move
            # was legal, not only to the walks that chose them (so availability never
            # falls below visits, and UCB's exploration term stays right).
            fresh = child[here][held]  # (legal cards of the walks,) their children now
            fresh = fresh[fresh >= size] - size  # the new ones, numbered from 0
            avail[size:size + len(unique)] += np.bincount(fresh, minlength=len(unique))
            size += len(unique)
        return cards, nodes, size
