"""The baseline agents: legal actions everywhere, whole matches, and the Monte Carlo agent's
world sampling (every constraint), no peeking at hidden cards, and determinism."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as hs

from agents import GreedyAgent, MCAgent, RandomAgent, agent_names, build_agent, make_agent
from agents.env_factories import make_env
from agents.greedy import greedy_bid, greedy_play, made_bid
from agents.rollout import RolloutPolicy, greedy_moves
from agents.search import (
    Belief,
    Playouts,
    build_worlds,
    knowledge,
    play_likelihood,
    rollout_rules,
    rules_of,
    sample_hidden,
)
from smoor_env import Engine, Phase, Rules, raw_env
from smoor_env.core import cards as C
from smoor_env.observation import decode, observe, split_observation

RULE_SETS = {
    "smoor-3": Rules(num_players=3, target_score=None),
    "smoor-4": Rules(target_score=None),
    "smoor-5": Rules(num_players=5, target_score=None),
    "trump": Rules(trump_hearts=True, target_score=None),
    "bidding": Rules(bidding=True, target_score=None),
    "partners": Rules(partners=True, target_score=None),
    "pips": Rules(pip_scoring=True, num_players=5, target_score=None),
    "cupid": Rules(cupids_arrow=True, target_score=30, num_players=3),
    "sweep-13-3p": Rules(num_players=3, sweep_needs_all_thirteen=True, target_score=None),
    "all-variants": Rules(trump_hearts=True, bidding=True, partners=True, pip_scoring=True,
                          cupids_arrow=True, target_score=30),
    "hearts-3": Rules(game="hearts", num_players=3, target_score=None),
    "hearts-4": Rules(game="hearts", target_score=None),
    "hearts-5": Rules(game="hearts", num_players=5, target_score=None),
    "hearts-4-no-pass": Rules(game="hearts", passing=False, target_score=None),
    "hearts-queen-options": Rules(game="hearts", queen_never_first_trick=True,
                                  queen_breaks_hearts=True, target_score=None),
}


def small_ismcts(**options):
    """A fast ismcts for the tests (few iterations)."""
    options = {"iterations": 48, "walks": 16, "seed_worlds": 4, **options}
    return make_agent("ismcts", **options)


def small_mc(**options) -> MCAgent:
    return make_agent("mc", **{"worlds": 4, **options})


def random_positions(rules: Rules, batch: int, seed: int) -> Engine:
    """A batch of games, each advanced by its own random number of random actions."""
    engine = Engine(rules, batch)
    engine.reset(seed)
    rng = np.random.default_rng(seed)
    stops = rng.integers(0, rules.num_players * rules.num_tricks + 6, batch)
    for move in range(int(stops.max())):
        active = (stops > move) & ~engine.state.match_over
        if not active.any():
            break
        engine.step(engine.sample_legal(rng), active=active)
    return engine


def observations(engine: Engine) -> dict[str, np.ndarray]:
    return {"observation": observe(engine, engine.state.current_player),
            "action_mask": engine.legal_mask}


# ----------------------------------------------------------------- registry
def test_agents_are_made_by_name_with_options():
    assert {"random", "greedy", "mc"} <= set(agent_names())
    assert isinstance(make_agent("random"), RandomAgent)
    assert isinstance(make_agent("greedy"), GreedyAgent)
    mc = make_agent("mc", worlds=8)
    assert isinstance(mc, MCAgent) and mc.worlds == 8 and mc.uses_observation
    assert make_agent(mc) is mc


def test_unknown_agent_name_is_a_clear_error():
    with pytest.raises(ValueError, match="unknown agent 'alphazero'.*greedy.*mc.*random"):
        make_agent("alphazero")


def test_unknown_options_name_the_agent_and_the_valid_ones():
    with pytest.raises(ValueError, match=r"agent 'mc' has no option 'wrlds'; its options: "
                                         r"worlds, rollouts, rollout, time_budget"):
        make_agent("mc", wrlds=8)
    with pytest.raises(ValueError, match="agent 'random' has no option 'depth'; it takes no "
                                         "options"):
        build_agent("random:depth=2")
    with pytest.raises(ValueError, match="agent 'greedy' has no option 'depth'; its options: "
                                         "eps"):
        build_agent("greedy:depth=2")


def test_spec_values_are_read_as_their_option_s_type():
    """``build_agent`` reads each value as the signature's type: a str option keeps digits
    as text, an int option refuses text, ``none`` is None where None is allowed."""
    from agents.base import build_agents

    mc = build_agent("mc:worlds=3,time_budget=2,prior=none,greedy_margin=1")
    assert mc.worlds == 3 and mc.time_budget == 2.0 and mc.greedy_margin == 1.0
    for spec, message in [("mc:worlds=abc", "agent 'mc': option worlds must be an int, "
                                             "got 'abc'"),
                          ("mc:worlds=2.5", "option worlds must be an int"),
                          ("ppo:sample=maybe", "option sample must be true or false"),
                          ("mc:time_budget=soon", "time_budget must be none or a number")]:
        with pytest.raises(ValueError, match=message):
            build_agent(spec)
    with pytest.raises(FileNotFoundError, match="'123' is neither a file nor a shipped"):
        build_agent("ppo:checkpoint=123")  # the file "123", not the int 123
    # For a command line: every spec once, any failure one line naming the spec.
    made = build_agents(["random", "greedy", "random"])
    assert list(made) == ["random", "greedy"] and isinstance(made["greedy"], GreedyAgent)
    with pytest.raises(ValueError, match=r"^agent 'ppo:checkpoint=nope': PPO checkpoint "
                                         r"'nope' is neither a file nor a shipped checkpoint "
                                         r"name \(dmc3_it1000, dmc4_it1000, dmc_all, "
                                         r"one_network, ppo_hearts"):
        build_agents(["random", "ppo:checkpoint=nope"])
    with pytest.raises(ValueError, match=r"^agent 'ppo:checkpoint=.*README.md': .* is not a "
                                         r"torch.save file"):
        build_agents([f"ppo:checkpoint={Path(__file__).parents[1] / 'README.md'}"])


@pytest.mark.parametrize("options", [{"worlds": 0}, {"rollouts": 0}, {"rollout": "smart"},
                                     {"time_budget": 0}, {"reply": "nosuch"},
                                     {"reply": "mc:worlds=0"}, {"rollout_agent": "nosuch"}])
def test_mc_rejects_bad_options(options):
    with pytest.raises(ValueError):
        make_agent("mc", **options)


# ------------------------------------------------------------ legal actions
@pytest.mark.parametrize("rules", RULE_SETS.values(), ids=RULE_SETS.keys())
def test_every_agent_returns_legal_actions_in_batches(rules):
    engine = random_positions(rules, 24, seed=len(str(rules)))
    live = np.flatnonzero(~engine.state.match_over)
    obs = {k: v[live] for k, v in observations(engine).items()}
    for agent in (make_agent("random"), make_agent("greedy"), small_mc(),
                  small_mc(rollout="random", rollouts=2), small_ismcts(),
                  small_ismcts(opponents_in_tree=True, seed_worlds=0),
                  small_ismcts(root="paired")):
        actions = agent.act(obs, np.random.default_rng(1))
        assert actions.shape == (len(live),)
        assert obs["action_mask"][np.arange(len(live)), actions].all(), agent.name


def test_mc_reads_the_rules_from_the_observation():
    for rules in RULE_SETS.values():
        engine = random_positions(rules, 1, seed=3)
        got = rules_of(decode(observe(engine, 0)), 0)
        expected = rules.replace(target_score=50 if rules.cupids_arrow else None)
        assert got == expected


def test_mc_with_explicit_rules_and_time_budget_plays_legally():
    rules = Rules(ace_of_hearts_points=3, target_score=None)
    engine = random_positions(rules, 16, seed=5)
    live = np.flatnonzero(~engine.state.match_over)
    obs = {k: v[live] for k, v in observations(engine).items()}
    for agent in (MCAgent(worlds=8, rules=rules), MCAgent(worlds=64, time_budget=0.005)):
        for _ in range(2):  # the second call uses the measured speed
            actions = agent.act(obs, np.random.default_rng(0))
            assert obs["action_mask"][np.arange(len(live)), actions].all()


# ------------------------------------------------------------ whole matches
@pytest.mark.parametrize("rules", [Rules(num_players=3, target_score=15),
                                   Rules(partners=True, bidding=True, cupids_arrow=True,
                                         target_score=25, max_rounds=3),
                                   Rules(game="hearts", target_score=30, max_rounds=3)],
                         ids=["smoor-3", "partners-bids-cupid", "hearts"])
def test_whole_matches_through_the_gymnasium_env(rules):
    opponents = ["greedy", small_mc(), "random", "mc"][: rules.num_players - 1]
    opponents[-1] = small_mc(rollout="greedy") if opponents[-1] == "mc" else opponents[-1]
    env = make_env(rules=rules, learner_seat=1, opponents=opponents, illegal_action="raise")
    learner = small_mc()
    rng = np.random.default_rng(0)
    obs, info = env.reset(seed=4)
    done, steps = False, 0
    while not done:
        action = learner.act({"observation": obs[None], "action_mask": info["action_mask"][None]},
                             rng)[0]
        obs, _, done, _, info = env.step(action)
        steps += 1
    assert env.engine.state.match_over[0] and steps >= rules.num_tricks


def test_whole_match_through_the_pettingzoo_env():
    rules = Rules(game="hearts", num_players=5, target_score=20, max_rounds=2)
    aec = raw_env(rules=rules)
    aec.reset(seed=2)
    players = {a: agent for a, agent in zip(aec.possible_agents, [
        small_mc(), make_agent("greedy"), make_agent("random"), small_mc(rollouts=2),
        make_agent("greedy")], strict=True)}
    rng = np.random.default_rng(3)
    for name in aec.agent_iter():
        obs, _, term, trunc, _ = aec.last()
        if term or trunc:
            aec.step(None)
            continue
        batch = {"observation": obs["observation"][None], "action_mask": obs["action_mask"][None]}
        aec.step(int(players[name].act(batch, rng)[0]))
    assert aec.engine.state.match_over[0]


# ------------------------------------------------------------- world sampling
def _mine_and_truth(engine: Engine, game: int):
    """Observation of the seat to act in one game, and that game's true hidden cards."""
    st = engine.state
    seat = int(st.current_player[game])
    one = Engine(engine.rules, 1)
    one.state = st.take([game])
    return observe(one, seat), seat, one


@settings(max_examples=40)
@given(name=hs.sampled_from(sorted(RULE_SETS)), seed=hs.integers(0, 10_000),
       worlds=hs.integers(1, 12))
def test_sampled_worlds_respect_everything_the_seat_knows(name, seed, worlds):
    rules = RULE_SETS[name]
    engine = random_positions(rules, 6, seed)
    st = engine.state
    playing = np.flatnonzero((st.phase == Phase.PLAY) & ~st.match_over)
    if not len(playing):
        return
    p, t = rules.num_players, rules.num_tricks
    for game in playing[:3]:
        obs, seat, one = _mine_and_truth(engine, int(game))
        know = knowledge(decode(obs), np.arange(len(obs)), p)
        hands, dead = sample_hidden(know, rules, worlds, np.random.default_rng(seed))
        true = one.state
        rel = (seat + np.arange(p)) % p  # relative seat k is absolute seat rel[k]
        true_hands = true.hands[0, rel]
        hidden = np.bitwise_or.reduce(true_hands[1:]) | true.dead[0]
        played = true.played[0]
        v = split_observation(obs[0])
        voids = v["voids"][:p] > 0.5
        for w in range(worlds):
            h = hands[w]
            assert h[0] == 0  # the sampler fills only the others; my hand is added by build
            assert (np.bitwise_or.reduce(h) | dead[w]) == hidden  # exactly the unseen cards
            assert all((h[i] & h[j]) == 0 for i in range(p) for j in range(i + 1, p))
            assert (h & dead[w] == 0).all()
            assert ((h | dead[w]) & played == 0).all() and (h & true_hands[0] == 0).all()
            assert np.bitwise_count(h[1:]).tolist() == np.bitwise_count(true_hands[1:]).tolist()
            assert bin(int(dead[w])).count("1") == rules.dead_count
            for k in range(1, p):
                for s in range(4):
                    if voids[k, s]:
                        assert int(h[k]) & int(C.SUIT_MASKS[s]) == 0
            offset = int(one.rules.pass_offset(true.round_number)[0])
            if offset:  # the cards I passed are with the receiver unless played
                mine = int(np.bitwise_or.reduce(
                    [1 << int(c) for c in true.passes[0, seat] if c >= 0]))
                assert int(h[offset]) & mine == mine & ~int(played)
        # Whole engine states: my hand, the trick in progress, and the engine's legal set.
        states = build_worlds(know, rules, worlds, np.random.default_rng(seed))
        assert (states.hands[:, 0] == true_hands[0]).all()
        assert (states.trick_size == true.trick_size[0]).all()
        assert (states.trick_index == true.trick_index[0]).all()
        check = Engine(rules.replace(target_score=None, cupids_arrow=False), worlds)
        check.install(states)
        assert (check.state.legal == true.legal[0]).all()
        assert t == rules.num_tricks


def test_a_deal_with_no_void_shown_is_uniform_over_the_open_places():
    """Before any void is shown every unseen card is with each other seat in proportion
    to the cards that seat still holds (and in the dead pile in proportion to its size)."""
    rules = Rules(num_players=5)  # 10 cards each, 2 dead
    engine = Engine(rules, 1)
    engine.reset(4)
    engine.step(greedy_moves(engine))  # seat 0 leads: the next seat holds 10, the others 10
    engine.step(greedy_moves(engine))  # ... and now seat 1 has played too
    obs = observe(engine, engine.state.current_player)
    know = knowledge(decode(obs), np.arange(1), 5)
    assert not know["voids"].any()
    n = 20_000
    hands, dead = sample_hidden(know, rules, n, np.random.default_rng(0))
    slots = np.concatenate([hands[:, 1:], dead[:, None]], axis=1)  # (n, 5)
    room = np.bitwise_count(slots[0]).astype(float)  # the same in every world
    share = room / room.sum()
    unseen = np.bitwise_or.reduce(slots, axis=1)[0]
    for card in C.cards_of(int(unseen))[:8]:
        where = np.argmax((slots >> np.uint64(card)) & np.uint64(1), axis=1)  # (n,)
        freq = np.bincount(where, minlength=5) / n
        assert np.all(np.abs(freq - share) < 5 * np.sqrt(share * (1 - share) / n)), (card, freq)


def test_worlds_of_decisions_with_and_without_voids_are_drawn_together_right():
    """One call for many decisions, some with voids shown and some without: every row
    keeps its own hand sizes and voids and deals exactly its own unseen cards."""
    rules = Rules(num_players=4)
    engine = random_positions(rules, 24, 11)
    st = engine.state
    games = np.flatnonzero((st.phase == Phase.PLAY) & ~st.match_over)
    one = Engine(rules, len(games))
    one.state = st.take(games)
    view = decode(observe(one, one.state.current_player))
    know = knowledge(view, np.arange(len(games)), 4)
    has_void = know["voids"][:, 1:].any(axis=(1, 2))
    assert has_void.any() and not has_void.all()
    w = 16
    hands, dead = sample_hidden(know, rules, w, np.random.default_rng(1))
    mine = np.repeat(know["hand"], w)
    played = np.repeat(np.bitwise_or.reduce(know["played_by"], axis=1), w)
    unseen = np.uint64(rules.deck_mask) & ~mine & ~played
    assert (np.bitwise_or.reduce(hands, axis=1) | dead == unseen).all()
    assert (np.bitwise_count(hands).sum(axis=1) + np.bitwise_count(dead)
            == np.bitwise_count(unseen)).all()
    size = rules.hand_size - np.bitwise_count(np.repeat(know["played_by"], w, axis=0))
    assert (np.bitwise_count(hands[:, 1:]) == size[:, 1:]).all()
    voids = np.repeat(know["voids"], w, axis=0)  # (R, P, 4)
    in_suit = (hands[:, :, None] & C.SUIT_MASKS[None, None, :]) != 0
    assert not (in_suit & voids).any()


@pytest.mark.parametrize("name", ["smoor-4", "smoor-3", "trump", "partners",
                                  "hearts-4-no-pass", "hearts-4", "hearts-5"])
def test_the_true_world_shows_every_seat_its_real_observation(name):
    """Built with the true hidden cards, a world is the real position: the order of
    play, the leaders and winners of the finished tricks, the passes, so every seat's
    observation of it is its real one (with passing, but for the passes between the
    other seats, which the observer cannot know)."""
    rules = RULE_SETS[name]
    p = rules.num_players
    engine = random_positions(rules, 24, 3)
    st = engine.state
    games = np.flatnonzero((st.phase == Phase.PLAY) & ~st.match_over)
    assert len(games) >= 10
    for game in games:
        obs, seat, one = _mine_and_truth(engine, int(game))
        know = knowledge(decode(obs), np.arange(1), p)
        rel = (seat + np.arange(p)) % p
        world = build_worlds(know, rules, 1, np.random.default_rng(0),
                             hidden=(one.state.hands[:, rel], one.state.dead.copy()))
        twin = Engine(rules.replace(target_score=None, cupids_arrow=False), 1)
        twin.install(world)
        for k in range(p):
            real = split_observation(observe(one, int(rel[k]))[0])
            seen = split_observation(observe(twin, k)[0])
            for block in real:
                if k and rules.passing and block in ("passed", "received"):
                    continue
                assert np.array_equal(real[block], seen[block]), (int(game), k, block)


# ------------------------------------------------------------ weighed beliefs
def _greedy_round(rules: Rules, batch: int, seed: int, plies: int) -> Engine:
    """Games where every seat played the greedy card for ``plies`` plays (Hearts: no pass)."""
    engine = Engine(rules, batch)
    engine.reset(seed)
    for _ in range(plies):
        engine.step(greedy_moves(engine))
    return engine


@pytest.mark.parametrize("name", ["smoor-3", "smoor-4", "smoor-5", "trump", "partners",
                                  "bidding", "hearts-3", "hearts-4-no-pass", "hearts-5",
                                  "hearts-queen-options"])
def test_the_history_in_the_observation_replays_every_greedy_play(name):
    """Every seat played greedy: in the true world the play model (with almost no noise)
    gives every observed play probability ~1, so the order of play, the leaders, the
    hands at each play and the legal sets are all rebuilt right from the observation."""
    rules = RULE_SETS[name].replace(passing=False) if RULE_SETS[name].is_hearts \
        else RULE_SETS[name]
    p = rules.num_players
    for plies in (1, p + 1, 3 * p - 1, p * rules.num_tricks - 2):
        engine = _greedy_round(rules, 16, seed=plies, plies=plies)
        st = engine.state
        seat = st.current_player.astype(np.int64)
        view = decode(observe(engine, seat))
        know = knowledge(view, np.arange(16), p)
        rel = (seat[:, None] + np.arange(p)) % p  # (16, P) absolute seat of relative seat k
        true = st.hands[np.arange(16)[:, None], rel]
        log_like = play_likelihood(know, true, rules, epsilon=1e-9)
        assert np.abs(log_like).max() < 1e-6, plies
        # And the trick of each card is the engine's.
        for g in range(16):
            for t in range(int(st.trick_index[g])):
                assert sorted(np.flatnonzero(view["card_trick"][g] == t)) == sorted(
                    st.trick_cards[g, t].tolist())


def test_the_true_world_is_likelier_than_the_sampled_ones_when_seats_play_greedy():
    """Seats that played greedy: the true world explains their plays better than most
    sampled worlds, the more so the less noise the model assumes; with EPS = 1 (random
    play) only the number of legal cards at each play tells worlds apart."""
    rules = Rules(target_score=None)
    engine = _greedy_round(rules, 32, seed=5, plies=17)
    st = engine.state
    seat = st.current_player.astype(np.int64)
    know = knowledge(decode(observe(engine, seat)), np.arange(32), 4)
    true = st.hands[np.arange(32)[:, None], (seat[:, None] + np.arange(4)) % 4]
    hands, _ = sample_hidden(know, rules, 64, np.random.default_rng(0))
    margin = {}
    for eps in (0.1, 0.5, 1.0):
        sampled = play_likelihood(know, hands, rules, eps).reshape(32, 64)
        margin[eps] = (play_likelihood(know, true, rules, eps)[:, None] - sampled).mean()
    assert margin[0.1] > margin[0.5] > margin[1.0] and margin[0.5] > 1.0


def test_a_weighed_belief_keeps_distinct_consistent_and_likelier_worlds():
    rules = Rules(game="hearts", passing=False, target_score=None)
    engine = _greedy_round(rules, 8, seed=2, plies=14)
    seat = engine.state.current_player.astype(np.int64)
    know = knowledge(decode(observe(engine, seat)), np.arange(8), 4)
    weighed = Belief("greedy:0.2", candidates=8).sample(know, rules, 16, np.random.default_rng(1))
    plain = Belief("uniform").sample(know, rules, 16, np.random.default_rng(1))
    for hands, _ in (weighed, plain):
        assert hands.shape == (8 * 16, 4)
    mean = [play_likelihood(know, h, rules, 0.2).mean() for h, _ in (weighed, plain)]
    assert mean[0] > mean[1] + 1.0
    for d in range(8):  # distinct worlds (no repeats), each a full deal of the unseen cards
        rows = weighed[0][d * 16:(d + 1) * 16]
        assert len({tuple(r) for r in rows.tolist()}) == 16
        unseen = np.bitwise_or.reduce(rows, axis=1) | weighed[1][d * 16:(d + 1) * 16]
        assert (unseen == unseen[0]).all()


@pytest.mark.parametrize("spec, candidates", [("greedy:0", 4), ("greedy:1.5", 4),
                                              ("random", 4), ("uniform:0.1", 4),
                                              ("greedy:x", 4), ("greedy:0.1", 0)])
def test_bad_beliefs_are_clear_errors(spec, candidates):
    with pytest.raises(ValueError, match="belief"):
        make_agent("mc", belief=spec, belief_candidates=candidates)


# ------------------------------------------------------------------ no peeking
def _swap_hidden(state, seat: int, rng: np.random.Generator):
    """A copy with two hidden cards of one suit swapped between two other seats (voids kept:
    both seats hold that suit; passed and received cards untouched), or None."""
    p = state.hands.shape[1]
    others = [s for s in range(p) if s != seat]
    for i in others:
        for j in others:
            if i >= j:
                continue
            for suit in rng.permutation(4):
                # Cards still held as dealt (not received in a pass): dealt and hands agree.
                a = int(state.hands[0, i] & state.dealt[0, i]) & int(C.SUIT_MASKS[suit])
                b = int(state.hands[0, j] & state.dealt[0, j]) & int(C.SUIT_MASKS[suit])
                if a and b:
                    ca, cb = a & -a, b & -b
                    new = state.copy()
                    for arr in (new.hands, new.dealt):
                        arr[0, i] = np.uint64((int(arr[0, i]) & ~ca) | cb)
                        arr[0, j] = np.uint64((int(arr[0, j]) & ~cb) | ca)
                    return new
    return None


@pytest.mark.parametrize("name", ["smoor-4", "smoor-3", "trump", "hearts-4-no-pass",
                                  "hearts-5"])
@pytest.mark.parametrize("agent", ["mc", "ismcts", "mc-belief", "ismcts-belief"])
def test_search_agents_do_not_peek_at_hidden_cards(name, agent):
    rules = RULE_SETS[name]
    checked = 0
    for seed in range(40):
        engine = random_positions(rules, 1, seed)
        st = engine.state
        if st.match_over[0] or st.phase[0] != Phase.PLAY or engine.legal_mask[0].sum() < 2:
            continue
        seat = int(st.current_player[0])
        other = _swap_hidden(st, seat, np.random.default_rng(seed))
        if other is None:
            continue
        twin = Engine(rules, 1)
        twin.state = other
        twin.refresh_legal()
        obs_a, obs_b = observations(engine), observations(twin)
        assert (obs_a["observation"] == obs_b["observation"]).all()
        assert (obs_a["action_mask"] == obs_b["action_mask"]).all()
        assert (st.hands != other.hands).any()
        belief = "greedy:0.2" if agent.endswith("belief") else "uniform"
        player = make_agent("mc", worlds=16, belief=belief) if agent.startswith("mc") \
            else small_ismcts(belief=belief)
        a = player.act(obs_a, np.random.default_rng(seed))
        b = player.act(obs_b, np.random.default_rng(seed))
        assert a.tolist() == b.tolist()
        checked += 1
    assert checked >= 5


@pytest.mark.parametrize("name", ["smoor-4", "trump", "partners", "hearts-4", "hearts-5"])
def test_mc_replies_by_an_agent_on_the_worlds_observations(name):
    """The greedy agent reading the worlds' observations replies exactly as the greedy
    rollout reading the engine: mc with greedy replies and greedy rollouts values every
    move as with greedy rollouts alone."""
    rules = RULE_SETS[name]
    engine = random_positions(rules, 16, seed=2)
    st = engine.state
    live = np.flatnonzero(~st.match_over & (st.phase == Phase.PLAY))
    obs = {k: v[live] for k, v in observations(engine).items()}
    plain = make_agent("mc", worlds=8, rollout="greedy")
    replied = make_agent("mc", worlds=8, rollout="greedy", reply="greedy")
    a, va = plain.evaluate(obs, np.random.default_rng(5))
    b, vb = replied.evaluate(obs, np.random.default_rng(5))
    assert a.tolist() == b.tolist()
    np.testing.assert_array_equal(va, vb)
    # The same agent playing every seat to the end of the round (rollout_agent).
    played = make_agent("mc", worlds=8, rollout="greedy", rollout_agent="greedy")
    c, vc = played.evaluate(obs, np.random.default_rng(5))
    assert a.tolist() == c.tolist()
    np.testing.assert_array_equal(va, vc)
    # A different agent does play: random replies and playouts change the values.
    other = make_agent("mc", worlds=8, rollout="greedy", rollout_agent="random")
    assert not np.array_equal(va, other.evaluate(obs, np.random.default_rng(5))[1],
                              equal_nan=True)


def _best_reply(rules: Rules, state, seat: int) -> int:
    """The card that gives ``seat`` the best round in this very world, each legal card
    played out by the greedy rules (deterministic), found one card at a time."""
    best, best_value = -1, -np.inf
    for card in np.flatnonzero(C.mask_to_bool(state.legal)[0]):
        twin = Engine(rules, 1)
        twin.state = state.copy()
        twin.refresh_legal()
        twin.step([card])
        while not twin.state.match_over[0]:
            twin.step(greedy_moves(twin))
        st = twin.state
        points = twin.round_score(st.won, st.dead, st.bids, st.cursed_suit)[0, seat]
        value = -points if rules.is_hearts else points
        if value > best_value:  # ties: the lowest card
            best, best_value = int(card), value
    return best


@pytest.mark.parametrize("name", ["smoor-4", "trump", "partners", "pips", "hearts-4"])
def test_replies_by_search_are_each_replying_seats_best_card_in_the_world(name):
    """mc's reply_rollouts: every other seat, up to seat 0's next turn, plays the card
    that is best for itself when each of its legal cards is played out in the world;
    checked one game and one card at a time against the batched search."""
    rules = rollout_rules(RULE_SETS[name])
    engine = random_positions(rules, 24, seed=4)
    st = engine.state
    keep = np.flatnonzero(~st.match_over & (st.phase == Phase.PLAY))
    batch = Engine(rules, len(keep))
    batch.state = st.take(keep)
    batch.refresh_legal()
    expected = []  # per game, the cards the other seats play before seat 0's turn
    for g in range(len(keep)):
        one = Engine(rules, 1)
        one.state = batch.state.take([g])
        one.refresh_legal()
        cards = []
        while one.state.current_player[0] != 0 and not one.state.match_over[0]:
            cards.append(_best_reply(rules, one.state, int(one.state.current_player[0])))
            one.step(cards[-1:])
        expected.append(cards)
    before = batch.state.played.copy()
    Playouts(RolloutPolicy("greedy"), reply_rollouts=1).search_replies(
        batch, rules, np.random.default_rng(0))
    after = batch.state
    assert ((after.current_player == 0) | after.match_over).all()
    for g, cards in enumerate(expected):
        assert int(after.played[g] & ~before[g]) == C.mask_of(cards), g
    assert sum(map(len, expected)) >= 10  # enough replies to test
    # The agent option: searched replies change mc's values; bad options are errors.
    obs = {k: v[keep] for k, v in observations(engine).items()}
    plain = make_agent("mc", worlds=8, rollout="greedy").evaluate(obs, np.random.default_rng(5))
    searched = make_agent("mc", worlds=8, rollout="greedy", reply_rollouts=1).evaluate(
        obs, np.random.default_rng(5))
    assert not np.array_equal(plain[1], searched[1], equal_nan=True)
    for bad in ({"reply_rollouts": -1}, {"reply_rollouts": 1, "reply": "greedy"}):
        with pytest.raises(ValueError, match="reply"):
            make_agent("mc", **bad)


# ---------------------------------------------------------------- determinism
@pytest.mark.parametrize("rollout", ["random", "greedy"])
def test_mc_is_deterministic_for_a_seed(rollout):
    engine = random_positions(Rules(target_score=None), 12, seed=9)
    live = np.flatnonzero(~engine.state.match_over)
    obs = {k: v[live] for k, v in observations(engine).items()}
    runs = [make_agent("mc", worlds=16, rollout=rollout).act(obs, np.random.default_rng(42))
            for _ in range(2)]
    assert runs[0].tolist() == runs[1].tolist()


def test_ismcts_is_deterministic_for_a_seed():
    engine = random_positions(Rules(game="hearts", target_score=None), 12, seed=9)
    live = np.flatnonzero(~engine.state.match_over)
    obs = {k: v[live] for k, v in observations(engine).items()}
    runs = [small_ismcts().act(obs, np.random.default_rng(42)) for _ in range(2)]
    assert runs[0].tolist() == runs[1].tolist()


@pytest.mark.parametrize("name", ["smoor-4", "trump", "partners", "hearts-4"])
@pytest.mark.parametrize("seed_worlds", [0, 4])
def test_ismcts_counts_a_moves_availability_in_every_walk_where_it_was_legal(name, seed_worlds):
    """UCB's availability (single-observer ISMCTS): a node's move was legal in every walk
    that took it and in at most every walk through its parent, so visits <= availability
    <= the parent's visits, also for the nodes a wave creates (they count the walks of
    that wave); at the root every move is legal in every world, so after the seeding wave
    a root move was available to all its playouts and to every later walk."""
    rules = RULE_SETS[name]
    engine = random_positions(rules, 32, seed=5)
    live = np.flatnonzero(~engine.state.match_over & (engine.state.phase == Phase.PLAY))
    obs = {k: v[live] for k, v in observations(engine).items()}
    agent = small_ismcts(seed_worlds=seed_worlds, prior=None)
    mask, o, view, _, search = agent._prepare(obs)
    [(play_rules, _, rows)] = agent._groups(o, view, np.flatnonzero(search))
    assert len(rows) >= 8
    tree = agent._grow(view, rows, mask[rows], play_rules, np.random.default_rng(1))
    d, nodes = len(rows), len(tree.visits)
    parent = np.full(nodes, -1)
    rows_, cards = np.nonzero(tree.child >= 0)
    parent[tree.child[rows_, cards]] = rows_
    kids = np.arange(d, nodes)
    assert (parent[kids] >= 0).all()
    assert (tree.visits[kids] >= 1).all()
    np.testing.assert_array_less(tree.visits[kids] - 0.5, tree.avail[kids])  # visits <= avail
    inner = kids[parent[kids] >= d]
    assert len(inner) > 0
    np.testing.assert_array_less(tree.avail[inner] - 0.5, tree.visits[parent[inner]])
    if seed_worlds:
        legal = mask[rows, :52].sum(axis=1)  # (D,)
        at_root = kids[parent[kids] < d]
        np.testing.assert_array_equal(
            tree.avail[at_root], seed_worlds * legal[parent[at_root]] + agent.iterations)


def grow_paired_root(name: str, seed: int, monkeypatch, **options):
    """``ismcts._grow_paired`` on the play positions of 32 random games of
    ``RULE_SETS[name]``: (observations, agent, masks of the searched decisions, the
    trees, which root moves ran to the end, the hands (B, P) of every state installed
    into an engine, round by round)."""
    engine = random_positions(RULE_SETS[name], 32, seed=seed)
    live = np.flatnonzero(~engine.state.match_over & (engine.state.phase == Phase.PLAY))
    obs = {k: v[live] for k, v in observations(engine).items()}
    agent = small_ismcts(prior=None, **options)
    mask, o, view, _, search = agent._prepare(obs)
    [(play_rules, _, rows)] = agent._groups(o, view, np.flatnonzero(search))
    installed: list[np.ndarray] = []
    install = Engine.install
    monkeypatch.setattr(Engine, "install", lambda self, state: (
        installed.append(state.hands.copy()), install(self, state))[1])
    tree, alive = agent._grow_paired(view, rows, mask[rows], play_rules,
                                     np.random.default_rng(1), agent.root == "halving")
    return obs, agent, mask[rows], tree, alive, installed


@pytest.mark.parametrize("name", ["pips", "trump", "hearts-4"])
def test_ismcts_paired_root_plays_every_legal_move_in_every_world(name, monkeypatch):
    """root="paired": each wave plays every legal root move in the same worlds (walks // 8
    a decision), so all root moves of a decision end with the same visits, about
    iterations / legal moves of them (1 to 8 waves); the seat's later moves grow a tree
    below each (visits <= availability there), and the choice is a legal move of the
    best mean value, reproducible from the generator."""
    obs, agent, mask, tree, _, installed = grow_paired_root(name, 6, monkeypatch,
                                                            root="paired", iterations=96)
    live = np.arange(len(obs["action_mask"]))
    d, k = len(mask), agent.walks // 8
    dec, card = np.nonzero(mask[:, :52])
    # Wave 0 holds every (decision, legal card) pair in k worlds, row pair * k + world:
    # the moves of a decision meet the same k deals (common random numbers).
    hands = installed[0].reshape(len(dec), k, -1)  # (pairs, worlds, P)
    first = np.searchsorted(dec, dec)  # (pairs,) the decision's first pair
    np.testing.assert_array_equal(hands, hands[first])
    assert (hands[:, 0] != hands[:, 1]).any()  # and the worlds differ
    kids = tree.child[dec, card]
    np.testing.assert_array_equal(kids, d + np.arange(len(dec)))
    legal = mask[:, :52].sum(axis=1)  # (D,)
    waves = np.clip(np.rint(96 / (legal * k)), 1, 8)
    np.testing.assert_array_equal(tree.visits[kids], k * waves[dec])
    below = np.arange(d + len(dec), len(tree.visits))
    assert len(below) > 0
    np.testing.assert_array_less(tree.visits[below] - 0.5, tree.avail[below])
    runs = [agent.act(obs, np.random.default_rng(4)) for _ in range(2)]
    assert runs[0].tolist() == runs[1].tolist()
    assert obs["action_mask"][np.arange(len(live)), runs[0]].all()


@pytest.mark.parametrize("name", ["pips", "hearts-4", "bidding"])
def test_ismcts_halving_runs_the_better_half_of_the_root_moves_on_each_round(
        name, monkeypatch):
    """root="halving" (sequential halving): ceil(log2 A) rounds for A legal moves, the
    better half of the running moves going on after each round but the last, so
    ceil(A / 2) ... ceil(A / 2 ** (rounds - 1)) moves reach the end, each in more worlds
    than any move dropped; in a round every running move meets the same worlds, each
    round's share of the iterations split among them; the choice is a running move."""
    obs, agent, mask, tree, alive, installed = grow_paired_root(name, 7, monkeypatch,
                                                                root="halving",
                                                                iterations=192)
    live = np.arange(len(obs["action_mask"]))
    d = len(mask)
    dec, card = np.nonzero(mask[:, :52])
    kids = d + np.arange(len(dec))
    legal = mask[:, :52].sum(axis=1)  # (D,)
    rounds = np.maximum(np.ceil(np.log2(legal)), 1).astype(int)  # (D,)
    assert (rounds > 1).any()
    start = 0  # round 0: decision by decision, every move in the same worlds
    for i in range(d):
        moves = kids[dec == i]
        running = legal[i]
        for _ in range(rounds[i] - 1):
            running = -(-running // 2)
        assert alive[dec == i].sum() == running
        seen = tree.visits[moves]
        assert len(set(seen[alive[dec == i]])) == 1
        if (~alive[dec == i]).any():
            assert seen[~alive[dec == i]].max() < seen[alive[dec == i]].min()
        assert seen.sum() <= agent.iterations + legal[i] * rounds[i]
        worlds = max(agent.iterations // rounds[i] // legal[i], 1)
        block = installed[0][start:start + legal[i] * worlds].reshape(legal[i], worlds, -1)
        np.testing.assert_array_equal(block, block[[0] * legal[i]])
        start += legal[i] * worlds
    assert start == len(installed[0])
    actions = agent.act(obs, np.random.default_rng(2))
    assert obs["action_mask"][np.arange(len(live)), actions].all()


@pytest.mark.parametrize("name", ["trump", "partners"])
def test_ismcts_halving_root_decides_alike_whatever_the_walks(name):
    """``walks`` sets the width of the UCB root's waves; a halving root's rounds are set
    by ``iterations`` and the legal moves alone, so its decisions do not depend on it
    (the Smoorverliefd variants' measured rows hold for any ``walks``)."""
    engine = random_positions(RULE_SETS[name], 12, seed=4)
    live = np.flatnonzero(~engine.state.match_over)
    obs = {k: v[live] for k, v in observations(engine).items()}
    runs = [small_ismcts(root="halving", walks=walks).act(obs, np.random.default_rng(3))
            for walks in (8, 16, 48)]
    assert runs[0].tolist() == runs[1].tolist() == runs[2].tolist()


@pytest.mark.parametrize("options", [{"iterations": 0}, {"walks": 0}, {"exploration": -1},
                                     {"rollout": "smart"}, {"seed_worlds": -1},
                                     {"time_budget": 0}, {"iterations": True},
                                     {"root": "flat"}, {"bid_worlds": 0},
                                     {"value": "spite"}])
def test_ismcts_rejects_bad_options(options):
    with pytest.raises((ValueError, TypeError)):
        make_agent("ismcts", **options)


def test_ismcts_relative_value_counts_the_points_an_opponent_loses():
    """value="relative": a seat's points less its opponents' mean (with partners: the other
    team's), so a heart kept from a would-be sweeper, or a missed bid forced on another
    seat, is worth what it costs that seat; value="own" counts only the seat's points."""
    from agents.ismcts import _value_scale, _values

    troef = Rules(trump_hearts=True, num_players=3, target_score=None)
    scale = _value_scale(troef)  # 34: a swept round's 17 points, doubled
    swept, blocked = np.array([0.0, 34.0, 0.0]), np.array([1.0, 16.0, 0.0])
    own = _values(np.stack([swept, blocked]), troef)  # (2, 3)
    rel = _values(np.stack([swept, blocked]), troef, relative=True)
    assert own[1, 0] - own[0, 0] == pytest.approx(1 / scale)  # one heart more
    # Relative: one heart more, and 18 points less for the seat that would have swept.
    assert rel[1, 0] - rel[0, 0] == pytest.approx((1 - (16 - 34) / 2) / (2 * scale))
    assert rel[0].tolist() == pytest.approx([0.5 - 17 / 68, 0.5 + 34 / 68, 0.5 - 17 / 68])
    hearts = Rules(game="hearts", num_players=4, target_score=None)
    moon = _values(np.array([[0.0, 26.0, 26.0, 26.0]]), hearts, relative=True)
    # Penalty points: less is better; the shooter is 26 ahead of the mean of the others.
    assert moon[0].tolist() == pytest.approx([1.0] + [0.5 - (26 - 52 / 3) / 52] * 3)
    partners = Rules(partners=True, num_players=4, target_score=None)
    team = _values(np.array([[4.0, 13.0, 4.0, 13.0]]), partners, relative=True)
    assert team[0].tolist() == pytest.approx([0.5 - 9 / 68, 0.5 + 9 / 68] * 2)


@pytest.mark.parametrize("value, prior, leaf, relative", [
    ("own", None, None, False), ("relative", None, None, True),
    ("relative", "ppo:checkpoint=ppo_smoorverliefd", None, True),
    ("auto", None, None, True),  # no specialist at the root (the Smoorverliefd variants)
    ("auto", "auto", None, True),  # the one network there: still relative
    ("auto", "specialists", "prior", True),  # leaf="prior" with no prior: no leaf values
    ("auto", "auto", "prior", False),  # the network's value head at the leaves: own
    ("auto", "ppo:checkpoint=ppo_smoorverliefd", None, False)])  # a given prior: own
def test_ismcts_searches_with_the_value_it_is_given(monkeypatch, value, prior, leaf, relative):
    """Every value the tree is credited with (walks, the seeding wave, the paired
    rounds) is computed as ``value`` asks; ``"auto"``: relative where no specialist or
    given prior plays and no leaf is valued by a network."""
    import agents.ismcts as ismcts

    asked = []

    def spy(points, rules, relative=False):
        asked.append(relative)
        return ismcts._values.__wrapped__(points, rules, relative)

    spy.__wrapped__ = ismcts._values
    monkeypatch.setattr(ismcts, "_values", spy)
    engine = random_positions(Rules(trump_hearts=True, num_players=3, target_score=None),
                              16, seed=2)
    live = np.flatnonzero(~engine.state.match_over & (engine.state.phase == Phase.PLAY))
    obs = {k: v[live] for k, v in observations(engine).items()}
    for root in ("ucb", "halving"):
        small_ismcts(value=value, root=root, prior=prior, leaf=leaf).act(
            obs, np.random.default_rng(0))
    assert asked and set(asked) == {relative}


@pytest.mark.parametrize("value, span", [("own", 1.0), ("relative", 2.0)])
def test_ismcts_weighs_a_prior_in_the_units_of_its_value(monkeypatch, value, span):
    """The prior's bonus (points) joins the root's scores divided as the value divides
    points: by the value scale for the seat's own points, by twice it for relative
    values (which span twice the range), so a prior weighs the same with either."""
    import agents.ismcts as ismcts
    from agents.mc import Prior

    bonuses, biases = [], []
    bonus, walk = Prior.bonus, ismcts.ISMCTSAgent._walk
    def spy_bonus(self, *args):
        bonuses.append(bonus(self, *args))
        return bonuses[-1]

    monkeypatch.setattr(Prior, "bonus", spy_bonus)

    def spy(self, engine, node, rules, child, visits, total, avail, size, rng,
            root_bias=None, relative=False):
        biases.append(root_bias)
        return walk(self, engine, node, rules, child, visits, total, avail, size, rng,
                    root_bias, relative)

    monkeypatch.setattr(ismcts.ISMCTSAgent, "_walk", spy)
    rules = Rules(num_players=4, target_score=None)
    engine = random_positions(rules, 8, seed=3)
    live = np.flatnonzero(~engine.state.match_over & (engine.state.phase == Phase.PLAY))
    obs = {k: v[live] for k, v in observations(engine).items()}
    small_ismcts(value=value, root="ucb", prior="ppo:checkpoint=ppo_smoorverliefd").act(
        obs, np.random.default_rng(0))
    assert len(bonuses) == 1 and biases
    scale = ismcts._value_scale(rules)
    for bias in biases:
        np.testing.assert_allclose(bias, bonuses[0][:, :52] / (span * scale))


@pytest.mark.parametrize("spec", ["greedy:1.5", "random:0.1", "greedy:x", "best"])
def test_rollout_policy_rejects_bad_specs(spec):
    from agents.rollout import RolloutPolicy

    with pytest.raises(ValueError, match="rollout"):
        RolloutPolicy(spec)


# ---------------------------------------------------------- strength smoke test
def test_mc_collects_more_hearts_than_random_on_fixed_deals():
    """Fixed seeds (deterministic, not flaky); a generous margin. Strength proper is
    measured by experiments/agent_strength.py."""
    from experiments.agent_strength import play_rounds

    agents = {"mc": make_agent("mc", worlds=16), "random": make_agent("random")}
    pts = play_rounds(Rules(target_score=None), ["mc", "random", "random", "random"], 12,
                      seed=0, agents=agents, batch=48)
    mc, rand = pts[:, :, 0].mean(), pts[:, :, 1:].mean()
    assert mc > rand + 1.0


def test_agent_strength_times_every_agent_of_the_ladder(tmp_path):
    """Issue 43's tables give decision times for every agent, policies as well as searches."""
    from experiments import agent_strength

    result = agent_strength.main(["--ladder", "random", "greedy", "--rule-sets", "hearts",
                                  "--players", "4", "--deals", "1", "--workers", "1",
                                  "--timing-decisions", "3", "--out", str(tmp_path / "s.json")])
    timed = [(t["agent"], t["rule_set"], t["decisions"]) for t in result["decision_time"]]
    assert timed == [("random", "hearts", 3), ("greedy", "hearts", 3)]


def test_agent_strength_plays_each_rule_set_at_the_player_counts_it_allows():
    """Partner is a 4-player game: the ladder skips it at 3 and 5, as the preset says."""
    from experiments.agent_strength import Args, tables

    args = Args(ladder=["random", "greedy"], rule_sets=["partners", "hearts"], players=[3, 4, 5])
    assert [(job["rule_set"], job["players"]) for job in tables(args)] == [
        ("partners", 4), ("hearts", 3), ("hearts", 4), ("hearts", 5)]


def test_agent_strength_plays_the_rule_options_it_is_given(tmp_path, monkeypatch):
    """--rule-options sets rule flags on every table and timed game (Hearts' queen
    options, which no preset has): the engine is given those rules, and the JSON records
    them and the code that played."""
    from agents.evaluation.runs import code_fingerprint
    from experiments import agent_strength

    played = []

    class Recording(agent_strength.Engine):
        def __init__(self, rules, *a, **k):
            played.append(rules)
            super().__init__(rules, *a, **k)

    monkeypatch.setattr(agent_strength, "Engine", Recording)
    result = agent_strength.main([
        "--ladder", "random", "greedy", "--rule-sets", "hearts_no_passing", "--players", "3",
        "--deals", "1", "--workers", "1", "--timing-decisions", "2",
        "--rule-options", "queen_breaks_hearts=true", "queen_never_first_trick=true",
        "--out", str(tmp_path / "s.json")])
    assert {(r.num_players, r.queen_breaks_hearts, r.queen_never_first_trick, r.passing,
             r.target_score) for r in played} == {(3, True, True, False, None),
                                                  (4, True, True, False, None)}
    rules = [row["rules"] for row in result["ladder"]]
    rules += [t["rules"] for t in result["decision_time"]]
    assert len(rules) == 3 and all(r["queen_breaks_hearts"] and r["queen_never_first_trick"]
                                   and r["passing"] is False and r["game"] == "hearts"
                                   for r in rules)
    assert result["args"]["rule_options"] == ["queen_breaks_hearts=true",
                                              "queen_never_first_trick=true"]
    assert result["code"] == code_fingerprint()


@pytest.mark.parametrize("rule_sets, players, options, message", [
    (["hearts"], ["4"], ["queen_breaks_hearts"], "is not field=value"),
    (["hearts"], ["4"], ["queen_break_hearts=true"], "names no rule flag"),
    (["bidding"], ["4"], ["bid_bonus=20"], "names no rule flag"),  # not in the observation
    (["hearts"], ["4"], ["num_players=3"], "names no rule flag"),
    (["hearts"], ["4"], ["queen_breaks_hearts=1"], "must be true or false"),
    (["hearts"], ["4"], ["queen_breaks_hearts=true", "queen_breaks_hearts=true"],
     "sets queen_breaks_hearts twice"),
    (["hearts"], ["4"], ["trump_hearts=true"], "Smoorverliefd options cannot be used in Hearts"),
    (["hearts_no_passing"], ["4"], ["passing=true"], "hearts_no_passing sets passing itself"),
    (["hearts"], ["4"], ["queen_breaks_hearts=false"], "changes nothing in hearts"),
    (["hearts"], ["4"], ["passing=false"], "is the rule set hearts_no_passing"),
    (["smoorverliefd"], ["4"], ["bidding=true"], "is the rule set bidding"),
    # partners is timed at 4 players even where --players has no 4
    (["hearts", "partners"], ["3"], ["queen_breaks_hearts=true"],
     "Hearts options cannot be used in Smoorverliefd"),
])
def test_agent_strength_refuses_bad_rule_options_before_playing(tmp_path, capsys, rule_sets,
                                                                players, options, message):
    """A bad --rule-options entry is a usage error (exit 2) naming it; nothing is played."""
    from experiments import agent_strength

    out = tmp_path / "s.json"
    argv = ["--ladder", "random", "greedy", "--rule-sets", *rule_sets, "--players", *players,
            "--deals", "1", "--workers", "1", "--rule-options", *options, "--out", str(out)]
    with pytest.raises(SystemExit) as stop:
        agent_strength.main(argv)
    err = " ".join(capsys.readouterr().err.replace("│", " ").split())  # tyro wraps it
    assert stop.value.code == 2 and message in err
    assert not out.exists()


# ------------------------------------------------------------ rollout policies
@pytest.mark.parametrize("rules", RULE_SETS.values(), ids=RULE_SETS.keys())
def test_greedy_rollout_plays_what_the_greedy_agent_plays(rules):
    """One set of greedy rules: the rollout policy on engine arrays and the agent on
    observations choose the same card in every play-phase (and bid) position."""
    from agents.rollout import greedy_moves

    for seed in range(3):
        engine = random_positions(rules, 64, seed=seed)
        st = engine.state
        rows = np.flatnonzero(np.isin(st.phase, [Phase.PLAY, Phase.BID]) & ~st.match_over)
        obs = {k: v[rows] for k, v in observations(engine).items()}
        agent_moves = make_agent("greedy").act(obs, np.random.default_rng(0))
        assert (greedy_moves(engine)[rows] == agent_moves).all()
        # And in a batch of play-phase games only (a rollout's case, its own code path).
        play = np.flatnonzero(st.phase[rows] == Phase.PLAY)
        only_play = Engine(rules, len(play))
        only_play.install(st.take(rows[play]))
        assert (greedy_moves(only_play) == agent_moves[play]).all()


def _greedy_card(hand: str, trick: str = "", led: str = "", *, made: bool = False,
                 trump: bool = False, last: bool = False, partner: str | None = None) -> str:
    """The greedy card in Smoorverliefd for a hand (all of it legal unless it must follow
    ``led``), the trick so far, whether the seat has made its Blinde Liefde bid and (Partner)
    the card its partner played to the trick."""
    held = C.mask_of(C.parse_cards(hand))
    led_suit = -1 if not led else "CDHS".index(led)
    legal = held & int(C.SUIT_MASKS[led_suit]) if led and held & int(C.SUIT_MASKS[led_suit]) \
        else held
    trick_set = C.mask_of(C.parse_cards(trick))
    one = lambda x: np.array([x], np.uint64)  # noqa: E731
    partner_card = None if partner is None else np.array([C.parse_card(partner)])
    card = greedy_play(one(held), one(legal), one(trick_set), np.array([led_suit]),
                       np.array([last]), one(trick_set), hearts=False, trump_hearts=trump,
                       made_bid=np.array([made]), partner=partner_card)
    return C.card_str(int(card[0]))


def test_greedy_that_has_made_its_bid_takes_no_more_hearts():
    """Blinde Liefde: a seat that has won exactly the hearts it bid would lose its bid
    (10 points become -5) with one more, so it plays to take none."""
    # A heart trick it could win: it ducks under the 5, where it would otherwise win.
    assert _greedy_card("3H 9H KH", "5H", "H", made=False) == "KH"
    assert _greedy_card("3H 9H KH", "5H", "H", made=True) == "3H"
    # Void in the suit led: it sheds its highest heart (not its lowest plain card).
    assert _greedy_card("2H QH 5S AD", "KC", "C", made=False) == "AD"
    assert _greedy_card("2H QH 5S AD", "KC", "C", made=True) == "QH"
    # Hearts as trump, a trick already ruffed with 7H: the 9H would overruff and take it.
    assert _greedy_card("5H 9H 2S", "KC 7H", "C", made=False, trump=True) == "9H"
    assert _greedy_card("5H 9H 2S", "KC 7H", "C", made=True, trump=True) == "5H"
    # No heart to shed: the highest-ranked card that loses.
    assert _greedy_card("4S AD 9C", "KC", "C", made=True) == "9C"
    assert _greedy_card("4S AD", "KC", "C", made=True) == "AD"
    # Every card wins: the lowest.
    assert _greedy_card("9S KS", "2S", "S", made=True) == "9S"
    # Leading: the lowest card of its shortest plain suit, keeping hearts back.
    assert _greedy_card("2C 3C 9D KS AH", made=True) == "9D"
    assert _greedy_card("AH 2H", made=True) == "2H"
    # Its bid: 1 with the ace of hearts, else 0.
    hands = np.array([C.mask_of(C.parse_cards(h)) for h in ("AH 2C", "KH QH JH TH AS AD")],
                     np.uint64)
    assert greedy_bid(hands).tolist() == [1, 0]
    # Hearts won and bid, from the engine's arrays: exactly equal, and no bid is never made.
    won = C.mask_of(C.parse_cards("2H 5H 3C"))
    assert made_bid(np.array([won] * 4, np.uint64), np.array([2, 1, 3, -1])).tolist() == \
        [True, False, False, False]


def test_greedy_does_not_overtake_its_partners_trick_when_it_plays_last():
    """Partner Smoorverliefd: the partner's card wins the trick and I play last, so the
    trick is the team's already: my lowest card that does not overtake it."""
    # Alone, the last seat takes a heart trick with its lowest winner; beside a winning
    # partner it keeps the ace and plays low.
    assert _greedy_card("AH 3H", "5H KH", "H", last=True, partner="5H") == "AH"
    assert _greedy_card("AH 3H", "5H KH", "H", last=True, partner="KH") == "3H"
    # Hearts as trump, the partner's 7H ruffed the clubs: no overruff with the 9H.
    assert _greedy_card("9H 2S", "KC 7H", "C", last=True, trump=True, partner="KC") == "9H"
    assert _greedy_card("9H 2S", "KC 7H", "C", last=True, trump=True, partner="7H") == "2S"
    # Not last, an opponent still to play: the usual rules (win the heart trick high).
    assert _greedy_card("AH 3H", "5H KH", "H", last=False, partner="KH") == "AH"


def test_trick_best_is_the_engines_trick_winner():
    """``trick_best`` (the greedy rules' reading of a trick) names the card that the engine
    then awards the trick to, with and without hearts as trump."""
    from agents.greedy import trick_best

    for trump in (False, True):
        rules = Rules(trump_hearts=trump, target_score=None)
        engine = Engine(rules, 256)
        engine.reset(7)
        rng = np.random.default_rng(1)
        while not engine.state.match_over.all():
            st = engine.state
            if st.trick_size[0] == rules.num_players - 1:  # lockstep: the trick's last card
                before = st.trick_index.copy()
                move = engine.sample_legal(rng)
                full = st.trick_mask | C.CARD_BITS[move]
                best, _ = trick_best(full, st.led_suit.copy(), trump)
                engine.step(move)
                done = engine.state.trick_cards[np.arange(256), before]  # (B, P)
                winner = engine.state.trick_winner[np.arange(256), before]
                assert (done[np.arange(256), winner] == best).all()
            else:
                engine.step(engine.sample_legal(rng))


# ------------------------------------------------------------ Hearts inferences
@pytest.mark.parametrize("options", [{}, {"queen_never_first_trick": True},
                                     {"queen_breaks_hearts": True}, {"num_players": 3},
                                     {"num_players": 5}])
def test_inferred_voids_never_contradict_the_true_hands(options):
    """Every void the observation shows (including Hearts' inferences) is true: the seat
    holds no card of that suit, in thousands of random positions; and the inferences do
    fire (some void is shown that no failure to follow explains)."""
    rules = Rules(game="hearts", target_score=None, **options)
    p = rules.num_players
    inferred = 0
    for seed in range(6):
        engine = random_positions(rules, 256, seed=seed)
        st = engine.state
        for seat in range(p):
            voids = split_observation(observe(engine, seat))["voids"][:, :p] > 0.5  # (B, P, 4)
            hands = st.hands[:, (seat + np.arange(p)) % p]  # (B, P) by relative seat
            held = (hands[:, :, None] & C.SUIT_MASKS[None, None, :]) != 0
            assert not (voids & held).any()
            inferred += int(voids[:, :, 2].sum())  # a heart void is never shown otherwise
            inferred += int((voids[:, :, 3] & (st.trick_index[:, None] <= 1)).sum())
    assert inferred > 0


def _hearts_table(hands: list[str], cards: str):
    engine = Engine(Rules(game="hearts", passing=False, target_score=None), 1)
    engine.reset(0, dealers=[3], hands=[hands])
    for card in cards.split():
        engine.step(np.array(C.parse_cards(card)))
    return split_observation(observe(engine, 0))["voids"][0]  # (5, 4) by relative seat


def test_a_heart_led_before_hearts_broke_shows_the_leader_holds_only_hearts():
    voids = _hearts_table(["2C 3C 4C 5C 6C 7C 8C 9C TC JC QC KC 2S",
                           "2D 3D 4D 5D 6D 7D 8D 9D TD JD QD KD AD",
                           "3S 4S 5S 6S 7S 8S 9S TS JS QS KS AS 2H",
                           "AC 3H 4H 5H 6H 7H 8H 9H TH JH QH KH AH"], "2C 2D 3S AC 3H")
    assert voids[3].tolist() == [1, 1, 0, 1]  # seat 3 won with AC, then led an unbroken heart
    assert voids[1].tolist() == [1, 0, 0, 0] and voids[2].tolist() == [1, 0, 0, 0]


def test_a_point_card_on_the_first_trick_shows_the_seat_holds_only_points():
    voids = _hearts_table(["2C 3C 4C 5C 6C 7C 8C 9C TC JC QC KC AC",
                           "2D 3D 4D 5D 6D 7D 8D 9D TD JD QD KD AD",
                           "2S 3S 4S 5S 6S 7S 8S 9S TS JS QS KS AS",
                           "2H 3H 4H 5H 6H 7H 8H 9H TH JH QH KH AH"], "2C 2D 2S 2H")
    assert voids[3].tolist() == [1, 1, 0, 0]  # 2H off suit to the first trick: C, D void
    assert voids[1].tolist() == [1, 0, 0, 0]  # 2D: only clubs shown


def test_bid_worlds_script_measures_regret_against_the_reference(tmp_path):
    """experiments.bid_worlds: every seat's bid decision, valued by the reference search;
    the reference itself (same worlds) has no regret, fewer worlds have some or none."""
    from experiments import bid_worlds

    batches = bid_worlds.bid_decisions(3, deals=6, seed=2)
    assert len(batches) == 3 and all(len(b["action_mask"]) == 6 for b in batches)
    rows = bid_worlds.main(["--players", "3", "--deals", "6", "--worlds", "2", "16",
                            "--reference", "16", "--out", str(tmp_path / "b.json")])
    assert [(r["worlds"], r["decisions"]) for r in rows] == [(2, 18), (16, 18)]
    assert json.loads((tmp_path / "b.json").read_text()) == rows
    # The reference's own search (the same worlds) chooses its best bid every time;
    # one world a bid often misses it.
    same = bid_worlds.regrets(batches, [16, 1], 16, seed=5, search_seed=5)
    assert same[16]["mean_regret"] == 0 and same[16]["no_regret"] == 1
    assert same[1]["mean_regret"] > 0 and same[1]["no_regret"] < 1


def test_greedy_bids_script_plays_every_bid_out(tmp_path):
    """experiments.greedy_bids: the first bidder's points for every forced bid on the same
    deals (a bid changes the points: the bonus or penalty, and the play once it is made);
    the best bid of each deal bounds every rule."""
    from experiments import greedy_bids

    points, hand = greedy_bids.points_by_bid(4, deals=24, max_bid=3, seed=1)
    assert points.shape == (24, 4) and hand.shape == (24,)
    assert (np.bitwise_count(hand) == 13).all()
    assert (points.max(axis=1) > points.min(axis=1)).mean() > 0.5  # the bid matters
    rows = greedy_bids.main(["--players", "4", "--deals", "40", "--max-bid", "3",
                             "--out", str(tmp_path / "bids.json")])
    row = rows[0]
    assert len(row["each_bid"]) == 4
    for value in (row["greedy_bid"], row["previous_rule"], row["best_of_family"]["value"]):
        assert value <= row["oracle"] + 1e-9
    assert (tmp_path / "bids.json").exists()


@pytest.mark.parametrize("clock", ["wall", "cpu"])
def test_rollout_speed_script_measures_every_policy(tmp_path, clock):
    from experiments import rollout_speed

    rows = rollout_speed.main(["--batch-sizes", "16", "--rounds", "1", "--rule-sets",
                               "hearts_no_passing", "--clock", clock,
                               "--out", str(tmp_path / "r.json")])
    assert len(rows) == 1 and rows[0]["ratio"]["random"] == 1.0
    assert set(rows[0]["us_per_ply"]) == {"random", "greedy", "greedy:0.2"}
    assert all(v > 0 for v in rows[0]["us_per_ply"].values())


@pytest.mark.parametrize("rules, phase", [
    (Rules(bidding=True, target_score=None), Phase.BID),
    (Rules(cupids_arrow=True, target_score=30, num_players=3), Phase.CURSE)])
def test_mc_chooses_bids_and_cursed_suits_by_simulation(rules, phase):
    """Every legal bid (or suit) is played out over sampled worlds; the choice is the best."""
    engine = Engine(rules, 32)
    engine.reset(3)
    rng = np.random.default_rng(0)
    for _ in range(200):  # to the first decision of that phase (Cupid's Arrow: round 2)
        if (engine.state.phase == phase).any():
            break
        engine.step(engine.sample_legal(rng))
    rows = np.flatnonzero(engine.state.phase == phase)
    assert len(rows)
    obs = {k: v[rows] for k, v in observations(engine).items()}
    actions, values = small_mc(worlds=8).evaluate(obs, rng)
    legal = obs["action_mask"].astype(bool)
    assert np.isfinite(values[legal]).all() and np.isnan(values[~legal]).all()
    assert (actions == np.argmax(np.where(legal, values, -np.inf), axis=1)).all()
    # ismcts chooses them as mc does, in bid_worlds worlds (the same draws: same choices).
    for worlds in (8, 16):
        ismcts = small_ismcts(bid_worlds=worlds).act(obs, np.random.default_rng(5))
        flat = small_mc(worlds=worlds).act(obs, np.random.default_rng(5))
        assert ismcts.tolist() == flat.tolist()


def test_mc_prior_adds_the_policys_log_probabilities_to_the_values() -> None:
    """mc:prior=ppo: the choice is argmax(searched value + prior_weight log pi); the values
    returned are the search's own. Weight 0 is plain mc; a huge weight the policy's
    choice; a prior without log-probabilities is an error."""
    rules = Rules(game="hearts", num_players=4, target_score=None)
    engine = random_positions(rules, 24, seed=4)
    live = np.flatnonzero(~engine.state.match_over & (engine.state.phase == Phase.PLAY))
    obs = {k: v[live] for k, v in observations(engine).items()}
    policy = make_agent("ppo", checkpoint="ppo_hearts")
    logp = policy.log_policy(obs)  # (D, 70)
    assert np.allclose(np.exp(logp).sum(axis=1), 1.0)
    assert (logp[~obs["action_mask"]] == -np.inf).all()
    plain = make_agent("mc", worlds=8).evaluate(obs, np.random.default_rng(1))
    for weight in (0.0, 0.3, 1e6):
        agent = make_agent("mc", worlds=8, prior="ppo:checkpoint=ppo_hearts",
                           prior_weight=weight)
        actions, values = agent.evaluate(obs, np.random.default_rng(1))
        np.testing.assert_array_equal(values, plain[1])  # the search's values, unchanged
        searched = ~np.isnan(values)
        score = np.where(searched, values + weight * np.where(searched, logp, 0), -np.inf)
        expected = np.where(searched.any(axis=1), score.argmax(axis=1), plain[0])
        assert actions.tolist() == expected.tolist(), weight
    assert (actions[searched.any(axis=1)] == policy.act(obs, None)[searched.any(axis=1)]).all()
    assert (actions != plain[0]).any(), "the prior never changed a choice"
    with pytest.raises(ValueError, match="log_policy"):
        make_agent("mc", prior="greedy")
    with pytest.raises(ValueError, match="prior_weight"):
        make_agent("mc", prior="ppo:checkpoint=ppo_hearts", prior_weight=-1)


def test_ismcts_prior_steers_the_walks_at_the_root() -> None:
    """ismcts:prior=ppo (here ppo_hearts; the default prior=auto plays one_network in
    Hearts, a steering prior too): weight 0 searches
    exactly as ismcts without a prior; a huge weight sends
    every walk at the root to the policy's move, so that is the most visited one; a
    moderate weight changes some choices; a prior without log-probabilities is an error."""
    rules = Rules(game="hearts", num_players=4, target_score=None)
    engine = random_positions(rules, 24, seed=4)
    live = np.flatnonzero(~engine.state.match_over & (engine.state.phase == Phase.PLAY))
    obs = {k: v[live] for k, v in observations(engine).items()}
    choices = obs["action_mask"].sum(axis=1) > 1
    assert choices.sum() >= 8
    policy = make_agent("ppo", checkpoint="ppo_hearts").act(obs, None)
    small = {"iterations": 128, "walks": 64, "seed_worlds": 8, "root": "ucb", "value": "own"}

    def play(**options):
        return make_agent("ismcts", **{**small, **options}).act(obs, np.random.default_rng(3))

    plain = play(prior=None)
    # root="auto" (the default): a UCB root where a prior steers it, else halving.
    np.testing.assert_array_equal(play(root="auto"), play())
    np.testing.assert_array_equal(play(root="auto", prior=None),
                                  play(root="halving", prior=None))
    assert (play(root="halving", prior=None) != plain).any(), "the roots search alike"
    assert (play() != plain).any(), "the default (auto) prior changed nothing"
    prior = "ppo:checkpoint=ppo_hearts"
    np.testing.assert_array_equal(play(prior=prior, prior_weight=0.0), plain)
    np.testing.assert_array_equal(play(prior=prior, prior_weight=1e6)[choices],
                                  policy[choices])
    assert (plain[choices] != policy[choices]).any(), "the search alone plays the policy"
    assert (play(prior=prior, prior_weight=1.0) != plain).any(), "the prior changed nothing"
    with pytest.raises(ValueError, match="log_policy"):
        make_agent("ismcts", prior="greedy")
    with pytest.raises(ValueError, match="prior_weight"):
        make_agent("ismcts", prior=prior, prior_weight=float("nan"))


def test_prior_auto_skips_a_checkpoint_whose_rules_have_no_game_at_the_count(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A checkpoint trained with partners (4 players only) is the policy of 4-player
    Partner, and no policy of 3-player Smoorverliefd (not an impossible-rules error)."""
    import agents.ppo as policy

    args = dict(policy.PPOAgent("ppo_smoorverliefd").train_args, partners=True,
                num_players=[4])

    class Trained:
        train_args = args

        def __init__(self, name: str) -> None:
            pass

    monkeypatch.setattr(policy, "shipped_checkpoints", lambda: ["ppo_partners"])
    monkeypatch.setattr(policy, "PPOAgent", Trained)
    assert policy.shipped_policy_for(Rules(num_players=4, partners=True)) == "ppo_partners"
    assert policy.shipped_policy_for(Rules(num_players=3)) is None
    assert policy.shipped_policy_for(Rules(num_players=4)) is None


def test_prior_auto_prefers_a_related_checkpoint_trained_at_the_player_count(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Of two Hearts checkpoints trained with passing, at 4 and at 5 players, the
    5-player one is the policy of 5-player Hearts without passing, the 4-player one
    that of 4-player Hearts without passing and (first by name) of 3-player Hearts."""
    import agents.ppo as policy

    base = policy.PPOAgent("ppo_hearts").train_args
    trained = {"ppo_a": dict(base, num_players=[4]), "ppo_b": dict(base, num_players=[5])}

    class Trained:
        def __init__(self, name: str) -> None:
            self.train_args = trained[name]

    monkeypatch.setattr(policy, "shipped_checkpoints", lambda: sorted(trained))
    monkeypatch.setattr(policy, "PPOAgent", Trained)
    hearts = Rules(game="hearts", passing=False, target_score=None)
    assert policy.shipped_policy_for(hearts.replace(num_players=5)) == "ppo_b"
    assert policy.shipped_policy_for(hearts.replace(num_players=4)) == "ppo_a"
    assert policy.shipped_policy_for(hearts.replace(num_players=3)) == "ppo_a"
    assert policy.shipped_policy_for(hearts.replace(num_players=5, passing=True),
                                     related=False) == "ppo_b"


def test_prior_auto_is_the_shipped_policy_trained_on_the_rule_set() -> None:
    """``shipped_policy_for`` maps each rule set to the shipped checkpoint trained on it
    (Hearts with passing at 4 players: ppo_hearts, at 5: ppo_hearts5; Smoorverliefd at
    3, 4, 5: ppo_smoorverliefd), else to one trained on the same tricks, at the same
    player count first (Hearts without passing: ppo_hearts, at 5 players ppo_hearts5;
    at 3 players, ppo_hearts), and to none where rules of play or scoring differ (the
    Smoorverliefd variants, Hearts' queen options). ``prior="auto"`` plays by the table
    (docs/agents.md): the network one_network everywhere, plain Smoorverliefd included:
    the same choices as naming it."""
    from agents.ppo import shipped_policy_for

    hearts = Rules(game="hearts", num_players=4)
    expected = {  # rules: (related, trained on exactly these rules)
        hearts: ("ppo_hearts", "ppo_hearts"),
        hearts.replace(target_score=None): ("ppo_hearts", "ppo_hearts"),
        hearts.replace(num_players=3): ("ppo_hearts", None),
        hearts.replace(num_players=5, target_score=None): ("ppo_hearts5", "ppo_hearts5"),
        hearts.replace(num_players=5, passing=False): ("ppo_hearts5", None),
        hearts.replace(passing=False): ("ppo_hearts", None),
        hearts.replace(queen_breaks_hearts=True): (None, None),
        hearts.replace(queen_never_first_trick=True, num_players=3): (None, None),
        Rules(num_players=3): ("ppo_smoorverliefd", "ppo_smoorverliefd"),
        Rules(num_players=5, target_score=None): ("ppo_smoorverliefd", "ppo_smoorverliefd"),
        Rules(num_players=4, trump_hearts=True): (None, None),
        Rules(num_players=3, bidding=True): (None, None),
        Rules(num_players=4, partners=True): (None, None),
        Rules(num_players=5, pip_scoring=True): (None, None),
        Rules(num_players=4, cupids_arrow=True): (None, None)}
    for rules, (related, exact) in expected.items():
        assert shipped_policy_for(rules) == related, rules
        assert shipped_policy_for(rules, related=False) == exact, rules
    for rules, spec in ((Rules(num_players=4, target_score=None),
                         "ppo:checkpoint=one_network"),
                        (Rules(game="hearts", num_players=4, target_score=None),
                         "ppo:checkpoint=one_network"),
                        (Rules(num_players=4, trump_hearts=True, target_score=None),
                         "ppo:checkpoint=one_network")):
        engine = random_positions(rules, 16, seed=6)
        live = np.flatnonzero(~engine.state.match_over & (engine.state.phase == Phase.PLAY))
        obs = {k: v[live] for k, v in observations(engine).items()}
        auto = make_agent("mc", worlds=8, prior="auto", prior_weight=1.0)
        named = make_agent("mc", worlds=8, prior=spec, prior_weight=1.0)
        np.testing.assert_array_equal(auto.act(obs, np.random.default_rng(2)),
                                      named.act(obs, np.random.default_rng(2)))
        assert f"ppo:checkpoint={auto.prior_for(rules).checkpoint}" == spec


@pytest.mark.parametrize("variant", ["trump_hearts", "bidding", "partners", "pip_scoring",
                                     "cupids_arrow"])
def test_ismcts_in_a_variant_is_todays_variant_search_with_the_one_network(
        monkeypatch, variant) -> None:
    """In each Smoorverliefd variant, ``ismcts``'s defaults are the variant search (a
    halved paired root, the relative value) with the one network as its prior at the
    variant's weight in the table (``NETWORK_WEIGHTS``): the same moves as naming them
    all; a given ``prior_weight`` replaces the table's; ``prior="specialists"`` plays
    no prior there."""
    from agents.mc import NETWORK_WEIGHTS, network_weight

    # Cupid's Arrow needs a match (its cursed suit is named from round 2)
    rules = Rules(num_players=4, target_score=50 if variant == "cupids_arrow" else None,
                  **{variant: True})
    assert network_weight(rules) == NETWORK_WEIGHTS[variant]
    monkeypatch.setitem(NETWORK_WEIGHTS, variant, 3.0)  # the table's row, not a default
    small = "iterations=64,walks=16,seed_worlds=8,bid_worlds=8"
    assert build_agent(f"ismcts:{small}").prior_for(rules).checkpoint == "one_network"
    engine = random_positions(rules, 40, seed=4)
    live = np.flatnonzero(~engine.state.match_over & (engine.state.phase == Phase.PLAY))
    obs = {k: v[live] for k, v in observations(engine).items()}
    explicit = ("ismcts:" + small + ",root=halving,value=relative,"
                "prior=ppo:checkpoint=one_network,prior_weight={}")
    for auto, named in ((f"ismcts:{small}", explicit.format(NETWORK_WEIGHTS[variant])),
                        (f"ismcts:{small},prior_weight=0.05", explicit.format(0.05)),
                        (f"ismcts:{small},prior=specialists",
                         f"ismcts:{small},root=halving,value=relative,prior=none")):
        np.testing.assert_array_equal(
            build_agent(auto).act(obs, np.random.default_rng(1)),
            build_agent(named).act(obs, np.random.default_rng(1)), err_msg=auto)
    # the weights tell apart: some choice differs between the default's 0.3, the
    # table's 3.0 and the given 0.05
    default, table, light = (build_agent(explicit.format(w)).act(obs, np.random.default_rng(1))
                             for w in (0.3, NETWORK_WEIGHTS[variant], 0.05))
    assert (default != table).any() and (table != light).any()


@pytest.mark.parametrize("name,players", [("smoorverliefd", 4), ("hearts", 4),
                                          ("hearts_no_passing", 3)])
def test_ismcts_in_a_plain_rule_set_plays_the_tables_prior(monkeypatch, name, players):
    """In a plain rule set (Smoorverliefd, Hearts with or without passing) ``ismcts``'s
    defaults search with a steering prior (a UCB root, the seat's own points): the
    network ``one_network`` at the table's weight where ``PLAIN_NETWORK_WEIGHTS`` names
    the rule set (every plain rule set), else its specialist at 0.3: the same moves as
    naming them. A given ``prior_weight`` replaces the table's; ``prior="specialists"``
    plays the specialist."""
    from agents.mc import DEFAULT_PRIOR_WEIGHT, PLAIN_NETWORK_WEIGHTS
    from agents.ppo import SHIPPED_NETWORK, plain_rule_set, shipped_policy_for
    from smoor_env import preset

    rules = preset(name, players)
    assert plain_rule_set(rules) == name
    specialist = shipped_policy_for(rules)
    small = "iterations=64,walks=16,seed_worlds=8"
    steering = "ismcts:" + small + ",root=ucb,value=own,prior=ppo:checkpoint={},prior_weight={}"
    engine = random_positions(rules, 40, seed=5)
    live = np.flatnonzero(~engine.state.match_over & (engine.state.phase == Phase.PLAY))
    obs = {k: v[live] for k, v in observations(engine).items()}

    def same(auto: str, named: str) -> None:
        np.testing.assert_array_equal(
            build_agent(auto).act(obs, np.random.default_rng(1)),
            build_agent(named).act(obs, np.random.default_rng(1)), err_msg=auto)

    monkeypatch.setitem(PLAIN_NETWORK_WEIGHTS, name, 3.0)  # the table's row
    assert build_agent(f"ismcts:{small}").prior_for(rules).checkpoint == SHIPPED_NETWORK
    same(f"ismcts:{small}", steering.format(SHIPPED_NETWORK, 3.0))
    same(f"ismcts:{small},prior_weight=20.0", steering.format(SHIPPED_NETWORK, 20.0))
    same(f"ismcts:{small},prior=specialists", steering.format(specialist, DEFAULT_PRIOR_WEIGHT))
    monkeypatch.delitem(PLAIN_NETWORK_WEIGHTS, name)  # not in the table: the specialist
    same(f"ismcts:{small}", steering.format(specialist, DEFAULT_PRIOR_WEIGHT))
    # and the two priors, the weights 0.3 and 3.0, and the variants' search with the same
    # prior (halved root, relative value: not steering) tell apart: some choice differs
    halved = ("ismcts:" + small + ",root=halving,value=relative,"
              "prior=ppo:checkpoint={},prior_weight={}")
    network, trained, light, unsteered = (
        build_agent(spec.format(net, weight)).act(obs, np.random.default_rng(1))
        for spec, net, weight in ((steering, SHIPPED_NETWORK, 3.0), (steering, specialist, 3.0),
                                  (steering, SHIPPED_NETWORK, 0.3), (halved, SHIPPED_NETWORK, 3.0)))
    assert (network != trained).any() and (network != light).any()
    assert (network != unsteered).any()


@pytest.mark.parametrize("options", [{"queen_never_first_trick": True},
                                     {"queen_breaks_hearts": True, "passing": False},
                                     {"queen_never_first_trick": True,
                                      "queen_breaks_hearts": True}])
def test_ismcts_in_hearts_with_a_queen_option_plays_hearts_network(monkeypatch, options):
    """Hearts with a queen option plays a Hearts row of the table: the network
    ``one_network`` steering (a UCB root, the seat's own points) at that row's weight, as
    measured (``dmc3_it1000``) against the variants' search (with ``dmc_all``)
    (docs/results/2026-12-06-queen-options-prior.md); ``prior="specialists"``: none (no
    specialist was trained on these rules of play)."""
    from agents.mc import DEFAULT_PRIOR_WEIGHT, PLAIN_NETWORK_WEIGHTS, network_row, table_prior
    from agents.ppo import SHIPPED_NETWORK, plain_rule_set

    rules = Rules(game="hearts", num_players=4, target_score=None, **options)
    assert plain_rule_set(rules) is None  # not the specialists' tricks
    row = network_row(rules)
    monkeypatch.setitem(PLAIN_NETWORK_WEIGHTS, row, 3.0)  # the table's row, not a default
    assert table_prior(rules) == (SHIPPED_NETWORK, 3.0, True)
    assert table_prior(rules, "specialists") == (None, DEFAULT_PRIOR_WEIGHT, True)
    small = "iterations=64,walks=16,seed_worlds=8"
    engine = random_positions(rules, 40, seed=5)
    live = np.flatnonzero(~engine.state.match_over & (engine.state.phase == Phase.PLAY))
    obs = {k: v[live] for k, v in observations(engine).items()}
    auto = build_agent(f"ismcts:{small}").act(obs, np.random.default_rng(1))
    named = build_agent(f"ismcts:{small},root=ucb,value=own,prior=ppo:checkpoint="
                        f"{SHIPPED_NETWORK},prior_weight=3.0").act(obs, np.random.default_rng(1))
    before = build_agent(f"ismcts:{small},root=halving,value=relative,prior=ppo:checkpoint="
                         f"{SHIPPED_NETWORK},prior_weight=0.3").act(obs, np.random.default_rng(1))
    np.testing.assert_array_equal(auto, named)
    assert (auto != before).any()  # the variants' search it replaced plays otherwise


def test_prior_auto_plays_the_one_network_everywhere():
    """In every preset at every player count, as rounds and as matches, ``prior="auto"``
    plays ``one_network`` (steering in plain Smoorverliefd and Hearts); never one of the
    networks it took the place of, nor a specialist
    (docs/results/2026-12-07-distilled-mc-protocol.md)."""
    from agents.mc import table_prior
    from agents.ppo import EARLIER_NETWORKS, plain_rule_set
    from smoor_env.core.presets import PRESETS

    played = set()
    for preset in PRESETS.values():
        for players in preset.players:
            for matches in (False, True):
                if matches or not preset.matches_only:
                    rules = preset.rules(players, matches)
                    name, _, steers = table_prior(rules)
                    assert name == "one_network", rules
                    if plain_rule_set(rules) is not None:
                        assert steers, rules
                    played.add(name)
    assert played == {"one_network"}
    assert not played & set(EARLIER_NETWORKS)


@pytest.mark.parametrize("players", [3, 4, 5])
def test_the_queen_options_rows_of_the_table(players):
    """As measured (docs/results/2026-12-06-unmeasured-rows-prior.md): Hearts with one
    queen option and passing plays its passing's row, at 0.3; with both options, or with
    one without passing, the network at weight 1.0; without the options, the plain rows."""
    from agents.mc import network_row, table_prior
    from agents.ppo import SHIPPED_NETWORK

    never, breaks = {"queen_never_first_trick": True}, {"queen_breaks_hearts": True}
    for passing in (True, False):
        for options, row, weight in (
                ({}, "hearts" if passing else "hearts_no_passing", 0.3),
                (never, "hearts" if passing else "hearts_queen_options", 0.3 if passing else 1.0),
                (breaks, "hearts" if passing else "hearts_queen_options", 0.3 if passing else 1.0),
                ({**never, **breaks}, "hearts_queen_options", 1.0)):
            rules = Rules(game="hearts", num_players=players, passing=passing, **options)
            assert network_row(rules) == row, (passing, options)
            assert table_prior(rules) == (SHIPPED_NETWORK, weight, True), (passing, options)


def test_the_network_weight_of_a_rule_set_of_several_variants_is_the_default() -> None:
    from agents.mc import DEFAULT_PRIOR_WEIGHT, network_weight

    assert network_weight(Rules(num_players=4, trump_hearts=True, bidding=True)) \
        == DEFAULT_PRIOR_WEIGHT
    assert network_weight(Rules(num_players=4, cupids_arrow=True)) == DEFAULT_PRIOR_WEIGHT


def test_cupids_arrow_with_one_other_variant_has_its_own_measured_weight() -> None:
    """Cupid's Arrow with met Troef, Blinde Liefde, Partner or Kleine Liefde plays the
    weight measured on those pairs (``CUPIDS_ARROW_PAIR_WEIGHT``); with two others, or
    with ``sweep_needs_all_thirteen`` (not one of the measured variants), the default."""
    from agents.mc import (
        CUPIDS_ARROW_PAIR_WEIGHT,
        DEFAULT_PRIOR_WEIGHT,
        network_weight,
        table_prior,
    )

    assert CUPIDS_ARROW_PAIR_WEIGHT != DEFAULT_PRIOR_WEIGHT  # the row is not the default
    match = dict(cupids_arrow=True, target_score=50)
    for players, other in ((3, "trump_hearts"), (4, "bidding"), (4, "partners"),
                           (5, "pip_scoring")):
        rules = Rules(num_players=players, **match, **{other: True})
        assert network_weight(rules) == CUPIDS_ARROW_PAIR_WEIGHT, other
        assert table_prior(rules)[1:] == (CUPIDS_ARROW_PAIR_WEIGHT, False)  # not steering
    for others in ({"trump_hearts": True, "bidding": True},
                   {"sweep_needs_all_thirteen": True}):
        assert network_weight(Rules(num_players=4, **match, **others)) == DEFAULT_PRIOR_WEIGHT
    assert network_weight(Rules(num_players=4, trump_hearts=True, pip_scoring=True)) \
        == DEFAULT_PRIOR_WEIGHT  # a pair without Cupid's Arrow


@pytest.mark.parametrize("spec", ["mc:worlds=64", "ismcts:bid_worlds=64"])
def test_a_search_too_big_for_one_engine_batch_is_searched_in_parts(monkeypatch, spec):
    """``ismcts``'s 512-world bids over a large batch of games once asked for an engine
    beyond the engine's limit (``batch_size must be in 1..262144``); the search now goes
    part by part, every engine within the limit, every bid legal."""
    import agents.mc
    from smoor_env import preset
    from smoor_env.envs.selfplay import SelfPlayVectorEnv

    limit = 2000  # 16 games' first bids, about 6 legal each, x 64 worlds: some 6,000
    monkeypatch.setattr(agents.mc, "MAX_BATCH_SIZE", limit)
    sizes: list[int] = []
    engine = Playouts.engine

    def spy(self, rules, n, role=""):
        sizes.append(n)
        return engine(self, rules, n, role)

    monkeypatch.setattr(Playouts, "engine", spy)
    env = SelfPlayVectorEnv(16, preset("bidding", 4))
    obs, info = env.reset(seed=0)
    mask = info["action_mask"]
    assert (mask[:, :52] == 0).all()  # every game's first decision is a bid
    actions = build_agent(spec).act({"observation": obs, "action_mask": mask},
                                    np.random.default_rng(0))
    assert mask[np.arange(16), actions].all()
    assert len(sizes) > 1 and max(sizes) <= limit


def test_agent_strength_stops_its_workers_on_sigterm(tmp_path):
    """``kill`` (a ladder run in the background): one line, exit 130, no worker left
    playing, nothing written (the ladder is written whole at its end)."""
    import signal
    import subprocess
    import sys
    import time

    from helpers import processes_mentioning

    out = tmp_path / "ladder.json"
    process = subprocess.Popen(
        [sys.executable, "-m", "experiments.agent_strength", "--ladder", "random", "greedy",
         "--rule-sets", "hearts", "smoorverliefd", "--players", "3", "4", "--deals", "100000",
         "--workers", "2", "--timing-decisions", "0", "--out", str(out)],
        cwd=Path(__file__).parent.parent, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True)
    assert process.stdout.readline().startswith("advantage")  # the agents are built
    time.sleep(2)
    process.send_signal(signal.SIGTERM)
    _, err = process.communicate(timeout=60)
    assert process.returncode == 130, err
    assert err.strip() == "python -m experiments.agent_strength: interrupted"
    assert processes_mentioning(str(out)) == [] and not out.exists()
