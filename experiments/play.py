"""``smoor-play``: play a match of Smoorverliefd or Hearts in the terminal against agents.

    smoor-play --agents greedy mc mc --seat 0 --seed 7
    smoor-play --game hearts --num-players 3 --agents mc
    smoor-play --bidding --cupids-arrow --agents greedy     # rule options as flags

Before each of your moves the table is shown: the seats with their round points,
totals, bids and the card they put in the trick in progress; the last finished
trick and who took it; the cursed suit (Cupid's Arrow); Hearts passing (where your
cards go, the ones chosen so far, what you received); your hand grouped by suit,
with your legal moves numbered. Points are shown as the records and the benchmark
tables give them: Smoorverliefd's points won (most wins), Hearts' penalty points
(fewest wins). You see only what your seat may know: other seats' passes are
announced, never shown.

At your move, type a card (``QS``, ``10h``, ``th``, ``10♥``), an action (``bid 3``,
``curse H``), a move's number, or ``hint`` (what the ``mc`` agent would play, with
the points it expects of each legal move over sampled worlds), ``undo`` (back to
your previous decision: the match is replayed from the seed and the moves, and the
agents' generator is restored, so agents without a ``time_budget`` answer as
before), ``help`` or ``quit`` (also: the end of the input, Ctrl-C).

Input may come from a pipe (one move per line), so a whole match can be scripted.
Every finished round is written to a game record (``smoor_env.record``, JSON lines,
with an extra ``"agents"`` key naming the seats), rewritten after each round.
The table uses ``rich`` when it is installed (the ``play`` extra) and plain text
otherwise (or with ``--plain``).
"""

from __future__ import annotations

import dataclasses
import os
import re
import sys
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal

import numpy as np
import tyro
from tyro.constructors import PrimitiveConstructorSpec

from agents import agent_names
from smoor_env import PRESETS
from smoor_env.core import cards as C
from smoor_env.core.engine import Engine, action_str
from smoor_env.core.rules import GAME_DEFAULT, GAMES, Rules
from smoor_env.core.state import Phase
from smoor_env.observation import observe
from smoor_env.record import round_record, write_records
from smoor_env.render import TableView, suit_groups, table_view, trick_text

COMMANDS = ("hint", "undo", "quit", "help")
#: What ``help`` (or an empty line) prints at a move.
HELP = """moves: a card (QS, 10h, th, 10♥), an action (bid 3, curse H) or a move's number
  hint  what the mc agent would play, and the points it expects of each legal move
  undo  back to your previous decision
  quit  stop (the end of the input and Ctrl-C stop too; finished rounds are saved)"""


def _flags(options: dict[str, Any]) -> str:
    """The command-line flags of a preset's ``Rules`` options (``--game hearts --no-passing``)."""
    flags = []
    for name, value in options.items():
        flag = "--" + name.replace("_", "-")
        flags.append(flag if value is True else "--no-" + flag[2:] if value is False
                     else f"{flag} {value}")
    return " ".join(flags) or "the default"


#: ``--help``'s text: what it does, the examples, the named rule sets as flags, and where
#: the moves are explained.
DESCRIPTION = (__doc__.split("\n\n")[0].split(": ", 1)[1] + "\n\n"
               + __doc__.split("\n\n")[1] + "\n\nThe named rule sets (smoor_env.PRESETS): "
               + "; ".join(f"{name}: {_flags(p.options)}" for name, p in PRESETS.items())
               + ".\n\nAt your move, 'help' lists the moves and the commands hint, undo "
               "and quit.")


# ------------------------------------------------------------------ the match
class Session:
    """One match: the person's seat, the agents of the other seats, and every move so far.

    Args:
        rules: the rules of the match.
        seed: the engine's seed; the agents' generator is seeded from it too.
        seat: the seat the person plays.
        agent_specs: one agent spec (``"mc:worlds=64"``) per other seat in seat
            order, or a single one for all of them.
    """

    def __init__(self, rules: Rules, seed: int, seat: int, agent_specs: list[str]) -> None:
        from agents import make_agent, parse_agent

        p = rules.num_players
        if not 0 <= seat < p:
            raise ValueError(f"--seat must be a seat 0..{p - 1}, got {seat}")
        others = [s for s in range(p) if s != seat]
        if len(agent_specs) == 1:
            agent_specs = agent_specs * len(others)
        if len(agent_specs) != len(others):
            raise ValueError(f"--agents must name one agent, or one for each of the {len(others)}"
                             f" other seats {others}, got {len(agent_specs)}")
        self.rules, self.seed, self.seat = rules, seed, seat
        self.agents = {s: make_agent(name, **options)
                       for s, (name, options) in zip(others, map(parse_agent, agent_specs),
                                                     strict=True)}
        self.names = [f"{s}:you" if s == seat else f"{s}:{spec.partition(':')[0]}"
                      for s, spec in zip(range(p), self._seat_specs(agent_specs), strict=True)]
        self.engine = Engine(rules, 1)
        self.moves: list[int] = []  # every action of the match, in order
        self.records: list[dict] = []  # one per finished round
        self.rng = np.random.default_rng(seed)  # the agents' generator
        # (number of moves, generator state) at each of the person's decisions, for undo.
        self.decisions: list[tuple[int, dict]] = []
        self.engine.reset(seed)

    def _seat_specs(self, agent_specs: list[str]) -> list[str]:
        specs = iter(agent_specs)
        return ["you" if s == self.seat else next(specs) for s in range(self.rules.num_players)]

    @property
    def over(self) -> bool:
        return bool(self.engine.state.match_over[0])

    def legal_actions(self) -> list[int]:
        """The person's legal actions: cards in the display order of the hand, else by id."""
        st = self.engine.state
        legal = np.flatnonzero(self.engine.legal_mask[0]).tolist()
        if Phase(int(st.phase[0])) in (Phase.PLAY, Phase.PASS):
            hand = C.cards_of(int(st.hands[0, self.seat]))
            order = [c for _, group in suit_groups(hand) for c in group]
            return [c for c in order if c in legal]
        return legal

    @property
    def phase(self) -> Phase:
        return Phase(int(self.engine.state.phase[0]))

    def step(self, action: int) -> dict | None:
        """Play one action of the seat to act; returns the round's record if it ended."""
        self.engine.step(np.array([action]))
        self.moves.append(int(action))
        if self.engine.state.round_over[0]:
            record = round_record(self.engine, 0, self.seed)
            record["agents"] = self.names
            self.records.append(record)
            return record
        return None

    def narrate(self, seat: int, action: int, phase: Phase) -> list[str]:
        """What the person's seat sees of ``seat``'s ``action`` (just played, in ``phase``):
        public moves as they are, another seat's pass only as "has chosen its cards" once
        it has chosen three, the person's own pass card by card, and at the exchange the
        cards the person passed and received."""
        name, you = self.names[seat], self.seat
        if phase != Phase.PASS:
            if action >= C.NUM_CARDS:
                return [f"{name}: {action_str(action)}"]
            lines = [f"{name} plays {move_text(action)}"]
            st = self.engine.state
            if st.trick_size[0] == 0:  # the card finished a trick (and maybe the round)
                t = int(st.trick_index[0]) - 1
                winner = (int(st.trick_winner[0, t]) if t >= 0
                          else int(st.finished["trick_winner"][0, -1]))
                lines.append(f"  {self.names[winner]} takes the trick")
            return lines
        st, p = self.engine.state, self.rules.num_players
        offset = int(self.rules.pass_offset(int(st.round_number[0])))
        target = self.names[(seat + offset) % p]
        chosen = int((st.passes[0, seat] >= 0).sum())
        if seat == you:
            lines = [f"you pass {move_text(action)} to {target} ({chosen}/3)"]
        else:
            lines = [f"{name} has chosen 3 cards to pass to {target}"] if chosen == 3 else []
        if self.phase != Phase.PASS:  # everyone has chosen: the cards were exchanged
            passer = (you - offset) % p
            lines.append(f"pass: you gave {_cards(st.passes[0, you])} to "
                         f"{self.names[(you + offset) % p]} and received "
                         f"{_cards(st.passes[0, passer])} from {self.names[passer]}")
        return lines

    def agent_action(self, seat: int) -> int:
        obs = observe(self.engine, np.array([seat]))
        return int(self.agents[seat].act({"observation": obs,
                                          "action_mask": self.engine.legal_mask}, self.rng)[0])

    def to_act(self) -> int:
        return int(self.engine.state.current_player[0])

    def mark_decision(self) -> None:
        """Remember this decision point of the person (for ``undo``)."""
        point = (len(self.moves), self.rng.bit_generator.state)
        if not self.decisions or self.decisions[-1][0] != point[0]:
            self.decisions.append(point)

    def undo(self) -> bool:
        """Back to the person's previous decision; False if there is none."""
        if len(self.decisions) < 2:
            return False
        self.decisions.pop()
        count, rng_state = self.decisions[-1]
        moves = self.moves[:count]
        self.engine.reset(self.seed)
        self.moves, self.records = [], []
        for action in moves:
            self.step(action)
        self.rng.bit_generator.state = rng_state
        return True

    def hint(self, worlds: int) -> tuple[int, dict[int, float]]:
        """(the ``mc`` agent's move, {legal action: its estimated points}) for the person.

        The points are ``MCAgent.evaluate``'s, the mean round points after each legal
        action over ``worlds`` hidden worlds sampled from what the person's seat knows,
        in the sign the table shows: Hearts' as penalty points (fewer is better).
        Actions it does not search (a forced move, Hearts passing) have no value. The
        hint draws from its own generator, not the agents'.
        """
        from agents.mc import MCAgent

        observation = {"observation": observe(self.engine, np.array([self.seat])),
                       "action_mask": self.engine.legal_mask}
        rng = np.random.default_rng([self.seed, len(self.moves)])
        moves, values = MCAgent(worlds=worlds, rules=self.rules).evaluate(observation, rng)
        sign = -1.0 if self.rules.is_hearts else 1.0  # evaluate's Hearts values: -penalty
        return int(moves[0]), {int(a): sign * float(values[0, a]) for a in np.flatnonzero(
            ~np.isnan(values[0]))}


# ------------------------------------------------------------------ reading moves
def parse_move(text: str, legal: list[int]) -> int:
    """The action a typed move names: its number (1-based, in ``legal``'s order), a card
    (``QS``, ``10h``, ``q♠``) or an action text (``bid 3``, ``curse H``).

    Raises:
        ValueError: naming the problem, if the text is no legal move.
    """
    words = text.strip()
    if words.isdigit():
        number = int(words)
        if 1 <= number <= len(legal):
            return legal[number - 1]
        raise ValueError(f"there is no move number {number} (1..{len(legal)})")
    texts = {action_str(a).lower(): a for a in legal}
    if words.lower() in texts:
        return texts[words.lower()]
    try:
        card = C.parse_card(words)
    except ValueError:
        raise ValueError(f"cannot read {words!r} as a move") from None
    if card not in legal:
        raise ValueError(f"{C.card_str(card, symbols=True)} is not a legal move here")
    return card


def move_text(action: int) -> str:
    """A card with its suit symbol (``Q♠``, ``10♥``), else the action's text (``bid 3``)."""
    if action < C.NUM_CARDS:
        return C.card_str(action, symbols=True)
    return action_str(action)


def _cards(cards) -> str:
    """Display text of card ids (-1 entries left out), high to low by suit: ``Q♠ 10♥``."""
    held = sorted(int(c) for c in cards if c >= 0)
    return " ".join(C.card_str(c, symbols=True) for _, group in suit_groups(held)
                    for c in group) or "-"


# ------------------------------------------------------------------ the screen
class Screen:
    """Writes the table and messages, with ``rich`` when available, else plain text.

    Args:
        plain: plain text even when ``rich`` is installed.
        console: the ``rich.console.Console`` to write to (default: a new one on stdout).
    """

    def __init__(self, plain: bool = False, console=None) -> None:
        self.console = console
        if not plain and console is None:
            try:
                from rich.console import Console
            except ImportError:
                print("(plain text: install the 'play' extra for a clearer table: "
                      "pip install -e '.[play]')")
            else:
                self.console = Console(highlight=False)

    def say(self, text: str, style: str = "") -> None:
        if self.console is None:
            print(text)
        else:
            from rich.text import Text

            self.console.print(Text(text, style=style))

    def table(self, view: TableView, legal: list[int], you: int) -> None:
        """The table: seats, trick, last trick, cursed suit, and the person's hand."""
        head = ["seat", "trick", "round", "total"] + (["bid"] if view.bids is not None else [])
        played = dict(view.trick)
        rows = []
        for seat, name in enumerate(view.names):
            row = [("▶ " if seat == view.seat_to_act else "  ") + name,
                   move_text(played[seat]) if seat in played else "",
                   str(view.points[seat]), str(view.totals[seat])]
            if view.bids is not None:
                row.append(str(view.bids[seat]) if view.bids[seat] >= 0 else "-")
            rows.append(row)
        extra = []
        target, chosen = view.pass_to[you], view.chosen[you]
        if chosen is not None:
            extra.append(f"passing 3 cards to {view.names[target]}; chosen: {_cards(chosen)}")
        elif view.received[you] is not None:
            extra.append(f"received from {view.names[view.pass_to.index(you)]}: "
                         f"{_cards(view.received[you])}")
        if view.cursed_suit is not None:
            extra.append(f"cursed suit: {C.SUIT_SYMBOLS[view.cursed_suit]}")
        if view.last_trick:
            extra.append(f"last trick: {trick_text(view.last_trick, view.names)} "
                         f"- taken by {view.names[view.last_winner]}")
        numbers = {action: k for k, action in enumerate(legal, 1)}
        hand = [c for c in view.hands[you] or [] if c not in (chosen or ())]
        # Each suit: (symbol, [(card text, its move number or None)]).
        groups = [(C.SUIT_SYMBOLS[suit], [(C.rank_str(c), numbers.get(c)) for c in group])
                  for suit, group in suit_groups(hand)]
        others = [a for a in legal if a >= C.NUM_CARDS]  # bids, cursed suits
        if self.console is None:
            self._plain(view.title, head, rows, extra, groups, others, numbers)
        else:
            self._rich(view.title, head, rows, extra, groups, others, numbers)

    def _plain(self, title, head, rows, extra, groups, others, numbers) -> None:
        widths = [max(len(r[k]) for r in [head, *rows]) for k in range(len(head))]
        print("\n" + title)
        for row in [head, *rows]:
            print("  ".join(cell.ljust(w) if k == 0 else cell.rjust(w)
                            for k, (cell, w) in enumerate(zip(row, widths, strict=True))))
        for line in extra:
            print(line)
        print("your hand (legal moves numbered):")
        for symbol, cards in groups:
            print(f"  {symbol}  " + "  ".join(f"{rank}({n})" if n else rank
                                              for rank, n in cards))
        if others:
            print("  " + "  ".join(f"{action_str(a)}({numbers[a]})" for a in others))

    def _rich(self, title, head, rows, extra, groups, others, numbers) -> None:
        from rich.table import Table
        from rich.text import Text

        table = Table(show_edge=False, pad_edge=False)
        for k, name in enumerate(head):
            table.add_column(name, justify="left" if k == 0 else "right")
        for row in rows:
            table.add_row(*row, style="bold yellow" if row[0].startswith("▶") else "")
        self.console.print()
        self.console.print(Text(title, style="bold"))
        self.console.print(table)
        for line in extra:
            self.console.print(Text(line))
        self.console.print(Text("your hand (legal moves numbered):"))
        for symbol, cards in groups:
            line = Text(f"  {symbol}  ", style="red" if symbol in "♥♦" else "")
            for rank, n in cards:
                line.append(f"{rank}({n})" if n else rank,
                            style="bold green" if n else "dim")
                line.append("  ")
            self.console.print(line)
        if others:
            self.console.print(Text("  " + "  ".join(f"{action_str(a)}({numbers[a]})"
                                                     for a in others), style="bold green"))


# ------------------------------------------------------------------ the loop
def read_line(prompt: str) -> str:
    """A line of input; echoed when it comes from a pipe, so the transcript reads well."""
    text = input(prompt)
    if not sys.stdin.isatty():
        print(text)
    return text


def play(session: Session, screen: Screen, record_path: Path | None, hint_worlds: int,
         read=None) -> None:
    """Run the match: agents move, the person is asked (``read(prompt)``, default
    ``read_line``), until the match ends or input does."""
    read = read or read_line
    while True:
        while not session.over and session.to_act() != session.seat:
            seat = session.to_act()
            play_move(session, screen, seat, session.agent_action(seat), record_path)
        if session.over:
            view = table_view(session.engine, observer=session.seat, names=session.names)
            screen.say("match over; won by " + ", ".join(view.names[s] for s in view.winners),
                       style="bold")
            return
        session.mark_decision()
        legal = session.legal_actions()
        view = table_view(session.engine, observer=session.seat, names=session.names)
        screen.table(view, legal, session.seat)
        while True:
            try:
                text = read(f"your move ({view.phase.name.lower()}; number, card, "
                            f"{', '.join(COMMANDS)}): ").strip()
            except EOFError:
                screen.say("\nend of input: stopping")
                return
            command = text.lower()
            if command == "quit":
                return
            if command in ("help", ""):
                screen.say(HELP)
                continue
            if command == "hint":
                screen.say(hint_text(session, hint_worlds))
                continue
            if command == "undo":
                if session.undo():
                    screen.say("undone: back to your previous move")
                    break
                screen.say("nothing to undo")
                continue
            try:
                action = parse_move(text, legal)
            except ValueError as error:
                screen.say(f"{error}; legal moves: " + ", ".join(
                    f"{k}={move_text(a)}" for k, a in enumerate(legal, 1)), style="red")
                continue
            play_move(session, screen, session.seat, action, record_path)
            break


def hint_text(session: Session, worlds: int) -> str:
    """The ``hint`` answer: mc's move, and the points it expects of each legal move."""
    move, values = session.hint(worlds)
    text = f"mc would play {move_text(move)}"
    if values:
        hearts = session.rules.is_hearts
        text += (f"\nexpected {'penalty points (fewer is better)' if hearts else 'round points'}"
                 f" over {worlds} sampled worlds: " + ", ".join(
                     f"{move_text(c)} {v:.1f}" for c, v in sorted(
                         values.items(), key=lambda item: item[1] if hearts else -item[1])))
    return text


def play_move(session: Session, screen: Screen, seat: int, action: int,
          record_path: Path | None) -> None:
    """Play ``seat``'s action, tell the person what their seat sees of it, and at the end
    of a round show its points and save the record."""
    phase = session.phase
    record = session.step(action)
    for line in session.narrate(seat, action, phase):
        screen.say(line)
    if record is not None:
        screen.say(round_summary(record, session.rules), style="bold")
        _save(session, record_path, screen)


def round_summary(record: dict, rules: Rules) -> str:
    """``round 2 over`` and, seat by seat, its points and the totals (Hearts: penalty)."""
    names = record["agents"]
    width = max(len(n) for n in names)
    kind = "penalty points, fewest wins" if rules.is_hearts else "points"
    lines = [f"round {record['round']} over ({kind}):"]
    for seat, name in enumerate(names):
        bid = (f"  bid {record['bids'][seat]:>2}" if record.get("bids") else "")
        lines.append(f"  {name:<{width}}  round {record['round_points'][seat]:>4}  "
                     f"total {record['totals'][seat]:>4}{bid}")
    return "\n".join(lines)


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


def _save(session: Session, path: Path | None, screen: Screen) -> None:
    """Rewrite the game record with every finished round (a failure is reported, and the
    rounds are written again at the next round's end)."""
    if path is None or not session.records:
        return
    try:
        path.write_text("", encoding="utf-8")  # write_records appends
        write_records(path, session.records)
    except OSError as error:
        screen.say(f"cannot write the game record {path}: {error.strerror or error}; "
                   f"will try again after the next round", style="red")
        return
    screen.say(f"game record: {path} ({_plural(len(session.records), 'round')})")


# ------------------------------------------------------------------ command line
def _int_or_none(texts: list[str]) -> int | None:
    """``"none"`` (any case) -> None, else the int (a ValueError tyro reports)."""
    return None if texts[0].lower() == "none" else int(texts[0])


#: How tyro reads an ``int | None`` rule option: an int, or ``none``.
_INT_OR_NONE = PrimitiveConstructorSpec(
    nargs=1, metavar="INT|none", instance_from_str=_int_or_none,
    is_instance=lambda value: value is None or value is GAME_DEFAULT or isinstance(value, int),
    str_from_instance=lambda value: [str(value).lower()])


def _option_help(doc: str) -> dict[str, str]:
    """{field: its help} from a Google-style docstring's ``Attributes:`` section, with the
    reST markup (````code````, ``*title*``) taken out for the terminal."""
    helps: dict[str, str] = {}
    section = doc[doc.index("Attributes:"):].splitlines()[1:]
    for line in section:
        entry = re.match(r" {8}(\w+): (.*)", line)
        if entry:
            name, helps[entry[1]] = entry[1], entry[2]
        elif line.startswith(" " * 12):
            helps[name] += " " + line.strip()
    return {key: re.sub(r"``|\*", "", text) for key, text in helps.items()}


#: The help of each ``Rules`` option on the command line.
_RULE_HELP = _option_help(Rules.__doc__)


def _rule_option(name: str, kind: Any, default: Any) -> tuple[str, Any, Any]:
    """The command-line form of one ``Rules`` option, as a ``make_dataclass`` field
    ``(name, annotated type, default)``: a bool is ``--flag/--no-flag``, ``game`` a
    choice of ``GAMES``, an ``int | None`` takes ``none``. An option whose default is
    ``GAME_DEFAULT`` keeps a marker default (None for a bool, whose flags give only
    True or False; ``GAME_DEFAULT`` otherwise) that ``RuleOptions.rules`` leaves out,
    so that ``Rules`` applies the game's default."""
    by_game = default is GAME_DEFAULT
    hint = tyro.conf.arg(help=_RULE_HELP[name], help_behavior_hint=(
        "(default: the game's)" if by_game else None))
    if kind is bool:
        if by_game:
            return name, Annotated[tyro.conf.DisallowNone[bool | None], hint], None
        return name, Annotated[bool, hint], default
    if kind is str and name == "game":
        return name, Annotated[Literal[GAMES], hint], default
    if kind is int and not by_game:
        return name, Annotated[int, hint], default
    if kind == int | None:
        return name, Annotated[Any, _INT_OR_NONE, hint], default
    raise TypeError(f"no command-line form for Rules.{name}: {kind} = {default!r}")


def _rules(options: Any) -> Rules:
    """The ``Rules`` of the parsed options (validated by ``Rules``: a ValueError names an
    impossible combination); options left at a game-default marker are not passed."""
    given = {f.name: getattr(options, f.name) for f in dataclasses.fields(options)}
    return Rules(**{name: value for name, value in given.items()
                    if not (name in RULE_OPTION_MARKERS and value is RULE_OPTION_MARKERS[name])})


_RULE_HINTS = typing.get_type_hints(Rules)
#: The rule options on the command line: one field per ``Rules`` option, derived from
#: ``Rules`` (its docstring documents them; ``--help`` shows it), with ``.rules()``.
RuleOptions = dataclasses.make_dataclass(
    "RuleOptions",
    [_rule_option(f.name, _RULE_HINTS[f.name], f.default)
     for f in dataclasses.fields(Rules) if f.init],
    namespace={"__doc__": Rules.__doc__, "rules": _rules, "__module__": __name__},
    frozen=True)
#: The marker default of each option whose default depends on the game.
RULE_OPTION_MARKERS = {f.name: getattr(RuleOptions(), f.name) for f in dataclasses.fields(Rules)
                       if f.init and f.default is GAME_DEFAULT}


@dataclass
class Args:
    agents: Annotated[list[str], tyro.conf.arg(help=(
        "one agent for every other seat, or one per other seat in seat order: "
        f"{', '.join(agent_names())}, with options as name:key=value,... "
        "(e.g. mc:worlds=64)"))] = field(default_factory=lambda: ["greedy"])
    seat: int = 0
    """the seat you play"""
    seed: Annotated[int | None, tyro.conf.arg(
        help_behavior_hint="(default: a random one, printed)")] = None
    """the match's seed"""
    record: Annotated[Path | None, tyro.conf.arg(
        help_behavior_hint="(default: results/play/<game>_<P>p_seed<S>.jsonl)")] = None
    """game record file (JSON lines, rewritten after each round); an existing file is
    refused unless --overwrite"""
    overwrite: bool = False
    """replace the file --record names if it exists"""
    hint_worlds: int = 64
    """sampled worlds for 'hint'"""
    plain: bool = False
    """plain text even if rich is installed"""
    rules: Annotated[RuleOptions, tyro.conf.OmitArgPrefixes] = field(
        default_factory=RuleOptions)
    """the rules of the match (smoor_env.core.rules.Rules); impossible combinations are refused"""


def _record_path(given: Path | None, rules: Rules, seed: int, overwrite: bool) -> Path:
    """Where the game record goes, checked before the first card: ``--record`` (its
    folder must exist and be writable; an existing file is an earlier match's record,
    replaced only with ``overwrite``), or by default
    ``results/play/<game>_<P>p_seed<S>.jsonl`` under the current folder (made if
    missing), ``..._seed<S>-2.jsonl`` and so on when that name is taken. Raises
    ValueError naming the problem."""
    if given is None:
        folder = Path("results/play")
        folder.mkdir(parents=True, exist_ok=True)
        stem = f"{rules.game}_{rules.num_players}p_seed{seed}"
        path, n = folder / f"{stem}.jsonl", 1
        while path.exists() and not overwrite:
            n += 1
            path = folder / f"{stem}-{n}.jsonl"
    else:
        path = given
        if path.is_dir():
            raise ValueError(f"--record {path} is a folder; name a file in it")
        if not path.parent.is_dir():
            raise ValueError(f"the folder of --record {path} does not exist")
        if path.exists() and not overwrite:
            raise ValueError(f"--record {path} already holds a game record; name a new file "
                             f"or pass --overwrite to replace it")
    if not os.access(path.parent, os.W_OK) or path.exists() and not os.access(path, os.W_OK):
        raise ValueError(f"cannot write the game record {path}: permission denied")
    return path


def main(argv: list[str] | None = None) -> int:
    args = tyro.cli(Args, args=argv, prog="smoor-play", description=DESCRIPTION)
    try:
        rules = args.rules.rules()
        if args.hint_worlds < 1:
            raise ValueError(f"--hint-worlds must be at least 1, got {args.hint_worlds}")
        seed = (int(np.random.default_rng().integers(2**31)) if args.seed is None
                else args.seed)
        session = Session(rules, seed, args.seat, args.agents)
        record = _record_path(args.record, rules, seed, args.overwrite)
    except (ValueError, TypeError, ImportError, OSError) as error:
        print(f"smoor-play: error: {error} (see smoor-play --help)", file=sys.stderr)
        raise SystemExit(2) from None
    screen = Screen(plain=args.plain)
    scoring = ("penalty points: the fewest win" if rules.is_hearts
               else "points: the most win")
    screen.say(f"{rules.game}, {rules.num_players} players ({scoring}), seed {seed}; you are "
               f"{session.names[session.seat]}; opponents: "
               + ", ".join(n for s, n in enumerate(session.names) if s != session.seat))
    try:
        play(session, screen, record, args.hint_worlds)
    except KeyboardInterrupt:
        screen.say("\ninterrupted: stopping")
        _save(session, record, screen)
        if not session.records:
            screen.say("no round finished: no game record written")
        return 130
    if not session.records:
        screen.say("no round finished: no game record written")
    return 0


if __name__ == "__main__":
    sys.exit(main())
