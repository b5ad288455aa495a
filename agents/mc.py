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
   ``Engine.sample_legal``; ``"greedy"``: ``greedy_play`` on the engine's arrays;
   ``"greedy:EPS"``: the other seats err with probability EPS) to the end of the round;
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

Other decisions and world sampling:

* Hearts passing uses ``agents.search.pass_card`` (a hand-aware heuristic); Blinde
  Liefde's bid and Cupid's Arrow's cursed suit are chosen by simulation, every
  candidate evaluated over the same sampled worlds.
* Worlds respect every void the observation shows, Hearts' inferences included
  (``smoor_env.observation``), hand sizes, the dead pile and the cards passed. The
  cards of suits with a void are drawn card by card, each going to a seat with
  probability proportional to its free places among the seats allowed to hold it
  and able to keep the rest of the deal feasible (checked exactly with Hall's
  condition over the 16 suit subsets), the other cards shuffled into the room
  left: without voids an exactly uniform deal, with voids close to uniform.
  ``belief="greedy:EPS"`` weighs them by how likely the other seats' plays were
  (``agents.search.Belief``). Worlds carry the round's history (finished tricks,
  leaders, winners, known passes), so any seat's observation of a world is what
  it would see there.
* ``reply=SPEC``: another agent (for example a trained policy) plays the other
  seats' moves after the candidate, up to the seat's next turn, on their
  observations of each world; the rollout policy plays on from there.
* Once a decision is left with one legal action it is played without search.

Determinism: the decision is a function of (observation, the generator's state)
when ``time_budget`` is None. With a ``time_budget`` the number of worlds adapts
to the measured speed of earlier decisions, so it can differ between runs.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from agents.base import build_agent, check_count, check_number, register
from agents.ppo import SHIPPED_NETWORK, PPOAgent, plain_rule_set, shipped_policy_for
from agents.rollout import RolloutPolicy, greedy_moves
from agents.search import Belief, Playouts, SearchAgent, build_worlds, knowledge, rollout_rules
from smoor_env.core import cards as C
from smoor_env.core.checks import MAX_BATCH_SIZE
from smoor_env.core.rules import GAME_ONLY_OPTIONS, Rules
from smoor_env.core.state import PHASE_ACTION_OFFSET, Phase

_BID, _CURSE = int(PHASE_ACTION_OFFSET[Phase.BID]), int(PHASE_ACTION_OFFSET[Phase.CURSE])


def _optional_agent(key: str, spec: str | None) -> Any:
    """The agent of option ``key``'s spec, or None; a bad spec is a ValueError naming it."""
    if spec is None:
        return None
    try:
        return build_agent(spec)
    except (ValueError, TypeError) as error:
        also = ", 'auto', 'specialists'" if key == "prior" else ""
        raise ValueError(f"{key} must be an agent spec{also} or None, got {spec!r}: "
                         f"{error}") from error


#: The prior's weight (points per unit of log-probability) where none is given: the
#: specialists' and, as measured, that of several Smoorverliefd variants at once, except
#: Cupid's Arrow with one other (``CUPIDS_ARROW_PAIR_WEIGHT``; ``network_weight``).
DEFAULT_PRIOR_WEIGHT = 0.3
#: ``prior="auto"``'s weight for the network (``agents.ppo.SHIPPED_NETWORK``) in each
#: Smoorverliefd variant, chosen by measurement between 0.3 and 1.0 with the network that
#: played there before it, ``dmc_all`` (DMC run 2's last checkpoint; ``dmc4_it1000`` took
#: its place at these weights, docs/results/2026-12-07-one-network-run4.md, and
#: ``one_network`` took ``dmc4_it1000``'s, docs/results/2026-12-07-distilled-mc-protocol.md)
#: (docs/results/2026-12-06-variant-prior-weights.md: 0.3 had the higher mean in every
#: ladder variant; in met Troef it is still 0.05 points a round behind no prior there;
#: Cupid's Arrow, in matches at 3-5 players:
#: docs/results/2026-12-06-cupids-arrow-3-5-prior-weight.md, where 0.3 is 0.007 points a
#: round behind no prior on the mean, within noise).
#: A rule set of several variants at once (Smoorverliefd's options,
#: ``GAME_ONLY_OPTIONS``) gets ``DEFAULT_PRIOR_WEIGHT``, 0.3 (except Cupid's Arrow with
#: one other: ``CUPIDS_ARROW_PAIR_WEIGHT``), chosen over 1.0 on the pairs of single-round
#: variants (docs/results/2026-12-06-several-variants-prior-weight.md) and
#: on those of three or four (docs/results/2026-12-07-three-variants-prior-weight.md).
NETWORK_WEIGHTS: dict[str, float] = {"trump_hearts": 0.3, "bidding": 0.3, "partners": 0.3,
                                     "pip_scoring": 0.3, "cupids_arrow": 0.3}
#: ``prior="auto"``'s weight for the network in Cupid's Arrow with one other
#: variant of ``NETWORK_WEIGHTS`` (met Troef, Blinde Liefde, Partner or Kleine Liefde), in
#: matches: 1.0, chosen over 0.3 (docs/results/2026-12-07-cupids-arrow-combinations-prior-weight.md:
#: +0.003 points a round, the mean of 10 rows of 80 matches at 3-5 players; carried by
#: Kleine Liefde's wider points, while met Troef's rows at 3 and 4 players and Blinde
#: Liefde's at 5 are clear of zero the other way). With two or more others it is
#: ``DEFAULT_PRIOR_WEIGHT``, as measured on the single-round triples.
CUPIDS_ARROW_PAIR_WEIGHT = 1.0


#: ``prior="auto"``'s weight for the network (``agents.ppo.SHIPPED_NETWORK``) in each
#: plain rule set (``agents.ppo.plain_rule_set``) where measurements put a network in
#: place of the specialist, played as the specialists are: a steering prior (``ismcts``'s
#: UCB root, the seat's own points). Chosen with the network that played there before it,
#: ``dmc3_it1000`` (DMC run 3's iteration 1,000; ``dmc4_it1000`` took its place at these
#: weights, docs/results/2026-12-07-one-network-run4.md, then ``one_network``,
#: docs/results/2026-12-07-distilled-mc-protocol.md), between 0.3 and 1.0 on 200 deals
#: a row at 3, 4 and 5 players (docs/results/2026-12-06-plain-prior-weights.md): 0.3 had
#: the higher mean in all three rule sets, +0.30 and +0.15 penalty points saved over the
#: specialists in Hearts with and without passing (no row clear of zero), -0.01 points a
#: round in Smoorverliefd. Plain Smoorverliefd plays the network since it was taught the
#: specialist's policy there (``experiments.distill_table``), at the specialist's weight,
#: 0.3 (docs/results/2026-12-07-distilled-mc-protocol.md). Hearts with a queen
#: option plays the network too, as measured (``dmc3_it1000``) against ``dmc_all`` and the
#: variants' search there (docs/results/2026-12-06-queen-options-prior.md: +0.09 penalty
#: points saved, the mean of 6 rows, none clear of zero): with one option and passing in
#: its passing's row; with both options, or with one without passing, in a row of its own
#: whose weight, 1.0, was chosen over 0.3
#: (docs/results/2026-12-06-unmeasured-rows-prior.md: +0.15 penalty points saved, the mean
#: of 9 rows at 3-5 players, one clear of zero).
PLAIN_NETWORK_WEIGHTS: dict[str, float] = {"smoorverliefd": 0.3, "hearts": 0.3,
                                           "hearts_no_passing": 0.3,
                                           "hearts_queen_options": 1.0}


def network_row(rules: Rules) -> str | None:
    """The row of ``PLAIN_NETWORK_WEIGHTS`` that ``rules`` plays in: every Hearts game,
    with both queen options or with one without passing in ``"hearts_queen_options"``,
    else by its passing (``"hearts"`` or ``"hearts_no_passing"``); else the plain rule
    set (``agents.ppo.plain_rule_set``: ``"smoorverliefd"``), else None (the
    Smoorverliefd variants)."""
    if rules.is_hearts:
        queens = int(rules.queen_never_first_trick) + int(rules.queen_breaks_hearts)
        if queens == 2 or (queens and not rules.passing):
            return "hearts_queen_options"
        return "hearts" if rules.passing else "hearts_no_passing"
    return plain_rule_set(rules)


def network_weight(rules: Rules) -> float:
    """``prior="auto"``'s weight for the network in the variants ``rules`` has: a single variant's
    row of ``NETWORK_WEIGHTS``, Cupid's Arrow with one other variant
    ``CUPIDS_ARROW_PAIR_WEIGHT``, any other ``DEFAULT_PRIOR_WEIGHT``."""
    variants = [name for name in GAME_ONLY_OPTIONS["smoorverliefd"] if getattr(rules, name)]
    if rules.is_hearts:
        return DEFAULT_PRIOR_WEIGHT
    if len(variants) == 1:
        return NETWORK_WEIGHTS.get(variants[0], DEFAULT_PRIOR_WEIGHT)
    others = [name for name in variants if name != "cupids_arrow"]
    if len(variants) == 2 and len(others) == 1 and others[0] in NETWORK_WEIGHTS:
        return CUPIDS_ARROW_PAIR_WEIGHT
    return DEFAULT_PRIOR_WEIGHT


def table_prior(rules: Rules, spec: str = "auto") -> tuple[str | None, float, bool]:
    """What ``prior=spec`` (``"auto"`` or ``"specialists"``) plays in ``rules``, by the
    table in docs/agents.md: the shipped checkpoint's name (None: no prior), its weight
    there, and whether it steers (``Prior.steers``). ``"auto"``: ``SHIPPED_NETWORK``
    steering where ``PLAIN_NETWORK_WEIGHTS`` names the rule set's row (``network_row``),
    else the specialist (``shipped_policy_for``) at ``DEFAULT_PRIOR_WEIGHT``, else
    ``SHIPPED_NETWORK`` at ``network_weight`` (not steering); ``"specialists"``: the
    specialist, else none. A specialist whose file is missing is a FileNotFoundError
    (``shipped_policy_for``)."""
    if spec not in ("auto", "specialists"):
        raise ValueError(f"spec must be 'auto' or 'specialists', got {spec!r}")
    plain = PLAIN_NETWORK_WEIGHTS.get(network_row(rules) or "") if spec == "auto" else None
    if plain is not None:
        return SHIPPED_NETWORK, plain, True
    name = shipped_policy_for(rules)
    if name is not None or spec == "specialists":
        return name, DEFAULT_PRIOR_WEIGHT, True
    return SHIPPED_NETWORK, network_weight(rules), False


class Prior:
    """A trained policy's estimate of each action, in points: the weight times its
    log-probability (the ``prior`` option of ``mc`` and ``ismcts``).

    A policy distilled from a search at temperature T values an action at about
    T log pi(a) + const, so ``weight=T`` weighs its estimate like the search's values.
    ``spec`` is an agent spec with a ``log_policy`` (e.g. ``"ppo:checkpoint=ppo_hearts"``),
    played in every rule set at ``weight`` (None: ``DEFAULT_PRIOR_WEIGHT``).
    ``"specialists"``: in each rule set the shipped checkpoint trained on it, or on the
    same tricks with another player count or passing (``agents.ppo.shipped_policy_for``:
    plain Smoorverliefd and Hearts), none elsewhere. ``"auto"``: a prior in every rule
    set, by the table (``table_prior``): in the rule sets ``PLAIN_NETWORK_WEIGHTS`` has a
    row for (``network_row``: every Hearts game and plain Smoorverliefd), the network
    ``agents.ppo.SHIPPED_NETWORK`` steering in place of the specialist; else the
    specialist where there is one; else the network again, not steering; each at the
    table's weight unless ``weight`` is given. None: none. With ``"auto"`` or
    ``"specialists"``, a rule set whose policy's file is missing (an install without the
    package data) is a FileNotFoundError at its first decision, naming the file and the
    folder looked in: never a search without it.
    """

    def __init__(self, spec: str | None, weight: float | None) -> None:
        if weight is not None:
            check_number("prior_weight", weight)
        self.spec = spec
        self.weight = None if weight is None else float(weight)
        self.agent = None if spec in ("auto", "specialists") else _optional_agent("prior", spec)
        if self.agent is not None and not hasattr(self.agent, "log_policy"):
            raise ValueError(f"prior {spec!r} has no log_policy: use a trained policy (ppo)")
        self._auto: dict[Rules, tuple[Any, float, bool]] = {}

    def _choice(self, rules: Rules) -> tuple[Any, float, bool]:
        """The policy played in ``rules`` (or None), its weight, and whether it steers: a
        specialist, a given policy or the network in Hearts and plain Smoorverliefd (True)
        or the network of
        ``"auto"`` in the variants (False)."""
        if self.spec not in ("auto", "specialists"):
            return self.agent, DEFAULT_PRIOR_WEIGHT if self.weight is None else self.weight, True
        if rules not in self._auto:
            try:
                name, weight, steering = table_prior(rules, self.spec)
                weight = weight if self.weight is None else self.weight
                self._auto[rules] = None if name is None else PPOAgent(name), weight, steering
            except FileNotFoundError as error:
                raise FileNotFoundError(f"prior={self.spec!r} in {rules}: {error} (or give "
                                        f"the prior explicitly: prior=None plays none, "
                                        f"prior='specialists' none where no specialist "
                                        f"was trained)") from error
        return self._auto[rules]

    def agent_for(self, rules: Rules) -> Any:
        """The policy played in ``rules``, or None."""
        return self._choice(rules)[0]

    def steers(self, rules: Rules) -> bool:
        """Whether a prior plays in ``rules`` that ``ismcts``'s ``"auto"`` root and value
        were measured with as a steering prior (a UCB root, the seat's own points): a
        specialist, a given policy, or the network where ``"auto"`` plays it in Hearts and
        plain Smoorverliefd.
        False where none plays and where ``"auto"`` plays the network in the variants
        (measured with today's variant search: a halved root, the relative value)."""
        agent, _, steering = self._choice(rules)
        return agent is not None and steering

    def bonus(self, obs: np.ndarray, mask: np.ndarray, rules: Rules) -> np.ndarray | None:
        """(D, 70) points added to the values of the D decisions ``obs`` (D, OBS) of
        ``rules`` with legal actions ``mask`` (D, 70): 0 where illegal; None without a
        prior there."""
        agent, weight, _ = self._choice(rules)
        if agent is None:
            return None
        logp = agent.log_policy({"observation": obs, "action_mask": mask})  # -inf: illegal
        return weight * np.where(mask, logp, 0.0)


@register("mc")
class MCAgent(SearchAgent):
    """Perfect-Information Monte Carlo; see the module docstring.

    Args:
        worlds: hidden worlds sampled per decision (W).
        rollouts: playouts per (world, action); more than 1 repeats each world.
        rollout: rollout policy of every seat after the candidate move:
            ``"greedy"`` (the greedy agent's rules on the engine state), ``"random"``
            (uniform legal moves) or ``"greedy:EPS"`` (epsilon-greedy).
        time_budget: seconds per decision, or None. When set, W is reduced (never
            below 1) so that the predicted cost fits, using the cost per game-step
            measured on earlier decisions (so decisions then depend on timing).
        rules: the exact rules, if they have non-default numeric options the
            observation does not carry; default: read from the observation.
        greedy_margin: added to the greedy card's mean value before the best is chosen
            (it wins near-ties).
        belief: how worlds are sampled (``agents.search.Belief``): ``"uniform"``, or
            ``"greedy:EPS"``: weighed by the likelihood of the other seats' plays.
        belief_candidates: with a weighed belief, candidate worlds drawn per world kept.
        reply: an agent spec (e.g. ``"ppo:checkpoint=ppo_hearts"``) that plays the other
            seats' moves after the searched one, up to the seat's next turn, on their
            observations of each world; the rollout policy plays on from there.
            Default None: the rollout policy throughout.
        reply_rollouts: K > 0 (without ``reply``): the other seats' replies after the
            searched move, up to the seat's next turn, are chosen by a one-ply search in
            each world (``Playouts.search_replies``: each legal reply played out K times
            by the rollout policy, the best for the replying seat played). Default 0.
        rollout_agent: an agent spec (e.g. ``"ppo:checkpoint=ppo_smoorverliefd"``) that
            plays every seat after the candidate (and after ``reply``) to the end of the
            round, on the seats' observations of each world, instead of ``rollout``
            (one-step improvement of that agent; slow: an observation and an agent call
            per ply). Default None.
        prior: an agent spec with a ``log_policy`` (a trained policy, e.g.
            ``"ppo:checkpoint=ppo_hearts"``) whose log-probabilities, times
            ``prior_weight``, are added to the searched values before the best is chosen:
            a policy distilled from the search at temperature T values an action at about
            T log pi(a) + const, so ``prior_weight=T`` weighs its estimate like the search's.
            ``"auto"``: a shipped policy in every rule set by the table (``table_prior``:
            the network ``one_network`` in every rule set, steering in plain
            Smoorverliefd and Hearts; docs/agents.md); ``"specialists"``:
            the checkpoints trained on the rule set or on the same tricks only, none elsewhere.
            Default None: the search's values alone.
        prior_weight: points per unit of log-probability of ``prior``; None (the
            default): ``DEFAULT_PRIOR_WEIGHT`` (0.3), or with ``prior="auto"`` the
            weight in the rule set's row of the table (``PLAIN_NETWORK_WEIGHTS``,
            ``network_weight``).
    """

    name = "mc"
    uses_observation = True

    def __init__(self, worlds: int = 128, rollouts: int = 1, rollout: str = "greedy:0.2",
                 time_budget: float | None = None, rules: Rules | None = None,
                 greedy_margin: float = 0.0, belief: str = "uniform",
                 belief_candidates: int = 4, reply: str | None = None,
                 reply_rollouts: int = 0, rollout_agent: str | None = None,
                 prior: str | None = None, prior_weight: float | None = None) -> None:
        worlds, rollouts = check_count("worlds", worlds), check_count("rollouts", rollouts)
        if time_budget is not None:
            time_budget = check_number("time_budget", time_budget, positive=True)
        greedy_margin = check_number("greedy_margin", greedy_margin)
        if rules is not None and not isinstance(rules, Rules):
            raise TypeError(f"rules must be a smoor_env.Rules or None, got {type(rules).__name__}")
        self.worlds = int(worlds)
        self.belief = Belief(belief, belief_candidates)
        self.greedy_margin = float(greedy_margin)
        self.rollouts = int(rollouts)
        self.rollout = rollout
        self.reply = reply
        reply_rollouts = check_count("reply_rollouts", reply_rollouts, low=0)
        if reply_rollouts and reply is not None:
            raise ValueError("give reply or reply_rollouts, not both: both choose the replies")
        self.reply_rollouts = int(reply_rollouts)
        self.rollout_agent = rollout_agent
        self._playouts = Playouts(RolloutPolicy(rollout), _optional_agent("reply", reply),
                                  _optional_agent("rollout_agent", rollout_agent),
                                  self.reply_rollouts)
        self._prior = Prior(prior, prior_weight)
        self.prior, self.prior_weight = prior, self._prior.weight
        self.time_budget = time_budget
        self.rules = rules
        self._rules_cache: dict[bytes, Rules] = {}
        # Time model for time_budget: seconds = fixed + per_game_step * games * steps.
        self._per_game_step = 2e-6
        self._fixed = 2e-3

    # ------------------------------------------------------------------ api
    def act(self, observations: dict[str, np.ndarray], rng: np.random.Generator) -> np.ndarray:
        return self.evaluate(observations, rng)[0]

    def prior_for(self, rules: Rules) -> Any:
        """The policy agent ``prior`` plays in ``rules`` (with ``"auto"``, the shipped
        ``ppo`` checkpoint of the rule set), or None."""
        return self._prior.agent_for(rules)

    def evaluate(self, observations: dict[str, np.ndarray], rng: np.random.Generator
                 ) -> tuple[np.ndarray, np.ndarray]:
        """The chosen actions (B,) and the estimated value (B, 70) of every action searched
        (mean round points for the seat, or minus penalty points in Hearts; NaN where an
        action was not searched: illegal, forced, or a phase decided by a heuristic)."""
        mask, obs, view, actions, search = self._prepare(observations)
        values = np.full(mask.shape, np.nan)
        for rules, phase, group in self._groups(obs, view, np.flatnonzero(search)):
            for rows in self._batches(group, mask):
                bonus = self._prior.bonus(obs[rows], mask[rows], rules)  # (D, 70) or None
                actions[rows], values[rows] = self._search(view, rows, mask[rows], phase,
                                                           rules, rng, bonus)
        return actions, values

    def _batches(self, rows: np.ndarray, mask: np.ndarray) -> list[np.ndarray]:
        """``rows`` (D,) in consecutive parts whose playouts (each legal action of each
        decision in every world, ``rollouts`` times) fit one engine batch
        (``MAX_BATCH_SIZE`` games): many decisions at once with many worlds, as
        ``ismcts``'s 512-world bids of a large batch of games, are searched part by
        part. One part, ``rows`` itself, when they fit."""
        cost = mask[rows].sum(axis=1) * self.worlds * self.rollouts  # (D,) games each
        if self.reply_rollouts:  # each reply ply plays each legal card K times: a hand
            cost = cost * (C.NUM_CARDS // 3) * self.reply_rollouts  # holds 17 at most
        if cost.sum() <= MAX_BATCH_SIZE:
            return [rows]
        parts, start, total = [], 0, 0
        for i, games in enumerate(cost.tolist()):
            if total + games > MAX_BATCH_SIZE and i > start:
                parts.append(rows[start:i])
                start, total = i, 0
            total += games
        return [*parts, rows[start:]]

    def _worlds_for(self, games_per_world: int, steps: int, decisions: int) -> int:
        if self.time_budget is None:
            return self.worlds
        budget = self.time_budget * decisions - self._fixed
        per_world = self._per_game_step * games_per_world * max(steps, 1)
        return int(np.clip(budget / per_world, 1, self.worlds))

    def _search(self, view: dict[str, Any], rows: np.ndarray, mask: np.ndarray, phase: int,
                rules: Rules, rng: np.random.Generator, bonus: np.ndarray | None = None
                ) -> tuple[np.ndarray, np.ndarray]:
        """Best action (D,) and action values (D, 70) of D decisions of one rule set and phase.

        Play and bid: each legal action is stepped in every world; curse: each legal
        suit is named in every world. Then every seat plays the rollout policy to the
        end of the round, and the action with the best mean value is chosen (ties: the
        lowest action id). ``bonus`` (D, 70), if given, is added to the values before
        that choice (``prior``).
        """
        start = time.perf_counter()
        d, p = len(rows), rules.num_players
        know = knowledge(view, rows, p)
        dec, act = np.nonzero(mask)  # (sum A_d,) ascending action within each decision
        played = np.bitwise_count(np.bitwise_or.reduce(know["played_by"], axis=1))
        steps = int(p * rules.num_tricks - played.min()) + (p if phase != Phase.PLAY else 0)
        w = self._worlds_for(len(dec) * self.rollouts // d, steps, 1) if d else 1
        world_phase = Phase.PLAY if phase == Phase.PLAY else Phase.BID
        if phase == Phase.CURSE and not rules.bidding:
            world_phase = Phase.PLAY
        worlds = build_worlds(know, rules, w, rng, world_phase, self.belief)
        if phase == Phase.CURSE:  # the dealer (seat 0) names the suit; seat 1 goes first
            worlds.current_player[:] = 1
        reps = w * self.rollouts
        pair = np.repeat(np.arange(len(dec)), reps)  # (N,) (decision, action) pair of each game
        world = dec[pair] * w + np.tile(np.arange(w), len(dec) * self.rollouts)
        play_rules = rollout_rules(rules)
        engine = self._playouts.engine(play_rules, len(pair))
        games = worlds.take(world)
        if phase == Phase.CURSE:
            games.cursed_suit[:] = act[pair] - _CURSE
        engine.install(games)
        default = greedy_moves(engine)[np.searchsorted(dec[pair], np.arange(d))] if \
            phase == Phase.PLAY else None  # (D,) the greedy card of each decision
        if phase != Phase.CURSE:
            engine.step(act[pair])
        if phase == Phase.PLAY:
            self._playouts.respond(engine, rules, rng)
        self._playouts.finish(engine, rules, rng)
        value = self._playouts.values(engine, rules)
        mean = np.bincount(pair, weights=value, minlength=len(dec)) / reps  # (sum A_d,)
        values = np.full((d, mask.shape[1]), np.nan)
        values[dec, act] = mean
        score = np.where(np.isnan(values), -np.inf, values)
        if default is not None:  # the greedy card wins ties and near-ties
            score[np.arange(d), default] += self.greedy_margin
        if bonus is not None:
            score = score + bonus
        # Ties go to the lowest id: argmax returns the first maximum.
        choice = np.argmax(score, axis=1)
        if self.time_budget is not None:
            spent = time.perf_counter() - start
            work = len(pair) * max(steps, 1)
            self._per_game_step = 0.7 * self._per_game_step + 0.3 * max(spent - self._fixed,
                                                                        1e-9) / work
        return choice, values
