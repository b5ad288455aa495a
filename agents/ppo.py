"""``ppo``: a policy trained by ``experiments/train_ppo.py``, played in numpy from its
checkpoint (no PyTorch needed to play; training needs the ``rl`` extra).

    make_agent("ppo")                                    # ppo_smoorverliefd (shipped)
    make_agent("ppo", checkpoint="ppo_hearts")           # a shipped checkpoint by name
    make_agent("ppo", checkpoint="runs/x/model.pt", sample=True)   # or any file
    python -m experiments.win_rates --agents ppo:checkpoint=ppo_hearts \\
        random greedy mc --players 4 --rule-sets hearts

Shipped checkpoints (``agents/checkpoints/<name>.pt``, package data: installed with the
package, see README "Reinforcement learning"): ``ppo_smoorverliefd`` (Smoorverliefd, 3, 4
and 5 players), ``ppo_hearts`` (Hearts with passing, 4 players) and ``ppo_hearts5`` (the
same at 5 players), the specialists ``SHIPPED_POLICIES`` names; and ``one_network``
(``SHIPPED_NETWORK``), a network trained on every rule set by expert iteration, DMC and
a distillation of the specialist and of ``mc`` (``experiments/``), with the three that
were its first steps (``EARLIER_NETWORKS``). The
specialists' training curves are in ``docs/results/rl/`` (not installed).

A checkpoint is a ``torch.save`` dict (``agents.policy_net.save_checkpoint``): ``"model"`` (the
``PolicyNet`` state dict), ``"hidden"`` (layer sizes), ``"card_head"`` (0: none) and
``"args"`` (the training ``Args`` as a dict). ``read_checkpoint`` reads such a file
without torch, with a restricted unpickler (tensors and plain containers only, as
``torch.load(weights_only=True)`` allows), and ``NumpyPolicyNet`` computes the same
logits as ``agents.policy_net.PolicyNet`` (``tests/test_rl.py`` checks them against torch on
the shipped checkpoints). The card head's features (``card_features``) have their one
home here; the torch network calls the same function.
"""

from __future__ import annotations

import functools
import pickle
import zipfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
from scipy.special import log_softmax
from threadpoolctl import ThreadpoolController

from agents.base import check_mask, check_observation, register
from smoor_env.core.rules import Rules
from smoor_env.observation import MAX_SEATS, SLICES

#: Folder of the shipped checkpoints, package data (``agents/checkpoints/``: in a checkout
#: as in an installed wheel); ``checkpoint="<name>"`` loads ``<name>.pt`` from it.
CHECKPOINT_DIR = Path(__file__).resolve().parent / "checkpoints"
#: What a relative checkpoint path that is not found from the working directory is tried
#: against: the repository's root in a checkout (``agents/checkpoints/ppo_hearts.pt``).
_ROOT = Path(__file__).resolve().parent.parent
#: The checkpoint played by default (Smoorverliefd, 3, 4 and 5 players).
DEFAULT_CHECKPOINT = "ppo_smoorverliefd"

#: Logit of illegal actions (large negative, finite: no NaN when a row has no legal action).
MASKED_LOGIT = -1e8

_PLAIN = {"single_round": True, "trump_hearts": False, "bidding": False, "partners": False,
          "pip_scoring": False}
#: The checkpoints the package ships, each with the training arguments its rules come from
#: (``training_rules``; the same as in the file's ``"args"``, ``tests/test_packaging.py``
#: checks them). ``shipped_policy_for`` maps rule sets to these names whether or not the
#: files are there, so a rule set whose policy is missing (an install without the
#: package data) is a FileNotFoundError, not a search without its policy.
SHIPPED_POLICIES: dict[str, dict[str, Any]] = {
    "ppo_hearts": {"game": "hearts", "num_players": [4], **_PLAIN},
    "ppo_hearts5": {"game": "hearts", "num_players": [5], **_PLAIN},
    "ppo_smoorverliefd": {"game": "smoorverliefd", "num_players": [3, 4, 5], **_PLAIN},
}
#: The network: trained on every single-round rule set at 3-5 players (DMC run 4's last
#: checkpoint, ``dmc4_it1000``, taught by ``experiments.distill_table`` to play as the
#: specialist ``ppo_smoorverliefd`` in plain Smoorverliefd and as ``mc`` elsewhere; its
#: ``"args"`` say ``game="all"``), the prior of ``prior="auto"`` in every rule set
#: (``agents.mc.table_prior``; docs/results/2026-12-07-distilled-mc-protocol.md). Made
#: from scratch by ``experiments.make_network``. Not a policy of ``shipped_policy_for``.
SHIPPED_NETWORK = "one_network"
#: The networks that were ``prior="auto"``'s before ``SHIPPED_NETWORK`` took their place:
#: ``dmc_all`` (DMC run 2's last checkpoint, the variants' prior until 2026-12-07),
#: ``dmc3_it1000`` (DMC run 3's iteration 1,000, Hearts') and ``dmc4_it1000`` (DMC run
#: 4's last, both groups' until the distilled network). They are the first steps of
#: ``SHIPPED_NETWORK``'s making (``experiments.make_network``), and they ship still, so
#: that the measurements that name them (docs/results/) can be run again and those steps
#: compared; nothing plays them by default.
EARLIER_NETWORKS = ("dmc_all", "dmc3_it1000", "dmc4_it1000")
#: The networks the package ships besides the specialists.
SHIPPED_NETWORKS = (SHIPPED_NETWORK, *EARLIER_NETWORKS)

_DTYPES = {"FloatStorage": np.float32, "DoubleStorage": np.float64, "HalfStorage": np.float16,
           "LongStorage": np.int64, "IntStorage": np.int32, "BoolStorage": np.bool_}


def read_checkpoint(path: str | Path) -> dict[str, Any]:
    """The dict a ``torch.save`` zip file holds, tensors as numpy arrays, without torch.

    Only tensors (any of the storages in ``_DTYPES``) and plain Python containers are
    accepted; anything else in the pickle is a ``pickle.UnpicklingError`` naming it.
    """
    try:
        archive = zipfile.ZipFile(path)
    except zipfile.BadZipFile:
        raise ValueError(f"{path} is not a torch.save file (not a zip archive)") from None
    with archive:
        names = archive.namelist()
        pickled = [name for name in names if name.endswith("/data.pkl")]
        if len(pickled) != 1:
            raise ValueError(f"{path} is not a torch.save file (no single data.pkl inside)")
        root = pickled[0][:-len("data.pkl")]
        order = archive.read(root + "byteorder").decode() if root + "byteorder" in names \
            else "little"
        endian = "<" if order == "little" else ">"
        storages: dict[str, np.ndarray] = {}

        def storage(key: str, dtype: type) -> np.ndarray:
            if key not in storages:
                raw = archive.read(f"{root}data/{key}")
                storages[key] = np.frombuffer(raw, np.dtype(dtype).newbyteorder(endian))
            return storages[key]

        class Unpickler(pickle.Unpickler):
            def find_class(self, module: str, name: str) -> Any:
                if (module, name) == ("torch._utils", "_rebuild_tensor_v2"):
                    return _rebuild_tensor
                if (module, name) == ("collections", "OrderedDict"):
                    return dict
                if module == "torch" and name in _DTYPES:
                    return _DTYPES[name]
                raise pickle.UnpicklingError(f"{path}: {module}.{name} is not allowed in a "
                                             f"checkpoint (tensors and containers only)")

            def persistent_load(self, pid: tuple) -> np.ndarray:
                kind, dtype, key, _device, _numel = pid
                if kind != "storage" or dtype not in _DTYPES.values():
                    raise pickle.UnpicklingError(f"{path}: unknown storage {pid!r}")
                return storage(str(key), dtype)

        with archive.open(pickled[0]) as file:
            return Unpickler(file).load()


def _rebuild_tensor(storage: np.ndarray, offset: int, size: tuple, stride: tuple,
                    *_: Any) -> np.ndarray:
    """``torch._utils._rebuild_tensor_v2`` in numpy: a (copied, native-order) array."""
    size, stride = tuple(int(n) for n in size), tuple(int(n) for n in stride)
    last = offset + sum((n - 1) * st for n, st in zip(size, stride, strict=True))
    if min(size, default=1) > 0 and not (offset >= 0 and min(stride, default=0) >= 0
                                         and last < len(storage)):
        raise pickle.UnpicklingError(f"a tensor of size {size} and stride {stride} at offset "
                                     f"{offset} does not fit its storage of {len(storage)}")
    item = storage.itemsize
    view = np.lib.stride_tricks.as_strided(storage[offset:], shape=tuple(size),
                                           strides=tuple(s * item for s in stride))
    return np.array(view, dtype=storage.dtype.newbyteorder("="))


def _card_columns() -> np.ndarray:
    """(52, 19) observation columns of each card: hand, trick by seat, played by seat,
    won by seat, passed, received, the trick it was played in."""
    cols = [SLICES["hand"].start + np.arange(52)]
    for block in ("current_trick", "played", "won"):
        cols += [SLICES[block].start + seat * 52 + np.arange(52) for seat in range(MAX_SEATS)]
    cols += [SLICES[block].start + np.arange(52) for block in ("passed", "received",
                                                               "card_trick")]
    return np.stack(cols, 1)


_COLUMNS = _card_columns()  # (52, 19)
_SUIT, _RANK = np.arange(52) // 13, np.arange(52) % 13
_SAME = _SUIT[:, None] == _SUIT[None, :]  # (52, 52) [j, c]: same suit
_ABOVE = (_SAME & (_RANK[:, None] > _RANK[None, :])).astype(np.float32)  # [j, c]: j above c
_BELOW = (_SAME & (_RANK[:, None] < _RANK[None, :])).astype(np.float32)  # [j, c]: j below c
_CONSTANT = np.concatenate([np.eye(4)[_SUIT], _RANK[:, None] / 12.0], 1).astype(np.float32)
#: Features per card (``card_features``' last axis).
CARD_FEATURES = _COLUMNS.shape[1] + _CONSTANT.shape[1] + 4


def card_features(obs: np.ndarray, rows: np.ndarray | None = None,
                  cards: np.ndarray | None = None) -> np.ndarray:
    """(B, 52, CARD_FEATURES) float32: what the observation (B, OBS) says about each card,
    the same features for every card: its place (in the hand, in the trick by seat, played
    by seat, won by seat, passed, received, the trick it was played in), its suit and rank,
    and how it stands in its suit: the cards of the suit still out (not held, not played)
    above and below it, the suit's cards in the hand, and whether a higher card of its suit
    is in the trick.

    Given ``rows`` and ``cards`` ((M,) ints), only those (observation, card) pairs: (M,
    CARD_FEATURES), ``card_features(obs)[rows, cards]`` without the rest (the networks
    read the cards they may play, or the one that was played)."""
    if (rows is None) != (cards is None) or np.shape(rows) != np.shape(cards):
        raise ValueError(f"rows and cards must be given together, of one shape, got "
                         f"{np.shape(rows)} and {np.shape(cards)}")
    obs = np.asarray(obs, np.float32)
    # (B, 52, 19) every column of every card, or (B, 52, 11) those the derived ones need
    own = obs[:, _COLUMNS if rows is None else _COLUMNS[:, :1 + 2 * MAX_SEATS]]
    hand = own[:, :, 0]  # (B, 52)
    trick = own[:, :, 1:1 + MAX_SEATS].sum(2)  # (B, 52)
    played = own[:, :, 1 + MAX_SEATS:1 + 2 * MAX_SEATS].sum(2)  # (B, 52)
    out = np.maximum(1 - hand - played, 0)  # (B, 52) not held, not played
    derived = np.stack([out @ _ABOVE / 12, out @ _BELOW / 12, hand @ _SAME.astype(np.float32)
                        / 13, (trick @ _ABOVE > 0).astype(np.float32)], 2)  # (B, 52, 4)
    if rows is None:
        constant = np.broadcast_to(_CONSTANT, (len(obs), 52, _CONSTANT.shape[1]))
        return np.concatenate([own, constant, derived], 2)  # (B, 52, F)
    return np.concatenate([obs[rows[:, None], _COLUMNS[cards]], _CONSTANT[cards],
                           derived[rows, cards]], 1)  # (M, F)


class NumpyPolicyNet:
    """``agents.policy_net.PolicyNet``'s policy in numpy, from a checkpoint's state dict.

    Args:
        state: the ``"model"`` state dict of a checkpoint (``read_checkpoint``).
        hidden: the trunk's layer widths (the checkpoint's ``"hidden"``).
        card_head: the card head's width (the checkpoint's ``"card_head"``; 0: none).
    """

    def __init__(self, state: dict[str, np.ndarray], hidden: tuple[int, ...],
                 card_head: int = 0) -> None:
        def layer(name: str) -> tuple[np.ndarray, np.ndarray]:  # (in, out), (out,)
            return (np.ascontiguousarray(state[name + ".weight"].T, np.float32),
                    state[name + ".bias"].astype(np.float32))

        self.trunk = [layer(f"trunk.{2 * i}") for i in range(len(hidden))]
        self.policy = layer("policy")
        self.value_head = layer("value") if "value.weight" in state else None  # (width, 1)
        self.obs_size = (self.trunk[0] if self.trunk else self.policy)[0].shape[0]
        self.card_head = int(card_head)
        if self.card_head:
            self.context = layer("context")
            self.per_card = [layer("per_card.0"), layer("per_card.2")]

    @classmethod
    def load(cls, path: str | Path) -> tuple[NumpyPolicyNet, dict[str, Any]]:
        """(network, training args) of a checkpoint file.

        Raises:
            ValueError: a file that is not a checkpoint of this network (not a torch.save
                archive, cut short, missing layers, layers of the wrong shape) or whose
                weights are not all finite; the message names the file.
        """
        try:
            data = read_checkpoint(path)
            net = cls(data["model"], tuple(data["hidden"]), int(data.get("card_head", 0)))
            args = dict(data.get("args", {}))
        except ValueError as error:  # read_checkpoint's own errors name the file already
            if str(path) in str(error):
                raise
            raise ValueError(f"{path} is not a policy checkpoint ({error})") from None
        except Exception as error:  # a cut or foreign file: KeyError, EOFError, zlib, ...
            text = " ".join(str(error).split()) or type(error).__name__
            raise ValueError(f"{path} is not a policy checkpoint ({type(error).__name__}: "
                             f"{text})") from None
        check_finite_weights(data["model"], path)
        return net, args

    def logits(self, obs: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """(B, 70) float32 logits of the observations (B, OBS), MASKED_LOGIT where ``mask``
        (B, 70) bool is False."""
        obs = np.asarray(obs, np.float32)
        h = obs[:, :self.obs_size]
        for weight, bias in self.trunk:
            h = np.maximum(h @ weight + bias, 0)  # (B, width)
        logits = h @ self.policy[0] + self.policy[1]  # (B, 70)
        if self.card_head:  # only at the cards ``mask`` allows: the others are masked out
            ctx = np.maximum(h @ self.context[0] + self.context[1], 0)  # (B, C)
            rows, cards = np.nonzero(mask[:, :52])  # (M,) each
            feats = card_features(obs, rows, cards)  # (M, F)
            (w1, b1), (w2, b2) = self.per_card
            # The first layer split: card features plus the context (one a game).
            f = CARD_FEATURES
            hidden = np.maximum(feats @ w1[:f] + (ctx @ w1[f:])[rows] + b1, 0)  # (M, C)
            logits[rows, cards] += (hidden @ w2)[:, 0] + b2  # (M,)
        return np.where(mask, logits, np.float32(MASKED_LOGIT))

    def values(self, obs: np.ndarray) -> np.ndarray:
        """(B,) float32 the value head's estimate for the observing seat of each observation
        (B, OBS): its round points over the rule set's value scale, as expert iteration
        trains it (``agents.training.expert``); a ValueError for a checkpoint without one."""
        if self.value_head is None:
            raise ValueError("this checkpoint has no value head")
        h = np.asarray(obs, np.float32)[:, :self.obs_size]
        for weight, bias in self.trunk:
            h = np.maximum(h @ weight + bias, 0)  # (B, width)
        return (h @ self.value_head[0] + self.value_head[1])[:, 0]  # (B,)


def check_finite_weights(state: Mapping[str, Any], path: str | Path) -> None:
    """A ValueError naming ``path`` and the first layers whose weights hold NaN or inf
    (a network trained into NaN plays garbage without a word otherwise)."""
    bad = [name for name, weights in state.items()
           if not np.isfinite(np.asarray(weights, np.float64)).all()]
    if bad:
        raise ValueError(f"{path}: the weights of {', '.join(bad[:5])} hold NaN or inf")


def shipped_checkpoints() -> list[str]:
    """Names of the checkpoints in ``CHECKPOINT_DIR`` (``agents/checkpoints/``: what
    ``checkpoint=`` accepts besides a path)."""
    return sorted(path.stem for path in CHECKPOINT_DIR.glob("*.pt"))


def _missing(name: str) -> FileNotFoundError:
    """The error of a shipped checkpoint whose file is not in ``CHECKPOINT_DIR``."""
    return FileNotFoundError(
        f"the shipped PPO checkpoint {name!r} is missing: no {name}.pt in {CHECKPOINT_DIR} "
        f"(smoor-env is installed without its package data agents/checkpoints/*.pt; "
        f"reinstall it from a wheel or a checkout that has them)")


def resolve_checkpoint(checkpoint: str | Path) -> Path:
    """The file of ``checkpoint``: a shipped checkpoint's name (``"ppo_hearts"`` is
    ``agents/checkpoints/ppo_hearts.pt``), else a path as given, else a path relative to
    the repository's root. A name in ``SHIPPED_POLICIES`` (or a shipped network) whose
    file is missing is a
    FileNotFoundError saying where it was looked for."""
    path = Path(checkpoint)
    named = CHECKPOINT_DIR / f"{checkpoint}.pt"
    if path.name == str(checkpoint) and not path.suffix and named.exists():
        return named
    if not path.exists() and not path.is_absolute():
        repo = _ROOT / path
        if repo.exists():
            return repo
    if not path.exists() and str(checkpoint) in (*SHIPPED_POLICIES, *SHIPPED_NETWORKS):
        raise _missing(str(checkpoint))
    if not path.exists():
        raise FileNotFoundError(f"PPO checkpoint {str(checkpoint)!r} is neither a file nor a "
                                f"shipped checkpoint name ({', '.join(shipped_checkpoints())})")
    return path


def training_rules(args: Mapping[str, Any], players: int, single_round: bool | None = None
                   ) -> Rules:
    """The rules ``train_ppo`` trains on for ``players``, from its arguments (``Args``, or
    a checkpoint's ``"args"``): single rounds if ``single_round`` (default
    ``args["single_round"]``)."""
    options: dict[str, Any] = {"game": args["game"], "num_players": players}
    if args["game"] == "smoorverliefd":
        options.update({key: args[key] for key in ("trump_hearts", "bidding", "partners",
                                                   "pip_scoring")})
    if args["single_round"] if single_round is None else single_round:
        options["target_score"] = None
    return Rules(**options)


def shipped_policy_for(rules: Rules, related: bool = True) -> str | None:
    """The name of the shipped checkpoint trained on ``rules`` (compared as one round:
    any target score); else, if ``related``, one trained on the same tricks: the same
    game and rules of play and scoring, differing only in the player count and in
    Hearts' passing (which change the deal and the hands, not how a trick is won or
    what it scores), one trained at this player count first; else None.

    So ``ppo_hearts`` (4-player Hearts with passing) is also the policy of 3-player
    Hearts and of 4-player Hearts without passing, ``ppo_hearts5`` (5 players) that of
    5-player Hearts without passing, while the Smoorverliefd variants
    (trumps, bids, partners, pips, a cursed suit) have none: there the plain game's
    policy misleads the search (measured in the README's "Agents' strength"), and
    ``prior="auto"`` plays the network, ``SHIPPED_NETWORK``, in every rule set; it is
    never one of these (it was trained on every rule set, ``"game": "all"``).

    The checkpoints of ``SHIPPED_POLICIES`` take part by their listed training rules
    even when their files are missing: a rule set whose policy is one of those is then a
    FileNotFoundError naming the file and the folder looked in (never None, which would
    be a search without its policy); rule sets that have no policy are unaffected.
    """
    trained = {name: args for name in shipped_checkpoints()
               if (args := PPOAgent(name).train_args).get("game") in ("smoorverliefd", "hearts")}
    missing = {name: args for name, args in SHIPPED_POLICIES.items()
               if name not in trained and not (CHECKPOINT_DIR / f"{name}.pt").is_file()}
    trained = dict(sorted({**trained, **missing}.items()))
    name = _policy_for(rules, trained, related)
    if name in missing:
        raise _missing(name)
    return name


def plain_rule_set(rules: Rules) -> str | None:
    """The plain rule set (a preset's name) whose tricks ``rules`` plays, where a
    specialist of ``SHIPPED_POLICIES`` was trained on those tricks (by their listed
    training rules, whether or not the files are there: ``shipped_policy_for`` maps
    ``rules`` to one): ``"smoorverliefd"``, ``"hearts"`` (with passing) or
    ``"hearts_no_passing"``; else None (the Smoorverliefd variants, Hearts' queen
    options)."""
    if _policy_for(rules, SHIPPED_POLICIES, related=True) is None:
        return None
    if rules.is_hearts:
        return "hearts" if rules.passing else "hearts_no_passing"
    return "smoorverliefd"


def _policy_for(rules: Rules, trained: dict[str, Mapping[str, Any]], related: bool
                ) -> str | None:
    """``shipped_policy_for`` among the checkpoints ``trained`` (name: training args)."""

    def like(args: Mapping[str, Any], **fields: Any) -> Rules | None:
        """The checkpoint's training rules (one round) with these fields of ``rules``;
        None where they make no game (partners: 4 players only)."""
        try:
            return training_rules(args, args["num_players"][0], True).replace(
                target_score=rules.target_score, num_players=rules.num_players, **fields)
        except ValueError:
            return None

    for name, args in trained.items():
        if rules.num_players in args["num_players"] and like(args) == rules:
            return name
    deal = {"passing": rules.passing} if rules.is_hearts else {}
    # Among related checkpoints, one trained at this player count comes first.
    for name, args in sorted(trained.items(),
                             key=lambda item: rules.num_players not in item[1]["num_players"]):
        if related and args["game"] == rules.game and like(args, **deal) == rules:
            return name
    return None


_CACHE: dict[str, tuple[NumpyPolicyNet, dict[str, Any]]] = {}


@functools.cache
def _blas() -> ThreadpoolController:
    """The BLAS thread pools, found on first use (it scans the loaded libraries)."""
    return ThreadpoolController()


@register("ppo")
class PPOAgent:
    """Plays a trained policy through the batched agent protocol.

    Args:
        checkpoint: a shipped checkpoint's name (``"ppo_smoorverliefd"``, the default, or
            ``"ppo_hearts"``: ``agents/checkpoints/<name>.pt``) or a checkpoint file's path,
            played by ``NumpyPolicyNet``.
        sample: sample from the policy instead of playing its most likely action.
        threads: BLAS threads of the forward pass (default 1: a decision stays on one
            core, and idle BLAS threads do not spin beside the search's numpy work);
            0 leaves numpy's setting alone.
        net: play this network instead of ``checkpoint``: anything with
            ``logits(obs, mask) -> (B, 70)`` numpy logits (``agents.policy_net.PolicyNet`` has
            it: self-play in ``train_ppo`` plays the network being trained).
    """

    name = "ppo"
    uses_observation = True

    def __init__(self, checkpoint: str = DEFAULT_CHECKPOINT, sample: bool = False,
                 threads: int = 1, net: Any = None) -> None:
        if not isinstance(threads, int | np.integer) or isinstance(threads, bool) \
                or threads < 0:
            raise ValueError(f"threads must be an int >= 0, got {threads!r}")
        self.threads = int(threads)
        if net is None:
            key = str(resolve_checkpoint(checkpoint).resolve())
            if key not in _CACHE:
                _CACHE[key] = NumpyPolicyNet.load(key)
            net, self.train_args = _CACHE[key]
        else:
            self.train_args = {}
        self.net = net
        self.sample = bool(sample)
        self.checkpoint = checkpoint

    def _logits(self, observations: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        """The checked (B, 70) bool mask and the network's (B, 70) masked logits."""
        mask = check_mask(observations)
        obs = check_observation(observations, mask)  # (B, D) float32
        if not self.threads:
            return mask, np.asarray(self.net.logits(obs, mask))
        with _blas().limit(limits=self.threads, user_api="blas"):
            return mask, np.asarray(self.net.logits(obs, mask))

    def log_policy(self, observations: dict[str, np.ndarray]) -> np.ndarray:
        """(B, 70) float64 log-probabilities of the policy's actions (-inf where illegal)."""
        mask, logits = self._logits(observations)
        return np.where(mask, log_softmax(logits.astype(np.float64), axis=1), -np.inf)

    def value(self, obs: np.ndarray) -> np.ndarray:
        """(B,) float32 the network's value head for float observations (B, OBS): the
        observing seat's round points over the rule set's value scale (Hearts: minus its
        penalty points over 26), as ``experiments.expert_iteration`` trains it."""
        if not self.threads:
            return self.net.values(obs)
        with _blas().limit(limits=self.threads, user_api="blas"):
            return self.net.values(obs)

    def act(self, observations: dict[str, np.ndarray], rng: np.random.Generator) -> np.ndarray:
        mask, logits = self._logits(observations)
        if not self.sample:
            return logits.argmax(axis=1).astype(np.int64)
        # Gumbel-max with numpy's generator: reproducible from the caller's rng.
        gumbel = -np.log(-np.log(rng.random(mask.shape)))
        scores = np.where(mask, logits + gumbel, -np.inf)
        return np.argmax(scores, axis=1).astype(np.int64)
