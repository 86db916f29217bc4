"""Typed views of what the planner observes, each built once per pass from the cache's slim object."""
