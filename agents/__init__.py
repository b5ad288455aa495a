"""Baseline agents behind one batched protocol (see ``agents.base``)."""

from agents.base import Agent, agent_names, make_agent, register
from agents.greedy import GreedyAgent
from agents.mc import MCAgent
from agents.random_agent import RandomAgent

__all__ = ["Agent", "GreedyAgent", "MCAgent", "RandomAgent", "agent_names", "make_agent",
           "register"]
