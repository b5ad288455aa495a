// A line protocol around Nathan Sturtevant's Hearts program (xinxin: PIMC over UCT,
// https://github.com/nathansttt/hearts), so that experiments/xinxin_anchor.py can play it
// against our agents on our deals. This file is ours; it is compiled against a checkout of
// that repository (GPL-3.0) on the user's machine and never shipped with it.
//
// Cards are the program's own ids: (suit << 4) + rank, suits S D C H = 0..3, ranks A K Q
// ... 2 = 0..12. Requests on stdin, one a line; every reply is one line on stdout
// ("error <reason>" for a request refused, the state unchanged):
//
//   game <rules> <pass> <seed> <sims> <worlds> <epsilon> <C> <52 cards>
//        a new round: seat s holds cards 13s..13s+12 and passes first in seat order (pass:
//        1 left, -1 right, 2 across, 0 none; the rules' pass flag 0x400 must be set to
//        pass); every seat gets a fresh
//        player (SafeSimpleHeartsPlayer, iiMonteCarlo over UCT, HeartsPlayout, as the
//        repository's main.cpp builds it), seeded from <seed>; replies "ok <seat to act>"
//   legal   -> "legal <seat> <cards>"      the seat to act and its legal cards
//   play c  -> "ok <seat to act or -1>"    card c for the seat to act
//   think   -> "move <card> <seconds>"     the program's choice for the seat to act (not
//                                          played), and its wall time
//   score   -> "score <4 numbers>"         the program's own round score of each seat
//   quit
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include <unistd.h>

#include "Hearts.h"
#include "iiMonteCarlo.h"

using namespace hearts;

namespace {

const int kSeats = 4;

// The library seeds its search from the clock; these reseed it, so that a round is
// reproducible from its seed.
class SeededUCT : public UCT {
 public:
  SeededUCT(int runs, double c) : UCT(runs, c) {}
  void seed(uint32_t s) { rand.srand(s); }
};

class SeededMonteCarlo : public iiMonteCarlo {
 public:
  SeededMonteCarlo(Algorithm *a, int worlds) : iiMonteCarlo(a, worlds) {}
  void seed(uint32_t s) { rand.srand(s); }
};

struct Round {
  HeartsGameState *state = nullptr;
  std::vector<Player *> players;
  std::vector<Algorithm *> algorithms;
  std::vector<UCTModule *> playouts;
  std::vector<Move *> played;  // moves made or chosen, kept to the round's end as Game does

  ~Round() {
    for (Move *m : played) delete m;
    delete state;  // and its players
    for (Algorithm *a : algorithms) delete a;
    for (UCTModule *m : playouts) delete m;
  }
};

Round *round_ = nullptr;

// The state's legal moves for the seat to act, as cards; the move list is given back.
// (getAllMoves: getMoves, which the search uses, leaves out all but one of equivalent
// cards, and makes a seat's three passes in rising card id.)
std::vector<card> legal_cards() {
  std::vector<card> cards;
  Move *moves = round_->state->getAllMoves();
  for (Move *m = moves; m; m = m->next) cards.push_back(((CardMove *)m)->c);
  round_->state->freeMove(moves);
  return cards;
}

int to_act() { return round_->state->Done() ? -1 : round_->state->getNextPlayerNum(); }

std::string new_round(std::istringstream &in) {
  int rules, pass, sims, worlds;
  uint32_t seed;
  double epsilon, c;
  std::vector<std::vector<card>> hands(kSeats);
  std::vector<bool> seen(64, false);
  if (!(in >> rules >> pass >> seed >> sims >> worlds >> epsilon >> c))
    return "error bad game line";
  if (pass != kHold && pass != kLeftDir && pass != kRightDir && pass != kAcrossDir)
    return "error pass must be 1, -1, 2 or 0";
  if (sims < 1 || worlds < 1 || sims < worlds) return "error need 1 <= worlds <= sims";
  for (int k = 0; k < 13 * kSeats; k++) {
    int id;
    if (!(in >> id)) return "error a game needs 52 cards";
    if (id < 0 || id >= 64 || Deck::getrank(id) > TWO || seen[id])
      return "error bad or repeated card " + std::to_string(id);
    seen[id] = true;
    hands[k / 13].push_back((card)id);
  }
  delete round_;
  round_ = new Round;
  srandom(seed);  // the library's few calls of random()
  Round &r = *round_;
  r.state = new HeartsGameState((int)seed);
  for (int s = 0; s < kSeats; s++) {
    SeededUCT *uct = new SeededUCT(sims / worlds, c);
    SeededMonteCarlo *mc = new SeededMonteCarlo(uct, worlds);
    uct->seed(seed * 8 + 2 * s);
    mc->seed(seed * 8 + 2 * s + 1);
    HeartsPlayout *playout = new HeartsPlayout();
    uct->setPlayoutModule(playout);
    uct->setEpsilonPlayout(epsilon);
    // The worlds one after another: main.cpp's threads run one at a time at this commit
    // (iiMonteCarlo.cpp: numCPU = 1), and each program has one core.
    mc->setUseThreads(false);
    SimpleHeartsPlayer *p = new SafeSimpleHeartsPlayer(mc);
    p->setModelLevel(2);
    r.state->addPlayer(p);
    p->setGameState(r.state);
    r.players.push_back(p);
    r.algorithms.push_back(mc);
    r.algorithms.push_back(uct);
    r.playouts.push_back(playout);
  }
  r.state->setRules(rules);
  r.state->Reset();  // sizes the tricks for four players (its random deal is replaced)
  r.state->SetInitialCards(hands);
  r.state->setPassDir(pass);
  r.state->setFirstPlayer(0);  // the rules name the leader (the two of clubs)
  return "ok " + std::to_string(to_act());
}

std::string play(std::istringstream &in) {
  int id;
  if (!(in >> id)) return "error play needs a card";
  if (to_act() < 0) return "error the round is over";
  int seat = to_act();
  Move *moves = round_->state->getAllMoves();
  CardMove *chosen = nullptr;
  for (Move *m = moves; m; m = m->next) {
    CardMove *cm = (CardMove *)m;
    if (cm->c == id && !chosen) {
      chosen = new CardMove();
      chosen->init(cm->c, cm->context, cm->player);
    }
  }
  round_->state->freeMove(moves);
  if (!chosen) return "error card " + std::to_string(id) + " is not legal";
  round_->state->ApplyMove(chosen);
  for (Player *p : round_->players) p->Played(seat, chosen);
  round_->played.push_back(chosen);
  return "ok " + std::to_string(to_act());
}

std::string think() {
  if (to_act() < 0) return "error the round is over";
  Player *p = round_->state->getNextPlayer();
  auto start = std::chrono::steady_clock::now();
  Move *m = p->Play();
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  card c = ((CardMove *)m)->c;
  round_->state->freeMove(m->next);  // as the library's Game::doOnePlay
  m->next = nullptr;
  round_->played.push_back(m);
  char tail[64];
  std::snprintf(tail, sizeof tail, " %.6f", seconds);
  return "move " + std::to_string(c) + tail;
}

}  // namespace

int main() {
  std::string line;
  // The library prints as it plays: our replies go to the real stdout, its prints to
  // stderr.
  FILE *replies = fdopen(dup(fileno(stdout)), "w");
  dup2(fileno(stderr), fileno(stdout));
  while (std::getline(std::cin, line)) {
    std::istringstream in(line);
    std::string verb, reply;
    in >> verb;
    if (verb == "quit") break;
    if (verb == "game") {
      reply = new_round(in);
    } else if (!round_) {
      reply = "error no game yet";
    } else if (verb == "legal") {
      std::ostringstream out;
      out << "legal " << to_act();
      if (to_act() >= 0)
        for (card c : legal_cards()) out << " " << c;
      reply = out.str();
    } else if (verb == "play") {
      reply = play(in);
    } else if (verb == "think") {
      reply = think();
    } else if (verb == "score") {
      std::ostringstream out;
      out << "score";
      for (int s = 0; s < kSeats; s++) out << " " << round_->state->score(s);
      reply = out.str();
    } else {
      reply = "error unknown request " + verb;
    }
    std::fprintf(replies, "%s\n", reply.c_str());
    std::fflush(replies);
  }
  delete round_;
  return 0;
}
