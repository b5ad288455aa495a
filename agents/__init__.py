"""Baseline agents behind one batched protocol (see ``agents.base``)."""

from agents.base import Agent, agent_names, make_agent, register
from agents.random_agent import RandomAgent

__all__ = ["Agent", "RandomAgent", "agent_names", "make_agent", "register"]
