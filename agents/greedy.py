"""A rule-aware one-trick heuristic for both games and every variant, batched.

The agent reads only the observation (``smoor_env.observation``): its hand, the
trick in progress, the cards played so far and the rule flags. It scores every
legal action with the rules below and plays the best one (ties: the lowest id).

Smoorverliefd (collect hearts):

* Following suit: if the trick holds hearts (or I am about to add one), win it
  as cheaply as is safe: the lowest winning card when I play last, the highest
  card of the suit otherwise. A heartless trick is ducked: the highest card that
  still loses, else the lowest card.
* Void in the led suit: keep hearts for my own tricks (with hearts as trump,
  ruff a trick that holds hearts with the lowest winning heart) and shed my
  lowest card of the suit where I hold the least, a loser anyway.
* Leading: lead the highest heart if no unseen heart beats it (it collects the
  hearts the others must follow with); otherwise lead low from my longest plain
  suit, keeping my high cards to win heart tricks later.
* Bidding (Blinde Liefde): the hearts I hold from ten up, plus one for every two
  other aces, which is roughly how many hearts they capture.
* Cursed suit (Cupid's Arrow): the suit in which I hold the fewest high cards
  (so I will win few of its tricks), hearts last.

Hearts (avoid penalty points):

* Following suit: play the highest card that still loses to the trick's best;
  if every card wins, play the highest when I am last and the trick holds no
  points (take it cheaply), else the lowest.
* Void: dump ``QS`` first, then the highest heart, then the highest other card.
* Leading: the lowest card of my shortest plain suit (keeping spades while
  ``QS`` is out and I hold ``AS``/``KS``).
* Passing: ``QS``, ``AS``, ``KS``, then the highest hearts, then the highest cards.
"""

from __future__ import annotations

import numpy as np

from agents.base import check_mask, register
from smoor_env.observation import split_observation
from smoor_env.play import trick_strength_table

_CARDS = np.arange(52)
_SUIT = _CARDS // 13  # (52,)
_RANK = _CARDS % 13  # (52,) 0 = two .. 12 = ace
_HEART = _SUIT == 2
_QS, _KS, _AS = 49, 50, 51
_STRENGTH = {trump: trick_strength_table(trump).reshape(5, 52) for trump in (False, True)}
_BID, _CURSE = 52, 66


@register("greedy")
class GreedyAgent:
    """One-trick heuristic; see the module docstring for its rules."""

    name = "greedy"
    uses_observation = True

    def act(self, observations: dict[str, np.ndarray], rng: np.random.Generator) -> np.ndarray:
        mask = check_mask(observations)  # (B, 70)
        obs = split_observation(np.asarray(observations["observation"], np.float32))
        hearts_game = obs["rules"][:, 0] > 0.5  # (B,)
        scores = np.where(hearts_game[:, None], _hearts_scores(obs), _smoor_scores(obs))
        scores = np.concatenate([scores, _bid_scores(obs), _curse_scores(obs, hearts_game)],
                                axis=1)  # (B, 70)
        # Ties go to the lowest id: subtract a tiny id-proportional amount.
        scores = np.where(mask, scores - 1e-6 * np.arange(70), -np.inf)
        return np.argmax(scores, axis=1)


def _trick(obs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Facts about the trick in progress, per game."""
    trick = obs["current_trick"]  # (B, 5, 52)
    in_trick = trick.any(axis=2)  # (B, 5) seats that played
    cards = trick.argmax(axis=2)  # (B, 5) card ids (meaningless where not played)
    size = in_trick.sum(axis=1)  # (B,)
    leader = obs["trick_leader"].argmax(axis=1)  # (B,)
    rows = np.arange(len(size))
    led = np.where(size > 0, _SUIT[cards[rows, leader]], 4)  # (B,) 4 = leading
    trump = obs["rules"][:, 1] > 0.5
    table = np.where(trump[:, None, None], _STRENGTH[True], _STRENGTH[False])  # (B, 5, 52)
    by_led = table[rows, led]  # (B, 52) strength of each card in this trick
    played_strength = np.where(in_trick, np.take_along_axis(by_led, cards, axis=1), -1)
    best = played_strength.max(axis=1)  # (B,) strength to beat (-1 if leading)
    trick_cards = trick.sum(axis=1) > 0  # (B, 52)
    players = obs["num_players"].argmax(axis=1) + 3
    return {"size": size, "led": led, "by_led": by_led, "best": best, "cards": trick_cards,
            "last": size == players - 1, "leading": size == 0}


def _unseen(obs: dict[str, np.ndarray]) -> np.ndarray:
    """(B, 52) cards neither in my hand nor played this round."""
    return (obs["hand"] < 0.5) & (obs["played"].sum(axis=1) < 0.5)


def _smoor_scores(obs: dict[str, np.ndarray]) -> np.ndarray:
    """(B, 52) scores of playing each card in Smoorverliefd (higher is better)."""
    t = _trick(obs)
    hand = obs["hand"] > 0.5
    strength = t["by_led"]
    wins = strength > t["best"][:, None]  # (B, 52) the card would take the trick now
    hearts_in_trick = (t["cards"] & _HEART).any(axis=1)[:, None]
    worth = hearts_in_trick | _HEART[None, :]  # a heart in it, or I would add one
    rank = _RANK[None, :].astype(float)
    # Following (or void): win worthwhile tricks, duck the others.
    win_score = np.where(t["last"][:, None], 100 - rank, 100 + rank)
    duck_score = np.where(wins, -rank, 50 + rank)  # highest loser, else lowest card
    follow = np.where(worth & wins, win_score, duck_score)
    # Keep hearts when they would not take the trick (do not feed others' tricks).
    follow = np.where(_HEART[None, :] & ~wins, -100 - rank, follow)
    # Void: shed the lowest card of my shortest plain suit.
    suit_len = np.stack([(hand & (s == _SUIT)).sum(axis=1) for s in range(4)], axis=1)
    shed = 30 - rank - 2 * suit_len[:, _SUIT]
    void = ~(hand & (np.minimum(t["led"], 3)[:, None] == _SUIT)).any(axis=1)
    follow = np.where((void & ~t["leading"])[:, None] & ~(worth & wins), shed, follow)
    # Leading: the top heart if nothing unseen beats it, else low from the longest plain suit.
    unseen_hearts = _unseen(obs) & _HEART
    top_unseen = np.where(unseen_hearts.any(axis=1), 12 - np.argmax(unseen_hearts[:, ::-1],
                                                                    axis=1), -1)
    safe_heart = _HEART[None, :] & (_RANK[None, :] > top_unseen[:, None])
    lead = np.where(safe_heart, 200 + rank, 20 - rank + 2 * suit_len[:, _SUIT])
    lead = np.where(_HEART[None, :] & ~safe_heart, -50 - rank, lead)
    return np.where(t["leading"][:, None], lead, follow)


def _hearts_scores(obs: dict[str, np.ndarray]) -> np.ndarray:
    """(B, 52) scores of playing (or passing) each card in Hearts (higher is better)."""
    t = _trick(obs)
    hand = obs["hand"] > 0.5
    rank = _RANK[None, :].astype(float)
    danger = np.where(_CARDS == _QS, 40, 0) + np.where(_HEART, 10 + _RANK, 0)
    danger = danger + np.where(np.isin(_CARDS, [_AS, _KS]), 25, 0) + _RANK  # (52,)
    passing = obs["phase"][:, 1] > 0.5  # (B,)
    strength = t["by_led"]
    loses = strength < t["best"][:, None]
    points_in_trick = (t["cards"] & (_HEART | (_CARDS == _QS))).any(axis=1)[:, None]
    follow = np.where(loses, 100 + rank, np.where(t["last"][:, None] & ~points_in_trick,
                                                  50 + rank, 50 - rank))
    void = ~(hand & (np.minimum(t["led"], 3)[:, None] == _SUIT)).any(axis=1)
    follow = np.where((void & ~t["leading"])[:, None], 100 + danger[None, :], follow)
    suit_len = np.stack([(hand & (s == _SUIT)).sum(axis=1) for s in range(4)], axis=1)
    queen_out = ~hand[:, _QS] & (obs["played"].sum(axis=1)[:, _QS] < 0.5)
    keep_spades = queen_out & (hand[:, _AS] | hand[:, _KS])
    lead = 50 - rank - 3 * suit_len[:, _SUIT] - 100 * _HEART[None, :]
    lead = np.where(keep_spades[:, None] & (_SUIT == 3)[None, :], lead - 40, lead)
    play = np.where(t["leading"][:, None], lead, follow)
    return np.where(passing[:, None], np.broadcast_to(danger, play.shape), play)


def _bid_scores(obs: dict[str, np.ndarray]) -> np.ndarray:
    """(B, 14) scores of bidding 0..13: the estimate scores highest."""
    hand = obs["hand"] > 0.5
    high_hearts = (hand & _HEART & (_RANK >= 8)).sum(axis=1)  # TH and up
    other_aces = (hand & ~_HEART & (_RANK == 12)).sum(axis=1)
    estimate = np.clip(high_hearts + other_aces // 2, 0, 13)
    return -np.abs(np.arange(14)[None, :] - estimate[:, None]).astype(float)


def _curse_scores(obs: dict[str, np.ndarray], hearts_game: np.ndarray) -> np.ndarray:
    """(B, 4) scores of naming each suit cursed: few high cards of it in my hand."""
    hand = obs["hand"] > 0.5
    high = np.stack([(hand & (s == _SUIT) & (_RANK >= 9)).sum(axis=1) for s in range(4)], 1)
    held = np.stack([(hand & (s == _SUIT)).sum(axis=1) for s in range(4)], axis=1)
    scores = -(10.0 * high + held)
    scores[:, 2] -= np.where(hearts_game, 0, 100)  # a heart collector avoids cursing hearts
    return scores
