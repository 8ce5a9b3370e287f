"""Prompts as typed code: one module per task, each with its context, response and text."""
