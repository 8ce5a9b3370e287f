"""The prompts' tasks answered by rules: one module per task, as in :mod:`memory.prompts`.

Each rule reads the same typed context the prompt is built from and returns the task's
response model (the reply rule returns text), so the offline adapter only has to look up
which rule answers which task.
"""
