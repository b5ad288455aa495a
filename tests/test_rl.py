"""Reinforcement learning (the ``rl`` extra): the PPO trainer, the shipped ``ppo`` agent and
sb3-contrib's ``MaskablePPO`` on ``SmoorEnv``. Skipped when PyTorch is not installed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from agents import make_agent  # noqa: E402
from agents.env_factories import make_vector_env  # noqa: E402
from smoor_env import Engine, Rules  # noqa: E402
from smoor_env.observation import observe  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
SHIPPED = REPO / "agents" / "checkpoints" / "ppo_smoorverliefd.pt"
SHIPPED_HEARTS = REPO / "agents" / "checkpoints" / "ppo_hearts.pt"


pytestmark = pytest.mark.usefixtures("one_torch_thread")


def play_rounds(agent, rules: Rules, games: int, seed: int) -> np.ndarray:
    """``agent`` in every seat of ``games`` rounds; asserts every action is legal.

    Returns (games, P) round points.
    """
    engine = Engine(rules, games)
    engine.reset(seed)
    st = engine.state
    rng = np.random.default_rng(seed)
    while not st.match_over.all():
        live = np.flatnonzero(~st.match_over)
        mask = engine.legal_mask
        obs = observe(engine, st.current_player)
        actions = np.zeros(games, np.int64)
        actions[live] = agent.act({"observation": obs[live], "action_mask": mask[live]}, rng)
        assert mask[live, actions[live]].all(), "the agent played an illegal action"
        engine.step(actions, active=~st.match_over)
    return st.round_points.copy()


def _train(tmp_path: Path, *options: str) -> None:
    cmd = [sys.executable, "-m", "experiments.train_ppo", "--num-envs", "16", "--num-steps",
           "16", "--eval-interval", "1", "--eval-episodes", "16", "--eval-baselines", "random",
           "--hidden", "32", "--out-dir", str(tmp_path / "runs"), *options]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MPLBACKEND": "Agg"}
    done = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]


def test_train_ppo_smoke(tmp_path: Path) -> None:
    """A tiny run against a pool with self-play writes a checkpoint and a learning curve."""
    checkpoint = tmp_path / "tiny.pt"
    _train(tmp_path, "--total-timesteps", "512", "--opponents", "random", "self", "greedy",
           "--snapshot-interval", "1", "--checkpoint", str(checkpoint), "--seeds", "3")
    run = tmp_path / "runs" / "ppo__smoorverliefd_4p__seed3"
    for path in (run / "model.pt", run / "args.json", run / "summary.json", run / "curve.png",
                 checkpoint, tmp_path / "tiny_curve.csv", tmp_path / "tiny_curve.png",
                 tmp_path / "tiny.json"):
        assert path.exists(), path
    assert json.loads((run / "args.json").read_text())["seed"] == 3
    lines = (tmp_path / "tiny_curve.csv").read_text().splitlines()
    assert lines[0].startswith("seed,iteration,global_step,") and len(lines) >= 3
    assert "eval_4p" in lines[0]
    agent = make_agent("ppo", checkpoint=str(checkpoint), sample=True)
    points = play_rounds(agent, Rules(num_players=4, target_score=None), 8, seed=1)
    assert points.shape == (8, 4)


def test_train_ppo_pool_players_imitation_seeds_smoke(tmp_path: Path) -> None:
    """3, 4 and 5 players at once, a pool with mc, imitation first, two seeds, TensorBoard."""
    pytest.importorskip("tensorboard")
    checkpoint = tmp_path / "multi.pt"
    _train(tmp_path, "--total-timesteps", "768", "--num-players", "3", "4", "5", "--opponents",
           "random", "mc:worlds=4", "self", "--imitate", "greedy", "--imitate-decisions",
           "200", "--imitate-epochs", "2", "--seeds", "0", "1", "--track",
           "--checkpoint", str(checkpoint))
    for seed in (0, 1):
        run = tmp_path / "runs" / f"ppo__smoorverliefd_345p__seed{seed}"
        assert list(run.glob("events.out.tfevents.*")), "no TensorBoard log"
    rows = (tmp_path / "multi_curve.csv").read_text().splitlines()
    assert all(f"eval_{p}p" in rows[0] for p in (3, 4, 5))
    assert len(rows) == 1 + 2 * 2  # two evaluations per seed
    summary = json.loads((tmp_path / "multi.json").read_text())
    assert summary["best_seed"] in (0, 1) and len(summary["final_evals"]) == 2
    assert (tmp_path / "multi_curve.png").exists()
    agent = make_agent("ppo", checkpoint=str(checkpoint))
    play_rounds(agent, Rules(num_players=5, target_score=None), 8, seed=2)


def test_train_ppo_self_play_smoke(tmp_path: Path) -> None:
    """--self-play: the policy in every seat of 3- and 4-player tables trains, writes a
    checkpoint and a learning curve against the fixed evaluation opponents."""
    checkpoint = tmp_path / "selfplay.pt"
    _train(tmp_path, "--self-play", "--total-timesteps", "512", "--num-players", "3", "4",
           "--checkpoint", str(checkpoint))
    run = tmp_path / "runs" / "ppo__smoorverliefd_34p__seed0"
    for path in (run / "model.pt", run / "curve.png", checkpoint, tmp_path / "selfplay.json"):
        assert path.exists(), path
    assert json.loads((run / "args.json").read_text())["self_play"] is True
    rows = (tmp_path / "selfplay_curve.csv").read_text().splitlines()
    assert len(rows) == 3 and "eval_3p" in rows[0] and "eval_4p" in rows[0]
    summary = json.loads((run / "summary.json").read_text())
    assert summary["global_step"] > 0
    agent = make_agent("ppo", checkpoint=str(checkpoint), sample=True)
    play_rounds(agent, Rules(num_players=3, target_score=None), 8, seed=1)


def test_seat_advantages_by_hand() -> None:
    """Two seats alternating: each seat's rewards up to its next decision are its previous
    decision's, GAE chains along each seat's own decisions, the round's end closes both,
    the restart is no decision, and a decision whose continuation lies after the rollout
    is not complete. Worked by hand with gamma 0.9 and lambda 0.5."""
    from agents.training.selfplay import seat_advantages

    # step:      0    1    2    3 (round ends)  4 (restart)  5    6  | 7: after the rollout
    seats = np.array([0, 1, 0, 1, 0, 0, 1, 0])
    values = np.array([0.5, 1.0, 1.5, 2.0, 9.0, 0.25, 0.5, 0.75], np.float32)
    decisions = np.array([1, 1, 1, 1, 0, 1, 1, 1], bool)
    ends = np.array([0, 0, 0, 1, 0, 0, 0], bool)
    rewards = np.zeros((7, 2), np.float32)  # (T, P)
    rewards[1], rewards[3], rewards[6] = (2.0, 0.0), (1.0, 3.0), (0.5, 0.0)
    g, lam = 0.9, 0.5
    seat0_late = 0 + 1.0 - 1.5  # step 2: steps 2-3 give it 0 + 1, then the round ends
    seat0_early = (0 + 2.0) + g * 1.5 - 0.5 + g * lam * seat0_late  # step 0: steps 0-1
    seat1_late = 3.0 - 2.0  # step 3: its reward at the end of the round
    seat1_early = (0 + 0) + g * 2.0 - 1.0 + g * lam * seat1_late  # step 1: steps 1-2
    seat0_next = 0 + 0.5 + g * 0.75 - 0.25  # step 5: steps 5-6, bootstrapped by row 7
    expected = [seat0_early, seat1_early, seat0_late, seat1_late, 0.0, seat0_next, 0.0]
    assert np.allclose(expected, [2.625, 1.25, -0.5, 1.0, 0.0, 0.925, 0.0])
    # Game 1 is game 0 with the seats' names swapped: the same advantages.
    out = seat_advantages(np.stack([rewards, rewards[:, ::-1]], axis=1),
                          np.stack([seats, 1 - seats], axis=1), np.stack([values] * 2, 1),
                          np.stack([decisions] * 2, 1), np.stack([ends] * 2, 1), g, lam)
    advantages, returns, complete = out  # (T, N) each
    for game in (0, 1):
        assert np.allclose(advantages[:, game], expected)
        assert np.allclose(returns[:, game], np.array(expected) + values[:7])
        assert complete[:, game].tolist() == [True] * 4 + [False, True, False]


def test_seat_advantages_with_one_seat_are_the_trainers_gae() -> None:
    """With one seat acting at every step, per-seat GAE is the pool trainer's recursion on
    every decision (restarts aside)."""
    from agents.training.selfplay import seat_advantages

    rng = np.random.default_rng(0)
    steps, games = 40, 6
    ends = np.zeros((steps, games), bool)  # (T, N) a round ended with the step
    restarts = np.zeros((steps + 1, games), bool)  # (T + 1, N) the step after an end
    for t in range(steps):
        restarts[t] = t > 0 and ends[t - 1]
        ends[t] = ~restarts[t] & (rng.random(games) < 0.15)
    restarts[steps] = ends[-1]
    rewards = np.where(restarts[:-1], 0.0, rng.normal(size=(steps, games)))
    values = rng.normal(size=(steps + 1, games)).astype(np.float32)
    gamma, lam = 0.97, 0.9
    advantages, _, complete = seat_advantages(
        rewards[..., None], np.zeros((steps + 1, games), np.int64), values, ~restarts, ends,
        gamma, lam)
    last, expected = np.zeros(games), np.zeros((steps, games))
    for t in reversed(range(steps)):  # train_ppo's loop
        nonterminal = 1.0 - ends[t]
        delta = rewards[t] + gamma * values[t + 1] * nonterminal - values[t]
        last = delta + gamma * lam * nonterminal * last
        expected[t] = last
    assert np.array_equal(complete, ~restarts[:-1])  # one seat: every decision is complete
    assert np.allclose(advantages[complete], expected[complete], atol=1e-5)


def test_self_play_rollout_stores_only_legal_decisions_of_the_seat_to_act() -> None:
    """The learner's self-play rows, sampled as train_ppo samples them: replayed in fresh
    engines on the same deals, every stored decision is the seat to act's and legal for
    it, restarts are exactly the steps after a round ends, and each seat's rewards are
    the engine's."""
    from torch.distributions import Categorical

    from agents.policy_net import PolicyNet
    from agents.training.selfplay import SelfPlayRollout
    from experiments.train_ppo import Args, make_rules

    args = Args(self_play=True, num_players=[3, 4], game="hearts", reward_mode="trick")
    rules = [make_rules(args, p) for p in args.num_players]
    envs, steps, seed = 3, 80, 5
    rollout = SelfPlayRollout(rules, envs, steps, seed, "trick")
    torch.manual_seed(0)
    net = PolicyNet((16,))
    masks = np.zeros((steps, 2 * envs, 70), bool)
    for step in range(steps):
        masks[step] = rollout.mask
        with torch.no_grad():
            logits, value = net(torch.as_tensor(rollout.obs), torch.as_tensor(rollout.mask))
        actions = Categorical(logits=logits).sample().numpy()
        rollout.step(step, actions, value.numpy())
    _, _, complete = rollout.advantages(np.zeros(2 * envs), 1.0, 0.95)
    assert not (complete & ~rollout.decisions[:-1]).any()
    assert rollout.ends.any(), "no round ended: the test saw no restart"
    for table, table_rules in enumerate(rules):
        for game in range(envs):
            row = table * envs + game
            players = table_rules.num_players
            assert not rollout.rewards[:, row, players:].any()  # no seat beyond the table's
            engine, episode = Engine(table_rules, 1), 0
            engine.reset(seed + 7919 * table, game_ids=[game])
            paid = np.zeros(players)  # (P,) each seat's rewards in this round so far
            for step in range(steps):
                restart = step > 0 and rollout.ends[step - 1, row]
                assert rollout.decisions[step, row] == (not restart)
                if restart:
                    episode += 1
                    engine.reset(seed + 7919 * table, game_ids=[game + episode * envs])
                    paid[:] = 0
                    continue
                seat, action = rollout.seats[step, row], rollout.actions[step, row]
                assert seat == engine.state.current_player[0]
                assert np.array_equal(masks[step, row], engine.legal_mask[0])
                assert engine.legal_mask[0, action], "an illegal decision was stored"
                engine.step(np.array([action]))
                paid += rollout.rewards[step, row, :players]
                assert rollout.ends[step, row] == engine.state.match_over[0]
                if rollout.ends[step, row]:  # trick rewards add up to minus the penalties
                    assert np.array_equal(paid, -engine.state.round_points[0])


def test_card_features_say_where_each_card_is_and_how_it_ranks() -> None:
    """The shared card head's inputs, checked card by card against the engine's state."""
    from agents.policy_net import CardFeatures

    engine = Engine(Rules(game="hearts", passing=False, target_score=None), 8)
    engine.reset(3)
    rng = np.random.default_rng(0)
    for _ in range(9):  # into the third trick
        engine.step(engine.sample_legal(rng))
    st = engine.state
    seat = st.current_player.astype(np.int64)
    obs = torch.as_tensor(observe(engine, seat))
    feats = CardFeatures()(obs).numpy()  # (8, 52, F)
    assert feats.shape == (8, 52, CardFeatures().size)
    for g in range(8):
        hand = int(st.hands[g, seat[g]])
        played = int(st.played[g])
        for card in range(52):
            held = hand >> card & 1
            assert feats[g, card, 0] == held
            suit, rank = divmod(card, 13)
            out = [c for c in range(13 * suit, 13 * suit + 13)
                   if not (hand >> c & 1) and not (played >> c & 1)]
            assert feats[g, card, -4] * 12 == pytest.approx(sum(c % 13 > rank for c in out))
            assert feats[g, card, -3] * 12 == pytest.approx(sum(c % 13 < rank for c in out))
            in_trick = [int(c) for c in st.current_trick[g] if c >= 0]
            higher = any(c // 13 == suit and c % 13 > rank for c in in_trick)
            assert feats[g, card, -1] == higher


def test_card_head_trains_saves_and_plays(tmp_path: Path) -> None:
    """--card-head: imitation then PPO with the shared card head; the checkpoint keeps it."""
    checkpoint = tmp_path / "cards.pt"
    _train(tmp_path, "--total-timesteps", "256", "--card-head", "8", "--imitate", "greedy",
           "--imitate-decisions", "100", "--imitate-epochs", "1", "--opponents", "random",
           "self", "--checkpoint", str(checkpoint))
    agent = make_agent("ppo", checkpoint=str(checkpoint))
    assert agent.net.card_head == 8
    play_rounds(agent, Rules(num_players=4, target_score=None), 8, seed=4)
    from agents.policy_net import PolicyNet

    with pytest.raises(ValueError, match="card_head needs the whole observation"):
        PolicyNet((16,), obs_size=1076, card_head=8)


@pytest.mark.parametrize("game", ["smoorverliefd", "hearts"])
def test_the_card_head_is_computed_only_at_the_cards_that_may_be_played(game: str) -> None:
    """The shared card head runs at the legal cards alone (in DMC's fit at the card played
    alone): there its logits are those of the head run at every card, in torch and in
    numpy, and the card features of some (observation, card) pairs are those pairs' rows
    of every card's features."""
    from agents.policy_net import load_checkpoint
    from agents.ppo import MASKED_LOGIT, SHIPPED_NETWORK, card_features
    from tests.test_agents import observations, random_positions

    torch_net, _ = load_checkpoint(SHIPPED_NETWORK)
    assert torch_net.card_head
    engine = random_positions(Rules(game=game, num_players=4, target_score=None), 64, seed=3)
    obs = {k: v[~engine.state.match_over] for k, v in observations(engine).items()}
    x, mask = obs["observation"], obs["action_mask"]  # (B, OBS), (B, 70)
    assert (mask[:, :52].sum(1) < 52).all(), "every position rules cards out"
    everything = np.ones_like(mask)
    with torch.no_grad():
        legal, _ = torch_net(torch.as_tensor(x), torch.as_tensor(mask))
        full, _ = torch_net(torch.as_tensor(x), torch.as_tensor(everything))
    np.testing.assert_allclose(legal.numpy()[mask], full.numpy()[mask], rtol=1e-5, atol=1e-5)
    with torch.no_grad():  # the head at all 52 cards, written out as it was before
        h = torch_net.trunk(torch.as_tensor(x))
        ctx = torch.relu(torch_net.context(h))[:, None, :].expand(-1, 52, -1)  # (B, 52, C)
        feats = torch.as_tensor(card_features(x))  # (B, 52, F)
        card = torch_net.per_card(torch.cat([feats, ctx], 2)).squeeze(-1)  # (B, 52)
        reference = torch_net.policy(h)[:, :52] + card
    np.testing.assert_allclose(legal.numpy()[:, :52][mask[:, :52]],
                               reference.numpy()[mask[:, :52]], rtol=1e-5, atol=1e-5)
    assert (legal.numpy()[~mask] == MASKED_LOGIT).all()
    numpy_net = make_agent("ppo", checkpoint=SHIPPED_NETWORK).net
    np.testing.assert_allclose(numpy_net.logits(x, mask)[mask], full.numpy()[mask],
                               rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(numpy_net.logits(x, everything), full.numpy(), rtol=1e-4,
                               atol=1e-4)
    rows, cards = np.nonzero(mask[:, :52])
    np.testing.assert_array_equal(card_features(x, rows, cards), card_features(x)[rows, cards])
    with pytest.raises(ValueError, match="rows and cards must be given together"):
        card_features(x, rows)
    with pytest.raises(ValueError, match="rows and cards must be given together"):
        card_features(x, rows, cards[:-1])


def test_a_deepened_network_plays_the_same_moves_and_values(tmp_path: Path) -> None:
    """Layers added to a trained network's trunk start as the identity: the same logits
    and values, in torch and, saved, in numpy; only a trunk can grow."""
    from agents.policy_net import PolicyNet, load_checkpoint, save_checkpoint
    from tests.test_agents import observations, random_positions

    net, args = load_checkpoint("dmc_all")
    grown = net.deepened(2)
    assert grown.hidden == (*net.hidden, net.hidden[-1], net.hidden[-1])
    assert net.deepened(0) is net
    engine = random_positions(Rules(game="hearts", num_players=5, target_score=None), 32, 5)
    obs = {k: v[~engine.state.match_over] for k, v in observations(engine).items()}
    x, mask = torch.as_tensor(obs["observation"]), torch.as_tensor(obs["action_mask"])
    with torch.no_grad():
        for before, after in zip(net(x, mask), grown(x, mask), strict=True):
            np.testing.assert_allclose(after.numpy(), before.numpy(), rtol=1e-5, atol=1e-5)
    save_checkpoint(tmp_path / "grown.pt", grown, args)
    played = make_agent("ppo", checkpoint=str(tmp_path / "grown.pt"))
    np.testing.assert_allclose(played.net.logits(obs["observation"], obs["action_mask"]),
                               net.logits(obs["observation"], obs["action_mask"]),
                               rtol=1e-4, atol=1e-4)
    with pytest.raises(ValueError, match="grows by layers >= 0"):
        net.deepened(-1)
    with pytest.raises(ValueError, match="grows by layers >= 0"):
        PolicyNet(()).deepened(1)


def test_imitation_of_mc_values_labels_once_and_reuses_them(tmp_path: Path) -> None:
    """Soft targets from mc's action values; the labels are written once, then read back
    (a second run labels nothing: its teacher could not even be built)."""
    data = tmp_path / "labels.npz"
    _train(tmp_path, "--total-timesteps", "0", "--num-players", "3", "--imitate",
           "mc:worlds=4", "--imitate-decisions", "96", "--imitate-epochs", "2",
           "--imitate-temperature", "0.5", "--imitate-data", str(data))
    with np.load(data) as stored:
        assert stored["observations"].dtype == np.int8 and len(stored["actions"]) >= 96
        values, masks = stored["values"], stored["masks"]
    assert (np.isnan(values) | masks).all(), "a value for an illegal action"
    assert (~np.isnan(values)).any(axis=1).mean() > 0.5, "mc searched too few decisions"
    _train(tmp_path, "--total-timesteps", "0", "--num-players", "3", "--imitate",
           "no_such_agent", "--imitate-epochs", "1", "--imitate-temperature", "0.5",
           "--imitate-data", str(data), "--exp-name", "again")


def test_imitation_of_ismcts_decisions(tmp_path: Path) -> None:
    """--imitate ismcts: behaviour cloning on the tree search's choices, every choice a
    legal card, with its values of the root moves it searched (``ISMCTSAgent.evaluate``):
    legal moves only, and the played move among them."""
    data = tmp_path / "labels.npz"
    _train(tmp_path, "--total-timesteps", "0", "--imitate", "ismcts:iterations=32",
           "--imitate-decisions", "32", "--imitate-epochs", "1", "--imitate-data", str(data))
    with np.load(data) as stored:
        actions, masks, values = stored["actions"], stored["masks"], stored["values"]
    assert len(actions) >= 32 and masks[np.arange(len(actions)), actions].all()
    searched = ~np.isnan(values)  # (D, 70)
    assert searched.any() and not (searched & ~masks).any()
    rows = searched.any(axis=1)
    assert searched[rows, actions[rows]].all()


def test_imitation_data_from_several_files(tmp_path: Path) -> None:
    """--imitate-data a.npz b.npz: both label files are read and concatenated in that
    order (each cut to the network's obs_size); a missing one is an error, not a labelling."""
    from agents.training.labels import label_decisions
    from experiments.train_ppo import Args
    from smoor_env.observation import OBSERVATION_SIZE

    rng = np.random.default_rng(0)
    files = []
    for index, size in enumerate((3, 5)):
        files.append({"observations": rng.integers(-9, 9, (size, OBSERVATION_SIZE), np.int8),
                      "masks": rng.random((size, 70)) < 0.5,
                      "actions": rng.integers(0, 70, size),
                      "values": rng.random((size, 70)).astype(np.float32)})
        np.savez(tmp_path / f"labels{index}.npz", **files[-1])
    paths = [str(tmp_path / "labels0.npz"), str(tmp_path / "labels1.npz")]
    data = label_decisions(Args(imitate_data=paths), [], 0, obs_size=100)
    assert data["observations"].shape == (8, 100)
    assert (data["observations"] == np.concatenate(
        [f["observations"][:, :100] for f in files])).all()
    for key in ("masks", "actions", "values"):
        assert (data[key] == np.concatenate([f[key] for f in files])).all(), key
    with pytest.raises(FileNotFoundError):
        label_decisions(Args(imitate_data=[paths[0], str(tmp_path / "missing.npz")]), [], 0)


def test_dagger_labels_are_the_teachers_on_the_players_states() -> None:
    """--imitate-play: another agent moves in the learner's seat (DAgger), the teacher
    still labels every decision; the states are the player's, not the teacher's."""
    from agents.training.labels import label_decisions
    from agents.training.opponents import pool_members
    from experiments.train_ppo import Args
    from smoor_env.observation import compact_scale

    def labels(play: str) -> dict:
        args = Args(imitate="greedy", imitate_play=play, imitate_decisions=200,
                    num_players=[4], num_envs=8)
        return label_decisions(args, pool_members(["greedy"]), 3)

    teacher = make_agent("greedy")
    rng = np.random.default_rng(0)
    for data in (labels(""), labels("random")):
        obs = data["observations"].astype(np.float32) * compact_scale()  # (D, size)
        again = teacher.act({"observation": obs, "action_mask": data["masks"]}, rng)
        assert (again == data["actions"]).all(), "a label is not the teacher's choice"
    own, dagger = labels(""), labels("random")
    assert len(own["actions"]) == len(dagger["actions"])
    first = min(len(own["actions"]), 64)
    assert (own["observations"][:8] == dagger["observations"][:8]).all(), "same first deals"
    assert (own["observations"][:first] != dagger["observations"][:first]).any(), \
        "the player's moves did not change the states labelled"


def test_init_from_checkpoint_with_value_warmup(tmp_path: Path) -> None:
    """--init starts from a checkpoint; during --value-warmup only the value head moves."""
    _train(tmp_path, "--total-timesteps", "0", "--imitate", "greedy", "--imitate-decisions",
           "64", "--imitate-epochs", "1")
    first = tmp_path / "runs" / "ppo__smoorverliefd_4p__seed0" / "model.pt"
    _train(tmp_path, "--total-timesteps", "256", "--value-warmup", "1", "--init", str(first),
           "--exp-name", "warm")
    before = torch.load(first, weights_only=True)["model"]
    after = torch.load(tmp_path / "runs" / "warm__smoorverliefd_4p__seed0" / "model.pt",
                       weights_only=True)["model"]
    assert before.keys() == after.keys()
    for key in before:
        assert torch.equal(before[key], after[key]) != key.startswith("value."), key


def test_soft_targets() -> None:
    from agents.training.labels import soft_targets

    nan = np.nan
    values = np.array([[1.0, 0.0, nan, nan], [nan, nan, nan, nan]])  # (2, 4)
    actions = np.array([1, 3])
    targets = soft_targets(values, actions, temperature=1.0)
    assert np.allclose(targets[0], [np.e / (np.e + 1), 1 / (np.e + 1), 0, 0])
    assert np.allclose(targets[1], [0, 0, 0, 1])  # nothing searched: the teacher's action
    assert np.allclose(soft_targets(values, actions, temperature=0.0)[0], [0, 1, 0, 0])


def test_the_opponent_pool_draws_opponents_per_episode() -> None:
    from agents.training.opponents import OpponentPool

    class Constant:
        """Plays the first legal action and counts the rows it was asked for."""

        uses_observation = False

        def __init__(self) -> None:
            self.asked = 0

        def act(self, observations, rng):
            self.asked += len(observations["action_mask"])
            return np.argmax(observations["action_mask"], axis=1)

    members = [Constant(), Constant()]
    pool = OpponentPool(members, 64, 4, np.random.default_rng(0))
    assert pool.assignment.shape == (64, 4) and set(np.unique(pool.assignment)) == {0, 1}
    env = make_vector_env(64, num_players=4, target_score=None, opponents=pool)
    _, info = env.reset(seed=0)
    before = pool.assignment.copy()
    for _ in range(20):
        _, _, terminated, _, info = env.step(np.argmax(info["action_mask"], axis=1))
        pool.draw(np.flatnonzero(terminated))
    assert members[0].asked > 0 and members[1].asked > 0
    assert not np.array_equal(before, pool.assignment)  # episodes ended: new draws
    with pytest.raises(ValueError, match="games"):
        pool.act({"observation": None, "action_mask": info["action_mask"]}, None)


def test_shipped_checkpoints_play_legal_moves() -> None:
    for path in (SHIPPED, SHIPPED_HEARTS):
        assert path.exists(), f"the trained checkpoint {path.name} is missing"
        assert path.stat().st_size < 5_000_000
    agent = make_agent("ppo")  # ppo_smoorverliefd by default
    assert agent.uses_observation
    for sample in (False, True):
        player = make_agent("ppo", checkpoint=str(SHIPPED), sample=sample)
        play_rounds(player, Rules(num_players=4, target_score=None), 64, seed=7)
    # Whole matches, and every player count it was trained for.
    play_rounds(agent, Rules(num_players=4), 8, seed=8)
    for players in (3, 5):
        play_rounds(agent, Rules(num_players=players, target_score=None), 16, seed=9)
    hearts = make_agent("ppo", checkpoint="ppo_hearts")
    play_rounds(hearts, Rules(game="hearts", num_players=4, target_score=None), 32, seed=10)


def test_ppo_checkpoint_by_name_or_path() -> None:
    """``checkpoint="<name>"`` is ``agents/checkpoints/<name>.pt``; a path still works; an unknown
    name is an error that lists the shipped names."""
    from agents.policy_net import shipped_checkpoints

    assert {"ppo_smoorverliefd", "ppo_hearts", "ppo_hearts5"} <= set(shipped_checkpoints())
    by_name = make_agent("ppo", checkpoint="ppo_hearts")
    for path in (str(SHIPPED_HEARTS), "agents/checkpoints/ppo_hearts.pt"):
        by_path = make_agent("ppo", checkpoint=path)
        assert by_path.net is by_name.net  # the same file, read once
    assert by_name.train_args["game"] == "hearts"
    assert make_agent("ppo").train_args["game"] == "smoorverliefd"
    assert make_agent("ppo").train_args["num_players"] == [3, 4, 5]
    with pytest.raises(FileNotFoundError, match="ppo_hearts"):
        make_agent("ppo", checkpoint="ppo_no_such_policy")


@pytest.mark.parametrize("name", ["ppo_hearts", "ppo_hearts5", "ppo_smoorverliefd"])
def test_the_numpy_network_computes_the_torch_networks_logits(name: str, tmp_path) -> None:
    """The ``ppo`` agent plays a checkpoint in numpy (no torch): read without torch, its
    logits are torch's on positions of the game it was trained for; the same training
    args come back; a pickle with anything but tensors and containers is refused."""
    import fractions
    import pickle

    from agents.policy_net import load_checkpoint
    from agents.ppo import NumpyPolicyNet, read_checkpoint
    from tests.test_agents import observations, random_positions

    torch_net, torch_args = load_checkpoint(name)
    agent = make_agent("ppo", checkpoint=name)
    assert isinstance(agent.net, NumpyPolicyNet) and agent.train_args == torch_args
    assert agent.net.card_head == torch_net.card_head
    rules = Rules(game=torch_args["game"], num_players=torch_args["num_players"][-1],
                  target_score=None)
    engine = random_positions(rules, 64, seed=11)
    obs = {k: v[~engine.state.match_over] for k, v in observations(engine).items()}
    mask = obs["action_mask"]
    with torch.no_grad():
        expected, value = torch_net(torch.as_tensor(obs["observation"]), torch.as_tensor(mask))
    # The value head too (what ismcts's leaf reads): torch's, in numpy.
    np.testing.assert_allclose(agent.value(obs["observation"]), value.numpy(), rtol=1e-4,
                               atol=1e-4)
    got = agent.net.logits(obs["observation"], mask)
    np.testing.assert_allclose(got[mask], expected.numpy()[mask], rtol=1e-4, atol=1e-4)
    assert (agent.act(obs, None) == expected.numpy().argmax(axis=1)).all()
    logp = agent.log_policy(obs)
    np.testing.assert_allclose(logp[mask], torch.log_softmax(expected.double(), 1).numpy()[mask],
                               rtol=1e-5, atol=1e-4)
    for threads in (0, 2):  # BLAS threads change the speed, not the logits
        other = make_agent("ppo", checkpoint=name, threads=threads).log_policy(obs)
        np.testing.assert_allclose(other[mask], logp[mask], rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError, match="threads"):
        make_agent("ppo", checkpoint=name, threads=-1)
    bad = tmp_path / "bad.pt"
    torch.save({"model": {}, "args": fractions.Fraction(1, 2)}, bad)
    with pytest.raises(pickle.UnpicklingError, match="Fraction"):
        read_checkpoint(bad)
    # A tensor that would read past its storage is refused, not read out of bounds.
    from agents.ppo import _rebuild_tensor

    with pytest.raises(pickle.UnpicklingError, match="does not fit"):
        _rebuild_tensor(np.zeros(8, np.float32), 0, (3, 3), (3, 1))
    assert _rebuild_tensor(np.arange(9, dtype=np.float32), 0, (3, 3), (1, 3))[0, 1] == 3


def vector_env_points(agent, opponents: str, games: int, seed: int) -> np.ndarray:
    """(games,) points of ``agent`` in seat 0 of single 4-player rounds on the vector env."""
    env = make_vector_env(games, num_players=4, target_score=None, opponents=opponents,
                         reward_mode="round")
    obs, info = env.reset(seed=seed)
    rng = np.random.default_rng(seed)
    total, done = np.zeros(games), np.zeros(games, bool)
    while not done.all():
        mask = info["action_mask"].copy()
        mask[done] = True  # finished games restart; their action is ignored
        actions = agent.act({"observation": obs, "action_mask": mask}, rng)
        obs, reward, term, _, info = env.step(actions)
        assert not info["illegal_action"].any()
        total += np.where(done, 0, reward)
        done |= term
    return total


def test_shipped_checkpoint_beats_random() -> None:
    """Against three greedy players, on the same deals, the shipped Smoorverliefd policy
    scores clearly more than a random player in its seat."""
    ppo = vector_env_points(make_agent("ppo"), "greedy", 256, seed=0)
    rand = vector_env_points(make_agent("random"), "greedy", 256, seed=0)
    assert (ppo - rand).mean() > 1.0


def test_ppo_agent_in_win_rates(tmp_path: Path) -> None:
    from experiments import win_rates

    args = win_rates.Args(agents=["ppo:checkpoint=ppo_smoorverliefd", "random"], players=[4],
                          rule_sets=["smoorverliefd"], deals=8, plots=False, progress=False,
                          out_dir=str(tmp_path), run_name="t")
    rows = win_rates.play_chunk(args, "smoorverliefd", 4, 0)
    assert len(rows) == 8 * 4 * 4


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
@pytest.mark.filterwarnings("ignore::UserWarning")
def test_maskable_ppo_trains_on_smoor_env() -> None:
    gymnasium = pytest.importorskip("gymnasium")
    sb3_contrib = pytest.importorskip("sb3_contrib")
    from sb3_contrib.common.maskable.evaluation import evaluate_policy

    import smoor_env  # noqa: F401  (registers the environments)

    env = gymnasium.make("smoor_env/Smoorverliefd-v1", target_score=None,
                         opponents="random", reward_mode="trick")
    model = sb3_contrib.MaskablePPO("MlpPolicy", env, n_steps=512, batch_size=128,
                                    n_epochs=2, seed=0, verbose=0)
    model.learn(2048)
    assert model.num_timesteps >= 2048
    mean, _ = evaluate_policy(model, env, n_eval_episodes=4, warn=False)
    assert np.isfinite(mean)
