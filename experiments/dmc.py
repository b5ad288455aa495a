"""Deep Monte Carlo self-play: one network for every rule set and player count learns the
value of each of its moves from the rounds it plays against itself (``agents.training.dmc``,
as DouZero and SkatZero train), at engine speed.

An iteration plays one round of every game of every table (``--num-envs`` games each, one
table per rule set and player count of ``--rule-sets`` x ``--players``), every seat
played by the network, epsilon-greedy; then one pass of minibatch regression over the
round's decisions (every decision used once, as in DMC): each move's value learns the
seat's round points, or with ``--targets rest`` its points from the decision on. Adam's
learning rate anneals linearly to 0 over ``--iterations``. Every ``--save-every``
iterations the network is written to ``--out-dir`` as ``it<i>.pt``
(``ppo:checkpoint=...`` plays it, as a policy or as ``ismcts``'s prior); ``log.jsonl``
holds one line an iteration (decisions, errors, seconds) and ``args.json`` the settings.
Table k deals from training seed ``--seed + k`` (below 1,000; the measurements deal from
1,000 up), the exploration and the minibatches from ``--seed``, so the same command makes
the same network on the same machine.

With ``--branch q`` each play decision with a choice is, with probability q, also played
out with every other legal card: in its true deal, the network playing every seat on to
the round's end (``agents.training.dmc.play_out``). Each such card is one more decision
whose move value learns its own outcome, so the cards the network does not choose learn
from more than its exploring moves; the value head learns the round's own moves only.

With each checkpoint the run saves everything it needs to go on (``state.pt``: the
network, Adam's moments, the random generators and every table's games, written
atomically), so a run stopped any way (Ctrl-C, a kill, the session's end) goes on from its
last checkpoint when the same command is given again, and makes exactly the network an
uninterrupted run makes. It goes on only with the settings it began with (``args.json``;
``--progress``, ``--save-every``, ``--stop-at`` and ``--out-dir`` may change) and under
the code that began it; while it runs it holds ``.lock`` in its folder, so a second
process cannot write there. ``--stop-at N`` stops after iteration N of the
``--iterations`` schedule (the learning rate as the whole run has it there), writing its
checkpoint and state, so a network from the middle of a long run is made without the rest
of it. A run done to where it is asked to stop, given again, says so and writes nothing.

With ``--actor`` a second process plays (the tables and the exploration live there) while
this one fits: iteration i fits round i while round i + 1 is played with the network as
it was before that fit, as DouZero's actors play a little behind its learner. An iteration
then takes about the longer of play and fit instead of their sum when two cores are free.
Its state holds the round played ahead too, so it goes on exactly as well.

    python -m experiments.dmc --init runs/ei2/gen1.pt          # warm start, the defaults
    python -m experiments.dmc --iterations 2 --num-envs 4 --out-dir /tmp/dmc   # a smoke run
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import os
import pickle
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

from agents.evaluation.runs import (
    checked_command,
    claim_settings,
    code_fingerprint,
    lock_folder,
    log,
    read_jsonl,
    write_atomic,
)
from agents.policy_net import PolicyNet, load_checkpoint, save_checkpoint
from agents.training.dmc import FIELDS, TARGETS, DMCTables, epsilon_greedy, update
from smoor_env import preset, preset_tables
from smoor_env.observation import OBSERVATION_SIZE

PROG = "python -m experiments.dmc"


@dataclass
class Args:
    iterations: int = 150
    """iterations (one round of every game of every table, then one pass over it)"""
    num_envs: int = 128
    """games per table (rule set and player count) played at once"""
    epsilon: float = 0.03
    """probability of a uniformly drawn legal move instead of the network's best"""
    learning_rate: float = 3e-4
    """Adam's learning rate (annealed linearly to 0 over the run)"""
    minibatch: int = 1024
    """decisions a gradient step"""
    value_coef: float = 0.5
    """weight of the value head's squared error beside the move values'"""
    branch: float = 0.0
    """probability that a play decision with a choice is also played out with every other
    legal card, in its true deal with the network playing on, each card one more decision
    to learn (0: plain DMC; 0.03 is about one decision a game a round at 4 players, about
    twice an iteration's time)"""
    targets: str = "round"
    """what a move's value learns: 'round', the seat's round points; 'rest', its points
    from the decision on (the tricks already won left out: less noise)"""
    rule_sets: list[str] = field(default_factory=lambda: [
        "smoorverliefd", "trump_hearts", "bidding", "partners", "pip_scoring", "hearts",
        "hearts_no_passing"])
    """rule sets played (names of smoor_env.PRESETS; each at the player counts it has)"""
    players: list[int] = field(default_factory=lambda: [3, 4, 5])
    """player counts played"""
    init: str = ""
    """the network to start from: a checkpoint's name or path ('' : a fresh network of
    --hidden and --card-head)"""
    hidden: list[int] = field(default_factory=lambda: [512, 512])
    """layer sizes of a fresh network"""
    deepen: int = 0
    """trunk layers added to --init's network, each starting as the identity (the same
    moves and values at first: it grows without forgetting)"""
    card_head: int = 64
    """width of a fresh network's head shared by the 52 cards (0: none)"""
    seed: int = 900
    """training seed: table k deals from seed + k; exploration and minibatches from it"""
    actor: bool = False
    """play in a second process while this one fits: round i + 1 plays with the network
    of before iteration i's fit (one iteration behind), so play and fit overlap on two
    cores (another network than the same run without it; the same one again each time)"""
    save_every: int = 25
    """iterations between checkpoints (the last iteration always writes one)"""
    stop_at: int = 0
    """stop after this iteration of the --iterations schedule, writing its checkpoint and
    state (0: run to the end); the same command with a later --stop-at, or none, goes on"""
    out_dir: str = "runs/dmc"
    """where the run's files go"""
    progress: bool = True
    """print a line an iteration"""

    def check(self) -> None:
        """Refuse settings that cannot run (a ValueError naming the option)."""
        for name in ("iterations", "num_envs", "minibatch", "save_every"):
            if getattr(self, name) < 1:
                raise ValueError(f"--{name.replace('_', '-')} must be at least 1, got "
                                 f"{getattr(self, name)}")
        if not 0 <= self.stop_at <= self.iterations:
            raise ValueError(f"--stop-at must be in [0, --iterations {self.iterations}] (0: "
                             f"the end), got {self.stop_at}")
        if not 0 <= self.epsilon <= 1:
            raise ValueError(f"--epsilon must be in [0, 1], got {self.epsilon}")
        if not 0 <= self.branch <= 1:
            raise ValueError(f"--branch must be in [0, 1], got {self.branch}")
        if self.targets not in TARGETS:
            raise ValueError(f"--targets must be one of {TARGETS}, got {self.targets!r}")
        if not self.learning_rate > 0:
            raise ValueError(f"--learning-rate must be > 0, got {self.learning_rate}")
        for name in self.rule_sets:
            preset(name, 4)
        if not self.tables():
            raise ValueError(f"no rule set of {self.rule_sets} has a player count in "
                             f"{self.players}")
        if self.seed < 0 or self.seed + len(self.tables()) > 1000:
            raise ValueError(f"--seed {self.seed} leaves the training seeds 0-999 with "
                             f"{len(self.tables())} tables")
        if self.deepen < 0 or (self.deepen and not self.init):
            raise ValueError(f"--deepen grows the --init network by >= 0 layers, got "
                             f"{self.deepen}" + ("" if self.init else " without --init"))
        if self.init:
            load_checkpoint(self.init)
        elif self.card_head < 0:
            raise ValueError(f"--card-head must be >= 0, got {self.card_head}")

    def tables(self) -> list:
        """The single-round rules of every table."""
        return preset_tables(self.rule_sets, self.players)

    def last(self) -> int:
        """The iteration this command stops after (``--stop-at``, else ``--iterations``)."""
        return self.stop_at or self.iterations


#: Settings a stopped run may go on with other values of (they change no network).
_FREE = ("progress", "save_every", "stop_at", "out_dir")

#: A round of every table: its decisions' fields (``FIELDS``) and the seconds it took.
Round = tuple[dict[str, np.ndarray], float]

#: The file of a run's last saved state (``save_state``).
STATE = "state.pt"


def training_code() -> str:
    """The fingerprint of the code a run trains with: the packages that play
    (``code_fingerprint``) and this file's training loop."""
    loop = hashlib.sha256(Path(__file__).read_bytes()).hexdigest()[:16]
    return f"{code_fingerprint()}-{loop}"


def save_state(folder: Path, iteration: int, code: str, net: PolicyNet,
               optimizer: torch.optim.Optimizer, generator: torch.Generator,
               rng_state: dict, tables: DMCTables, ahead: Round | None = None) -> None:
    """Write everything the run needs to go on after ``iteration`` to ``folder/state.pt``,
    with ``code`` (``training_code`` when the run began), the exploration's generator state
    and, with ``--actor``, the round played ahead: a temporary file, flushed to disk,
    renamed over it, so a run killed while writing keeps the old state."""
    state = {"iteration": iteration, "code": code, "net": net.state_dict(),
             "optimizer": optimizer.state_dict(), "generator": generator.get_state(),
             "rng": rng_state, "tables": pickle.dumps(tables), "ahead": ahead}
    temporary = folder / f".{STATE}.tmp"
    with open(temporary, "wb") as out:
        torch.save(state, out)
        out.flush()
        os.fsync(out.fileno())
    os.replace(temporary, folder / STATE)


def load_state(folder: Path, state: dict, net: PolicyNet, optimizer: torch.optim.Optimizer,
               generator: torch.Generator, rng: np.random.Generator
               ) -> tuple[int, str, DMCTables, Round | None]:
    """Restore ``save_state``'s network, optimiser and generators (``state``, read from
    ``folder``) in place; return the iteration it was saved after, the run's code, the
    tables and the round played ahead (``--actor``; else None). A state saved by a run
    begun under other code is refused (a ValueError): the run would not be the one it
    began as."""
    if state["code"] != training_code():
        raise ValueError(f"{folder} holds a run begun under other code ({state['code']}, now "
                         f"{training_code()}): go on with that code, or use another "
                         "--out-dir")
    net.load_state_dict(state["net"])
    optimizer.load_state_dict(state["optimizer"])
    generator.set_state(state["generator"])
    rng.bit_generator.state = state["rng"]
    return (state["iteration"], state["code"], pickle.loads(state["tables"]),
            state.get("ahead"))


def play_tables(tables: DMCTables, choose) -> Round:
    """One round of every game of every table (``DMCTables.play_round``), its decisions'
    fields concatenated, and the seconds it took."""
    start = time.perf_counter()
    parts = [tables.play_round(k, choose) for k in range(len(tables.rules))]
    data = {key: np.concatenate([part[key] for part in parts]) for key in FIELDS}
    return data, time.perf_counter() - start


class SerialPlayer:
    """Plays the tables in this process, with the network as it is."""

    def __init__(self, net: PolicyNet, tables: DMCTables, rng: np.random.Generator,
                 epsilon: float) -> None:
        self.net, self.tables, self.rng = net, tables, rng
        self.choose = epsilon_greedy(net, epsilon, rng)

    def round(self, more: bool = True) -> Round:
        """The round this iteration fits, and the seconds its play took."""
        self.net.eval()
        return play_tables(self.tables, self.choose)

    def collect(self) -> None:
        """Nothing is played ahead."""

    def state(self) -> tuple[dict, DMCTables, None]:
        """The exploration's generator state, the tables and the round played ahead."""
        return self.rng.bit_generator.state, self.tables, None

    def close(self) -> None:
        """Nothing to stop."""


class ActorPlayer:
    """Plays the tables in a second process (``--actor``), one round ahead: ``round`` gives
    the round played before and sets the next one going with the network as it is then,
    ``collect`` waits for it."""

    def __init__(self, net: PolicyNet, tables: DMCTables, rng: np.random.Generator,
                 epsilon: float, ahead: Round | None) -> None:
        import multiprocessing

        self.net = net
        shape = {"hidden": net.hidden, "obs_size": net.obs_size, "card_head": net.card_head}
        context = multiprocessing.get_context("spawn")  # no forked torch threads
        self.conn, child = context.Pipe()
        self.process = context.Process(target=_actor, name="dmc-actor", daemon=True,
                                       args=(child, shape, epsilon, tables,
                                             rng.bit_generator.state))
        self.process.start()
        child.close()
        self.ahead = ahead  # (data, seconds) of the round played ahead, or None
        self.busy = False  # a round is being played

    def _ask(self, command: str, payload=None):
        self.conn.send((command, payload))
        return self._answer()

    def _answer(self):
        try:
            kind, answer = self.conn.recv()
        except EOFError:
            raise RuntimeError("the actor process stopped without a word (exit code "
                               f"{self.process.exitcode})") from None
        if kind == "error":
            raise RuntimeError(f"the actor process failed:\n{answer}")
        return answer

    def _weights(self) -> dict[str, np.ndarray]:
        return {k: v.detach().cpu().numpy().copy() for k, v in self.net.state_dict().items()}

    def round(self, more: bool = True) -> Round:
        """The round this iteration fits (played ahead; at a run's first iteration, now),
        after setting the next one going with the network as it is now (unless ``more``
        is False: the schedule's last iteration)."""
        if self.ahead is None:
            self.busy = True
            self.ahead = self._ask("play", self._weights())
            self.busy = False
        round_, self.ahead = self.ahead, None
        if more:
            self.conn.send(("play", self._weights()))
            self.busy = True
        return round_

    def collect(self) -> None:
        """Wait for the round played ahead, if one is being played."""
        if self.busy:
            self.ahead = self._answer()
            self.busy = False

    def state(self) -> tuple[dict, DMCTables, Round | None]:
        """The actor's exploration generator state and tables, and the round played ahead
        (after ``collect``)."""
        rng_state, tables = self._ask("state")
        return rng_state, tables, self.ahead

    def close(self) -> None:
        """Stop the actor: told to when idle; while it plays (a stop mid-iteration), at
        once, its round lost with the iteration (a run goes on from its saved state)."""
        if not self.busy:
            with contextlib.suppress(OSError):  # BrokenPipeError: gone already (Ctrl-C)
                self.conn.send(("stop", None))
            self.process.join(timeout=5)
        if self.process.is_alive():
            self.process.terminate()
            self.process.join()
        self.conn.close()


def _one_blas_thread():
    """numpy's BLAS on one thread in this process while the context lasts: with
    ``--actor`` each process has a core, and BLAS threads of one would spin on the
    other's."""
    from threadpoolctl import ThreadpoolController

    return ThreadpoolController().limit(limits=1, user_api="blas")


def _actor(conn, shape: dict, epsilon: float, tables: DMCTables, rng_state: dict) -> None:
    """The actor process: plays a round of every table with the weights it is sent, and
    gives its state when asked, until told to stop."""
    torch.set_num_threads(1)
    net = PolicyNet(tuple(shape["hidden"]), obs_size=shape["obs_size"],
                    card_head=shape["card_head"])
    net.eval()
    rng = np.random.default_rng()
    rng.bit_generator.state = rng_state
    choose = epsilon_greedy(net, epsilon, rng)
    try:
        _one_blas_thread()  # for the rest of this process
        while True:
            command, payload = conn.recv()
            if command == "play":
                net.load_state_dict({k: torch.from_numpy(v) for k, v in payload.items()})
                conn.send(("ok", play_tables(tables, choose)))
            elif command == "state":
                conn.send(("ok", (rng.bit_generator.state, tables)))
            else:
                return
    except (KeyboardInterrupt, EOFError, OSError):  # Ctrl-C, or the learner gone
        return
    except Exception:  # a bug: the learner says so, if it is there to hear
        import traceback

        with contextlib.suppress(OSError):
            conn.send(("error", traceback.format_exc()))


def run(args: Args) -> list[dict]:
    """Train, or go on with the run in ``--out-dir`` from its last saved state; return the
    log's rows."""
    folder = Path(args.out_dir)
    claim_settings(args, folder, _FREE)
    lock = lock_folder(folder, "--out-dir")
    try:
        return _train(args, folder)
    finally:
        lock.close()


def _train(args: Args, folder: Path) -> list[dict]:
    torch.manual_seed(args.seed)
    torch.set_num_threads(1)
    if args.init:
        net = load_checkpoint(args.init)[0].deepened(args.deepen)
    else:
        net = PolicyNet(tuple(args.hidden), obs_size=OBSERVATION_SIZE, card_head=args.card_head)
    rules = args.tables()
    rng = np.random.default_rng(args.seed)
    generator = torch.Generator().manual_seed(args.seed)
    optimizer = torch.optim.Adam(net.parameters(), lr=args.learning_rate, eps=1e-5)
    done, rows = 0, []
    if not (folder / STATE).exists() and list(folder.glob("it*.pt")):
        raise ValueError(f"{folder} holds checkpoints of a run without a saved state (made "
                         "before runs could go on, or by other code): use another --out-dir")
    if (folder / STATE).exists():
        logged = folder / "log.jsonl"
        state = torch.load(folder / STATE, weights_only=False)
        if state["iteration"] >= args.last():  # done: whatever the code, nothing to do
            if not (folder / f"it{args.last()}.pt").exists():
                raise ValueError(f"{folder} holds a run past iteration {args.last()} "
                                 f"(state after {state['iteration']}) without it"
                                 f"{args.last()}.pt: --stop-at a saved iteration or later")
            log(args.progress, f"{folder} holds a run done to iteration {args.last()} (of "
                               f"{args.iterations}; state after {state['iteration']})")
            return [row for row in read_jsonl(logged) if row["iteration"] <= args.last()]
        done, code, tables, ahead = load_state(folder, state, net, optimizer, generator, rng)
        if (ahead is not None) != args.actor:  # args.json says it cannot; the state must too
            raise ValueError(f"{folder}'s state holds {'a' if ahead is not None else 'no'} "
                             f"round played ahead, and the run goes on with"
                             f"{'' if args.actor else 'out'} --actor: use another --out-dir")
        rows = [row for row in read_jsonl(logged) if row["iteration"] <= done]  # later: redone
        log(args.progress, f"going on after iteration {done}")
    else:
        code, tables = training_code(), DMCTables(rules, args.num_envs, args.seed, args.branch)
        ahead = None
    write_atomic(folder / "log.jsonl", "".join(json.dumps(row) + "\n" for row in rows))
    player = (ActorPlayer(net, tables, rng, args.epsilon, ahead) if args.actor
              else SerialPlayer(net, tables, rng, args.epsilon))
    try:
        with _one_blas_thread() if args.actor else contextlib.nullcontext():
            for iteration in range(done + 1, args.last() + 1):
                rows.append(_iteration(args, folder, iteration, code, net, optimizer,
                                       generator, player))
    finally:
        player.close()
    return rows


def _iteration(args: Args, folder: Path, iteration: int, code: str, net: PolicyNet,
               optimizer: torch.optim.Optimizer, generator: torch.Generator,
               player: SerialPlayer | ActorPlayer) -> dict:
    """Fit iteration ``iteration``'s round, log it, save at a checkpoint; its log row."""
    start = time.perf_counter()
    data, play_seconds = player.round(more=iteration < args.iterations)
    played = time.perf_counter()
    net.train()
    optimizer.param_groups[0]["lr"] = args.learning_rate * (1 - (iteration - 1) / args.iterations)
    fitted = update(net, optimizer, data, args.minibatch, generator, args.value_coef,
                    targets=args.targets)
    fit_seconds = time.perf_counter() - played
    player.collect()
    row = {"iteration": iteration, "decisions": fitted.decisions,
           "branched": int(np.sum(~data["played"])), "move_mse": fitted.move_mse,
           "value_mse": fitted.value_mse, "play_seconds": play_seconds,
           "update_seconds": fit_seconds, "seconds": time.perf_counter() - start}
    with open(folder / "log.jsonl", "a") as out:
        out.write(json.dumps(row) + "\n")
    log(args.progress, f"iteration {iteration}: {fitted.decisions} decisions"
                       + (f" ({row['branched']} of them other cards of branches)" if args.branch
                          else "")
                       + ", move error "
                       f"{fitted.move_mse:.4f}, value error {fitted.value_mse:.4f}, "
                       f"{play_seconds:.1f} s play + {fit_seconds:.1f} s fit"
                       + (f", {row['seconds']:.1f} s in all" if args.actor else ""))
    if iteration % args.save_every == 0 or iteration == args.last():
        net.eval()
        save_checkpoint(folder / f"it{iteration}.pt", net,
                        {**dataclasses.asdict(args), "iteration": iteration,
                         "method": "dmc", "game": "all", "num_players": args.players})
        save_state(folder, iteration, code, net, optimizer, generator, *player.state())
    return row


def main(argv: list[str] | None = None) -> int:
    """The command; its exit status (2 and one line for settings it refuses)."""
    return checked_command(PROG, Args, run, __doc__.split("\n\n")[0], argv)


if __name__ == "__main__":
    sys.exit(main())
