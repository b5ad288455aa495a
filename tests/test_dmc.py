"""Deep Monte Carlo self-play (``agents.training.dmc``, ``experiments/dmc.py``): every move
learns the round's outcome for the seat that played it. Skipped without PyTorch."""

from __future__ import annotations

import copy
import json
import multiprocessing
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from agents import make_agent  # noqa: E402
from agents.policy_net import PolicyNet, load_checkpoint  # noqa: E402
from agents.training.dmc import (  # noqa: E402
    POINTS_PER_LOGIT,
    DMCTables,
    epsilon_greedy,
    play_out,
    update,
)
from experiments import dmc  # noqa: E402
from smoor_env import Engine, Phase, preset  # noqa: E402
from smoor_env.envs.selfplay import SelfPlayVectorEnv  # noqa: E402
from smoor_env.observation import compact_scale  # noqa: E402

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def lowest_legal(obs: np.ndarray, mask: np.ndarray) -> np.ndarray:
    return np.argmax(mask, axis=1)


@pytest.mark.parametrize("name,players", [("smoorverliefd", 4), ("hearts", 4),
                                          ("bidding", 3), ("partners", 4)])
def test_every_decision_of_a_round_carries_that_seats_round_points(name, players):
    rules = preset(name, players)
    tables = DMCTables([rules], num_envs=3, seed=7)
    first, second = tables.play_round(0, lowest_legal), tables.play_round(0, lowest_legal)

    # The same rounds, played by hand on the env the tables wrap.
    env = SelfPlayVectorEnv(3, rules, reward_mode="round", obs_dtype="int8")
    obs, info = env.reset(seed=7)
    for got in (first, second):
        decisions, seats, points = [], [], np.zeros((3, players))
        done = np.zeros(3, bool)
        while not done.all():
            decisions.append(obs[~done])
            seats.append((np.flatnonzero(~done), info["seat"][~done]))
            obs, rewards, terminated, _, info = env.step(np.argmax(info["action_mask"], 1))
            points[terminated & ~done] = rewards[terminated & ~done]
            done |= terminated
        obs, _, _, _, info = env.step(np.zeros(3, np.int64))  # the next rounds begin
        games = np.concatenate([g for g, _ in seats])
        seat = np.concatenate([s for _, s in seats])
        np.testing.assert_array_equal(got["observations"], np.concatenate(decisions))
        np.testing.assert_array_equal(got["returns"], points[games, seat])
        turns = np.bincount(games * players + seat, minlength=3 * players)  # (3 P,)
        assert turns.min() == turns.max() > 0  # whole rounds: every seat as often
    assert not np.array_equal(first["observations"], second["observations"])  # new deals


@pytest.mark.parametrize("name", ["smoorverliefd", "hearts", "bidding"])
def test_what_a_seat_earned_before_its_decision_is_its_tricks_so_far(name):
    """``earned`` is the sum of the seat's trick rewards before the decision, so the
    ``rest`` target (round points less earned) is what the round pays from it on."""
    rules = preset(name, 4)
    got = DMCTables([rules], 2, seed=11).play_round(0, lowest_legal)
    env = SelfPlayVectorEnv(2, rules, reward_mode="trick")
    _, info = env.reset(seed=11)
    so_far, before, done = np.zeros((2, 4)), [], np.zeros(2, bool)
    while not done.all():
        live = np.flatnonzero(~done)
        before.append(so_far[live, info["seat"][live]])
        _, rewards, terminated, _, info = env.step(np.argmax(info["action_mask"], 1))
        so_far += rewards
        done |= terminated
    np.testing.assert_array_equal(got["earned"], np.concatenate(before))
    assert (got["earned"] != 0).any() and (got["earned"] != got["returns"]).any()


def test_partners_share_their_teams_points():
    got = DMCTables([preset("partners", 4)], 2, seed=3).play_round(0, lowest_legal)
    assert len(np.unique(got["returns"])) >= 2  # the two teams differ somewhere


def test_epsilon_greedy_plays_the_best_value_or_a_legal_move():
    net = PolicyNet((16,))
    env = SelfPlayVectorEnv(64, preset("hearts", 4), obs_dtype="float32")
    obs, info = env.reset(seed=0)
    mask = info["action_mask"]
    rng = np.random.default_rng(0)
    best = net.logits(obs, mask).argmax(1)
    np.testing.assert_array_equal(epsilon_greedy(net, 0.0, rng)(obs, mask), best)
    drawn = epsilon_greedy(net, 1.0, rng)(obs, mask)
    assert mask[np.arange(64), drawn].all()
    assert not np.array_equal(drawn, best)
    with pytest.raises(ValueError, match="epsilon"):
        epsilon_greedy(net, 1.5, rng)


@pytest.mark.parametrize("targets", ["round", "rest"])
def test_update_fits_the_played_moves_to_their_points(targets):
    torch.manual_seed(0)
    net = PolicyNet((32,))
    data = DMCTables([preset("smoorverliefd", 3)], 8, seed=1).play_round(0, lowest_legal)
    wanted = data["returns"] - (data["earned"] if targets == "rest" else 0)  # (L,) points
    optimizer = torch.optim.Adam(net.parameters(), lr=3e-3)
    generator = torch.Generator().manual_seed(0)
    errors = [update(net, optimizer, data, 64, generator, targets=targets).move_mse
              for _ in range(60)]
    assert errors[-1] < errors[0] / 20
    with pytest.raises(ValueError, match="targets must be one of"):
        update(net, optimizer, data, 64, generator, targets="future")
    with torch.no_grad():
        obs = torch.as_tensor(data["observations"]).float() * torch.as_tensor(compact_scale())
        logits, _ = net(obs, torch.ones((len(obs), 70), dtype=torch.bool))
    played = logits.gather(1, torch.as_tensor(data["actions"])[:, None]).squeeze(1).numpy()
    points = played * POINTS_PER_LOGIT  # the move values, in points
    assert np.corrcoef(points, wanted)[0, 1] > 0.9


def linear_scorer(obs: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """A deterministic chooser that reads the whole observation: the legal action of the
    largest fixed random score."""
    weights = np.random.default_rng(4).normal(size=(obs.shape[1], 70)).astype(np.float32)
    return np.where(mask, obs @ weights, -np.inf).argmax(axis=1)


@pytest.mark.parametrize("name,players", [("smoorverliefd", 4), ("hearts", 4),
                                          ("bidding", 3), ("partners", 4)])
def test_a_branch_plays_each_other_card_out_in_the_true_deal_as_the_table_would(name, players):
    """branch=1: every play decision with a choice is played out with each other legal
    card. Each outcome is what the same env, copied at that decision and given that card,
    deals out to the seat when the same chooser plays on (observations from the env's
    tracker, points from its rewards)."""
    rules = preset(name, players)
    data = DMCTables([rules], 2, seed=5, branch=1.0).play_round(0, linear_scorer)
    played = data["played"]
    assert played.any() and (~played).any()

    env = SelfPlayVectorEnv(2, rules, reward_mode="trick", obs_dtype="int8")
    obs, info = env.reset(seed=5)
    scale = compact_scale()
    earned = np.zeros((2, players))
    done = np.zeros(2, bool)
    want: dict[str, list] = {key: [] for key in ("observations", "actions", "returns", "earned")}
    while not done.all():
        mask = info["action_mask"]
        actions = linear_scorer(obs.astype(np.float32) * scale, mask)
        playing = ~done & (env.engine.state.phase == Phase.PLAY) & (mask.sum(axis=1) >= 2)
        for game in np.flatnonzero(playing):
            seat = info["seat"][game]
            for card in np.flatnonzero(mask[game]):
                if card == actions[game]:
                    continue
                copy_env, moves = copy.deepcopy(env), actions.copy()
                moves[game] = card
                gained, over = 0.0, False
                while not over:
                    got, rewards, terminated, _, got_info = copy_env.step(moves)
                    gained += rewards[game, seat]
                    over = terminated[game]
                    moves = linear_scorer(got.astype(np.float32) * scale,
                                          got_info["action_mask"])
                outcome = (obs[game], card, earned[game, seat] + gained, earned[game, seat])
                for key, value in zip(want, outcome, strict=True):
                    want[key].append(value)
        obs, rewards, terminated, _, info = env.step(actions)
        earned += rewards
        done |= terminated
    np.testing.assert_array_equal(data["observations"][~played], np.array(want["observations"]))
    np.testing.assert_array_equal(data["actions"][~played], want["actions"])
    np.testing.assert_allclose(data["returns"][~played], want["returns"])
    np.testing.assert_allclose(data["earned"][~played], want["earned"])
    # The round itself is the one played without branches.
    plain = DMCTables([rules], 2, seed=5).play_round(0, linear_scorer)
    for key in ("observations", "actions", "returns", "earned"):
        np.testing.assert_array_equal(data[key][played], plain[key])


def branched_decisions(data: dict[str, np.ndarray]) -> int:
    """How many decisions branched: the distinct observations of the other cards' rows
    (each decision's observation is its own: a game's seat to act changes every step)."""
    return len(np.unique(data["observations"][~data["played"]], axis=0))


def test_branch_is_a_probability_and_plays_decisions_with_a_choice_at_that_rate():
    with pytest.raises(ValueError, match="branch must be a probability"):
        DMCTables([preset("hearts", 4)], 2, seed=0, branch=1.5)
    rules = preset("smoorverliefd", 4)
    none = DMCTables([rules], 64, seed=0, branch=0.0).play_round(0, lowest_legal)
    assert none["played"].all()
    every = branched_decisions(DMCTables([rules], 64, seed=0, branch=1.0)
                               .play_round(0, lowest_legal))
    some = branched_decisions(DMCTables([rules], 64, seed=0, branch=0.25)
                              .play_round(0, lowest_legal))
    # a binomial count of `every` draws at 0.25: within 5 standard deviations
    spread = 5 * np.sqrt(every * 0.25 * 0.75)
    assert abs(some - 0.25 * every) < spread, (some, every)


def test_play_out_refuses_a_match():
    engine = Engine(preset("smoorverliefd", 4, matches=True), 2)
    with pytest.raises(ValueError, match="single rounds"):
        play_out(engine, lowest_legal, compact_scale())


def test_the_value_head_learns_only_the_moves_the_round_played():
    """A branch's other cards teach the move values, not the value of the state (which is
    the played move's): an update of branch cards alone leaves the value head as it was."""
    torch.manual_seed(0)
    net = PolicyNet((32,))
    data = DMCTables([preset("hearts", 4)], 2, seed=1, branch=1.0).play_round(0, lowest_legal)
    others = {key: value[~data["played"]] for key, value in data.items()}
    value_head = [p.detach().clone() for p in net.value.parameters()]
    policy_head = [p.detach().clone() for p in net.policy.parameters()]
    optimizer = torch.optim.Adam(net.parameters(), lr=1e-3)
    fitted = update(net, optimizer, others, 64, torch.Generator().manual_seed(0))
    assert fitted.value_mse == 0.0 and fitted.move_mse > 0
    assert all(torch.equal(a, b) for a, b in zip(value_head, net.value.parameters(), strict=True))
    assert not all(torch.equal(a, b)
                   for a, b in zip(policy_head, net.policy.parameters(), strict=True))


def test_the_command_makes_the_same_network_twice_and_it_plays(tmp_path: Path):
    argv = ["--iterations", "2", "--num-envs", "2", "--rule-sets", "smoorverliefd", "hearts",
            "--players", "4", "--hidden", "32", "--card-head", "8", "--save-every", "1",
            "--no-progress"]
    assert dmc.main([*argv, "--out-dir", str(tmp_path / "a")]) == 0
    assert dmc.main([*argv, "--out-dir", str(tmp_path / "b")]) == 0
    rows = [json.loads(line) for line in (tmp_path / "a" / "log.jsonl").read_text().splitlines()]
    assert [row["iteration"] for row in rows] == [1, 2]
    assert all(row["decisions"] == 2 * (52 + 52 + 12) for row in rows)  # 13 tricks; passes
    for name in ("it1.pt", "it2.pt"):
        a, b = (load_checkpoint(tmp_path / run / name)[0].state_dict() for run in "ab")
        assert all(torch.equal(a[key], b[key]) for key in a)
    one, two = (load_checkpoint(tmp_path / "a" / name)[0].state_dict() for name in
                ("it1.pt", "it2.pt"))
    assert not all(torch.equal(one[key], two[key]) for key in one)  # it learned
    agent = make_agent("ppo", checkpoint=str(tmp_path / "a" / "it2.pt"))
    env = SelfPlayVectorEnv(4, preset("hearts", 4))
    obs, info = env.reset(seed=0)
    actions = agent.act({"observation": obs, "action_mask": info["action_mask"]},
                        np.random.default_rng(0))
    assert info["action_mask"][np.arange(4), actions].all()


@pytest.mark.parametrize("option,value,message", [
    ("--epsilon", "1.5", "--epsilon must be in"),
    ("--branch", "-0.1", "--branch must be in"),
    ("--targets", "future", "--targets must be one of"),
    ("--iterations", "0", "--iterations must be at least 1"),
    ("--seed", "990", "leaves the training seeds 0-999"),
    ("--init", "no/such.pt", "no/such.pt"),
    ("--deepen", "1", "--deepen grows the --init network"),
])
def test_the_command_refuses_settings_that_cannot_run(tmp_path, capsys, option, value,
                                                      message):
    assert dmc.main([option, value, "--out-dir", str(tmp_path / "run")]) == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "run").exists()


SMALL = ["--num-envs", "2", "--rule-sets", "smoorverliefd", "hearts", "--players", "4",
         "--hidden", "32", "--card-head", "8", "--save-every", "2", "--no-progress"]


def test_deepen_grows_the_init_network_which_then_trains(tmp_path):
    """--deepen 1 --init a run's checkpoint: one more trunk layer, which starts as the
    identity (the first round is played as the smaller network plays it) and learns."""
    assert dmc.main([*SMALL, "--iterations", "1", "--out-dir", str(tmp_path / "small")]) == 0
    small = tmp_path / "small" / "it1.pt"
    assert dmc.main([*SMALL, "--iterations", "1", "--init", str(small), "--deepen", "1",
                     "--out-dir", str(tmp_path / "grown")]) == 0
    trained = load_checkpoint(tmp_path / "grown" / "it1.pt")[0]
    assert trained.hidden == (32, 32)
    assert not torch.equal(trained.trunk[2].weight, torch.eye(32))  # it learned
    net = load_checkpoint(small)[0]
    rounds = [dmc.play_tables(DMCTables(dmc.Args(rule_sets=["smoorverliefd", "hearts"],
                                                 players=[4]).tables(), 2, 5),
                              epsilon_greedy(player, 0.03, np.random.default_rng(0)))[0]
              for player in (net, net.deepened(1))]
    np.testing.assert_array_equal(rounds[0]["actions"], rounds[1]["actions"])


@pytest.mark.parametrize("actor", [[], ["--actor"], ["--branch", "0.2"]],
                         ids=["serial", "actor", "branch"])
def test_a_stopped_run_goes_on_to_the_network_an_unbroken_run_makes(tmp_path, monkeypatch,
                                                                   actor):
    """Also with --actor (the round it played ahead is saved with the state) and with
    --branch (which decisions branch is drawn from a generator saved with the tables)."""
    small = [*SMALL, *actor]
    assert dmc.main([*small, "--iterations", "5", "--out-dir", str(tmp_path / "whole")]) == 0

    real_update, calls = dmc.update, []

    def stopped_in_iteration_4(*args, **kwargs):
        calls.append(1)
        if len(calls) == 4:
            raise KeyboardInterrupt
        return real_update(*args, **kwargs)

    monkeypatch.setattr(dmc, "update", stopped_in_iteration_4)
    broken = tmp_path / "broken"
    assert dmc.main([*small, "--iterations", "5", "--out-dir", str(broken)]) == 130
    assert multiprocessing.active_children() == []  # the actor stopped with the run
    lines = (broken / "log.jsonl").read_text().splitlines()
    assert [json.loads(line)["iteration"] for line in lines] == [1, 2, 3]
    assert not (broken / "it4.pt").exists()
    monkeypatch.setattr(dmc, "update", real_update)
    # Iteration 3 was not saved: the run goes on after 2 and plays 3 again.
    assert dmc.main([*small, "--iterations", "5", "--out-dir", str(broken)]) == 0

    # the schedule's last iteration plays nothing ahead
    assert torch.load(tmp_path / "whole" / "state.pt", weights_only=False)["ahead"] is None
    for name in ("it2.pt", "it4.pt", "it5.pt"):
        a, b = (load_checkpoint(tmp_path / run / name)[0].state_dict()
                for run in ("whole", "broken"))
        assert all(torch.equal(a[key], b[key]) for key in a), name
    rows = [[json.loads(line) for line in (tmp_path / run / "log.jsonl").read_text().splitlines()]
            for run in ("whole", "broken")]
    drop = ("play_seconds", "update_seconds", "seconds")
    assert [{k: v for k, v in row.items() if k not in drop} for row in rows[0]] == \
        [{k: v for k, v in row.items() if k not in drop} for row in rows[1]]


def test_with_an_actor_each_round_is_played_by_the_network_one_iteration_behind(tmp_path):
    """--actor plays round i + 1 while iteration i fits, with the network as it was before
    that fit: round 1 and round 2 both by the first network, so iteration 1 is the serial
    run's and iteration 2 is not; replayed here step by step, it is exactly the run's."""
    argv = [*SMALL, "--iterations", "2", "--save-every", "1"]
    assert dmc.main([*argv, "--actor", "--out-dir", str(tmp_path / "actor")]) == 0
    assert dmc.main([*argv, "--out-dir", str(tmp_path / "serial")]) == 0
    args = dmc.Args(num_envs=2, rule_sets=["smoorverliefd", "hearts"], players=[4],
                    hidden=[32], card_head=8, iterations=2)
    torch.manual_seed(args.seed)
    net = PolicyNet((32,), card_head=8)
    playing = copy.deepcopy(net)  # the actor's copy
    tables = DMCTables(args.tables(), args.num_envs, args.seed)
    choose = epsilon_greedy(playing, args.epsilon, np.random.default_rng(args.seed))
    generator = torch.Generator().manual_seed(args.seed)
    optimizer = torch.optim.Adam(net.parameters(), lr=args.learning_rate, eps=1e-5)
    ahead, _ = dmc.play_tables(tables, choose)  # round 1, by the first network
    for iteration in (1, 2):
        data = ahead
        playing.load_state_dict(net.state_dict())
        ahead, _ = dmc.play_tables(tables, choose)  # round i + 1, by the network before fit i
        optimizer.param_groups[0]["lr"] = args.learning_rate * (1 - (iteration - 1) / 2)
        update(net, optimizer, data, args.minibatch, generator, args.value_coef)
        made, serial = (load_checkpoint(tmp_path / run / f"it{iteration}.pt")[0].state_dict()
                        for run in ("actor", "serial"))
        assert all(torch.equal(made[k], v) for k, v in net.state_dict().items()), iteration
        same_as_serial = all(torch.equal(made[k], serial[k]) for k in made)
        assert same_as_serial == (iteration == 1), iteration


def test_stop_at_makes_the_middle_of_a_long_run_and_the_run_goes_on_from_it(tmp_path):
    whole, part = tmp_path / "whole", tmp_path / "part"
    assert dmc.main([*SMALL, "--save-every", "1", "--iterations", "5",
                     "--out-dir", str(whole)]) == 0
    assert dmc.main([*SMALL, "--iterations", "5", "--stop-at", "3", "--out-dir", str(part)]) == 0
    # iteration 3 (no --save-every multiple) is written: the unbroken run's iteration 3
    assert sorted(path.name for path in part.glob("it*.pt")) == ["it2.pt", "it3.pt"]
    a, b = (load_checkpoint(run / "it3.pt")[0].state_dict() for run in (whole, part))
    assert all(torch.equal(a[key], b[key]) for key in a)
    # asked again to stop there, or earlier, it writes nothing
    before = {path.name: path.read_bytes() for path in part.iterdir()}
    for stop in ("3", "2"):
        assert dmc.main([*SMALL, "--iterations", "5", "--stop-at", stop,
                         "--out-dir", str(part)]) == 0
    assert {path.name: path.read_bytes() for path in part.iterdir()} == before
    # without --stop-at it goes on to the end, to the unbroken run's network
    assert dmc.main([*SMALL, "--iterations", "5", "--out-dir", str(part)]) == 0
    a, b = (load_checkpoint(run / "it5.pt")[0].state_dict() for run in (whole, part))
    assert all(torch.equal(a[key], b[key]) for key in a)


def test_stop_at_an_iteration_past_the_state_without_its_checkpoint_is_refused(tmp_path,
                                                                                 capsys):
    assert dmc.main([*SMALL, "--iterations", "4", "--out-dir", str(tmp_path)]) == 0
    capsys.readouterr()
    assert dmc.main([*SMALL, "--iterations", "4", "--stop-at", "3",
                     "--out-dir", str(tmp_path)]) == 2
    assert "without it3.pt" in capsys.readouterr().err
    assert dmc.main([*SMALL, "--iterations", "4", "--stop-at", "5",
                     "--out-dir", str(tmp_path / "x")]) == 2
    assert "--stop-at must be in [0, --iterations 4]" in capsys.readouterr().err


def test_a_finished_run_given_again_writes_nothing(tmp_path):
    argv = [*SMALL, "--iterations", "2", "--out-dir", str(tmp_path)]
    assert dmc.main(argv) == 0
    before = {path.name: path.read_bytes() for path in tmp_path.iterdir()}
    assert dmc.main(argv) == 0
    assert {path.name: path.read_bytes() for path in tmp_path.iterdir()} == before


def test_a_run_goes_on_only_with_its_own_settings_and_code(tmp_path, capsys, monkeypatch):
    assert dmc.main([*SMALL, "--iterations", "2", "--out-dir", str(tmp_path)]) == 0
    capsys.readouterr()
    assert dmc.main([*SMALL, "--iterations", "4", "--out-dir", str(tmp_path)]) == 2
    assert "other settings (--iterations 2)" in capsys.readouterr().err
    monkeypatch.setattr(dmc, "training_code", lambda: "0123456789abcdef")
    # finished: so it says, under any code, and writes nothing
    before = {path.name: path.read_bytes() for path in tmp_path.iterdir()}
    assert dmc.main([*SMALL, "--iterations", "2", "--out-dir", str(tmp_path)]) == 0
    assert {path.name: path.read_bytes() for path in tmp_path.iterdir()} == before
    # stopped after iteration 1 (its state says so): it would go on under other code
    state = torch.load(tmp_path / "state.pt", weights_only=False)
    torch.save({**state, "iteration": 1}, tmp_path / "state.pt")
    assert dmc.main([*SMALL, "--iterations", "2", "--out-dir", str(tmp_path)]) == 2
    assert "begun under other code" in capsys.readouterr().err
    monkeypatch.undo()
    torch.save(state, tmp_path / "state.pt")
    (tmp_path / "state.pt").unlink()  # a run of the days before runs went on
    before = {path.name: path.read_bytes() for path in tmp_path.iterdir()}
    assert dmc.main([*SMALL, "--iterations", "2", "--out-dir", str(tmp_path)]) == 2
    assert "checkpoints of a run without a saved state" in capsys.readouterr().err
    assert {path.name: path.read_bytes() for path in tmp_path.iterdir()} == before


def test_a_run_from_before_a_setting_existed_goes_on_with_that_settings_default(tmp_path,
                                                                               capsys):
    """args.json written before --actor and --deepen existed: made with their defaults, so
    the finished run is done (nothing written); asked for another value, it is refused."""
    argv = [*SMALL, "--iterations", "1", "--out-dir", str(tmp_path)]
    assert dmc.main(argv) == 0
    recorded = json.loads((tmp_path / "args.json").read_text())
    del recorded["actor"], recorded["deepen"]
    (tmp_path / "args.json").write_text(json.dumps(recorded))
    before = {path.name: path.read_bytes() for path in tmp_path.iterdir()}
    assert dmc.main(argv) == 0  # done: it writes nothing
    assert {path.name: path.read_bytes() for path in tmp_path.iterdir()} == before
    capsys.readouterr()
    assert dmc.main([*argv, "--actor"]) == 2
    assert "other settings (--actor False)" in capsys.readouterr().err


def test_a_state_saved_with_a_round_played_ahead_goes_on_only_with_an_actor(tmp_path, capsys):
    """--stop-at 1 of 2 with --actor saves round 2 played ahead; were args.json to lose
    --actor, the state itself refuses to go on without it."""
    argv = [*SMALL, "--iterations", "2", "--out-dir", str(tmp_path)]
    assert dmc.main([*argv, "--stop-at", "1", "--actor"]) == 0
    assert torch.load(tmp_path / "state.pt", weights_only=False)["ahead"] is not None
    recorded = json.loads((tmp_path / "args.json").read_text())
    del recorded["actor"]
    (tmp_path / "args.json").write_text(json.dumps(recorded))
    capsys.readouterr()
    assert dmc.main(argv) == 2
    assert "round played ahead, and the run goes on without --actor" in capsys.readouterr().err


def test_a_folder_another_process_trains_in_is_refused(tmp_path, capsys):
    from agents.evaluation.runs import lock_folder

    argv = [*SMALL, "--iterations", "1", "--out-dir", str(tmp_path)]
    assert dmc.main(argv) == 0  # the folder and its settings exist
    held = lock_folder(tmp_path, "--out-dir")
    try:
        before = (tmp_path / "log.jsonl").read_text()
        assert dmc.main(argv) == 2
        assert "another run is writing to" in capsys.readouterr().err
        assert (tmp_path / "log.jsonl").read_text() == before
    finally:
        held.close()


def test_ctrl_c_is_one_line_and_exit_130(tmp_path, capsys, monkeypatch):
    def interrupted(args):
        raise KeyboardInterrupt

    monkeypatch.setattr(dmc, "run", interrupted)
    assert dmc.main(["--out-dir", str(tmp_path)]) == 130
    assert capsys.readouterr().err.strip() == "python -m experiments.dmc: interrupted"
